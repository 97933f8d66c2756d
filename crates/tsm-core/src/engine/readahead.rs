//! Sequential-access detection across the broker's consecutive `fetchLogSegment` calls on
//! one segment, and the read-ahead state they share.
//!
//! The broker reads a lagging consumer's partition as a series of calls: open at a
//! position, read about `max.partition.fetch.bytes` (1 MiB), close; the next call opens
//! where the records it handed out end (at or a partial batch before where the previous
//! stream stopped). [`ReadAhead::open`] records, per `.log` object, where the last stream
//! started and how far it was read ([`Cursor`]); an open continues the previous stream
//! when it starts after that stream's start and at or before the end of what it handed
//! out (the broker's next fetch never starts past what the previous one read). Read-ahead
//! starts with the [`CONFIRMING_OPENS`]th continuation in a row: a random read lands
//! inside the previous read now and then (1 MiB of a 16 MiB segment: one in 16), two in a
//! row rarely, while a lagging consumer's fetches are continuations one after the other.
//! Anything else (the first open of a segment, a jump, a re-read of the same position)
//! starts the count again: no read-ahead. Two consumers interleaving on one segment
//! overwrite each other's position (each then looks random to the other now and then:
//! less read-ahead, never wrong bytes).
//!
//! Read-ahead itself (`engine/cached.rs`) puts chunks into a store: the configured chunk
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
//! removes the entry of a newer load of the same chunk.
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
//! Memory: the position map holds at most [`MAX_TRACKED`] segments (a few words each,
//! forgotten after [`TRACK_TTL`]); `inflight` at most `tsm.fetch.gets.in.flight` loads per
//! segment being read ahead, each holding its chunk's reservation.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::future::{BoxFuture, Shared};

use crate::RsmError;
use crate::cache::{AsyncCache, Bound, ChunkCache, ChunkKey};

/// Segments whose last read position is remembered.
pub(crate) const MAX_TRACKED: u64 = 4096;
/// How long a read position is remembered without a new open.
pub(crate) const TRACK_TTL: Duration = Duration::from_secs(600);
/// Continuations in a row (see the module docs) after which an open reads ahead.
pub(crate) const CONFIRMING_OPENS: u32 = 2;
/// How long a read-ahead chunk stays in the default store unless evicted earlier.
pub(crate) const STORE_TTL: Duration = Duration::from_secs(120);

/// A chunk load started by read-ahead, awaited by whoever needs the chunk.
pub(crate) type InflightLoad = Shared<BoxFuture<'static, Result<Bytes, Arc<RsmError>>>>;

/// One read-ahead load in flight: its id (unique per engine) and the load.
pub(crate) struct Inflight {
    pub(crate) id: u64,
    pub(crate) load: InflightLoad,
}

/// Where the last stream of one segment started and how far it was read (original bytes).
#[derive(Debug, Default)]
struct Position {
    start: u64,
    end: u64,
    /// Opens in a row that continued the previous stream, this one included.
    run: u32,
}

/// The engine's read-ahead state (see the module docs).
pub(crate) struct ReadAhead {
    positions: AsyncCache<String, Arc<Mutex<Position>>>,
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

/// One stream's read position, updated as it hands bytes out.
pub(crate) struct Cursor {
    position: Arc<Mutex<Position>>,
    start: u64,
    served: u64,
}

impl Cursor {
    /// `n` more bytes handed out.
    pub(crate) fn advance(&mut self, n: u64) {
        self.served += n;
        let mut p = self.position.lock().unwrap_or_else(|e| e.into_inner());
        // Only while no later stream of the segment has opened.
        if p.start == self.start {
            p.end = p.end.max(self.start + self.served);
        }
    }
}

impl ReadAhead {
    /// The state of one engine; `store_bytes` > 0 builds the default store of that bound
    /// (metrics `cache.readahead.*` in `registry`).
    pub(crate) fn new(store_bytes: u64, registry: &crate::metrics::MetricsRegistry) -> Self {
        Self {
            positions: AsyncCache::builder("read-position")
                .bound(Bound::Entries(MAX_TRACKED))
                .ttl(Some(TRACK_TTL))
                .build(),
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

    /// Records an open of `object` at `start`; true when it reads ahead: the
    /// [`CONFIRMING_OPENS`]th (or later) open in a row that continued the previous stream
    /// of that object (see the module docs).
    pub(crate) async fn open(&self, object: &str, start: u64) -> (bool, Cursor) {
        let position = self
            .positions
            .get_or_load(object.to_string(), async {
                Ok::<_, RsmError>(Arc::new(Mutex::new(Position {
                    start: u64::MAX,
                    end: 0,
                    run: 0,
                })))
            })
            .await
            .unwrap_or_else(|_| Arc::new(Mutex::new(Position::default())));
        let ahead = {
            let mut p = position.lock().unwrap_or_else(|e| e.into_inner());
            let run = if is_sequential(p.start, p.end, start, 0) {
                p.run.saturating_add(1)
            } else {
                0
            };
            *p = Position {
                start,
                end: start,
                run,
            };
            run >= CONFIRMING_OPENS
        };
        (
            ahead,
            Cursor {
                position,
                start,
                served: 0,
            },
        )
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

/// The detection rule: an open at `start` continues a stream that opened at `prev_start`
/// (`u64::MAX`: none) and handed out bytes up to `prev_end` (exclusive) when
/// `prev_start < start <= prev_end + slack`.
pub fn is_sequential(prev_start: u64, prev_end: u64, start: u64, slack: u64) -> bool {
    prev_start != u64::MAX && prev_start < start && start <= prev_end.saturating_add(slack)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_rule() {
        // First open of a segment: random.
        assert!(!is_sequential(u64::MAX, 0, 0, 100));
        // The broker's next fetch: at, just before or just after the previous end.
        assert!(is_sequential(0, 1000, 1000, 100));
        assert!(is_sequential(0, 1000, 990, 100));
        assert!(is_sequential(0, 1000, 1100, 100));
        // A jump, a re-read, a step back.
        assert!(!is_sequential(0, 1000, 1101, 100));
        assert!(!is_sequential(500, 1000, 500, 100));
        assert!(!is_sequential(500, 1000, 100, 100));
    }

    #[tokio::test]
    async fn the_second_continuation_in_a_row_reads_ahead_and_jumps_reset() {
        let r = ReadAhead::new(0, &crate::metrics::MetricsRegistry::new());
        let (ahead, mut c) = r.open("o", 0).await;
        assert!(!ahead, "first open");
        c.advance(100);
        let (ahead, mut c) = r.open("o", 95).await;
        assert!(!ahead, "one continuation");
        c.advance(100);
        let (ahead, mut c) = r.open("o", 190).await;
        assert!(ahead, "two continuations in a row");
        c.advance(100);
        // Past the end of what the last stream handed out: a jump.
        let (ahead, mut c) = r.open("o", 291).await;
        assert!(!ahead);
        c.advance(100);
        let (ahead, _) = r.open("o", 391).await;
        assert!(!ahead, "one continuation after a jump");
        // Another object has its own position.
        assert!(!r.open("p", 195).await.0);
    }
}
