//! A segment's manifest (docs/object-format.md "Manifest") and the transform that restores its
//! chunks, through the engine's manifest cache: the first step of `fetchLogSegment` and
//! `fetchIndex`. Data comes from one GET of the `.rsm-manifest` object (bounded by
//! `fetch.manifest.cache.get.timeout.ms` and the store deadlines), is parsed and has its
//! data key unwrapped with the configured key ring; it goes to the read path
//! (`engine/fetch.rs`, `engine/fetch_index.rs`). Also [`collect`], the whole-object read of
//! small objects (the manifest, one index). A manifest being read holds reservations from
//! the reads' pool for what it has received (`collect_reserved`), so manifests of any size
//! the bucket holds are read within the budget.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;

use super::EngineShared;
use super::lifecycle::budget::Reservation;
use super::lifecycle::deadline::bounded;
use crate::RsmError;
use crate::config::names as config_names;
use crate::manifest::integrity::SegmentIntegrity;
use crate::manifest::{SegmentManifest, bounds};
use crate::object_keys::SegmentKeys;
use crate::transform::{SegmentTransform, segment_crypto};
use tsm_codec::ChunkIndex;
use tsm_storage::{ByteStream, ObjectKey};

/// Largest manifest accepted (bytes): the chunk-size codec caps its decoded bytes at
/// 10 MiB; base64 of the zstd frame of that is far below this.
pub(super) const MAX_MANIFEST_BYTES: usize = 32 * 1024 * 1024;

/// A segment's manifest, its chunk index (built and checked once, at load), its
/// integrity data when it has some (checked at load: shape, counts, MAC), and the
/// transform that restores its chunks.
pub(crate) struct Segment {
    pub(crate) manifest: SegmentManifest,
    pub(crate) index: Arc<ChunkIndex>,
    pub(crate) integrity: Option<Arc<SegmentIntegrity>>,
    pub(crate) transform: Arc<SegmentTransform>,
    /// Bytes this entry holds: the manifest object it was parsed from, the chunk index's
    /// heap and the digests (the manifest cache's weight).
    pub(crate) held_bytes: u64,
}

/// One unit of the manifest cache's bound (`fetch.manifest.cache.size`, counted in
/// entries): a manifest weighs one unit per started 16 KiB of what it holds (its object,
/// its decoded chunk index and digests), so the usual manifest (a few KiB) counts once and
/// the 1000 entries of the default hold at most about 16 MiB, whatever the bucket holds
/// (each manifest at most `MAX_MANIFEST_BYTES`).
pub(crate) const MANIFEST_WEIGHT_UNIT: u64 = 16 * 1024;

impl Segment {
    /// The manifest cache's weight of this entry (see [`MANIFEST_WEIGHT_UNIT`]).
    pub(crate) fn weight(&self) -> u64 {
        manifest_weight(self.held_bytes)
    }

    /// Checks that the objects were written for the segment `asked` names (the recorded
    /// identity; nothing to check without integrity data).
    pub(crate) fn check_identity(
        &self,
        keys: &SegmentKeys,
        asked: &crate::RemoteLogSegmentMetadata,
    ) -> Result<(), RsmError> {
        match &self.integrity {
            Some(i) => i.check_identity(&keys.manifest, asked),
            None => Ok(()),
        }
    }
}

/// Entries a manifest of `stored_bytes` counts as in the manifest cache: at least 1.
fn manifest_weight(stored_bytes: u64) -> u64 {
    stored_bytes.div_ceil(MANIFEST_WEIGHT_UNIT).max(1)
}

/// The segment's manifest and cipher, through the manifest cache, under the segment's
/// `generation` (`engine/generations.rs`; taken by the caller when its call started).
pub(crate) async fn load_segment(
    inner: &EngineShared,
    keys: &SegmentKeys,
    generation: u64,
) -> Result<Arc<Segment>, RsmError> {
    let load = inner.manifests.get_or_load(
        (keys.manifest.as_str().to_string(), generation),
        Box::pin(async { read_segment(inner, keys).await.map(Arc::new) }),
    );
    bounded(
        inner.opts.manifest_get_timeout,
        config_names::MANIFEST_CACHE_GET_TIMEOUT_MS,
        || format!("manifest {}", keys.manifest),
        load,
    )
    .await
}

