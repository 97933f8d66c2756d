//! Builders of Kafka log segment bytes for tests and benches: record batch v2 (KIP-98) with
//! JSON-like records, and legacy message sets v0/v1. CRCs are not computed (nothing here
//! reads them); everything else follows the on-disk layout.

#![allow(dead_code)]

/// Codec ids of the attributes bits 0-2.
pub(crate) const NONE: i16 = 0;
pub(crate) const GZIP: i16 = 1;
pub(crate) const ZSTD: i16 = 4;

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

fn put_varint(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64; // zig-zag
    loop {
        let b = (z & 0x7f) as u8;
        z >>= 7;
        if z == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
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

/// Records section of a v2 batch: `count` records with JSON values.
fn records(rng: &mut Rng, base_id: u64, count: u32) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..count {
        let key = format!("user-{}", rng.below(100_000)).into_bytes();
        let value = json_record(rng, base_id + u64::from(i));
        let mut body = Vec::new();
        body.push(0); // attributes
        put_varint(&mut body, i64::from(i) * 3); // timestampDelta
        put_varint(&mut body, i64::from(i)); // offsetDelta
        put_varint(&mut body, key.len() as i64);
        body.extend_from_slice(&key);
        put_varint(&mut body, value.len() as i64);
        body.extend_from_slice(&value);
        put_varint(&mut body, 0); // headers
        put_varint(&mut out, body.len() as i64);
        out.extend_from_slice(&body);
    }
    out
}

/// A v2 record batch at `base_offset` with `count` JSON records; with `codec` ZSTD the
/// records section is zstd-compressed as a producer would.
pub(crate) fn batch_v2(rng: &mut Rng, base_offset: i64, count: u32, codec: i16) -> Vec<u8> {
    let recs = records(rng, base_offset as u64, count);
    let payload = match codec {
        NONE => recs,
        _ => zstd::bulk::compress(&recs, 3).expect("zstd of test records"),
    };
    let mut b = Vec::with_capacity(61 + payload.len());
    b.extend_from_slice(&base_offset.to_be_bytes());
    b.extend_from_slice(&((49 + payload.len()) as i32).to_be_bytes()); // batchLength
    b.extend_from_slice(&0i32.to_be_bytes()); // partitionLeaderEpoch
    b.push(2); // magic
    b.extend_from_slice(&0u32.to_be_bytes()); // crc (not computed)
    b.extend_from_slice(&codec.to_be_bytes()); // attributes
    b.extend_from_slice(&(count.saturating_sub(1) as i32).to_be_bytes()); // lastOffsetDelta
    b.extend_from_slice(&1_764_000_000_000i64.to_be_bytes()); // baseTimestamp
    b.extend_from_slice(&1_764_000_000_100i64.to_be_bytes()); // maxTimestamp
    b.extend_from_slice(&(-1i64).to_be_bytes()); // producerId
    b.extend_from_slice(&(-1i16).to_be_bytes()); // producerEpoch
    b.extend_from_slice(&(-1i32).to_be_bytes()); // baseSequence
    b.extend_from_slice(&(count as i32).to_be_bytes());
    b.extend_from_slice(&payload);
    b
}

/// A v2 batch of exactly `total` bytes (>= 61) with an opaque payload, for heuristic tests.
pub(crate) fn opaque_batch_v2(total: usize, codec: i16) -> Vec<u8> {
    let mut b = vec![0u8; total.max(61)];
    let length = (b.len() - 12) as i32;
    b[8..12].copy_from_slice(&length.to_be_bytes());
    b[16] = 2;
    b[21..23].copy_from_slice(&codec.to_be_bytes());
    b
}

/// A legacy v0 (`magic` 0) or v1 (`magic` 1) message with `value`, codec in attributes.
pub(crate) fn message_v0_v1(magic: u8, offset: i64, value: &[u8], codec: u8) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&0u32.to_be_bytes()); // crc
    body.push(magic);
    body.push(codec);
    if magic == 1 {
        body.extend_from_slice(&1_764_000_000_000i64.to_be_bytes());
    }
    body.extend_from_slice(&(-1i32).to_be_bytes()); // null key
    body.extend_from_slice(&(value.len() as i32).to_be_bytes());
    body.extend_from_slice(value);
    let mut m = Vec::new();
    m.extend_from_slice(&offset.to_be_bytes());
    m.extend_from_slice(&(body.len() as i32).to_be_bytes());
    m.extend_from_slice(&body);
    m
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
