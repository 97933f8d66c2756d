//! Shared helpers of the `engine_*` tests: a filesystem-backed engine in a temp dir,
//! segment files (random bytes, Kafka v2 record batches from `tsm-kafka-log`), RSA key
//! pairs generated at test time (never committed) and written as PEM, byte-exact checks
//! of fetch ranges, and an engine behind a gate that holds chosen GETs
//! (`tsm_storage::gate`).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
use tsm_core::cache::{Bound, ChunkCache};
use tsm_core::engine::{CompressionMode, EngineOptions};
use tsm_core::metrics::MetricsRegistry;
use tsm_core::{
    IndexType, KafkaUuid, LogSegmentData, RemoteLogSegmentMetadata, RemoteStorageManager, RsmError,
    StorageBackend,
};
use tsm_crypto::KeyRing;
use tsm_kafka_log::files::leader_epoch_checkpoint;
use tsm_kafka_log::{BatchBuilder, Compression};
use tsm_storage::filesystem::FilesystemBackend;
use tsm_storage::gate::GatedBackend;
use tsm_storage::{ByteRange, ObjectKey};

/// A deterministic pseudo-random byte generator (xorshift64*), so failures reproduce.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
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
        if n == 0 { 0 } else { self.next_u64() % n }
    }
    pub(crate) fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(n + 8);
        while v.len() < n {
            v.extend_from_slice(&self.next_u64().to_le_bytes());
        }
        v.truncate(n);
        v
    }
}

/// Kafka v2 record batches (magic 2, valid CRC32C) of 1-20 JSON-like records each,
/// `count` batches from offset 0; `codec` 0 writes them uncompressed, 4 zstd-compressed as
/// a producer with `compression.type=zstd` would.
pub(crate) fn record_batches(count: usize, codec: i16, seed: u64) -> Vec<u8> {
    const TS: i64 = 1_700_000_000_000;
    let compression = match codec {
        4 => Compression::Zstd { level: 3 },
        _ => Compression::None,
    };
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    let mut offset = 0i64;
    for _ in 0..count {
        let records = 1 + rng.below(20) as i32;
        let mut batch = BatchBuilder::new(offset, TS).with_compression(compression);
        for r in 0..records {
            let value = format!(
                "{{\"id\":{},\"user\":\"user-{}\",\"event\":\"click\",\"ts\":{}}}",
                offset + i64::from(r),
                rng.below(1000),
                1_700_000_000_000u64 + rng.below(100_000)
            );
            batch.push(TS, None, value.as_bytes());
        }
        offset = batch.last_offset() + 1;
        out.extend_from_slice(&batch.finish().expect("record batch"));
    }
    out
}

/// PEM texts of one generated 2048-bit key pair.
pub(crate) struct PemPair {
    pub public: String,
    pub private: String,
}

fn generate_pair() -> PemPair {
    let key = rsa::PrivateKey::new(&mut getrandom::SysRng, 2048).expect("RSA key generation");
    PemPair {
        public: key
            .to_public_key()
            .to_public_key_pem(LineEnding::LF)
            .expect("encode SPKI"),
        private: key
            .to_pkcs8_pem(LineEnding::LF)
            .expect("encode PKCS#8")
            .to_string(),
    }
}

/// Key pair `n` (0 or 1), generated once per test binary (generation is slow in debug).
pub(crate) fn pem_pair(n: usize) -> &'static PemPair {
    static PAIRS: [OnceLock<PemPair>; 2] = [OnceLock::new(), OnceLock::new()];
    PAIRS[n].get_or_init(generate_pair)
}

/// Writes pair `n` as `<id>-public.pem` / `<id>-private.pem` into `dir`.
pub(crate) fn write_pair(dir: &Path, id: &str, n: usize) -> (PathBuf, PathBuf) {
    let pair = pem_pair(n);
    let public = dir.join(format!("{id}-public.pem"));
    let private = dir.join(format!("{id}-private.pem"));
    std::fs::write(&public, &pair.public).expect("write public PEM");
    std::fs::write(&private, &pair.private).expect("write private PEM");
    (public, private)
}

/// A key ring holding pair `n` under `id` (active).
pub(crate) fn key_ring(dir: &Path, id: &str, n: usize) -> Arc<KeyRing> {
    let (public, private) = write_pair(dir, id, n);
    Arc::new(KeyRing::from_files([(id, public, private)], id).expect("key ring"))
}

