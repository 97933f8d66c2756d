//! A log segment being written: batches appended to the `.log`, its offset and time indexes
//! kept the way Kafka's `LogSegment.append` keeps them.
//!
//! Per appended batch (a whole v2 batch, e.g. from [`crate::BatchBuilder::finish`]): the
//! segment's max timestamp so far (and the last offset of the batch that has it) is
//! updated; then, if more than `index.interval.bytes` were appended since the last index
//! entry, the offset index gets `(batch's last offset, batch's position)` and the time
//! index `(max timestamp so far, its offset)` unless that timestamp is not above the last
//! entry's (`TimeIndex.maybeAppend`). On [`SegmentWriter::finish`] the time index gets the
//! final max timestamp (`LogSegment.onBecomeInactiveSegment`). The first batch never gets
//! an index entry. Offsets in the indexes are relative to the base offset.
//!
//! Data: batches from the caller go to the caller's `Write` for the log; the indexes stay
//! in memory (12 bytes per `index.interval.bytes` of log) until `finish`.

use std::io::{self, Write};

use crate::batch::parse_header;
use crate::files::{offset_index_entry, time_index_entry};

/// Kafka's default `index.interval.bytes`.
pub const INDEX_INTERVAL_BYTES: u64 = 4096;

/// A finished segment: the log writer and the index bytes.
#[derive(Debug)]
pub struct WrittenSegment<W> {
    /// The log writer, flushed.
    pub log: W,
    /// Bytes written to the log.
    pub log_bytes: u64,
    /// The `.index` file's bytes.
    pub offset_index: Vec<u8>,
    /// The `.timeindex` file's bytes.
    pub time_index: Vec<u8>,
    /// Last offset in the segment (base offset - 1 when empty).
    pub end_offset: i64,
    /// Largest batch max timestamp (ms; `None` when empty).
    pub max_timestamp_ms: Option<i64>,
}

/// Appends batches to a segment and keeps its indexes (see the module doc).
#[derive(Debug)]
pub struct SegmentWriter<W: Write> {
    log: W,
    base_offset: i64,
    index_interval_bytes: u64,
    position: u64,
    bytes_since_index: u64,
    next_offset: i64,
    /// (max timestamp so far, last offset of its batch)
    max_ts: Option<(i64, i64)>,
    last_time_entry: Option<i64>,
    offset_index: Vec<u8>,
    time_index: Vec<u8>,
}

fn invalid(detail: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, detail)
}

impl<W: Write> SegmentWriter<W> {
    /// A segment starting at `base_offset`, indexed every `index_interval_bytes`
    /// ([`INDEX_INTERVAL_BYTES`] is Kafka's default).
    pub fn new(log: W, base_offset: i64, index_interval_bytes: u64) -> Self {
        Self {
            log,
            base_offset,
            index_interval_bytes,
            position: 0,
            bytes_since_index: 0,
            next_offset: base_offset,
            max_ts: None,
            last_time_entry: None,
            offset_index: Vec::new(),
            time_index: Vec::new(),
        }
    }

    /// Bytes appended so far (the next batch's position).
    pub fn position(&self) -> u64 {
        self.position
    }

