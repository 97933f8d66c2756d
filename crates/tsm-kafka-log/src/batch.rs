//! Record batches (message format v2, magic 2): the header layout, writing a batch from its
//! records ([`BatchBuilder`]) or from a ready records section ([`encode_batch`]), and
//! reading a header back ([`parse_header`]).
//!
//! Layout (Kafka's `DefaultRecordBatch`, KIP-98; integers big-endian), byte offsets:
//! `baseOffset i64 @0 | batchLength i32 @8 (bytes after this field) |
//! partitionLeaderEpoch i32 @12 | magic i8 @16 = 2 | crc u32 @17 | attributes i16 @21 |
//! lastOffsetDelta i32 @23 | baseTimestamp i64 @27 | maxTimestamp i64 @35 |
//! producerId i64 @43 | producerEpoch i16 @51 | baseSequence i32 @53 | recordCount i32 @57 |
//! records @61`. The CRC is CRC32C (Castagnoli) over the bytes from `attributes` to the
//! end of the batch. Attributes: bits 0-2 the compression codec (Kafka's
//! `CompressionType` ids), bit 3 the timestamp type, bit 4 transactional, bit 5 control.
//! With a codec other than none the records section is the compressed concatenation of
//! the records ([`crate::record`]).

use std::fmt;

use crate::record::{record_len, write_record};

/// Size in bytes of the batch header before the first record.
pub const HEADER_LEN: usize = 61;
/// Bytes before `batchLength` counts: baseOffset and batchLength (Kafka's
/// `Records.LOG_OVERHEAD`).
pub const LOG_OVERHEAD: usize = 12;
/// Byte offset of the CRC field.
pub const CRC_OFFSET: usize = 17;
/// First byte the CRC covers (`attributes`).
pub const CRC_START: usize = 21;
/// The magic byte of a v2 batch, at byte 16.
pub const MAGIC_V2: u8 = 2;
/// Byte offset of the magic byte.
pub const MAGIC_OFFSET: usize = 16;

/// Attribute bits (Kafka's `DefaultRecordBatch` masks).
pub mod attributes {
    /// Bits 0-2: the compression codec id.
    pub const COMPRESSION_MASK: i16 = 0x07;
    /// Bit 3: LogAppendTime (set) or CreateTime.
    pub const TIMESTAMP_TYPE_LOG_APPEND: i16 = 0x08;
    /// Bit 4: the batch belongs to a transaction.
    pub const TRANSACTIONAL: i16 = 0x10;
    /// Bit 5: a control batch (transaction markers).
    pub const CONTROL: i16 = 0x20;
}

/// Compression codec ids of attributes bits 0-2 (Kafka's `CompressionType`).
pub mod codec {
    /// Uncompressed.
    pub const NONE: i16 = 0;
    /// gzip.
    pub const GZIP: i16 = 1;
    /// Snappy.
    pub const SNAPPY: i16 = 2;
    /// LZ4.
    pub const LZ4: i16 = 3;
    /// zstd.
    pub const ZSTD: i16 = 4;
}

/// How a [`BatchBuilder`] compresses the records section, as a producer's
/// `compression.type` would.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    /// Records stored as they are (codec 0).
    #[default]
    None,
    /// Records compressed into one zstd frame at `level` (codec 4; Kafka's default level
    /// is 3).
    Zstd {
        /// zstd level (1-22).
        level: i32,
    },
}

impl Compression {
    /// The codec id this writes into attributes bits 0-2.
    pub fn codec_id(self) -> i16 {
        match self {
            Compression::None => codec::NONE,
            Compression::Zstd { .. } => codec::ZSTD,
        }
    }
}

/// The idempotent producer's identity in a batch header; [`Producer::NONE`] is what a
/// producer without idempotence writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Producer {
    /// producerId (-1: none).
    pub id: i64,
    /// producerEpoch (-1: none).
    pub epoch: i16,
    /// baseSequence: the first record's sequence number (-1: none).
    pub base_sequence: i32,
}

impl Producer {
    /// No producer id, epoch or sequence (-1 each).
    pub const NONE: Producer = Producer {
        id: -1,
        epoch: -1,
        base_sequence: -1,
    };
}

