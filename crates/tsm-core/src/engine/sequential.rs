//! Sequential-access detection across the broker's consecutive `fetchLogSegment` calls on
//! one segment: called by `engine/fetch.rs` when a stream opens (does it read ahead?) and
//! as the stream hands bytes out ([`Cursor`]); the loads themselves are
//! `engine/readahead.rs`'s.
//!
//! The broker reads a lagging consumer's partition as a series of calls: open at a
//! position, read about `max.partition.fetch.bytes` (1 MiB), close; the next call opens
//! where the records it handed out end (at or a partial batch before where the previous
//! stream stopped). [`Positions::open`] records, per `.log` object, where the last stream
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
//! Memory: at most [`MAX_TRACKED`] segments (a few words each, forgotten after
//! [`TRACK_TTL`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::RsmError;
use crate::cache::{AsyncCache, Bound};

/// Segments whose last read position is remembered.
pub(crate) const MAX_TRACKED: u64 = 4096;
/// How long a read position is remembered without a new open.
pub(crate) const TRACK_TTL: Duration = Duration::from_secs(600);
/// Continuations in a row (see the module docs) after which an open reads ahead.
pub(crate) const CONFIRMING_OPENS: u32 = 2;
/// Where the last stream of one segment started and how far it was read (original bytes).
#[derive(Debug, Default)]
struct Position {
    start: u64,
    end: u64,
    /// Opens in a row that continued the previous stream, this one included.
    run: u32,
}

/// The read positions of the segments being read (see the module docs).
pub(crate) struct Positions {
    positions: AsyncCache<String, Arc<Mutex<Position>>>,
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

impl Positions {
    /// No position known yet.
    pub(crate) fn new() -> Self {
        Self {
            positions: AsyncCache::builder("read-position")
                .bound(Bound::Entries(MAX_TRACKED))
                .ttl(Some(TRACK_TTL))
                .build(),
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
        let r = Positions::new();
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
