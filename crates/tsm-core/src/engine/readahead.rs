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
//! Delete and overwrite (`EngineShared::invalidate`) against loads in flight: each load's
//! entry carries its own id; a finishing load stores its chunk only while its own entry
//! is still in `inflight` ([`ReadAhead::finish`]), and it checks, stores and removes its
//! entry under `settle` shared, while invalidation forgets the segment's entries
//! ([`ReadAhead::forget`]) and drops its stored chunks under `settle` exclusive. So a load
//! either finished before the invalidation (which then drops its chunk) or sees its entry
//! gone and stores nothing; it never stores a deleted or overwritten segment's chunk, nor
//! removes the entry of a newer load of the same chunk. Beneath this, every chunk key holds
//! the segment's generation (`engine/generations.rs`), which invalidation ends: a chunk
//! stored under an ended generation (by any load, a stream's own included) is never
//! looked up again.
//!
//! The loads run as tasks tracked in `tasks`; `shutdown` cancels them (the engine's close
//! token) and waits for them, bounded (`engine/lifecycle/close.rs`).
//!
//! The next segment is not read ahead. The plugin sees only the segment the broker asks
//! for (`RemoteLogSegmentMetadata`); which segment follows is the broker's knowledge (its
//! RemoteLogMetadataManager). The next segment's objects start at `endOffset + 1`, but
//! their key also holds a segment id that is a fresh random UUID per copy attempt: finding
//! them takes a LIST of the partition's prefix, which may show several candidates (a
//! retried copy, an orphan of a failed one, a segment of another leader epoch that the
//! broker will never read) and cannot see `object_prefix` / `object_key` overrides from that
//! segment's custom metadata. Guessing would download segments the broker may never ask
//! for, so read-ahead stops at the end of the segment; the broker's first fetch of the
//! next segment is an exact 1 MiB read (plain) or one chunk in parallel sub-range GETs,
//! and the second fetch after it turns read-ahead on again.
//!
//! Memory: `inflight` holds at most `tsm.fetch.gets.in.flight` loads per segment being
//! read ahead, each holding its chunk's reservation.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
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

/// One read-ahead load in flight: its id (unique per engine) and the load.
pub(crate) struct Inflight {
    pub(crate) id: u64,
    pub(crate) load: InflightLoad,
}

/// The engine's read-ahead state (see the module docs).
pub(crate) struct ReadAhead {
    /// Chunk loads started by read-ahead, by chunk.
    pub(crate) inflight: Mutex<HashMap<ChunkKey, Inflight>>,
    next_id: AtomicU64,
    /// Shared by a finishing load while it stores its chunk, exclusive while a segment is
    /// invalidated (see the module docs).
    settle: tokio::sync::RwLock<()>,
    /// The load tasks (`shutdown` waits for them).
    pub(crate) tasks: tokio_util::task::TaskTracker,
    /// The default read-ahead store (`None` when a chunk cache is configured or read-ahead
    /// is off).
    pub(crate) store: Option<ChunkCache>,
    /// Its bound, bytes (0 without it).
    pub(crate) store_bytes: u64,
}

impl ReadAhead {
    /// The state of one engine; `store_bytes` > 0 builds the default store of that bound
    /// (metrics `cache.readahead.*` in `registry`).
    pub(crate) fn new(store_bytes: u64, registry: &crate::metrics::MetricsRegistry) -> Self {
        Self {
            inflight: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            settle: tokio::sync::RwLock::new(()),
            tasks: tokio_util::task::TaskTracker::new(),
            store_bytes,
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

    /// A fresh load id (unique per engine) for an [`Inflight`] entry.
    pub(crate) fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Load `id` of `key` ended with `bytes` (`None`: failed or cancelled): stores them in
    /// `store` and removes its entry, both only if the entry is still its own (see the
    /// module docs).
    pub(crate) async fn finish(
        &self,
        key: &ChunkKey,
        id: u64,
        bytes: Option<Bytes>,
        store: &ChunkCache,
    ) {
        let _settled = self.settle.read().await;
        let ours = |map: &HashMap<ChunkKey, Inflight>| map.get(key).is_some_and(|e| e.id == id);
        let current = ours(&self.inflight.lock().unwrap_or_else(|e| e.into_inner()));
        if !current {
            // Forgotten (its segment was deleted or overwritten): store nothing.
            return;
        }
        if let Some(bytes) = bytes {
            store.insert(key.clone(), bytes).await;
        }
        let mut map = self.inflight.lock().unwrap_or_else(|e| e.into_inner());
        if ours(&map) {
            map.remove(key);
        }
    }

    /// Runs `drop_chunks` (which drops `object`'s stored chunks) after forgetting the
    /// read-ahead loads in flight for `object`, with no load storing a chunk meanwhile:
    /// they finish, but store nothing (its segment was deleted or overwritten).
    pub(crate) async fn forget<F: std::future::Future<Output = ()>>(
        &self,
        object: &str,
        drop_chunks: F,
    ) {
        let _exclusive = self.settle.write().await;
        self.inflight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|k, _| &*k.object != object);
        drop_chunks.await;
    }

    /// Read-ahead loads in flight, all segments.
    pub(crate) fn loads(&self) -> usize {
        self.inflight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    /// Read-ahead loads in flight for `object`.
    pub(crate) fn inflight_for(&self, object: &str) -> usize {
        self.inflight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .filter(|k| &*k.object == object)
            .count()
    }
}