impl Default for Producer {
    fn default() -> Self {
        Producer::NONE
    }
}

/// The header fields of a batch other than `batchLength`, `magic` and `crc`, which are
/// derived from the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchFields {
    /// First offset of the batch.
    pub base_offset: i64,
    /// partitionLeaderEpoch.
    pub partition_leader_epoch: i32,
    /// Attributes ([`attributes`], [`codec`]).
    pub attributes: i16,
    /// Last offset minus base offset.
    pub last_offset_delta: i32,
    /// First record's timestamp (ms since the epoch).
    pub base_timestamp: i64,
    /// Largest record timestamp (ms since the epoch).
    pub max_timestamp: i64,
    /// Producer id, epoch and base sequence.
    pub producer: Producer,
    /// Number of records.
    pub record_count: i32,
}

impl BatchFields {
    /// Fields of an uncompressed, non-transactional batch of `record_count` records (at
    /// least 1 counted for lastOffsetDelta) from `base_offset`, all at `timestamp_ms`, with no
    /// producer and leader epoch 0.
    pub fn new(base_offset: i64, record_count: i32, timestamp_ms: i64) -> Self {
        Self {
            base_offset,
            partition_leader_epoch: 0,
            attributes: codec::NONE,
            last_offset_delta: record_count.max(1) - 1,
            base_timestamp: timestamp_ms,
            max_timestamp: timestamp_ms,
            producer: Producer::NONE,
            record_count,
        }
    }

    /// Offset of the last record.
    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .saturating_add(i64::from(self.last_offset_delta))
    }

    /// The compression codec id (attributes bits 0-2).
    pub fn codec(&self) -> i16 {
        self.attributes & attributes::COMPRESSION_MASK
    }

    /// Reads the fields of the header at the start of `header` (at least [`HEADER_LEN`]
    /// bytes, else `None`); the magic byte is not checked.
    pub fn read(header: &[u8]) -> Option<Self> {
        let h = header.get(..HEADER_LEN)?;
        let i16_at = |p: usize| i16::from_be_bytes([h[p], h[p + 1]]);
        let i32_at = |p: usize| i32::from_be_bytes([h[p], h[p + 1], h[p + 2], h[p + 3]]);
        let i64_at = |p: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&h[p..p + 8]);
            i64::from_be_bytes(b)
        };
        Some(Self {
            base_offset: i64_at(0),
            partition_leader_epoch: i32_at(12),
            attributes: i16_at(21),
            last_offset_delta: i32_at(23),
            base_timestamp: i64_at(27),
            max_timestamp: i64_at(35),
            producer: Producer {
                id: i64_at(43),
                epoch: i16_at(51),
                base_sequence: i32_at(53),
            },
            record_count: i32_at(57),
        })
    }

    /// Writes the header for a records section of `records_len` bytes into `h` (the
    /// first [`HEADER_LEN`] bytes of the batch), the CRC field left 0.
    fn write(&self, h: &mut [u8], batch_length: i32) {
        h[0..8].copy_from_slice(&self.base_offset.to_be_bytes());
        h[8..12].copy_from_slice(&batch_length.to_be_bytes());
        h[12..16].copy_from_slice(&self.partition_leader_epoch.to_be_bytes());
        h[MAGIC_OFFSET] = MAGIC_V2;
        h[CRC_OFFSET..CRC_START].copy_from_slice(&0u32.to_be_bytes());
        h[21..23].copy_from_slice(&self.attributes.to_be_bytes());
        h[23..27].copy_from_slice(&self.last_offset_delta.to_be_bytes());
        h[27..35].copy_from_slice(&self.base_timestamp.to_be_bytes());
        h[35..43].copy_from_slice(&self.max_timestamp.to_be_bytes());
        h[43..51].copy_from_slice(&self.producer.id.to_be_bytes());
        h[51..53].copy_from_slice(&self.producer.epoch.to_be_bytes());
        h[53..57].copy_from_slice(&self.producer.base_sequence.to_be_bytes());
        h[57..61].copy_from_slice(&self.record_count.to_be_bytes());
    }
}

