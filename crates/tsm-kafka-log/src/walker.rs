//! A streaming check of a `.log` file's v2 record batches: each batch's magic, length,
//! CRC32C (over the bytes from `attributes` to the end of the batch, as Kafka's
//! `DefaultRecordBatch.ensureValid` checks it) and that offsets increase.
//!
//! Input: the segment bytes in pieces of any size ([`BatchWalker::push`]), e.g. as they
//! are restored from a store. Output: a [`BatchSummary`] or the first [`BatchProblem`].
//! Memory: one 61-byte header buffer plus the CRC state; batch bodies are never held.
//! Layout: [`crate::batch`].

use crate::batch::{
    BatchFields, CRC_OFFSET, CRC_START, HEADER_LEN, LOG_OVERHEAD, MAGIC_OFFSET, MAGIC_V2,
};

/// What is wrong at a place in the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchProblem {
    /// Byte position of the batch in the log.
    pub position: u64,
    /// What is wrong.
    pub detail: String,
}

/// Totals of a walk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchSummary {
    /// Batches seen.
    pub batches: u64,
    /// Records according to the batch headers.
    pub records: u64,
    /// First batch's base offset.
    pub first_offset: Option<i64>,
    /// Last batch's last offset.
    pub last_offset: Option<i64>,
    /// Largest `maxTimestamp` (ms).
    pub max_timestamp_ms: Option<i64>,
}

/// Walks batches as bytes arrive; stops at the first structural problem (after which
/// batch boundaries are unknown).
#[derive(Debug, Default)]
pub struct BatchWalker {
    position: u64,
    header: Vec<u8>,
    /// Body bytes still to feed into the CRC of the current batch.
    remaining: u64,
    batch_start: u64,
    expected_crc: u32,
    crc: u32,
    summary: BatchSummary,
    problem: Option<BatchProblem>,
}

impl BatchWalker {
    /// A walker at position 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next bytes of the log.
    pub fn push(&mut self, mut data: &[u8]) {
        while !data.is_empty() && self.problem.is_none() {
            if self.remaining > 0 {
                let n = usize::try_from(self.remaining)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                self.crc = crc32c::crc32c_append(self.crc, &data[..n]);
                self.remaining -= n as u64;
                self.position += n as u64;
                data = &data[n..];
                if self.remaining == 0 {
                    self.end_batch();
                }
                continue;
            }
            let need = HEADER_LEN - self.header.len();
            let n = need.min(data.len());
            self.header.extend_from_slice(&data[..n]);
            self.position += n as u64;
            data = &data[n..];
            if self.header.len() == HEADER_LEN {
                self.start_batch();
            }
        }
    }

    fn fail(&mut self, detail: String) {
        self.problem = Some(BatchProblem {
            position: self.batch_start,
            detail,
        });
    }

    fn start_batch(&mut self) {
        let h = std::mem::take(&mut self.header);
        self.batch_start = self.position - HEADER_LEN as u64;
        let Some(fields) = BatchFields::read(&h) else {
            return self.fail("internal: a short batch header".into());
        };
        let base = fields.base_offset;
        let length = i32::from_be_bytes([h[8], h[9], h[10], h[11]]);
        let magic = h[MAGIC_OFFSET];
        if magic != MAGIC_V2 {
            return self.fail(format!(
                "batch at base offset {base}: magic {magic}, expected 2 (v2 record batch)"
            ));
        }
        let total = i64::from(length) + LOG_OVERHEAD as i64;
        if total < HEADER_LEN as i64 {
            return self.fail(format!(
                "batch at base offset {base}: batchLength {length} is shorter than a header"
            ));
        }
        let last = fields.last_offset();
        if let Some(prev) = self.summary.last_offset {
            if base <= prev {
                return self.fail(format!(
                    "batch base offset {base} does not follow the previous batch's last \
                     offset {prev}"
                ));
            }
        }
        if last < base {
            return self.fail(format!(
                "batch at base offset {base}: negative lastOffsetDelta"
            ));
        }
        self.expected_crc = u32::from_be_bytes([
            h[CRC_OFFSET],
            h[CRC_OFFSET + 1],
            h[CRC_OFFSET + 2],
            h[CRC_OFFSET + 3],
        ]);
        self.crc = crc32c::crc32c(&h[CRC_START..]);
        self.remaining = total as u64 - HEADER_LEN as u64;
        let s = &mut self.summary;
        s.first_offset.get_or_insert(base);
        s.last_offset = Some(last);
        s.records += u64::try_from(fields.record_count).unwrap_or(0);
        let max_ts = fields.max_timestamp;
        s.max_timestamp_ms = Some(s.max_timestamp_ms.map_or(max_ts, |m| m.max(max_ts)));
        if self.remaining == 0 {
            self.end_batch();
        }
    }

