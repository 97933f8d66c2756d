//! What integrity data costs (`manifest/integrity.rs`): the engine's copy and a whole-segment
//! fetch of the same segment, with and without integrity data, in each mode of the format
//! (plain, zstd, aes, zstd+aes), over the in-memory backend (so the figures are the engine's
//! own CPU work: the digests, the MAC, and for plain segments the whole-chunk reads that
//! digests require, without a store's latency hiding them).
//!
//! Run: `cargo bench -p tsm-core --bench integrity` (a few minutes). The segment is 32 MiB of
//! Kafka v2 record batches (compressible JSON-like records), chunks of 4 MiB, as the broker
//! hands them over. Each fetch is a whole-segment stream of a new engine (a cold read: the
//! manifest with its checks, then every chunk from the store). Throughput is original segment bytes per second. Results, as ratios
//! with / without in one run: `docs/benchmarks.md`.

// criterion_group! defines an undocumented `pub fn`; a bench target exports nothing.
#![allow(missing_docs)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures::TryStreamExt;
use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
use tsm_core::engine::{CompressionMode, EngineOptions};
use tsm_core::{
    KafkaUuid, LogSegmentData, RemoteLogSegmentMetadata, RemoteStorageManager, StorageBackend,
};
use tsm_crypto::KeyRing;
use tsm_kafka_log::BatchBuilder;
use tsm_kafka_log::files::leader_epoch_checkpoint;
use tsm_storage::filesystem::FilesystemBackend;
use tsm_storage::memory::MemoryBackend;

const SEGMENT: usize = 32 << 20;

/// Makes an empty store for one benchmark.
type MakeStore = Box<dyn Fn() -> Arc<dyn StorageBackend>>;
const CHUNK: u32 = 4 << 20;

/// Record batches of JSON-like records, `len` bytes or a little less.
fn batches(len: usize) -> Vec<u8> {
    const TS: i64 = 1_700_000_000_000;
    let mut out = Vec::with_capacity(len);
    let mut offset = 0i64;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    loop {
        let mut b = BatchBuilder::new(offset, TS);
        for r in 0..20 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = format!(
                "{{\"id\":{},\"user\":\"user-{}\",\"event\":\"click\",\"ts\":{}}}",
                offset + r,
                x % 1000,
                TS as u64 + x % 100_000
            );
            b.push(TS, None, v.as_bytes());
        }
        offset = b.last_offset() + 1;
        let bytes = b.finish().expect("batch");
        if out.len() + bytes.len() > len {
            return out;
        }
        out.extend_from_slice(&bytes);
    }
}

fn key_ring(dir: &Path) -> Arc<KeyRing> {
    let private = rsa::PrivateKey::new(&mut getrandom::SysRng, 2048).expect("rsa key");
    let public = private.to_public_key();
    let pub_pem = public.to_public_key_pem(LineEnding::LF).expect("pem");
    let priv_pem = private.to_pkcs8_pem(LineEnding::LF).expect("pem");
    let (p, q) = (dir.join("k1-public.pem"), dir.join("k1-private.pem"));
    std::fs::write(&p, pub_pem).expect("write");
    std::fs::write(&q, priv_pem.as_bytes()).expect("write");
    Arc::new(KeyRing::from_files([("k1", p.as_path(), q.as_path())], "k1").expect("ring"))
}

struct Segment {
    metadata: RemoteLogSegmentMetadata,
    data: LogSegmentData,
}

fn segment(dir: &Path, log: &[u8]) -> Segment {
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).expect("write");
        p
    };
    let data = LogSegmentData {
        log_segment: write("0.log", log),
        offset_index: write("0.index", &[0u8; 8 * 64]),
        time_index: write("0.timeindex", &[0u8; 12 * 64]),
        transaction_index: None,
        producer_snapshot_index: write("0.snapshot", &[0u8; 64]),
        leader_epoch_index: Bytes::from(leader_epoch_checkpoint(&[(0, 0)])),
    };
    let metadata = RemoteLogSegmentMetadata {
        topic_id: KafkaUuid { msb: 1, lsb: 2 },
        topic: "bench".into(),
        partition: 0,
        segment_id: KafkaUuid { msb: 3, lsb: 4 },
        start_offset: 0,
        end_offset: 1,
        max_timestamp_ms: 0,
        broker_id: 0,
        event_timestamp_ms: 0,
        segment_leader_epochs: BTreeMap::from([(0, 0)]),
        segment_size_in_bytes: log.len() as i32,
        custom_metadata: None,
    };
    Segment { metadata, data }
}

