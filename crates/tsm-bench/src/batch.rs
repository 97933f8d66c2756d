//! Kafka record batch writer (message format v2, magic 2), for generated test and
//! benchmark segments.
//!
//! Layout (Kafka's `DefaultRecordBatch`, KIP-98; all integers big-endian):
//! `baseOffset i64 | batchLength i32 | partitionLeaderEpoch i32 | magic i8 = 2 |
//! crc u32 (CRC32C of everything from attributes to the end) | attributes i16 |
//! lastOffsetDelta i32 | baseTimestamp i64 | maxTimestamp i64 | producerId i64 |
//! producerEpoch i16 | baseSequence i32 | recordCount i32 | records`.
//! Each record (`DefaultRecord`): `length varint | attributes i8 | timestampDelta varlong |
//! offsetDelta varint | keyLength varint | key | valueLength varint | value |
//! headerCount varint`, varints zig-zag encoded.
//!
//! Batches written here are uncompressed (codec 0), non-transactional, with no producer id
//! (-1): what a plain producer with `compression.type=none` writes. The data comes from the
//! caller's records and goes to a `Vec<u8>` of one batch; memory is one batch.

/// Size in bytes of the batch header before the first record.
pub const BATCH_HEADER_BYTES: usize = 61;

/// Byte offset of the CRC field in a batch; the CRC covers `[CRC_START..]`.
const CRC_OFFSET: usize = 17;
/// First byte covered by the CRC (attributes).
const CRC_START: usize = 21;

