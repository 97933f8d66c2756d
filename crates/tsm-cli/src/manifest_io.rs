//! Reading a segment's `.rsm-manifest` from the store with tsm-core's parser
//! ([`SegmentManifest::from_json`]) and turning its `chunkIndex` into tsm-codec's
//! [`ChunkIndex`]. Memory: the manifest bytes, capped at [`MAX_MANIFEST_BYTES`].

use std::sync::Arc;

use futures::StreamExt;
use tsm_codec::ChunkIndex;
use tsm_core::manifest::SegmentManifest;
use tsm_core::{ObjectKey, StorageBackend};

use crate::error::{CliError, CliResult};

/// Largest manifest read (bytes); the engine's own cap is the same 32 MiB.
pub(crate) const MAX_MANIFEST_BYTES: usize = 32 * 1024 * 1024;

/// The raw bytes of the manifest at `key`. Errors name the key (missing object, store
/// failure, larger than [`MAX_MANIFEST_BYTES`]).
pub(crate) async fn read_bytes(
    backend: &Arc<dyn StorageBackend>,
    key: &ObjectKey,
) -> CliResult<Vec<u8>> {
    let mut body = backend.fetch(key, None).await?;
    let mut buf = Vec::new();
    while let Some(piece) = body.next().await {
        let piece = piece?;
        if buf.len() + piece.len() > MAX_MANIFEST_BYTES {
            return Err(CliError::Findings(format!(
                "{key}: larger than the {MAX_MANIFEST_BYTES} bytes a manifest may have"
            )));
        }
        buf.extend_from_slice(&piece);
    }
    Ok(buf)
}

/// Parses manifest bytes; the error names `key` and says what is wrong.
pub(crate) fn parse(key: &ObjectKey, bytes: &[u8]) -> Result<SegmentManifest, String> {
    SegmentManifest::from_json(bytes).map_err(|e| format!("{key}: not a valid v1 manifest: {e}"))
}

/// The chunk table of a manifest (decodes `transformedChunks` for the variable kind); the
/// error names `key`.
pub(crate) fn chunk_index(key: &ObjectKey, m: &SegmentManifest) -> Result<ChunkIndex, String> {
    m.chunk_index(key).map_err(|e| e.to_string())
}

/// The key-pair id of an encrypted manifest (`dataKey` up to `:`).
pub(crate) fn key_id(m: &SegmentManifest) -> Option<&str> {
    m.encryption
        .as_ref()
        .map(|e| e.data_key.split(':').next().unwrap_or(""))
}

/// `remoteLogSegmentMetadata.<field>` as an i64, when the manifest carries it.
pub(crate) fn metadata_i64(m: &SegmentManifest, field: &str) -> Option<i64> {
    m.remote_log_segment_metadata
        .as_ref()
        .and_then(|v| v.get(field))
        .and_then(serde_json::Value::as_i64)
}