/// Why a batch could not be written.
#[derive(Debug)]
pub enum BatchError {
    /// The batch would exceed `batchLength`'s i32 range (bytes of the records section).
    TooLarge(usize),
    /// zstd failed to compress the records section.
    Compress(std::io::Error),
}

impl fmt::Display for BatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BatchError::TooLarge(n) => write!(
                f,
                "a records section of {n} bytes does not fit a record batch (batchLength is an i32)"
            ),
            BatchError::Compress(e) => write!(f, "zstd compression of the records section: {e}"),
        }
    }
}

impl std::error::Error for BatchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BatchError::TooLarge(_) => None,
            BatchError::Compress(e) => Some(e),
        }
    }
}

/// Fills in `batchLength` and the CRC of the batch in `buf` (header placeholder followed by
/// the records section) from `fields`.
fn seal(fields: &BatchFields, buf: &mut [u8]) -> Result<(), BatchError> {
    let records = buf.len() - HEADER_LEN;
    let length =
        i32::try_from(buf.len() - LOG_OVERHEAD).map_err(|_| BatchError::TooLarge(records))?;
    fields.write(&mut buf[..HEADER_LEN], length);
    let crc = crc32c::crc32c(&buf[CRC_START..]);
    buf[CRC_OFFSET..CRC_START].copy_from_slice(&crc.to_be_bytes());
    Ok(())
}

/// A batch whose records section is `records` as given (already encoded or compressed, or
/// opaque test bytes that only the header describes), with `batchLength` and the CRC32C
/// computed. Errors: [`BatchError::TooLarge`] for a section near 2 GiB.
pub fn encode_batch(fields: &BatchFields, records: &[u8]) -> Result<Vec<u8>, BatchError> {
    let mut buf = Vec::with_capacity(HEADER_LEN + records.len());
    buf.resize(HEADER_LEN, 0);
    buf.extend_from_slice(records);
    seal(fields, &mut buf)?;
    Ok(buf)
}

/// Builds one v2 batch record by record (Kafka's `MemoryRecordsBuilder` for magic 2).
///
/// Offsets are consecutive from `base_offset`; each record carries its own timestamp (ms
/// since the epoch), which must not be before the batch's first. Records have no headers.
/// Memory: the batch (twice while compressing).
#[derive(Debug, Clone)]
pub struct BatchBuilder {
    base_offset: i64,
    base_timestamp: i64,
    max_timestamp: i64,
    count: i32,
    producer: Producer,
    partition_leader_epoch: i32,
    transactional: bool,
    compression: Compression,
    /// Header placeholder, then the uncompressed records.
    buf: Vec<u8>,
}

impl BatchBuilder {
    /// An empty uncompressed batch without producer whose first record will have
    /// `base_offset` and `base_timestamp_ms`.
    pub fn new(base_offset: i64, base_timestamp_ms: i64) -> Self {
        let mut buf = Vec::with_capacity(32 * 1024);
        buf.resize(HEADER_LEN, 0);
        Self {
            base_offset,
            base_timestamp: base_timestamp_ms,
            max_timestamp: base_timestamp_ms,
            count: 0,
            producer: Producer::NONE,
            partition_leader_epoch: 0,
            transactional: false,
            compression: Compression::None,
            buf,
        }
    }

    /// Sets the producer id, epoch and base sequence (an idempotent producer's batch).
    pub fn with_producer(mut self, producer: Producer) -> Self {
        self.producer = producer;
        self
    }