fn engine(zstd: bool, ring: Option<Arc<KeyRing>>, integrity: bool) -> RemoteStorageManager {
    engine_over(Arc::new(MemoryBackend::new()), zstd, ring, integrity)
}

fn engine_over(
    backend: Arc<dyn StorageBackend>,
    zstd: bool,
    ring: Option<Arc<KeyRing>>,
    integrity: bool,
) -> RemoteStorageManager {
    let mut o = EngineOptions::new(CHUNK);
    o.compression = if zstd {
        CompressionMode::On
    } else {
        CompressionMode::Off
    };
    o.key_ring = ring;
    o.write_integrity = integrity;
    o.read_ahead_plain = Some(true);
    RemoteStorageManager::new(backend, o).expect("engine")
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let ring = key_ring(dir.path());
    let log = batches(SEGMENT);
    let seg = segment(dir.path(), &log);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let modes = [
        ("plain", false, false),
        ("zstd", true, false),
        ("aes", false, true),
        ("zstd+aes", true, true),
    ];
    let mut copy = c.benchmark_group("integrity/copy");
    copy.throughput(Throughput::Bytes(log.len() as u64));
    copy.sample_size(10);
    copy.warm_up_time(Duration::from_secs(1));
    copy.measurement_time(Duration::from_secs(8));
    for (name, zstd, aes) in modes {
        for integrity in [false, true] {
            let e = engine(zstd, aes.then(|| ring.clone()), integrity);
            let id = BenchmarkId::new(name, if integrity { "with" } else { "without" });
            copy.bench_function(id, |b| {
                b.iter(|| {
                    rt.block_on(e.copy_log_segment_data(&seg.metadata, &seg.data))
                        .expect("copy")
                })
            });
        }
    }
    copy.finish();

    // The store: in memory (bytes handed out without a copy: the engine's own cost, which
    // exaggerates what the chunk path adds for plain segments), and a local directory (the
    // page cache: every byte copied out of the store, as from a network).
    let stores: [(&str, MakeStore); 2] = [
        ("memory", Box::new(|| Arc::new(MemoryBackend::new()))),
        (
            "filesystem",
            Box::new(|| {
                let root = tempfile::tempdir().expect("temp dir").keep();
                Arc::new(FilesystemBackend::new(root).expect("filesystem backend"))
            }),
        ),
    ];
    for (store, make) in &stores {
        let mut fetch = c.benchmark_group(format!("integrity/fetch-{store}"));
        fetch.throughput(Throughput::Bytes(log.len() as u64));
        fetch.sample_size(10);
        fetch.warm_up_time(Duration::from_secs(1));
        fetch.measurement_time(Duration::from_secs(8));
        for (name, zstd, aes) in modes {
            for integrity in [false, true] {
                let backend = make();
                let ring = aes.then(|| ring.clone());
                let writer = engine_over(backend.clone(), zstd, ring.clone(), integrity);
                rt.block_on(writer.copy_log_segment_data(&seg.metadata, &seg.data))
                    .expect("copy");
                let id = BenchmarkId::new(name, if integrity { "with" } else { "without" });
                fetch.bench_function(id, |b| {
                    b.iter(|| {
                        // A cold engine each time (nothing cached: the manifest load with its
                        // checks, every chunk from the store), as a broker's first read of a
                        // segment.
                        let e = engine_over(backend.clone(), zstd, ring.clone(), integrity);
                        rt.block_on(async {
                            let s = e
                                .fetch_log_segment(&seg.metadata, 0, None)
                                .await
                                .expect("fetch");
                            let parts: Vec<Bytes> = s.try_collect().await.expect("read");
                            assert_eq!(parts.iter().map(Bytes::len).sum::<usize>(), log.len());
                        })
                    })
                });
            }
        }
        fetch.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
