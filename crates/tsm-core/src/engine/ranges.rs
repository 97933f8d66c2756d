//! Range arithmetic of the read path: which ranged GETs one fetch stream issues, in order.
//! Pure functions over byte offsets and the chunk index, called by `engine/fetch.rs` and
//! `engine/cached.rs`; the [`Part`]s they produce go to `engine/window.rs`, which issues the
//! GETs and hands their bytes out in plan order.
//!
//! - [`split`]: one range cut into at most `n` contiguous sub-ranges of at least `min`
//!   bytes (several GETs in flight for one chunk or one first read).
//! - [`plain_plan`]: a plain segment (no compression, no encryption): the exact requested
//!   original range (clamped by the caller to the segment). The first `first_read` bytes
//!   are split into parallel sub-ranges (eager parts: issued at once), the rest follows in
//!   parts of `part_bytes` (issued as the reader gets there).
//! - [`chunk_plan`]: a transformed segment: the stored span of the chunks holding the
//!   range. The first chunk's stored bytes are split into parallel sub-ranges (they are
//!   concatenated again before decrypt / decompress: the window yields them in order), the
//!   rest follows in GETs of whole chunks of at most `part_bytes` stored bytes (at least one
//!   chunk, at most `MAX_CHUNKS_PER_GET` chunks).
//!
//! Every plan covers its span exactly once, contiguously, in increasing order (property
//! tests in `tests/read_ranges_proptest.rs`).

use std::sync::Arc;

use tsm_codec::ChunkIndex;

use tsm_storage::ByteRange;

pub use super::window::Part;

/// Largest number of chunks fetched by one GET (keeps tiny `chunk.size` values from making
/// huge groups of per-chunk bookkeeping).
pub(super) const MAX_CHUNKS_PER_GET: u64 = 4096;

/// `range` cut into `k = clamp(len / min, 1, max_parts)` contiguous sub-ranges, in order,
/// whose lengths differ by at most one byte (the first `len % k` are one byte longer).
/// Each is at least `min` bytes unless `range` itself is shorter.
pub fn split(range: ByteRange, max_parts: usize, min: u64) -> Vec<ByteRange> {
    let len = range.len();
    let k = (len / min.max(1)).clamp(1, max_parts.max(1) as u64);
    let (base, extra) = (len / k, len % k);
    let mut out = Vec::with_capacity(k as usize);
    let mut s = range.start;
    for i in 0..k {
        let l = base + u64::from(i < extra);
        out.push(ByteRange {
            start: s,
            end: s + l - 1,
        });
        s += l;
    }
    out
}

/// How a stream's GETs are sized (bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanSizes {
    /// Plain segments: bytes of the first read, split into eager sub-ranges.
    pub first_read: u64,
    /// Largest GET after the eager ones.
    pub part_bytes: u64,
    /// Most sub-ranges one first read / first chunk is split into (GETs in flight).
    pub max_parts: usize,
    /// Smallest sub-range.
    pub min_part: u64,
}

/// The GETs of plain original bytes `start..=last` (see the module docs); `last <
/// u64::MAX` (a segment offset).
pub fn plain_plan(start: u64, last: u64, s: PlanSizes) -> impl Iterator<Item = Part> + Send {
    let first_end = last.min(start.saturating_add(s.first_read.max(1)) - 1);
    let eager = split(
        ByteRange {
            start,
            end: first_end,
        },
        s.max_parts,
        s.min_part,
    )
    .into_iter()
    .map(|range| Part { range, eager: true });
    let step = s.part_bytes.max(1);
    let mut next = first_end + 1;
    let rest = std::iter::from_fn(move || {
        if next > last {
            return None;
        }
        let end = last.min(next.saturating_add(step) - 1);
        let range = ByteRange { start: next, end };
        next = end + 1;
        Some(Part {
            range,
            eager: false,
        })
    });
    eager.chain(rest)
}

/// The GETs of the stored bytes of chunks `chunks` (see the module docs). Chunks missing
/// from the index end the plan (the caller checked the range against the index).
pub fn chunk_plan(
    index: Arc<ChunkIndex>,
    chunks: std::ops::Range<u64>,
    s: PlanSizes,
) -> impl Iterator<Item = Part> + Send {
    let first = chunks
        .clone()
        .next()
        .and_then(|n| index.chunk(n))
        .filter(|c| c.transformed_len > 0);
    let eager: Vec<Part> = first
        .map(|c| {
            split(
                ByteRange {
                    start: c.transformed_start,
                    end: c.transformed_start + c.transformed_len - 1,
                },
                s.max_parts,
                s.min_part,
            )
        })
        .unwrap_or_default()
        .into_iter()
        .map(|range| Part { range, eager: true })
        .collect();
    let mut next = chunks.start + u64::from(first.is_some());
    let end = chunks.end;
    let cap = s.part_bytes.max(1);
    let rest = std::iter::from_fn(move || {
        let head = index.chunk(next).filter(|_| next < end)?;
        let mut stop = next + 1;
        let mut bytes = head.transformed_len;
        while stop < end && stop - next < MAX_CHUNKS_PER_GET {
            let Some(c) = index.chunk(stop) else { break };
            if bytes + c.transformed_len > cap {
                break;
            }
            bytes += c.transformed_len;
            stop += 1;
        }
        next = stop;
        Some(Part {
            range: ByteRange {
                start: head.transformed_start,
                end: head.transformed_start + bytes.max(1) - 1,
            },
            eager: false,
        })
    });
    eager.into_iter().chain(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_examples() {
        let r = ByteRange { start: 10, end: 19 };
        assert_eq!(
            split(r, 3, 1).iter().map(|r| r.len()).collect::<Vec<_>>(),
            [4, 3, 3]
        );
        assert_eq!(split(r, 8, 4).len(), 2);
        assert_eq!(split(r, 8, 100), vec![r]);
    }

    #[test]
    fn plain_plan_example() {
        let s = PlanSizes {
            first_read: 10,
            part_bytes: 7,
            max_parts: 2,
            min_part: 4,
        };
        let p: Vec<_> = plain_plan(100, 130, s).collect();
        let r: Vec<_> = p
            .iter()
            .map(|p| (p.range.start, p.range.end, p.eager))
            .collect();
        assert_eq!(
            r,
            [
                (100, 104, true),
                (105, 109, true),
                (110, 116, false),
                (117, 123, false),
                (124, 130, false)
            ]
        );
    }
}