    /// Compresses the records section on [`BatchBuilder::finish`].
    pub fn with_compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Sets partitionLeaderEpoch (0 by default).
    pub fn with_partition_leader_epoch(mut self, epoch: i32) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }

    /// Marks the batch transactional (attributes bit 4).
    pub fn transactional(mut self) -> Self {
        self.transactional = true;
        self
    }

    /// Records so far.
    pub fn count(&self) -> i32 {
        self.count
    }

    /// Offset the next record gets.
    pub fn next_offset(&self) -> i64 {
        self.base_offset + i64::from(self.count)
    }

    /// Size in bytes of the batch if finished now, before compression.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True before the first record.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Size in bytes (before compression) the next record would take with these key/value
    /// lengths at `timestamp_ms`.
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
        write_record(
            &mut self.buf,
            timestamp_ms - self.base_timestamp,
            self.count,
            key,
            value,
        );
        self.count += 1;
        self.max_timestamp = self.max_timestamp.max(timestamp_ms);
    }

    /// Appends records whose total size is exactly `bytes` (before compression), so the
    /// batch ends at an exact length. `fill(len, out)` appends `len` value bytes to `out`.
    /// Returns false (and appends nothing) when `bytes` is too small for any record (under
    /// 8 bytes).
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

    /// The header fields the batch will carry.
    pub fn fields(&self) -> BatchFields {
        let mut attributes = self.compression.codec_id();
        if self.transactional {
            attributes |= attributes::TRANSACTIONAL;
        }
        BatchFields {
            base_offset: self.base_offset,
            partition_leader_epoch: self.partition_leader_epoch,
            attributes,
            last_offset_delta: self.count.max(1) - 1,
            base_timestamp: self.base_timestamp,
            max_timestamp: self.max_timestamp,
            producer: self.producer,
            record_count: self.count,
        }
    }

    /// Compresses the records (if asked), writes the header and CRC and returns the batch
    /// bytes. Errors: [`BatchError`] (a batch near 2 GiB, a zstd failure).
    pub fn finish(mut self) -> Result<Vec<u8>, BatchError> {
        let fields = self.fields();
        if let Compression::Zstd { level } = self.compression {
            let packed = zstd::bulk::compress(&self.buf[HEADER_LEN..], level)
                .map_err(BatchError::Compress)?;
            self.buf.truncate(HEADER_LEN);
            self.buf.extend_from_slice(&packed);
        }
        seal(&fields, &mut self.buf)?;
        Ok(self.buf)
    }
}

/// One batch's header as read back by [`parse_header`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    /// The header fields.
    pub fields: BatchFields,
    /// Whole batch size in bytes (batchLength + 12).
    pub size: usize,
    /// True when the stored CRC32C matches the bytes.
    pub crc_ok: bool,
}

impl BatchHeader {
    /// First offset.
    pub fn base_offset(&self) -> i64 {
        self.fields.base_offset
    }

    /// Offset of the last record.
    pub fn last_offset(&self) -> i64 {
        self.fields.last_offset()
    }
}

/// Reads the header of the batch at the start of `buf` and checks its CRC; `None` when
/// `buf` does not start with a whole v2 batch (too short, another magic, a batchLength
/// shorter than a header or past the end of `buf`).
pub fn parse_header(buf: &[u8]) -> Option<BatchHeader> {
    let fields = BatchFields::read(buf)?;
    if buf[MAGIC_OFFSET] != MAGIC_V2 {
        return None;
    }
    let length = i32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]);
    let size = usize::try_from(length).ok()? + LOG_OVERHEAD;
    if size < HEADER_LEN || size > buf.len() {
        return None;
    }
    let stored = u32::from_be_bytes([buf[17], buf[18], buf[19], buf[20]]);
    Some(BatchHeader {
        fields,
        size,
        crc_ok: crc32c::crc32c(&buf[CRC_START..size]) == stored,
    })
}