/// Reads the manifest, then parses and checks it and unwraps the data key on the blocking
/// pool ([`parse_segment`]: JSON of up to 32 MiB, an RSA private-key operation and the MAC
/// are CPU work that must not hold an async thread, or deepen its stack).
async fn read_segment(inner: &EngineShared, keys: &SegmentKeys) -> Result<Segment, RsmError> {
    let key = keys.manifest.clone();
    let body = inner.backend.fetch(&key, None).await?;
    let (bytes, _held) = collect_reserved(inner, &key, body, MAX_MANIFEST_BYTES).await?;
    let checks = Checks {
        key_ring: inner.opts.key_ring.clone(),
        plaintext_reads: inner.opts.plaintext_reads,
        integrity_required: inner.opts.integrity_required,
    };
    let parsed = tokio::task::spawn_blocking(move || parse_segment(&key, &bytes, &checks))
        .await
        .map_err(|e| RsmError::Internal(format!("manifest {}: {e}", keys.manifest)))?;
    match &parsed {
        Ok(segment) if segment.integrity.is_none() => inner.stats.integrity_unverified.inc(),
        Ok(_) => {}
        Err(Parse::Integrity(_)) => inner.stats.integrity_failures.inc(),
        Err(Parse::Other(_)) => {}
    }
    parsed.map_err(Parse::into_error)
}

/// What [`parse_segment`] checks a manifest against (the engine's options).
struct Checks {
    key_ring: Option<Arc<tsm_crypto::KeyRing>>,
    plaintext_reads: bool,
    integrity_required: bool,
}

/// Why a manifest was refused: its integrity data failed (counted as such), or anything
/// else.
enum Parse {
    Integrity(RsmError),
    Other(RsmError),
}

impl Parse {
    fn into_error(self) -> RsmError {
        match self {
            Parse::Integrity(e) | Parse::Other(e) => e,
        }
    }
}

impl From<RsmError> for Parse {
    fn from(e: RsmError) -> Self {
        Parse::Other(e)
    }
}

/// Parses the manifest `bytes` of object `key`, checks its bounds and integrity data and
/// unwraps its data key (see the module docs).
fn parse_segment(key: &ObjectKey, bytes: &[u8], checks: &Checks) -> Result<Segment, Parse> {
    let mut manifest = SegmentManifest::from_json(bytes).map_err(|e| RsmError::Corrupt {
        object: key.to_string(),
        detail: format!("not a valid v1 manifest: {e}"),
    })?;
    bounds::check_index_entries(key, &manifest)?;
    let integrity = SegmentIntegrity::from_manifest(key, &manifest).map_err(Parse::Integrity)?;
    // Written for people and tools (and holding the integrity data read above); reads
    // never use it: not kept in the cache.
    manifest.remote_log_segment_metadata = None;
    let index = manifest.chunk_index(key)?;
    let crypto = match (&manifest.encryption, &checks.key_ring) {
        (None, Some(_)) if !checks.plaintext_reads => {
            return Err(Parse::Other(RsmError::Corrupt {
                object: key.to_string(),
                detail: format!(
                    "the segment is stored without encryption but encryption.enabled=true; \
                     set {}=true to read segments tiered before encryption was turned on",
                    config_names::ENCRYPTION_PLAINTEXT_READS
                ),
            }));
        }
        (None, _) => None,
        (Some(enc), Some(ring)) => {
            Some(segment_crypto(ring, enc).map_err(|e| RsmError::Crypto(format!("{key}: {e}")))?)
        }
        (Some(enc), None) => {
            let id = enc.data_key.split(':').next().unwrap_or("");
            return Err(Parse::Other(RsmError::Crypto(format!(
                "{key}: the segment is encrypted with key pair {id:?} but encryption is not \
                 configured (encryption.enabled=false)"
            ))));
        }
    };
    // The level only matters for writing; any value restores.
    let level = manifest
        .compression
        .then_some(tsm_codec::compression::DEFAULT_LEVEL);
    let transform = SegmentTransform::new(level, crypto);
    match &integrity {
        Some(i) => i
            .verify(key, &manifest, &index, transform.mac())
            .map_err(Parse::Integrity)?,
        None if checks.integrity_required => {
            return Err(Parse::Other(RsmError::Corrupt {
                object: key.to_string(),
                detail: format!(
                    "the segment has no integrity data (written by the Java plugin or an \
                     older tsm) and {}=true",
                    config_names::INTEGRITY_REQUIRED
                ),
            }));
        }
        None => {}
    }
    let digests = integrity.as_ref().map_or(0, |i| i.chunk_digests.len() * 8);
    Ok(Segment {
        transform: Arc::new(transform),
        held_bytes: (bytes.len() + index.heap_bytes() + digests) as u64,
        index: Arc::new(index),
        integrity: integrity.map(Arc::new),
        manifest,
    })
}