/// A temp dir holding the backend root, the broker's segment files and key files.
pub(crate) struct World {
    pub dir: tempfile::TempDir,
    pub backend: Arc<dyn StorageBackend>,
}

impl World {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let backend = FilesystemBackend::new(dir.path().join("bucket")).expect("fs backend");
        Self {
            dir,
            backend: Arc::new(backend),
        }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub(crate) fn engine(&self, opts: EngineOptions) -> RemoteStorageManager {
        RemoteStorageManager::new(self.backend.clone(), opts).expect("engine options")
    }

    /// Every object key currently stored.
    pub(crate) async fn keys(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .backend
            .list(&tsm_core::ObjectKey::plain(""))
            .map_ok(|m| m.key)
            .try_collect()
            .await
            .expect("list");
        v.sort();
        v
    }
}

/// Options for a test engine.
pub(crate) fn options(
    chunk_size: u32,
    compression: CompressionMode,
    key_ring: Option<Arc<KeyRing>>,
) -> EngineOptions {
    let mut o = EngineOptions::new(chunk_size);
    o.compression = compression;
    o.key_ring = key_ring;
    o.key_prefix = "test-prefix/".into();
    o.max_in_flight = 4;
    o.max_get_bytes = 64 * 1024;
    // The tests' filesystem bucket stands in for a remote store: plain segments are read
    // ahead as on S3 / GCS / Azure (`auto` would not on a local directory; see
    // `engine_reads::a_local_directory_reads_plain_segments_at_exact_ranges`).
    o.read_ahead_plain = Some(true);
    o
}

/// An engine of `chunk`-byte chunks with a 1 MiB memory chunk cache, no prefetch and no
/// read-ahead past the requested range (then `tweak`), over `world`'s backend behind a
/// gate that holds the GETs `holds(key, range)` selects until the test releases them.
pub(crate) fn gated_engine(
    world: &World,
    chunk: u32,
    holds: impl Fn(&ObjectKey, Option<ByteRange>) -> bool + Send + Sync + 'static,
    tweak: impl FnOnce(&mut EngineOptions),
) -> (RemoteStorageManager, Arc<GatedBackend>) {
    let gate = Arc::new(GatedBackend::new(world.backend.clone(), holds));
    let registry = MetricsRegistry::new();
    let cache = ChunkCache::memory(Bound::Bytes(1 << 20), None, &registry);
    let mut opts = options(chunk, CompressionMode::Off, None);
    opts.prefetch_max_size = 0;
    opts.read_ahead_bytes = 0;
    tweak(&mut opts);
    let backend: Arc<dyn StorageBackend> = gate.clone();
    let engine = RemoteStorageManager::with_registry(backend, opts, registry)
        .expect("engine options")
        .with_chunk_cache(Some(cache));
    (engine, gate)
}

/// The broker's files of one segment, and what fetchIndex must return.
pub(crate) struct Segment {
    pub metadata: RemoteLogSegmentMetadata,
    pub data: LogSegmentData,
    pub log: Vec<u8>,
    pub indexes: BTreeMap<&'static str, Vec<u8>>,
}

static NEXT_ID: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(1);

/// Writes a segment with `log` bytes and random indexes into `dir` (a new segment id each
/// call, as the broker does).
pub(crate) fn segment(dir: &Path, log: Vec<u8>, with_txn: bool, seed: u64) -> Segment {
    let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut rng = Rng::new(seed ^ 0xabcdef);
    let sub = dir.join(format!("seg-{id}"));
    std::fs::create_dir_all(&sub).expect("segment dir");
    let write = |name: &str, bytes: &[u8]| {
        let p = sub.join(name);
        std::fs::write(&p, bytes).expect("write segment file");
        p
    };
    let mut sized = |unit: u64, min: u64, max: u64| {
        let n = unit * (min + rng.below(max));
        rng.bytes(n as usize)
    };
    let offset = sized(8, 1, 64);
    let time = sized(12, 0, 64);
    let snapshot = sized(1, 0, 300);
    let txn = sized(34, 1, 4);
    let epoch = leader_epoch_checkpoint(&[(0, 0), (3, 1000)]);
    let data = LogSegmentData {
        log_segment: write("00000000000000001000.log", &log),
        offset_index: write("00000000000000001000.index", &offset),
        time_index: write("00000000000000001000.timeindex", &time),
        transaction_index: with_txn.then(|| write("00000000000000001000.txnindex", &txn)),
        producer_snapshot_index: write("00000000000000001000.snapshot", &snapshot),
        leader_epoch_index: Bytes::from(epoch.clone()),
    };
    let mut indexes = BTreeMap::new();
    indexes.insert("OFFSET", offset);
    indexes.insert("TIMESTAMP", time);
    indexes.insert("PRODUCER_SNAPSHOT", snapshot);
    indexes.insert("LEADER_EPOCH", epoch);
    if with_txn {
        indexes.insert("TRANSACTION", txn);
    }
    let metadata = RemoteLogSegmentMetadata {
        topic_id: KafkaUuid::parse("MWJ6FHTfRYy67jzwZdeqSQ").expect("uuid"),
        topic: "topic".into(),
        partition: 7,
        segment_id: KafkaUuid {
            msb: id,
            lsb: id.wrapping_mul(31),
        },
        start_offset: 1000,
        end_offset: 2000,
        max_timestamp_ms: 1_700_000_000_000,
        broker_id: 1,
        event_timestamp_ms: 1_700_000_000_000,
        segment_leader_epochs: BTreeMap::from([(0, 1000), (3, 1500)]),
        segment_size_in_bytes: i32::try_from(log.len()).unwrap_or(i32::MAX),
        custom_metadata: None,
    };
    Segment {
        metadata,
        data,
        log,
        indexes,
    }
}

