//! `fetchIndex`: one index's exact bytes from `.indexes` (object-format-v1 "`.indexes`").
//!
//! The manifest's `segmentIndexes` entry gives the stored position and size; one ranged GET
//! reads exactly those bytes, which are decrypted when the segment is encrypted. An empty
//! index (size 0) needs no GET. Memory: the index's stored bytes and its plaintext,
//! reserved from the engine's budget (`engine/lifecycle/budget.rs`).

use std::sync::Arc;

use bytes::Bytes;

use super::EngineShared;
use super::lifecycle::deadline::bounded;
use super::manifests::{collect, load_segment};
use crate::backend::{BackendError, ByteRange};
use crate::config::names;
use crate::object_keys::SegmentKeys;
use crate::{IndexType, RsmError};

/// Index `index` of the segment at `keys`; `name` names the segment in errors.
pub(super) async fn fetch_index(
    inner: &Arc<EngineShared>,
    keys: SegmentKeys,
    name: &str,
    index: IndexType,
) -> Result<Bytes, RsmError> {
    // Before any lookup: what this call caches goes under this generation
    // (`engine/generations.rs`).
    let generation = inner.generations.current(keys.log.as_str());
    let load = inner.indexes.get_or_load(
        (keys.indexes.as_str().to_string(), generation, index),
        async { read_index(inner, name, &keys, generation, index).await },
    );
    bounded(
        inner.opts.indexes_get_timeout,
        names::INDEXES_CACHE_GET_TIMEOUT_MS,
        || format!("{} index of {}", index.java_name(), keys.indexes),
        load,
    )
    .await
}

async fn read_index(
    inner: &Arc<EngineShared>,
    name: &str,
    keys: &SegmentKeys,
    generation: u64,
    index: IndexType,
) -> Result<Bytes, RsmError> {
    let segment = load_segment(inner, keys, generation).await?;
    let Some(entry) = segment.manifest.segment_indexes.get(index) else {
        return Err(RsmError::NotFound(format!(
            "{name}: the segment has no {} index (manifest {})",
            index.java_name(),
            keys.manifest
        )));
    };
    if entry.size == 0 {
        return Ok(Bytes::new());
    }
    let key = &keys.indexes;
    let _memory = inner
        .lifecycle
        .budget
        .reserve(
            entry.size.saturating_mul(2),
            inner.lifecycle.deadlines.first_byte,
            names::STORAGE_GET_FIRST_BYTE_TIMEOUT_MS,
            || format!("{} index of {name}", index.java_name()),
        )
        .await?;
    let range = ByteRange {
        start: entry.position,
        end: entry.position.saturating_add(entry.size - 1),
    };
    let truncated = |got: u64| RsmError::Corrupt {
        object: key.to_string(),
        detail: format!(
            "truncated object: {} index needs {range} but only {got} bytes were read",
            index.java_name()
        ),
    };
    let body = match inner.backend.fetch(key, Some(range)).await {
        Ok(b) => b,
        Err(BackendError::InvalidRange { .. }) => return Err(truncated(0)),
        Err(e) => return Err(e.into()),
    };
    let max = usize::try_from(entry.size).unwrap_or(usize::MAX);
    let stored = collect(inner, key, body, max).await?;
    if stored.len() as u64 != entry.size {
        return Err(truncated(stored.len() as u64));
    }
    let transform = segment.transform.clone();
    tokio::task::spawn_blocking(move || transform.decode_index(index, stored))
        .await
        .map_err(|e| RsmError::Internal(format!("{key} {} index: {e}", index.java_name())))?
        .map_err(|e| RsmError::Corrupt {
            object: key.to_string(),
            detail: format!("{} index ({range}): {e}", index.java_name()),
        })
}