/// Iterates the whole batches at the start of `log`, stopping at the first byte that does
/// not start one (a partial tail, another magic).
pub fn batches(log: &[u8]) -> impl Iterator<Item = (usize, BatchHeader)> + '_ {
    let mut pos = 0usize;
    std::iter::from_fn(move || {
        let h = parse_header(log.get(pos..)?)?;
        let at = pos;
        pos += h.size;
        Some((at, h))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_roundtrips_header_and_crc() {
        let mut b = BatchBuilder::new(100, 1_000);
        b.push(1_000, Some(b"k"), b"hello");
        b.push(1_005, None, b"world!");
        let predicted = b.len();
        let bytes = b.finish().expect("batch");
        assert_eq!(bytes.len(), predicted);
        let h = parse_header(&bytes).expect("a whole batch");
        assert_eq!(h.base_offset(), 100);
        assert_eq!(h.last_offset(), 101);
        assert_eq!(h.fields.max_timestamp, 1_005);
        assert_eq!(h.fields.record_count, 2);
        assert_eq!(h.fields.producer, Producer::NONE);
        assert_eq!(h.size, bytes.len());
        assert!(h.crc_ok);
        let mut flipped = bytes.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(!parse_header(&flipped).expect("still parses").crc_ok);
    }

    /// Byte for byte what Kafka 4.2.2's `MemoryRecords.builder(..., Compression.NONE,
    /// CREATE_TIME, 100)` builds for `append(1000, "k", "hello")`, `append(1005, null,
    /// "world!")` (partitionLeaderEpoch -1 there, `NO_PARTITION_LEADER_EPOCH`).
    #[test]
    fn bytes_match_kafkas_memory_records_builder() {
        const KAFKA: &str = "00000000000000640000004bffffffff02c61bf24c00000000000100000000000003e8\
                             00000000000003edffffffffffffffffffffffffffff0000000218000000026b0a68\
                             656c6c6f0018000a02010c776f726c642100";
        let want: Vec<u8> = (0..KAFKA.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&KAFKA[i..i + 2], 16).expect("hex"))
            .collect();
        let mut b = BatchBuilder::new(100, 1_000).with_partition_leader_epoch(-1);
        b.push(1_000, Some(b"k"), b"hello");
        b.push(1_005, None, b"world!");
        assert_eq!(b.finish().expect("batch"), want);
    }

    #[test]
    fn producer_compression_and_epoch_are_written() {
        let p = Producer {
            id: 4242,
            epoch: 3,
            base_sequence: 17,
        };
        let mut b = BatchBuilder::new(10, 5)
            .with_producer(p)
            .with_partition_leader_epoch(7)
            .with_compression(Compression::Zstd { level: 3 })
            .transactional();
        for i in 0..50 {
            b.push(5 + i, Some(b"key"), &[b'x'; 200]);
        }
        let plain = b.len();
        let bytes = b.finish().expect("batch");
        assert!(bytes.len() < plain / 4, "zstd shrinks repeated values");
        let h = parse_header(&bytes).expect("batch");
        assert!(h.crc_ok);
        assert_eq!(h.fields.producer, p);
        assert_eq!(h.fields.partition_leader_epoch, 7);
        assert_eq!(h.fields.codec(), codec::ZSTD);
        assert_ne!(h.fields.attributes & attributes::TRANSACTIONAL, 0);
        let records = zstd::stream::decode_all(&bytes[HEADER_LEN..]).expect("zstd frame");
        assert_eq!(records.len(), plain - HEADER_LEN);
    }

    #[test]
    fn encode_batch_seals_an_opaque_section() {
        let fields = BatchFields {
            attributes: codec::GZIP,
            ..BatchFields::new(5, 3, 1_000)
        };
        let bytes = encode_batch(&fields, &[9u8; 40]).expect("batch");
        assert_eq!(bytes.len(), HEADER_LEN + 40);
        let h = parse_header(&bytes).expect("batch");
        assert!(h.crc_ok);
        assert_eq!(h.fields, fields);
        assert_eq!(h.last_offset(), 7);
        let two = [bytes.clone(), bytes.clone()].concat();
        assert_eq!(
            batches(&two).map(|(at, _)| at).collect::<Vec<_>>(),
            [0, 101]
        );
        assert_eq!(batches(&two[..150]).count(), 1);
    }

    #[test]
    fn bad_headers_are_none() {
        let bytes = encode_batch(&BatchFields::new(0, 1, 0), b"x").expect("batch");
        assert!(parse_header(&bytes[..60]).is_none());
        assert!(parse_header(&bytes[..bytes.len() - 1]).is_none());
        let mut magic = bytes.clone();
        magic[MAGIC_OFFSET] = 1;
        assert!(parse_header(&magic).is_none());
        let mut short = bytes;
        short[8..12].copy_from_slice(&10i32.to_be_bytes());
        assert!(parse_header(&short).is_none());
    }
}