/// First reservation of a manifest read from the reads' pool (bytes); the usual manifest
/// (a few KiB) fits, a larger one reserves twice what it holds each time it outgrows it.
const MANIFEST_FIRST_RESERVE: u64 = 64 * 1024;

/// As [`collect`], reserving what it holds from the reads' pool as the object arrives (a
/// manifest's size is known only once read, and a bucket may hold manifests of up to
/// `max` bytes: hundreds of partitions loading them at once must not hold them outside
/// the budget). The reservations are returned with the bytes and end when dropped (the
/// parsed manifest is weighed by the manifest cache instead). A wait for memory is
/// bounded by the first-byte deadline.
async fn collect_reserved(
    inner: &EngineShared,
    key: &ObjectKey,
    body: ByteStream,
    max: usize,
) -> Result<(Bytes, Vec<Reservation>), RsmError> {
    let mut held = Vec::new();
    let bytes = collect_with(inner, key, body, max, Some(&mut held)).await?;
    Ok((bytes, held))
}

/// Collects a whole (small) object, refusing more than `max` bytes (the caller has
/// reserved them).
pub(crate) async fn collect(
    inner: &EngineShared,
    key: &ObjectKey,
    body: ByteStream,
    max: usize,
) -> Result<Bytes, RsmError> {
    collect_with(inner, key, body, max, None).await
}

/// The whole object, at most `max` bytes; with `held`, reserving from the reads' pool what
/// it holds as it grows ([`collect_reserved`]).
async fn collect_with(
    inner: &EngineShared,
    key: &ObjectKey,
    mut body: ByteStream,
    max: usize,
    mut held: Option<&mut Vec<Reservation>>,
) -> Result<Bytes, RsmError> {
    let pool = &inner.lifecycle.pools.reads;
    let reserve = |bytes: u64| {
        pool.reserve(
            bytes,
            inner.lifecycle.deadlines.first_byte,
            config_names::STORAGE_GET_FIRST_BYTE_TIMEOUT_MS,
            || format!("manifest {key}"),
        )
    };
    let mut reserved = 0;
    if let Some(held) = held.as_deref_mut() {
        held.push(reserve(MANIFEST_FIRST_RESERVE).await?);
        reserved = MANIFEST_FIRST_RESERVE;
    }
    let mut buf = BytesMut::new();
    while let Some(b) = body.next().await {
        let b = b?;
        inner.stats.bytes_downloaded.add(b.len() as u64);
        if buf.len() + b.len() > max {
            return Err(RsmError::Corrupt {
                object: key.to_string(),
                detail: format!("larger than the {max} bytes expected"),
            });
        }
        let need = (buf.len() + b.len()) as u64;
        if let Some(held) = held.as_deref_mut().filter(|_| need > reserved) {
            if need > pool.total() {
                // Waiting would wait for this call's own reservations.
                return Err(RsmError::InvalidArgument(format!(
                    "manifest {key} is over {need} bytes, more than the reads' pool of {} bytes \
                     ({}); raise it",
                    pool.total(),
                    pool.key()
                )));
            }
            let more = need
                .max(reserved.saturating_mul(2))
                .min(max as u64)
                .min(pool.total())
                - reserved;
            held.push(reserve(more).await?);
            reserved += more;
        }
        buf.extend_from_slice(&b);
    }
    Ok(buf.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The usual manifest counts once; a bloated one by its size, so the entry-counted
    /// bound bounds bytes too (the default 1000 entries: at most about 16 MiB).
    #[test]
    fn manifests_weigh_one_entry_per_started_16_kib() {
        assert_eq!(manifest_weight(0), 1);
        assert_eq!(manifest_weight(3 * 1024), 1);
        assert_eq!(manifest_weight(16 * 1024), 1);
        assert_eq!(manifest_weight(16 * 1024 + 1), 2);
        assert_eq!(manifest_weight(MAX_MANIFEST_BYTES as u64), 2048);
    }
}
