//! `fetchIndex`: one index's exact bytes from `.indexes` (docs/object-format.md "`.indexes`").
//!
//! The manifest's `segmentIndexes` entry gives the stored position and size; one ranged GET
//! reads exactly those bytes, which are decrypted when the segment is encrypted. An empty
//! index (size 0) needs no GET. With integrity data (`manifest/integrity.rs`), the
//! segment's recorded identity is checked against the one asked for when the index is
//! loaded, and the index's stored bytes against their digest before they are decrypted. OFFSET and TIMESTAMP lie side by side in `.indexes`, and
//! the broker's remote index cache asks for both, one after the other, on its first read
//! of a segment (Kafka's `RemoteIndexCache`): a miss of either, when the other is not
//! cached and both together are at most [`PAIR_MAX_BYTES`], reads both in one GET and
//! caches the other too (one round trip per segment less at the start of every segment a
//! consumer reads, and one GET less). A sibling that fails to decode is not cached (its own
//! call reports it). Memory: the GET's stored bytes and their plaintext, reserved from the
//! engine's budget (`engine/lifecycle/budget.rs`).

use std::sync::Arc;

use bytes::Bytes;

use super::EngineShared;
use super::lifecycle::deadline::bounded;
use super::manifests::{Segment, collect, load_segment};
use crate::config::names;
use crate::manifest::integrity::Unit;
use crate::object_keys::SegmentKeys;
use crate::{IndexType, RemoteLogSegmentMetadata, RsmError};
use tsm_storage::{BackendError, ByteRange};

/// Index `index` of the segment at `keys`; `name` names the segment in errors.
pub(super) async fn fetch_index(
    inner: &Arc<EngineShared>,
    asked: &RemoteLogSegmentMetadata,
    keys: SegmentKeys,
    name: &str,
    index: IndexType,
) -> Result<Bytes, RsmError> {
    // Before any lookup: what this call caches goes under this generation
    // (`engine/generations.rs`).
    let generation = inner.generations.current(keys.log.as_str());
    let load = inner.indexes.get_or_load(
        (keys.indexes.as_str().to_string(), generation, index),
        Box::pin(read_index(inner, asked, name, &keys, generation, index)),
    );
    bounded(
        inner.opts.indexes_get_timeout,
        names::INDEXES_CACHE_GET_TIMEOUT_MS,
        || format!("{} index of {}", index.java_name(), keys.indexes),
        load,
    )
    .await
}

/// OFFSET and TIMESTAMP together in one GET when both add up to at most this many
/// stored bytes (the broker's default `segment.index.bytes` is 10 MiB each).
pub(crate) const PAIR_MAX_BYTES: u64 = 16 << 20;

