//! Kafka log segment bytes for tests and benches: v2 record batches with JSON-like records
//! and legacy v0/v1 message sets, written by `tsm-kafka-log` (valid CRCs); this module
//! chooses the records.

#![allow(dead_code)]

use tsm_kafka_log::batch::codec;
use tsm_kafka_log::{BatchBuilder, BatchFields, Compression, encode_batch};

/// Codec ids of the attributes bits 0-2.
pub(crate) const NONE: i16 = codec::NONE;
pub(crate) const GZIP: i16 = codec::GZIP;
pub(crate) const ZSTD: i16 = codec::ZSTD;

/// A tiny deterministic PRNG (xorshift64*), so data is reproducible from a seed.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub(crate) fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
    pub(crate) fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

/// `len` incompressible bytes.
pub(crate) fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; len];
    Rng::new(seed).fill(&mut v);
    v
}

/// One JSON-like event, as a producer application would send it.
pub(crate) fn json_record(rng: &mut Rng, id: u64) -> Vec<u8> {
    const EVENTS: [&str; 5] = ["page_view", "click", "add_to_cart", "checkout", "search"];
    const COUNTRIES: [&str; 6] = ["DE", "US", "FR", "BR", "JP", "IN"];
    format!(
        r#"{{"id":{id},"user":"user-{}","event":"{}","ts":{},"page":"/products/{}","country":"{}","amount":{}.{:02},"session":"{:016x}","agent":"Mozilla/5.0 (X11; Linux x86_64)"}}"#,
        rng.below(100_000),
        EVENTS[rng.below(5) as usize],
        1_764_000_000_000u64 + id * 7 + rng.below(5),
        rng.below(10_000),
        COUNTRIES[rng.below(6) as usize],
        rng.below(500),
        rng.below(100),
        rng.next_u64()
    )
    .into_bytes()
}

/// A v2 record batch at `base_offset` with `count` JSON records (keyed `user-N`, 3 ms
/// apart); with `codec` ZSTD the records are zstd-compressed (level 3) as a producer would,
/// any other codec writes them uncompressed.
pub(crate) fn batch_v2(rng: &mut Rng, base_offset: i64, count: u32, codec: i16) -> Vec<u8> {
    const TS: i64 = 1_764_000_000_000;
    let compression = match codec {
        ZSTD => Compression::Zstd { level: 3 },
        _ => Compression::None,
    };
    let mut b = BatchBuilder::new(base_offset, TS).with_compression(compression);
    for i in 0..count {
        let key = format!("user-{}", rng.below(100_000)).into_bytes();
        let value = json_record(rng, base_offset as u64 + u64::from(i));
        b.push(TS + i64::from(i) * 3, Some(&key), &value);
    }
    b.finish().expect("test batch")
}

/// A v2 batch of exactly `total` bytes (>= 61) with an opaque (zero) records section and
/// `codec` in its attributes, for heuristic tests.
pub(crate) fn opaque_batch_v2(total: usize, codec: i16) -> Vec<u8> {
    let fields = BatchFields {
        attributes: codec,
        ..BatchFields::new(0, 0, 0)
    };
    encode_batch(&fields, &vec![0u8; total.max(61) - 61]).expect("test batch")
}

/// A legacy v0 (`magic` 0) or v1 (`magic` 1) message with `value`, codec in attributes.
pub(crate) fn message_v0_v1(magic: u8, offset: i64, value: &[u8], codec: u8) -> Vec<u8> {
    tsm_kafka_log::legacy::message(magic, offset, 1_764_000_000_000, value, codec)
}

/// Realistic segment bytes: uncompressed v2 batches of 10-200 JSON records, cut to `len`
/// bytes (the tail is a partial batch unless `len` lands on a boundary).
pub(crate) fn kafka_segment(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(len + 64 * 1024);
    let mut offset = 0i64;
    while out.len() < len {
        let count = 10 + rng.below(190) as u32;
        out.extend_from_slice(&batch_v2(&mut rng, offset, count, NONE));
        offset += i64::from(count);
    }
    out.truncate(len);
    out
}
