//! The fetch path through a chunk store: the configured chunk cache
//! (`fetch.chunk.cache.*`), or, for a sequential reader when none is configured, the
//! engine's default read-ahead store (`engine/readahead.rs`).
//!
//! Every chunk of the requested range is asked of the store in order. On entering chunk
//! `n` (hit or miss) the stream first starts read-ahead of the chunks after it
//! ([`prefetch`]), then gets chunk `n`: from the store, else from the read-ahead load
//! already running for it, else with its own load — one chunk, its stored bytes split into
//! up to `tsm.fetch.gets.in.flight` parallel sub-range GETs (`engine/window.rs`),
//! concatenated, restored (decrypt, decompress), cached, returned. The wanted chunk never
//! waits for prefetched ones: each read-ahead chunk is its own GET in its own task.
//!
//! A plain segment read ahead into the default store ([`plain_then_chunks`], picked by
//! `engine/fetch.rs`) starts with the exact bytes up to the next chunk boundary (one
//! [`Window`]) and only then goes chunk by chunk, its read-ahead starting at that
//! boundary when the stream opens: the exact reads that came before it handed out the
//! start of the chunk it opens in, which a whole-chunk load would download again (on
//! 16 MiB segments of 4 MiB chunks, 1.125x the bytes of a catch-up instead of 1x).
//!
//! Read-ahead covers the chunks after chunk `n` that the stream certainly reads (the rest
//! of the requested range when the caller gave an end, else the chunks of the broker's
//! first read: `first_read_bytes` from the start, 1 MiB), then the stored bytes after
//! chunk `n` up to `fetch.chunk.cache.prefetch.max.size` with a chunk cache (the Java
//! plugin's meaning: on every read) or `tsm.fetch.read.ahead.bytes` when the stream
//! is the second or later in a row to continue the previous one (`engine/sequential.rs`)
//! or has itself read a whole chunk past its first read (a tool restoring a segment),
//! whichever is larger — but never more original bytes than half the store's bound,
//! shared by the segments reading ahead at the time (at least one chunk): read-ahead that
//! outruns the store evicts its own chunks before they are read ([`store_room`]).
//! Per segment at most `tsm.fetch.gets.in.flight` read-ahead loads run at once; chunks
//! already stored or loading are skipped. A read-ahead load runs only when its memory
//! (stored + original chunk) is free in the budget right now (it never waits for
//! budget), holds it until the chunk is stored, and is bounded by the store call
//! deadlines and `fetch.chunk.cache.get.timeout.ms`. Read-ahead loads outlive the stream
//! that started them (their point is the broker's next fetch); nothing starts after the
//! stream is dropped; `close` cancels them and `shutdown` waits for them (bounded,
//! `engine/lifecycle/close.rs`). A failed or cancelled load caches nothing. Chunks are
//! keyed by the segment's generation when the stream opened (`engine/generations.rs`):
//! what a stream opened before a delete or overwrite stores (its own loads and its
//! read-ahead loads, whenever they end) no later stream finds (`engine/readahead.rs`).
//!
//! Memory: the wanted chunk's load (its sub-range GETs and the restored chunk, reserved
//! while it runs) plus the read-ahead loads (reserved each) plus the store's own bound.

use std::ops::Range;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::future::FutureExt;
use futures::stream;
use futures::{StreamExt, TryStreamExt};
use tsm_codec::ChunkIndex;

use super::decode::{Restore, restore};
use super::lifecycle::budget::stored_chunk_bound;
use super::lifecycle::deadline::bounded;
use super::ranges::{PlanSizes, chunk_plan};
use super::window::Window;
use super::{EngineShared, SegmentStream};
use crate::RsmError;
use crate::cache::{ChunkCache, ChunkKey, SharedError};
use crate::config::names as config_names;
use crate::manifest::integrity::SegmentIntegrity;
use crate::transform::SegmentTransform;
use tsm_storage::ObjectKey;

/// What one stream through a store reads.
pub(super) struct Read {
    pub(super) key: ObjectKey,
    pub(super) index: Arc<ChunkIndex>,
    pub(super) transform: Arc<SegmentTransform>,
    /// The segment's integrity data: each stored chunk is checked against its digest.
    pub(super) digests: Option<Arc<SegmentIntegrity>>,
    /// The segment's generation when the stream opened: part of its chunks' keys
    /// (`engine/generations.rs`).
    pub(super) generation: u64,
    pub(super) chunks: Range<u64>,
    pub(super) start: u64,
    pub(super) last: u64,
    /// Chunks before this one are certainly read (the requested range when the caller gave
    /// an end, else the chunks of the broker's first read, `first_read_bytes`): loaded
    /// ahead in parallel whatever `ahead` says.
    pub(super) until: u64,
    /// Stored bytes to read ahead of the chunk being read (besides the range's rest).
    pub(super) ahead: u64,
}

