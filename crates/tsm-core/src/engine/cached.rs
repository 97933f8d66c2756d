//! The fetch path through the chunk cache (`fetch.chunk.cache.*`), used when one is
//! configured.
//!
//! Every chunk of the requested range is asked of the cache in order; a miss runs one load
//! (single-flight per chunk: concurrent readers of a chunk share it) that downloads, in one
//! ranged GET, the missing chunk plus, when the caller gave an end, the following chunks up
//! to the end of the requested range, and `prefetch.max.size` stored bytes beyond that (bounded by
//! [`EngineOptions::max_get_bytes`](super::EngineOptions::max_get_bytes) +
//! `prefetch.max.size`), restores them in tsm-codec's ordered pipeline, inserts the extra
//! chunks into the cache and returns the one asked for. A failed or cancelled load caches
//! nothing. Loads run only as the stream is polled; dropping the stream stops them.
//!
//! Memory: one load's chunks (its GET size, stored and restored) plus the cache's bound.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::stream::{self, BoxStream};
use futures::{StreamExt, TryStreamExt};
use tsm_codec::ChunkIndex;

use super::fetch::{Group, Restore, fetch_group, restore};
use super::lifecycle::deadline::bounded;
use super::{EngineShared, SegmentStream};
use crate::RsmError;
use crate::backend::{ByteRange, ObjectKey};
use crate::cache::{ChunkCache, ChunkKey};
use crate::config::keys as config_keys;
use crate::transform::SegmentTransform;

/// The lazy stream of original bytes `start..=last` through `cache`; `end_given`: the caller
/// gave an end (read-ahead within the range is wanted).
#[allow(clippy::too_many_arguments)]
pub(super) fn cached_stream(
    inner: Arc<EngineShared>,
    cache: ChunkCache,
    key: ObjectKey,
    index: Arc<ChunkIndex>,
    transform: Arc<SegmentTransform>,
    chunks: Range<u64>,
    start: u64,
    last: u64,
    end_given: bool,
) -> SegmentStream {
    // Read-ahead inside the requested range only when the caller bounded it: an open-ended
    // read (the broker's fetchLogSegment(start) reads ~1 MiB and closes) loads the chunk
    // asked for plus `prefetch.max.size`, nothing it did not ask for.
    let range_end = if end_given { chunks.end } else { chunks.start };
    let object: Arc<str> = Arc::from(key.as_str());
    let chunk_size = u64::from(index.original_chunk_size());
    stream::iter(chunks)
        .then(move |n| {
            let (inner, cache, key, index, transform, object) = (
                inner.clone(),
                cache.clone(),
                key.clone(),
                index.clone(),
                transform.clone(),
                object.clone(),
            );
            async move {
                let limit = inner.opts.chunk_get_timeout;
                let loader = load(
                    inner,
                    cache.clone(),
                    key,
                    index,
                    transform,
                    object.clone(),
                    n,
                    range_end,
                );
                let bytes = bounded(
                    limit,
                    config_keys::CHUNK_CACHE_GET_TIMEOUT_MS,
                    || format!("chunk {n} of {object}"),
                    cache.get_or_load(ChunkKey::new(object.clone(), n), loader),
                )
                .await?;
                Ok::<_, RsmError>((n, bytes))
            }
        })
        .map_ok(move |(n, b): (u64, Bytes)| {
            let origin = n * chunk_size;
            let from = start.saturating_sub(origin).min(b.len() as u64) as usize;
            let to = (last + 1 - origin).min(b.len() as u64) as usize;
            b.slice(from..to.max(from))
        })
        .boxed()
}

/// Downloads chunk `n` and the chunks after it (see the module docs); returns chunk `n`
/// and caches the others.
#[allow(clippy::too_many_arguments)]
async fn load(
    inner: Arc<EngineShared>,
    cache: ChunkCache,
    key: ObjectKey,
    index: Arc<ChunkIndex>,
    transform: Arc<SegmentTransform>,
    object: Arc<str>,
    n: u64,
    range_end: u64,
) -> Result<Bytes, RsmError> {
    let group =
        plan(&inner, &cache, &index, &object, n, range_end).ok_or_else(|| RsmError::Corrupt {
            object: key.to_string(),
            detail: format!("chunk {n} is not in the chunk index"),
        })?;
    let chunks = group.chunks.clone();
    let stored: BoxStream<'static, Result<Bytes, RsmError>> =
        fetch_group(inner.clone(), key.clone(), index.clone(), group)
            .await?
            .boxed();
    let restored = restore(
        stored,
        Restore {
            key: key.clone(),
            index: index.clone(),
            transform,
            first: chunks.start,
            max_in_flight: inner.opts.max_in_flight,
            ramped: false,
        },
    );
    let mut restored = restored.enumerate();
    let mut wanted = None;
    while let Some((i, r)) = restored.next().await {
        let m = chunks.start + i as u64;
        let bytes = r?;
        if m == n {
            wanted = Some(bytes);
        } else {
            cache.insert(ChunkKey::new(object.clone(), m), bytes).await;
        }
    }
    wanted.ok_or_else(|| RsmError::Corrupt {
        object: key.to_string(),
        detail: format!("chunk {n} was not in its GET"),
    })
}

/// Chunk `n`, then following chunks not yet cached, while the stored bytes stay within
/// the rest of the requested range (up to `max_get_bytes`) plus `prefetch.max.size`.
fn plan(
    inner: &EngineShared,
    cache: &ChunkCache,
    index: &ChunkIndex,
    object: &Arc<str>,
    n: u64,
    range_end: u64,
) -> Option<Group> {
    let first = index.chunk(n)?;
    let prefetch = inner.opts.prefetch_max_size;
    let mut range_budget = inner
        .opts
        .max_get_bytes
        .saturating_sub(first.transformed_len);
    let mut prefetch_budget = prefetch;
    let mut stop = n + 1;
    let mut bytes = first.transformed_len;
    while stop < index.chunk_count() && stop - n < super::fetch::MAX_CHUNKS_PER_GET {
        let Some(s) = index.chunk(stop) else { break };
        if cache.contains(&ChunkKey::new(object.clone(), stop)) {
            break;
        }
        if stop < range_end && s.transformed_len <= range_budget {
            range_budget -= s.transformed_len;
        } else if s.transformed_len <= prefetch_budget {
            prefetch_budget -= s.transformed_len;
        } else {
            break;
        }
        bytes += s.transformed_len;
        stop += 1;
    }
    Some(Group {
        chunks: n..stop,
        range: ByteRange {
            start: first.transformed_start,
            end: first.transformed_start + bytes.max(1) - 1,
        },
    })
}