    /// The offset the next batch must start at or after.
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }

    fn relative(&self, offset: i64) -> io::Result<i32> {
        i32::try_from(offset - self.base_offset).map_err(|_| {
            invalid(format!(
                "offset {offset} is more than 2^31 past the segment's base offset {}",
                self.base_offset
            ))
        })
    }

    fn time_entry(&mut self) -> io::Result<()> {
        if let Some((ts, offset)) = self.max_ts {
            if self.last_time_entry.is_none_or(|last| ts > last) {
                let rel = self.relative(offset)?;
                self.time_index
                    .extend_from_slice(&time_index_entry(ts, rel));
                self.last_time_entry = Some(ts);
            }
        }
        Ok(())
    }

    /// Appends one whole v2 batch. Errors: `InvalidInput` for bytes that are not exactly one
    /// whole batch, a batch starting before [`SegmentWriter::next_offset`], a position past
    /// 2 GiB; the log writer's errors.
    pub fn append(&mut self, batch: &[u8]) -> io::Result<()> {
        let h = parse_header(batch).ok_or_else(|| {
            invalid(format!(
                "{} bytes at log position {} are not a whole v2 record batch",
                batch.len(),
                self.position
            ))
        })?;
        if h.size != batch.len() {
            return Err(invalid(format!(
                "{} bytes at log position {} hold more than one batch",
                batch.len(),
                self.position
            )));
        }
        if h.base_offset() < self.next_offset {
            return Err(invalid(format!(
                "batch base offset {} is below the segment's next offset {}",
                h.base_offset(),
                self.next_offset
            )));
        }
        let position = i32::try_from(self.position)
            .map_err(|_| invalid(format!("log position {} is past 2 GiB", self.position)))?;
        let last = h.last_offset();
        let relative_last = self.relative(last)?;
        self.log.write_all(batch)?;
        let ts = h.fields.max_timestamp;
        if self.max_ts.is_none_or(|(max, _)| ts > max) {
            self.max_ts = Some((ts, last));
        }
        if self.bytes_since_index > self.index_interval_bytes {
            self.offset_index
                .extend_from_slice(&offset_index_entry(relative_last, position));
            self.time_entry()?;
            self.bytes_since_index = 0;
        }
        self.bytes_since_index += batch.len() as u64;
        self.position += batch.len() as u64;
        self.next_offset = last + 1;
        Ok(())
    }

    /// Adds the final time index entry and flushes the log. Errors: the log writer's.
    pub fn finish(mut self) -> io::Result<WrittenSegment<W>> {
        self.time_entry()?;
        self.log.flush()?;
        Ok(WrittenSegment {
            log: self.log,
            log_bytes: self.position,
            offset_index: self.offset_index,
            time_index: self.time_index,
            end_offset: self.next_offset - 1,
            max_timestamp_ms: self.max_ts.map(|(ts, _)| ts),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{BatchBuilder, batches};
    use crate::files::{offset_index_entries, time_index_entries};

    fn batch(base: i64, n: i32, ts: i64, value: usize) -> Vec<u8> {
        let mut b = BatchBuilder::new(base, ts);
        for i in 0..n {
            b.push(ts + i64::from(i), None, &vec![b'v'; value]);
        }
        b.finish().expect("batch")
    }

    #[test]
    fn indexes_follow_log_segment_append() {
        let mut w = SegmentWriter::new(Vec::new(), 1000, 4096);
        let mut offset = 1000;
        for i in 0..40 {
            let b = batch(offset, 3, 10_000 + i * 10, 1000);
            offset += 3;
            w.append(&b).expect("append");
        }
        let seg = w.finish().expect("finish");
        assert_eq!(seg.end_offset, 1119);
        assert_eq!(seg.max_timestamp_ms, Some(10_392));
        let starts: std::collections::BTreeMap<i32, i64> = batches(&seg.log)
            .map(|(at, h)| (at as i32, h.last_offset()))
            .collect();
        let entries: Vec<_> = offset_index_entries(&seg.offset_index).collect();
        assert!(!entries.is_empty());
        for (rel, pos) in &entries {
            assert_eq!(starts.get(pos).copied(), Some(1000 + i64::from(*rel)));
        }
        // ~3 KiB batches: an entry every second batch (more than 4096 bytes since the last).
        assert_eq!(entries.len(), 19);
        assert_eq!(entries[0].1 as usize, 2 * seg.log.len() / 40);
        let times: Vec<_> = time_index_entries(&seg.time_index).collect();
        assert!(times.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(times.last().copied(), Some((10_392, 119)));
        // Each entry's timestamp is the max so far including the indexed batch.
        assert_eq!(times[0], (10_022, 8));
    }

    #[test]
    fn refuses_what_is_not_one_batch_in_order() {
        let mut w = SegmentWriter::new(Vec::new(), 0, 4096);
        let b = batch(0, 2, 0, 10);
        assert!(w.append(&b[..b.len() - 1]).is_err());
        assert!(w.append(&[b.clone(), b.clone()].concat()).is_err());
        w.append(&b).expect("append");
        let e = w.append(&b).expect_err("offsets go back");
        assert!(
            e.to_string().contains("below the segment's next offset 2"),
            "{e}"
        );
        let empty = SegmentWriter::new(Vec::new(), 5, 4096)
            .finish()
            .expect("empty");
        assert_eq!((empty.end_offset, empty.max_timestamp_ms), (4, None));
        assert!(empty.time_index.is_empty());
    }
}