async fn read_index(
    inner: &Arc<EngineShared>,
    asked: &RemoteLogSegmentMetadata,
    name: &str,
    keys: &SegmentKeys,
    generation: u64,
    index: IndexType,
) -> Result<Bytes, RsmError> {
    let segment = load_segment(inner, keys, generation).await?;
    segment
        .check_identity(keys, asked)
        .inspect_err(|_| inner.stats.integrity_failures.inc())?;
    let indexes = &segment.manifest.segment_indexes;
    let Some(entry) = indexes.get(index) else {
        return Err(RsmError::NotFound(format!(
            "{name}: the segment has no {} index (manifest {})",
            index.java_name(),
            keys.manifest
        )));
    };
    if entry.size == 0 {
        // Nothing to download; an index recorded with bytes is still refused (its entry
        // was moved onto an empty one).
        let empty = ByteRange {
            start: entry.position,
            end: entry.position,
        };
        return decode(inner, &segment, &keys.indexes, index, Bytes::new(), empty).await;
    }
    let sibling = match index {
        IndexType::Offset => Some(IndexType::Timestamp),
        IndexType::Timestamp => Some(IndexType::Offset),
        _ => None,
    }
    .and_then(|other| Some((other, indexes.get(other)?)))
    .filter(|(other, e)| {
        let (first, second) = if e.position < entry.position {
            (e, &entry)
        } else {
            (&entry, e)
        };
        e.size > 0
            && first.position.checked_add(first.size) == Some(second.position)
            && entry.size.saturating_add(e.size) <= PAIR_MAX_BYTES
            && !inner
                .indexes
                .contains(&(keys.indexes.as_str().to_string(), generation, *other))
    });
    let (position, size) = match &sibling {
        Some((_, e)) => (entry.position.min(e.position), entry.size + e.size),
        None => (entry.position, entry.size),
    };
    let what = || match &sibling {
        Some((other, _)) => format!(
            "{} and {} indexes of {name}",
            index.java_name(),
            other.java_name()
        ),
        None => format!("{} index of {name}", index.java_name()),
    };
    let key = &keys.indexes;
    let _memory = inner
        .lifecycle
        .pools
        .reads
        .reserve(
            size.saturating_mul(2),
            inner.lifecycle.deadlines.first_byte,
            names::STORAGE_GET_FIRST_BYTE_TIMEOUT_MS,
            what,
        )
        .await?;
    let range = ByteRange {
        start: position,
        end: position.saturating_add(size - 1),
    };
    let truncated = |got: u64| RsmError::Corrupt {
        object: key.to_string(),
        detail: format!(
            "truncated object: the {} need {range} but only {got} bytes were read",
            what()
        ),
    };
    let body = match inner.backend.fetch(key, Some(range)).await {
        Ok(b) => b,
        Err(BackendError::InvalidRange { .. }) => return Err(truncated(0)),
        Err(e) => return Err(e.into()),
    };
    let max = usize::try_from(size).unwrap_or(usize::MAX);
    let stored = collect(inner, key, body, max).await?;
    if stored.len() as u64 != size {
        return Err(truncated(stored.len() as u64));
    }
    // Both entries lie inside `stored` (checked above: the GET covers exactly them).
    let at = |e: &crate::manifest::SegmentIndexJson| {
        let from = usize::try_from(e.position - position).unwrap_or(usize::MAX);
        let to = from.saturating_add(usize::try_from(e.size).unwrap_or(usize::MAX));
        let own = ByteRange {
            start: e.position,
            end: e.position.saturating_add(e.size - 1),
        };
        (stored.slice(from..to.min(stored.len())), own)
    };
    if let Some((other, e)) = sibling {
        let (bytes, own) = at(&e);
        if let Ok(plain) = decode(inner, &segment, key, other, bytes, own).await {
            inner
                .indexes
                .insert((key.as_str().to_string(), generation, other), plain)
                .await;
        }
    }
    let (bytes, own) = at(&entry);
    decode(inner, &segment, key, index, bytes, own).await
}

/// Restores one index's stored bytes (checks them against their digest when the segment
/// has integrity data, decrypts them when it is encrypted), off the async threads;
/// `range` (the index's stored bytes in `key`) names them in errors.
async fn decode(
    inner: &EngineShared,
    segment: &Segment,
    key: &tsm_storage::ObjectKey,
    index: IndexType,
    stored: Bytes,
    range: ByteRange,
) -> Result<Bytes, RsmError> {
    let transform = segment.transform.clone();
    let integrity = segment.integrity.clone();
    let what = || format!("{} index ({range})", index.java_name());
    let checked = tokio::task::spawn_blocking(move || {
        if let Some(i) = &integrity {
            let expected = i.index_digest(index).unwrap_or(0);
            i.check_unit(
                Unit::Index,
                transform.is_compressed(),
                transform.is_encrypted(),
                expected,
                &stored,
            )
            .map_err(Err)?;
        }
        transform.decode_index(index, stored).map_err(Ok)
    })
    .await
    .map_err(|e| RsmError::Internal(format!("{key} {} index: {e}", index.java_name())))?;
    checked.map_err(|e| match e {
        Err(why) => {
            inner.stats.integrity_failures.inc();
            RsmError::Corrupt {
                object: key.to_string(),
                detail: format!("{}: {why}", what()),
            }
        }
        Ok(e) => RsmError::Corrupt {
            object: key.to_string(),
            detail: format!("{}: {e}", what()),
        },
    })
}