/// Number of bytes of `v` as a zig-zag varint (Kafka's `ByteUtils.sizeOfVarlong`).
pub fn varint_len(v: i64) -> usize {
    let mut z = zigzag(v);
    let mut n = 1;
    while z >= 0x80 {
        z >>= 7;
        n += 1;
    }
    n
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Appends `v` as a zig-zag varint (Kafka's `ByteUtils.writeVarlong`).
pub fn put_varint(out: &mut Vec<u8>, v: i64) {
    let mut z = zigzag(v);
    while z >= 0x80 {
        out.push((z as u8 & 0x7f) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// Encoded size in bytes of one record, including its leading length varint.
pub fn record_len(
    ts_delta: i64,
    offset_delta: i32,
    key_len: Option<usize>,
    value_len: usize,
) -> usize {
    let body = record_body_len(ts_delta, offset_delta, key_len, value_len);
    varint_len(body as i64) + body
}

fn record_body_len(
    ts_delta: i64,
    offset_delta: i32,
    key_len: Option<usize>,
    value_len: usize,
) -> usize {
    let key = match key_len {
        None => varint_len(-1),
        Some(k) => varint_len(k as i64) + k,
    };
    1 + varint_len(ts_delta)
        + varint_len(i64::from(offset_delta))
        + key
        + varint_len(value_len as i64)
        + value_len
        + 1
}

/// Builds one uncompressed v2 batch record by record.
///
/// Offsets are consecutive from `base_offset`; each record carries its own timestamp (ms
/// since the epoch), which must not be before the batch's first.
#[derive(Debug, Clone)]
pub struct BatchBuilder {
    base_offset: i64,
    base_timestamp: i64,
    max_timestamp: i64,
    count: i32,
    buf: Vec<u8>,
}

impl BatchBuilder {
    /// An empty batch whose first record will have `base_offset` and `base_timestamp_ms`.
    pub fn new(base_offset: i64, base_timestamp_ms: i64) -> Self {
        let mut buf = Vec::with_capacity(32 * 1024);
        buf.resize(BATCH_HEADER_BYTES, 0);
        Self {
            base_offset,
            base_timestamp: base_timestamp_ms,
            max_timestamp: base_timestamp_ms,
            count: 0,
            buf,
        }
    }

    /// Records so far.
    pub fn count(&self) -> i32 {
        self.count
    }

    /// Offset the next record gets.
    pub fn next_offset(&self) -> i64 {
        self.base_offset + i64::from(self.count)
    }

    /// Size in bytes of the batch if finished now.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True before the first record.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Size in bytes the next record would take with these key/value lengths at
    /// `timestamp_ms`.
    pub fn next_record_len(
        &self,
        timestamp_ms: i64,
        key_len: Option<usize>,
        value_len: usize,
    ) -> usize {
        record_len(
            timestamp_ms - self.base_timestamp,
            self.count,
            key_len,
            value_len,
        )
    }

    /// Appends one record (no headers).
    pub fn push(&mut self, timestamp_ms: i64, key: Option<&[u8]>, value: &[u8]) {
        let ts_delta = timestamp_ms - self.base_timestamp;
        let body = record_body_len(ts_delta, self.count, key.map(<[u8]>::len), value.len());
        put_varint(&mut self.buf, body as i64);
        self.buf.push(0); // record attributes (unused)
        put_varint(&mut self.buf, ts_delta);
        put_varint(&mut self.buf, i64::from(self.count));
        match key {
            None => put_varint(&mut self.buf, -1),
            Some(k) => {
                put_varint(&mut self.buf, k.len() as i64);
                self.buf.extend_from_slice(k);
            }
        }
        put_varint(&mut self.buf, value.len() as i64);
        self.buf.extend_from_slice(value);
        put_varint(&mut self.buf, 0); // no headers
        self.count += 1;
        self.max_timestamp = self.max_timestamp.max(timestamp_ms);
    }

    /// Appends records whose total size is exactly `bytes`, so the batch ends at an exact
    /// length. `fill(len, out)` appends `len` value bytes to `out`. Returns false (and
    /// appends nothing) when `bytes` is too small for any record (under 8 bytes).
    pub fn push_exact(
        &mut self,
        timestamp_ms: i64,
        bytes: usize,
        fill: &mut dyn FnMut(usize, &mut Vec<u8>),
    ) -> bool {
        let mut remaining = bytes;
        let mut value = Vec::new();
        // Keep each record under 1 MiB (Kafka's default max.message.bytes).
        while remaining > 512 * 1024 {
            let v = 256 * 1024;
            value.clear();
            fill(v, &mut value);
            let len = self.next_record_len(timestamp_ms, None, v);
            self.push(timestamp_ms, None, &value);
            remaining -= len;
        }
        if self.push_one_exact(timestamp_ms, remaining, fill) {
            return true;
        }
        // Sizes just past a length-varint boundary (e.g. 65) take two records.
        for first in (8..=remaining / 2).rev().take(16) {
            let rest = remaining - first;
            if self.fits_one(timestamp_ms, first, 0).is_some()
                && self.fits_one(timestamp_ms, rest, 1).is_some()
            {
                return self.push_one_exact(timestamp_ms, first, fill)
                    && self.push_one_exact(timestamp_ms, rest, fill);
            }
        }
        false
    }

    /// (key length, value length) of one record of exactly `bytes`, if any, when it is the
    /// `ahead`-th record from now.
    fn fits_one(
        &self,
        timestamp_ms: i64,
        bytes: usize,
        ahead: i32,
    ) -> Option<(Option<usize>, usize)> {
        let ts_delta = timestamp_ms - self.base_timestamp;
        let od = self.count + ahead;
        // A record grows by 1 byte per value byte except at varint boundaries (+2), so try
        // a null key, a 1-byte key and a 2-byte key around the estimate.
        for key_len in [None, Some(1), Some(2)] {
            let fixed = record_len(ts_delta, od, key_len, 0);
            if fixed > bytes {
                continue;
            }
            let guess = bytes - fixed;
            for v in (guess.saturating_sub(8)..=guess).rev() {
                if record_len(ts_delta, od, key_len, v) == bytes {
                    return Some((key_len, v));
                }
            }
        }
        None
    }

    fn push_one_exact(
        &mut self,
        timestamp_ms: i64,
        bytes: usize,
        fill: &mut dyn FnMut(usize, &mut Vec<u8>),
    ) -> bool {
        match self.fits_one(timestamp_ms, bytes, 0) {
            Some((key_len, v)) => {
                let mut value = Vec::with_capacity(v);
                fill(v, &mut value);
                let key = key_len.map(|k| vec![b'k'; k]);
                self.push(timestamp_ms, key.as_deref(), &value);
                true
            }
            None => false,
        }
    }

    /// Last offset in the batch (`base_offset` when empty).
    pub fn last_offset(&self) -> i64 {
        self.base_offset + i64::from(self.count.max(1)) - 1
    }

    /// Largest record timestamp (ms).
    pub fn max_timestamp(&self) -> i64 {
        self.max_timestamp
    }

    /// Writes the header and CRC and returns the batch bytes.
    pub fn finish(mut self) -> Vec<u8> {
        let len = self.buf.len();
        let h = &mut self.buf[..BATCH_HEADER_BYTES];
        h[0..8].copy_from_slice(&self.base_offset.to_be_bytes());
        h[8..12].copy_from_slice(&((len - 12) as i32).to_be_bytes());
        h[12..16].copy_from_slice(&0i32.to_be_bytes()); // partition leader epoch
        h[16] = 2; // magic
        h[21..23].copy_from_slice(&0i16.to_be_bytes()); // attributes: codec 0, no txn
        h[23..27].copy_from_slice(&(self.count.max(1) - 1).to_be_bytes());
        h[27..35].copy_from_slice(&self.base_timestamp.to_be_bytes());
        h[35..43].copy_from_slice(&self.max_timestamp.to_be_bytes());
        h[43..51].copy_from_slice(&(-1i64).to_be_bytes()); // producer id
        h[51..53].copy_from_slice(&(-1i16).to_be_bytes()); // producer epoch
        h[53..57].copy_from_slice(&(-1i32).to_be_bytes()); // base sequence
        h[57..61].copy_from_slice(&self.count.to_be_bytes());
        let crc = crc32c::crc32c(&self.buf[CRC_START..]);
        self.buf[CRC_OFFSET..CRC_START].copy_from_slice(&crc.to_be_bytes());
        self.buf
    }
}

/// One batch's header fields, as read back by [`parse_header`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    /// First offset.
    pub base_offset: i64,
    /// Whole batch size in bytes (batchLength + 12).
    pub size: usize,
    /// Offset of the last record.
    pub last_offset: i64,
    /// Largest record timestamp (ms).
    pub max_timestamp: i64,
    /// Records in the batch.
    pub record_count: i32,
    /// True when the stored CRC32C matches the bytes.
    pub crc_ok: bool,
}

/// Reads the header of the batch at the start of `buf` and checks its CRC; `None` when
/// `buf` does not hold a whole v2 batch.
pub fn parse_header(buf: &[u8]) -> Option<BatchHeader> {
    if buf.len() < BATCH_HEADER_BYTES || buf[16] != 2 {
        return None;
    }
    let be32 = |at: usize| i32::from_be_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
    let be64 = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&buf[at..at + 8]);
        i64::from_be_bytes(b)
    };
    let size = usize::try_from(be32(8)).ok()? + 12;
    if size < BATCH_HEADER_BYTES || size > buf.len() {
        return None;
    }
    let stored = u32::from_be_bytes([buf[17], buf[18], buf[19], buf[20]]);
    let base_offset = be64(0);
    Some(BatchHeader {
        base_offset,
        size,
        last_offset: base_offset + i64::from(be32(23)),
        max_timestamp: be64(35),
        record_count: be32(57),
        crc_ok: crc32c::crc32c(&buf[CRC_START..size]) == stored,
    })
}

/// Reads a zig-zag varint at the start of `buf`: (value, bytes used).
pub fn get_varint(buf: &[u8]) -> Option<(i64, usize)> {
    let mut z: u64 = 0;
    for (i, b) in buf.iter().enumerate().take(10) {
        z |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((((z >> 1) as i64) ^ -((z & 1) as i64), i + 1));
        }
    }
    None
}

/// One decoded record of an uncompressed batch (borrowing the batch bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordView<'a> {
    /// Offset delta from the batch's base offset.
    pub offset_delta: i64,
    /// Timestamp delta from the batch's base timestamp (ms).
    pub timestamp_delta: i64,
    /// Key (`None` = null).
    pub key: Option<&'a [u8]>,
    /// Value.
    pub value: &'a [u8],
}

