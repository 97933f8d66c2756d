//! The read-ahead loads in flight and where they go: the state `engine/cached.rs` starts,
//! awaits and finishes read-ahead loads with (whether a stream reads ahead is
//! `engine/sequential.rs`'s call). Calls nothing else of the engine.
//!
//! Read-ahead (`engine/cached.rs`) puts chunks into a store: the configured chunk
//! cache (`fetch.chunk.cache.*`), else the default in-memory read-ahead store built here
//! (`tsm.fetch.read.ahead.store.bytes`, its bound carved out of the memory budget by the
//! engine). `inflight` holds the chunk loads read-ahead started, so a stream that needs a
//! chunk whose GET is already running waits for that GET instead of issuing its own.
//!
//! Delete and overwrite (`EngineShared::invalidate`) need nothing here: a load's key holds
//! the generation of the stream that started it (`engine/generations.rs`), which the
//! invalidation ends. A load ending after the invalidation stores its chunk and removes
//! its entry under a key no call started after the invalidation looks up (streams opened
//! before it may still find them: their own GET could give them the old bytes too), and a
//! newer load of the same chunk has another key, which the old one neither answers for
//! nor removes.
//! The old chunk is left to eviction (the store's bound; the default store's
//! [`STORE_TTL`]): invalidation drops the ended generation's chunks it finds, not those
//! stored after it. Within one generation a key has one load at a time: its entry is
//! inserted only while the key is absent (under the `inflight` lock, `engine/cached.rs`)
//! and removed only by its own load as it ends ([`ReadAhead::finish`]), so the entry a
//! load removes is its own. Invalidation leaves `inflight` alone: forgetting entries frees
//! no memory (a load's task holds the load and its reservation until it ends, bounded by
//! the deadlines) and would let a stream opened before the invalidation start a second
//! load of a key whose first one still runs and, ending, would remove the second's entry.
//! The per-segment limit counts the loads of the stream's generation only
//! ([`ReadAhead::inflight_for`]): an ended generation's loads do not hold back the new
//! one's read-ahead.
//!
//! The loads run as tasks tracked in `tasks`; `shutdown` cancels them (the engine's close
//! token) and waits for them, bounded (`engine/lifecycle/close.rs`).
//!
//! The next segment is not read ahead before the broker opens it. The plugin sees only
//! the segment the broker asks for (`RemoteLogSegmentMetadata`); which segment follows is
//! the broker's knowledge (its RemoteLogMetadataManager). The next segment's objects start
//! at `endOffset + 1`, but their key also holds a segment id that is a fresh random UUID
//! per copy attempt: finding them takes a LIST of the partition's prefix, which may show
//! several candidates (a retried copy, an orphan of a failed one, a segment of another
//! leader epoch that the broker will never read) and cannot see `object_prefix` /
//! `object_key` overrides from that segment's custom metadata. Guessing would download
//! segments the broker may never ask for, so read-ahead stops at the end of the segment.
//! From the broker's first fetch of the next segment on, it reads ahead again at once:
//! that open is recognised by its partition and start offset (`engine/sequential.rs`,
//! "From one segment to the next").
//!
//! Memory: `inflight` holds at most `tsm.fetch.gets.in.flight` loads per segment being
//! read ahead (per generation: an ended one's loads run out beside the new one's), each
//! holding its chunk's reservation from the memory budget.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::future::{BoxFuture, Shared};

use crate::RsmError;
use crate::cache::{Bound, ChunkCache, ChunkKey};

/// How long a read-ahead chunk stays in the default store unless evicted earlier.
pub(crate) const STORE_TTL: Duration = Duration::from_secs(120);

/// A chunk load started by read-ahead, awaited by whoever needs the chunk.
pub(crate) type InflightLoad = Shared<BoxFuture<'static, Result<Bytes, Arc<RsmError>>>>;

/// The engine's read-ahead state (see the module docs).
pub(crate) struct ReadAhead {
    /// Chunk loads started by read-ahead, by chunk (at most one per key, see the module
    /// docs).
    pub(crate) inflight: Mutex<HashMap<ChunkKey, InflightLoad>>,
    /// The load tasks (`shutdown` waits for them).
    pub(crate) tasks: tokio_util::task::TaskTracker,
    /// The default read-ahead store (`None` when a chunk cache is configured or read-ahead
    /// is off).
    pub(crate) store: Option<ChunkCache>,
    /// Its bound, bytes (0 without it).
    pub(crate) store_bytes: u64,
    /// A store that keeps nothing (bound 0): transformed segments read without a store
    /// go through the chunk path with it (one chunk load at a time, nothing kept).
    pub(crate) unstored: ChunkCache,
}

impl ReadAhead {
    /// The state of one engine; `store_bytes` > 0 builds the default store of that bound
    /// (metrics `cache.readahead.*` in `registry`).
    pub(crate) fn new(store_bytes: u64, registry: &crate::metrics::MetricsRegistry) -> Self {
        Self {
            inflight: Mutex::new(HashMap::new()),
            tasks: tokio_util::task::TaskTracker::new(),
            store_bytes,
            unstored: ChunkCache::memory_named(
                "unstored",
                Bound::Bytes(0),
                None,
                &crate::metrics::MetricsRegistry::new(),
            ),
            store: (store_bytes > 0).then(|| {
                ChunkCache::memory_named(
                    "readahead",
                    Bound::Bytes(store_bytes),
                    Some(STORE_TTL),
                    registry,
                )
            }),
        }
    }

    /// The load of `key` ended with `bytes` (`None`: failed or cancelled): stores them in
    /// `store`, then removes the load's entry (its own: see the module docs), in that order
    /// so a stream never misses both.
    pub(crate) async fn finish(&self, key: &ChunkKey, bytes: Option<Bytes>, store: &ChunkCache) {
        if let Some(bytes) = bytes {
            store.insert(key.clone(), bytes).await;
        }
        self.inflight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
    }

    /// Read-ahead loads in flight, all segments.
    pub(crate) fn loads(&self) -> usize {
        self.inflight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    /// Segments reading ahead right now (with loads in flight), `object` counted whether or
    /// not it has any: they share the store (`engine/cached.rs` divides it among them).
    pub(crate) fn segments_reading_ahead(&self, object: &str) -> usize {
        let map = self.inflight.lock().unwrap_or_else(|e| e.into_inner());
        let mut others: Vec<&str> = map
            .keys()
            .map(|k| &*k.object)
            .filter(|o| *o != object)
            .collect();
        others.sort_unstable();
        others.dedup();
        others.len() + 1
    }

    /// Read-ahead loads in flight for generation `generation` of `object`.
    pub(crate) fn inflight_for(&self, object: &str, generation: u64) -> usize {
        self.inflight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .filter(|k| &*k.object == object && k.generation == generation)
            .count()
    }
}