/// The lazy stream of original bytes `r.start..=r.last` through `store`.
pub(super) fn cached_stream(inner: Arc<EngineShared>, store: ChunkCache, r: Read) -> SegmentStream {
    through_store(inner, store, Arc::new(r))
}

/// A plain segment's read-ahead stream that downloads nothing twice (see the module
/// docs): `head` (the exact bytes from the start up to the next chunk boundary, handed
/// through as they arrive), then chunks `r.chunks` (from that boundary on) through
/// `store`. Read-ahead of the chunks from the boundary on starts now, so they load while
/// `head` is read.
pub(super) fn plain_then_chunks(
    inner: Arc<EngineShared>,
    store: ChunkCache,
    r: Read,
    head: SegmentStream,
) -> SegmentStream {
    let r = Arc::new(r);
    let object: Arc<str> = Arc::from(r.key.as_str());
    prefetch(&inner, &store, &r, &object, r.chunks.start, r.ahead);
    head.chain(through_store(inner, store, r)).boxed()
}

/// True when chunk `key` is in `store` or a read-ahead load of it is running.
pub(super) fn stored_or_loading(inner: &EngineShared, store: &ChunkCache, key: &ChunkKey) -> bool {
    store.contains(key)
        || inner
            .reads
            .inflight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(key)
}

