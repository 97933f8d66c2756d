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
//! **From one segment to the next.** A lagging consumer reads a partition's segments one
//! after the other: when it has read a segment to (within [`FOLLOW_SLACK`] of) its end,
//! the broker's next fetch opens the partition's next segment, the one whose
//! `startOffset` is this one's `endOffset + 1` (`RemoteLogSegmentMetadata`), at the
//! position of that offset, 0. A stream that reads ahead and hands out bytes up to there
//! records, per partition (topic id + partition), the start offset it leads to; the
//! next open of that partition at that start offset, in its first [`FOLLOW_SLACK`]
//! bytes, continues the reader (read-ahead at once, not after [`CONFIRMING_OPENS`] more
//! opens) and uses the record up. Measured through a Kafka 4.2 broker at cloud latency
//! (docs/benchmarks.md), the confirming opens at the start of each 64 MiB segment cost
//! the catch-up about 0.4 s per segment. A random read never records a next segment (it
//! does not read ahead), so it never makes the next segment's first open read ahead.
//!
//! Memory: at most [`MAX_TRACKED`] segments and [`MAX_TRACKED`] partitions (a few words
//! each, forgotten after [`TRACK_TTL`]).

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
/// Bytes of slack, both ways, for "read to its end" and "opens the next segment at its
/// start" (see the module docs): one broker fetch (`max.partition.fetch.bytes`, 1 MiB).
pub(crate) const FOLLOW_SLACK: u64 = 1 << 20;

/// The segment a stream opens, as the detection sees it: its `.log` object, its
/// partition and offsets (`RemoteLogSegmentMetadata`), its original size in bytes.
pub(crate) struct Opened<'a> {
    /// The `.log` object key.
    pub object: &'a str,
    /// Topic id (most, least significant bits) and partition.
    pub partition: (i64, i64, i32),
    /// `startOffset`.
    pub start_offset: i64,
    /// `endOffset` (inclusive).
    pub end_offset: i64,
    /// The original segment's size in bytes.
    pub size: u64,
}

/// Per partition: the start offset of the segment a sequential reader goes to next,
/// when one read its segment to the end (see the module docs).
type NextSegment = Arc<Mutex<Option<i64>>>;
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
    next_segments: AsyncCache<(i64, i64, i32), NextSegment>,
}

/// One stream's read position, updated as it hands bytes out.
pub(crate) struct Cursor {
    position: Arc<Mutex<Position>>,
    start: u64,
    served: u64,
    /// For a stream that reads ahead: where its partition's next segment starts (its
    /// record, that segment's start offset, and the byte from which this one counts as
    /// read to its end); taken once recorded.
    follow: Option<(NextSegment, i64, u64)>,
}

impl Cursor {
    /// `n` more bytes handed out.
    pub(crate) fn advance(&mut self, n: u64) {
        self.served += n;
        let at = self.start + self.served;
        {
            let mut p = self.position.lock().unwrap_or_else(|e| e.into_inner());
            // Only while no later stream of the segment has opened.
            if p.start == self.start {
                p.end = p.end.max(at);
            }
        }
        if self.follow.as_ref().is_some_and(|(_, _, near)| at >= *near)
            && let Some((next, offset, _)) = self.follow.take()
        {
            *next.lock().unwrap_or_else(|e| e.into_inner()) = Some(offset);
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
            next_segments: AsyncCache::builder("read-next-segment")
                .bound(Bound::Entries(MAX_TRACKED))
                .ttl(Some(TRACK_TTL))
                .build(),
        }
    }