/// Decodes the records of the uncompressed batch at the start of `buf` (headers
/// skipped); `None` when it is not a whole, well-formed uncompressed v2 batch.
pub fn records(buf: &[u8]) -> Option<Vec<RecordView<'_>>> {
    let h = parse_header(buf)?;
    let mut rest = &buf[BATCH_HEADER_BYTES..h.size];
    let mut out = Vec::new();
    let take = |rest: &mut &[u8]| -> Option<i64> {
        let (v, n) = get_varint(rest)?;
        *rest = &rest[n..];
        Some(v)
    };
    for _ in 0..h.record_count {
        let len = usize::try_from(take(&mut rest)?).ok()?;
        let (mut body, tail) = (rest.get(..len)?, rest.get(len..)?);
        rest = tail;
        body = body.get(1..)?; // attributes
        let timestamp_delta = take(&mut body)?;
        let offset_delta = take(&mut body)?;
        let key_len = take(&mut body)?;
        let key = if key_len < 0 {
            None
        } else {
            let k = usize::try_from(key_len).ok()?;
            let key = body.get(..k)?;
            body = &body[k..];
            Some(key)
        };
        let v = usize::try_from(take(&mut body)?).ok()?;
        let value = body.get(..v)?;
        body = &body[v..];
        let headers = take(&mut body)?;
        if headers != 0 || !body.is_empty() {
            return None;
        }
        out.push(RecordView {
            offset_delta,
            timestamp_delta,
            key,
            value,
        });
    }
    rest.is_empty().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any records round-trip through the writer and the decoder; the predicted
        /// length is exact and the CRC checks.
        #[test]
        fn batches_roundtrip(
            base in 0i64..1 << 40,
            ts0 in 0i64..1 << 42,
            recs in prop::collection::vec(
                (prop::option::of(prop::collection::vec(any::<u8>(), 0..40)),
                 prop::collection::vec(any::<u8>(), 0..300),
                 0i64..100_000),
                1..40),
        ) {
            let mut b = BatchBuilder::new(base, ts0);
            let mut predicted = b.len();
            for (k, v, dt) in &recs {
                predicted += b.next_record_len(ts0 + dt, k.as_ref().map(Vec::len), v.len());
                b.push(ts0 + dt, k.as_deref(), v);
            }
            prop_assert_eq!(b.len(), predicted);
            let bytes = b.finish();
            prop_assert_eq!(bytes.len(), predicted);
            let h = parse_header(&bytes).expect("header");
            prop_assert!(h.crc_ok);
            prop_assert_eq!(h.base_offset, base);
            prop_assert_eq!(h.last_offset, base + recs.len() as i64 - 1);
            prop_assert_eq!(h.max_timestamp, ts0 + recs.iter().map(|r| r.2).max().unwrap_or(0));
            let got = records(&bytes).expect("records");
            prop_assert_eq!(got.len(), recs.len());
            for (i, (r, (k, v, dt))) in got.iter().zip(&recs).enumerate() {
                prop_assert_eq!(r.offset_delta, i as i64);
                prop_assert_eq!(r.timestamp_delta, *dt);
                prop_assert_eq!(r.key, k.as_deref());
                prop_assert_eq!(r.value, v.as_slice());
            }
        }

        #[test]
        fn varints_roundtrip(v in any::<i64>()) {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            prop_assert_eq!(out.len(), varint_len(v));
            prop_assert_eq!(get_varint(&out), Some((v, out.len())));
        }
    }

    #[test]
    fn varints_match_kafka() {
        let mut out = Vec::new();
        put_varint(&mut out, 0);
        put_varint(&mut out, -1);
        put_varint(&mut out, 1);
        put_varint(&mut out, 64);
        assert_eq!(out, [0x00, 0x01, 0x02, 0x80, 0x01]);
        assert_eq!(varint_len(63), 1);
        assert_eq!(varint_len(64), 2);
        assert_eq!(varint_len(-65), 2);
    }

    #[test]
    fn batch_roundtrips_header_and_crc() {
        let mut b = BatchBuilder::new(100, 1_000);
        b.push(1_000, Some(b"k"), b"hello");
        b.push(1_005, None, b"world!");
        let predicted = b.len();
        let bytes = b.finish();
        assert_eq!(bytes.len(), predicted);
        let h = parse_header(&bytes).expect("a whole batch");
        assert_eq!(h.base_offset, 100);
        assert_eq!(h.last_offset, 101);
        assert_eq!(h.max_timestamp, 1_005);
        assert_eq!(h.record_count, 2);
        assert_eq!(h.size, bytes.len());
        assert!(h.crc_ok);
        let mut flipped = bytes.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(!parse_header(&flipped).expect("still parses").crc_ok);
    }

    #[test]
    fn push_exact_hits_every_size() {
        for target in 8..3000usize {
            let mut b = BatchBuilder::new(0, 0);
            let before = b.len();
            assert!(
                b.push_exact(0, target, &mut |n, out| out.resize(out.len() + n, b'x')),
                "size {target}"
            );
            assert_eq!(b.len() - before, target, "size {target}");
        }
    }
}