    fn end_batch(&mut self) {
        if self.crc != self.expected_crc {
            let base = self.summary.last_offset.unwrap_or_default();
            return self.fail(format!(
                "batch ending at offset {base}: CRC32C {:#010x} does not match the stored \
                 {:#010x}",
                self.crc, self.expected_crc
            ));
        }
        self.summary.batches += 1;
    }

    /// Ends the walk: a partial batch at the end is a problem.
    pub fn finish(mut self) -> Result<BatchSummary, BatchProblem> {
        if self.problem.is_none() && (!self.header.is_empty() || self.remaining > 0) {
            self.batch_start = if self.header.is_empty() {
                self.batch_start
            } else {
                self.position - self.header.len() as u64
            };
            self.fail(format!(
                "the log ends inside a batch (at byte {})",
                self.position
            ));
        }
        match self.problem {
            Some(p) => Err(p),
            None => Ok(self.summary),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{BatchBuilder, batches};

    /// `count` batches of 1-5 records of `payload_len`-byte values, offsets from `base`.
    fn make_batches(count: usize, base: i64, payload_len: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut offset = base;
        for b in 0..count {
            let mut batch = BatchBuilder::new(offset, 1_700_000_000_000 + b as i64);
            for _ in 0..1 + b % 5 {
                let value: Vec<u8> = (0..payload_len).map(|i| (i * 31 + b) as u8).collect();
                batch.push(1_700_000_000_000 + b as i64, None, &value);
            }
            offset = batch.last_offset() + 1;
            out.extend_from_slice(&batch.finish().expect("batch"));
        }
        out
    }

    fn walk(data: &[u8], piece: usize) -> Result<BatchSummary, BatchProblem> {
        let mut w = BatchWalker::new();
        for p in data.chunks(piece.max(1)) {
            w.push(p);
        }
        w.finish()
    }

    #[test]
    fn accepts_valid_batches_in_any_piece_size() {
        let data = make_batches(20, 100, 37);
        for piece in [1, 7, 61, 100, data.len()] {
            let s = walk(&data, piece).expect("valid");
            assert_eq!(s.batches, 20);
            assert_eq!(s.records, (0..20).map(|b| 1 + b % 5).sum::<u64>());
            assert_eq!(s.first_offset, Some(100));
            assert_eq!(s.max_timestamp_ms, Some(1_700_000_000_019));
        }
        assert_eq!(walk(&[], 1).expect("empty").batches, 0);
    }

    #[test]
    fn finds_flipped_bytes_truncation_and_bad_offsets() {
        let data = make_batches(5, 0, 50);
        let mut bad = data.clone();
        bad[200] ^= 1;
        assert!(walk(&bad, 13).is_err());
        let e = walk(&data[..data.len() - 3], 64).unwrap_err();
        assert!(e.detail.contains("ends inside"), "{e:?}");
        let mut twice = data.clone();
        twice.extend_from_slice(&data);
        let e = walk(&twice, 4096).unwrap_err();
        assert!(e.detail.contains("does not follow"), "{e:?}");
        let mut magic = data.clone();
        magic[MAGIC_OFFSET] = 1;
        let e = walk(&magic, 4096).unwrap_err();
        assert!(e.detail.contains("magic 1"), "{e:?}");
    }

    proptest::proptest! {
        #[test]
        fn any_piece_size_gives_the_same_summary(
            count in 0usize..30, payload in 0usize..300, piece in 1usize..700,
        ) {
            let data = make_batches(count, 7, payload);
            let whole = walk(&data, data.len().max(1)).expect("valid");
            let pieces = walk(&data, piece).expect("valid");
            proptest::prop_assert_eq!(whole, pieces);
            proptest::prop_assert_eq!(whole.batches, count as u64);
        }

        #[test]
        fn a_flipped_crc_covered_byte_is_found(
            count in 1usize..10, payload in 0usize..200, pick in 0usize..10_000, bit in 0u8..8,
        ) {
            let mut data = make_batches(count, 0, payload);
            let (start, h) = batches(&data).nth(pick % count).expect("batch");
            // CRC field and everything it covers: bytes 17.. of the batch.
            let within = CRC_OFFSET + (pick / count) % (h.size - CRC_OFFSET);
            data[start + within] ^= 1 << bit;
            proptest::prop_assert!(walk(&data, 64).is_err());
        }
    }
}