/// [`cached_stream`] of a shared [`Read`].
fn through_store(inner: Arc<EngineShared>, store: ChunkCache, r: Arc<Read>) -> SegmentStream {
    let object: Arc<str> = Arc::from(r.key.as_str());
    let chunk_size = u64::from(r.index.original_chunk_size());
    let (start, last) = (r.start, r.last);
    stream::iter(r.chunks.clone())
        .then(move |n| {
            let (inner, store, r, object) =
                (inner.clone(), store.clone(), r.clone(), object.clone());
            async move {
                // A stream read past the chunks of its first read is a sequential reader
                // itself (a tool restoring a whole segment): read ahead for it too.
                let ahead = if n > r.until {
                    r.ahead.max(inner.opts.read_ahead_bytes)
                } else {
                    r.ahead
                };
                prefetch(&inner, &store, &r, &object, n + 1, ahead);
                let key = ChunkKey::of_generation(object.clone(), r.generation, n);
                let loader = wanted(inner.clone(), store.clone(), r.clone(), key.clone());
                let bytes = bounded(
                    inner.opts.chunk_get_timeout,
                    config_names::CHUNK_CACHE_GET_TIMEOUT_MS,
                    || format!("chunk {n} of {object}"),
                    store.get_or_load(key, loader),
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

/// Chunk `key.chunk` for the stream that needs it: the read-ahead load already running
/// for it (or just stored by one), else its own load (split into parallel sub-range
/// GETs).
async fn wanted(
    inner: Arc<EngineShared>,
    store: ChunkCache,
    r: Arc<Read>,
    key: ChunkKey,
) -> Result<Bytes, RsmError> {
    let running = inner
        .reads
        .inflight
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&key)
        .cloned();
    // A read-ahead load that already failed is not joined: until its task takes it out of
    // the map, joining it would hand a reader who retries right away the same error.
    if let Some(load) = running.filter(|l| !l.peek().is_some_and(Result::is_err)) {
        return load.await.map_err(RsmError::from_shared);
    }
    // A read-ahead load that ended between the store's miss and now.
    if let Some(bytes) = store.get(&key).await {
        return Ok(bytes);
    }
    let n = key.chunk;
    let original = r.index.chunk(n).map_or(0, |c| c.original_len);
    // The restored chunk's memory (the GETs reserve their own).
    let _held = inner
        .lifecycle
        .pools
        .reads
        .reserve(
            original,
            inner.lifecycle.deadlines.first_byte,
            config_names::STORAGE_GET_FIRST_BYTE_TIMEOUT_MS,
            || format!("chunk {n} of {}", r.key),
        )
        .await?;
    load_chunk(&inner, &r, n, inner.opts.gets_in_flight, true).await
}

/// Downloads chunk `n` in up to `parts` sub-range GETs (reserving them from the budget
/// when `reserve`), concatenates and restores it.
async fn load_chunk(
    inner: &Arc<EngineShared>,
    r: &Read,
    n: u64,
    parts: usize,
    reserve: bool,
) -> Result<Bytes, RsmError> {
    let c = r.index.chunk(n).ok_or_else(|| RsmError::Corrupt {
        object: r.key.to_string(),
        detail: format!("chunk {n} is not in the chunk index"),
    })?;
    let sizes = PlanSizes {
        first_read: 0,
        part_bytes: c.transformed_len,
        max_parts: parts,
        min_part: inner.opts.min_sub_range_bytes,
    };
    let plan = chunk_plan(r.index.clone(), n..n + 1, sizes);
    let mut window = Window::new(inner.clone(), r.key.clone(), plan, parts).reserving(reserve);
    let mut items = Vec::new();
    while let Some(b) = window.next().await {
        items.push(b?);
    }
    let stored = if items.len() == 1 {
        items.pop().unwrap_or_default()
    } else {
        let mut buf = BytesMut::with_capacity(c.transformed_len as usize);
        for b in items {
            buf.extend_from_slice(&b);
        }
        buf.freeze()
    };
    let mut restored = restore(
        stream::once(async move { Ok(stored) }).boxed(),
        Restore {
            key: r.key.clone(),
            index: r.index.clone(),
            transform: r.transform.clone(),
            digests: r.digests.clone(),
            failures: inner.stats.integrity_failures.clone(),
            first: n,
            max_in_flight: 1,
            ramped: false,
        },
    );
    restored.next().await.unwrap_or_else(|| {
        Err(RsmError::Corrupt {
            object: r.key.to_string(),
            detail: format!("chunk {n} was not restored"),
        })
    })
}

/// Original bytes one segment may read ahead into `store`: half its bound, shared by the
/// segments reading ahead right now (`u64::MAX` for an unbounded store). Read-ahead that
/// outruns the store evicts its own chunks before the reader gets to them (LRU: a chunk
/// loaded ahead is older than the chunks read since) and downloads them again: 32 MiB of
/// stored bytes ahead on a compressed segment are ~144 MiB of original chunks, and a
/// catch-up on the filesystem downloaded 1.7x the stored bytes through the 64 MiB default
/// store. The other half holds the chunks being read and just read.
fn store_room(inner: &EngineShared, store: &ChunkCache, object: &str) -> u64 {
    store.capacity_bytes().map_or(u64::MAX, |cap| {
        cap / 2 / inner.reads.segments_reading_ahead(object) as u64
    })
}

/// Starts read-ahead loads of the chunks from `from` on: those before `r.until`, then
/// those within `ahead` stored bytes (see the module docs). Never waits.
fn prefetch(
    inner: &Arc<EngineShared>,
    store: &ChunkCache,
    r: &Arc<Read>,
    object: &Arc<str>,
    from: u64,
    ahead: u64,
) {
    if (ahead == 0 && from >= r.until) || inner.closing.is_cancelled() {
        return;
    }
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let max = inner.opts.gets_in_flight;
    let mut running = inner.reads.inflight_for(object, r.generation);
    let room = store_room(inner, store, object);
    let (mut covered, mut covered_original) = (0u64, 0u64);
    let mut m = from;
    while running < max && m < r.index.chunk_count() {
        let Some(c) = r.index.chunk(m) else { break };
        covered += c.transformed_len;
        covered_original += c.original_len;
        // The first chunk ahead is always in reach; more only while they fit the room.
        if m >= r.until && (covered > ahead || (m > from && covered_original > room)) {
            break;
        }
        let key = ChunkKey::of_generation(object.clone(), r.generation, m);
        let n = m;
        m += 1;
        if store.contains(&key) {
            continue;
        }
        let mut inflight = inner
            .reads
            .inflight
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if inflight.contains_key(&key) {
            continue;
        }
        let Some(held) = inner
            .lifecycle
            .pools
            .reads
            .try_reserve(c.original_len + stored_chunk_bound(c.original_len))
        else {
            break;
        };
        let load = {
            let (inner, r) = (inner.clone(), r.clone());
            async move {
                let _held = held;
                bounded(
                    inner.opts.chunk_get_timeout,
                    config_names::CHUNK_CACHE_GET_TIMEOUT_MS,
                    || format!("read-ahead of chunk {n} of {}", r.key),
                    load_chunk(&inner, &r, n, 1, false),
                )
                .await
                .map_err(Arc::new)
            }
        }
        .boxed()
        .shared();
        inflight.insert(key.clone(), load.clone());
        drop(inflight);
        running += 1;
        let (inner, store) = (inner.clone(), store.clone());
        inner.reads.tasks.clone().spawn_on(
            async move {
                // `shutdown` cancels read-ahead (its point was the next fetch).
                let r = tokio::select! {
                    r = load => r,
                    () = inner.closing.cancelled() => Err(Arc::new(RsmError::Closed)),
                };
                if let Err(e) = &r {
                    tracing::debug!(error = %e, chunk = key.chunk, "read-ahead failed");
                }
                // Under the stream's generation: if the segment was deleted or overwritten
                // meanwhile, no later call looks it up (`engine/readahead.rs`).
                inner.reads.finish(&key, r.ok(), &store).await;
            },
            &rt,
        );
    }
}