/// Reads a whole fetch stream.
pub(crate) async fn read_all(
    engine: &RemoteStorageManager,
    meta: &RemoteLogSegmentMetadata,
    start: u64,
    end: Option<u64>,
) -> Result<Vec<u8>, RsmError> {
    let stream = engine.fetch_log_segment(meta, start, end).await?;
    let parts: Vec<Bytes> = stream.try_collect().await?;
    Ok(parts.concat())
}

/// Fetches `start..=end` and compares with the original bytes (end clamped).
pub(crate) async fn check_range(
    engine: &RemoteStorageManager,
    seg: &Segment,
    start: u64,
    end: Option<u64>,
    what: &str,
) {
    let got = read_all(engine, &seg.metadata, start, end)
        .await
        .unwrap_or_else(|e| panic!("{what}: fetch {start}..={end:?} failed: {e}"));
    let n = seg.log.len() as u64;
    let last = end.map_or(n, |e| e.saturating_add(1).min(n));
    let want = &seg.log[start as usize..last as usize];
    assert!(
        got == want,
        "{what}: fetch {start}..={end:?} returned {} bytes, expected {} (first difference at {:?})",
        got.len(),
        want.len(),
        got.iter().zip(want).position(|(a, b)| a != b)
    );
}

/// Every index byte-identical; a missing transaction index is not-found.
pub(crate) async fn check_indexes(engine: &RemoteStorageManager, seg: &Segment, what: &str) {
    for t in IndexType::ALL {
        let r = engine.fetch_index(&seg.metadata, t).await;
        match seg.indexes.get(t.java_name()) {
            Some(want) => {
                let got = r.unwrap_or_else(|e| panic!("{what}: {} failed: {e}", t.java_name()));
                assert_eq!(
                    &got[..],
                    &want[..],
                    "{what}: {} bytes differ",
                    t.java_name()
                );
            }
            None => {
                let e = r.expect_err("missing transaction index must fail");
                assert!(e.is_not_found(), "{what}: expected not found, got {e}");
            }
        }
    }
}

/// Waits until no read-ahead load runs (each is bounded by the store deadlines; the
/// bound here only turns a hang into a failure).
pub(crate) async fn read_ahead_idle(engine: &RemoteStorageManager) {
    for _ in 0..12_000 {
        if engine.read_ahead_loads() == 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!(
        "read-ahead loads still running: {}",
        engine.read_ahead_loads()
    );
}

/// Replaces object `key` of `world`'s bucket with `bytes` (a writer of the bucket).
pub(crate) async fn put(world: &World, key: &str, bytes: Vec<u8>) {
    let len = bytes.len() as u64;
    world
        .backend
        .upload(
            &ObjectKey::plain(key),
            futures::stream::once(async move { Ok(Bytes::from(bytes)) }).boxed(),
            Some(len),
        )
        .await
        .expect("overwrite object");
}

/// The bytes of object `key` of `world`'s bucket.
pub(crate) async fn get(world: &World, key: &str) -> Vec<u8> {
    let s = world
        .backend
        .fetch(&ObjectKey::plain(key), None)
        .await
        .expect("fetch object");
    let parts: Vec<Bytes> = s.try_collect().await.expect("read object");
    parts.concat()
}