    /// Records an open of `segment` at `start`; true when it reads ahead: the
    /// [`CONFIRMING_OPENS`]th (or later) open in a row that continued the previous stream
    /// of that object, or the open of the segment a sequential reader of its partition
    /// goes to next (see the module docs).
    pub(crate) async fn open(&self, segment: &Opened<'_>, start: u64) -> (bool, Cursor) {
        let next = self
            .next_segments
            .get_or_load(segment.partition, async {
                Ok::<_, RsmError>(Arc::new(Mutex::new(None)))
            })
            .await
            .unwrap_or_else(|_| Arc::new(Mutex::new(None)));
        let follows = start < FOLLOW_SLACK && {
            let mut n = next.lock().unwrap_or_else(|e| e.into_inner());
            let hit = *n == Some(segment.start_offset);
            if hit {
                *n = None;
            }
            hit
        };
        let object = segment.object;
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
            } else if follows {
                CONFIRMING_OPENS
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
        let follow = (ahead && segment.end_offset < i64::MAX).then(|| {
            (
                next,
                segment.end_offset + 1,
                segment.size.saturating_sub(FOLLOW_SLACK),
            )
        });
        (
            ahead,
            Cursor {
                position,
                start,
                served: 0,
                follow,
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

    fn at<'a>(object: &'a str, partition: i32, start_offset: i64, size: u64) -> Opened<'a> {
        Opened {
            object,
            partition: (1, 2, partition),
            start_offset,
            end_offset: start_offset + 99,
            size,
        }
    }

    #[tokio::test]
    async fn a_reader_that_reaches_the_end_reads_the_next_segment_ahead_at_once() {
        let r = Positions::new();
        let size = 4 * FOLLOW_SLACK;
        let a = at("a", 0, 0, size);
        let mut pos = 0;
        for want in [false, false, true, true] {
            let (ahead, mut c) = r.open(&a, pos).await;
            assert_eq!(ahead, want, "open of a at {pos}");
            c.advance(FOLLOW_SLACK);
            pos += FOLLOW_SLACK - 10;
        }
        // Another partition's segment at that offset, or this partition's at another
        // offset: not the next segment.
        assert!(!r.open(&at("x", 1, 100, size), 0).await.0);
        assert!(!r.open(&at("y", 0, 101, size), 0).await.0);
        // The next segment, at its start: read ahead, and its second open too.
        let b = at("b", 0, 100, size);
        let (ahead, mut c) = r.open(&b, 0).await;
        assert!(ahead, "the next segment's first open");
        c.advance(1000);
        assert!(r.open(&b, 900).await.0, "its second open");
        // The record is used up: a re-read of the next segment from 0 is a random read.
        assert!(!r.open(&at("b2", 0, 100, size), 0).await.0);
    }

    #[tokio::test]
    async fn a_reader_that_stops_short_of_the_end_or_random_reads_lead_nowhere() {
        let r = Positions::new();
        let size = 8 * FOLLOW_SLACK;
        let a = at("a", 0, 0, size);
        let mut pos = 0;
        // Sequential, but it stops more than FOLLOW_SLACK before the end.
        for _ in 0..4 {
            let (_, mut c) = r.open(&a, pos).await;
            c.advance(FOLLOW_SLACK);
            pos += FOLLOW_SLACK;
        }
        assert!(!r.open(&at("b", 0, 100, size), 0).await.0);
        // Random reads up to the very end of a segment record nothing.
        let c2 = at("c", 0, 200, size);
        for p in [size - 100, 0, size - 50] {
            let (ahead, mut c) = r.open(&c2, p).await;
            assert!(!ahead);
            c.advance(100);
        }
        assert!(!r.open(&at("d", 0, 300, size), 0).await.0);
    }

    #[tokio::test]
    async fn the_second_continuation_in_a_row_reads_ahead_and_jumps_reset() {
        let r = Positions::new();
        let (o, p) = (at("o", 0, 0, 1 << 40), at("p", 0, 0, 1 << 40));
        let (ahead, mut c) = r.open(&o, 0).await;
        assert!(!ahead, "first open");
        c.advance(100);
        let (ahead, mut c) = r.open(&o, 95).await;
        assert!(!ahead, "one continuation");
        c.advance(100);
        let (ahead, mut c) = r.open(&o, 190).await;
        assert!(ahead, "two continuations in a row");
        c.advance(100);
        // Past the end of what the last stream handed out: a jump.
        let (ahead, mut c) = r.open(&o, 291).await;
        assert!(!ahead);
        c.advance(100);
        let (ahead, _) = r.open(&o, 391).await;
        assert!(!ahead, "one continuation after a jump");
        // Another object has its own position.
        assert!(!r.open(&p, 195).await.0);
    }
}
