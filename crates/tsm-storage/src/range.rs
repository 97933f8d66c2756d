//! Inclusive byte ranges, as Kafka's `fetchLogSegment(start, end)` and HTTP `Range` use.

use std::fmt;

/// An inclusive byte range `start..=end` (bytes). `end >= start` always holds.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ByteRange {
    /// First byte (inclusive).
    pub start: u64,
    /// Last byte (inclusive).
    pub end: u64,
}

impl ByteRange {
    /// `start..=end`; `None` when `end < start`.
    pub fn new(start: u64, end: u64) -> Option<Self> {
        (end >= start).then_some(Self { start, end })
    }

    /// Number of bytes covered (`end - start + 1`), saturating at `u64::MAX` for
    /// `0..=u64::MAX` (an open-ended "to the end" range).
    pub fn len(&self) -> u64 {
        (self.end - self.start).saturating_add(1)
    }

    /// Always false: a range covers at least one byte.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// This range clamped to an object of `size` bytes; `None` when `start >= size`.
    pub fn clamp_to(&self, size: u64) -> Option<Self> {
        (self.start < size).then(|| Self {
            start: self.start,
            end: self.end.min(size - 1),
        })
    }
}

impl fmt::Display for ByteRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bytes {}-{}", self.start, self.end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The contract suite asks for `0..=u64::MAX`; its length used to overflow (a panic in
    /// debug builds), found by the Azure backend.
    #[test]
    fn len_saturates_for_the_widest_range() {
        let r = ByteRange::new(0, u64::MAX).expect("valid");
        assert_eq!(r.len(), u64::MAX);
        assert_eq!(ByteRange::new(5, 5).map(|r| r.len()), Some(1));
        assert_eq!(r.clamp_to(10), ByteRange::new(0, 9));
        assert_eq!(r.clamp_to(0), None);
    }
}
