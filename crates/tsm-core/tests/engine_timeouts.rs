//! The `fetch.*.cache.get.timeout.ms` bounds, with a store that hangs (core-store's
//! `FaultInjectingBackend` stalling a call of the real filesystem backend): a manifest, an
//! index or a chunk-cache load that takes longer than its timeout fails with
//! `RsmError::Timeout` naming the object and the configuration key, as a transient error;
//! once the store answers again, the same call succeeds (nothing half-loaded was cached).

use std::sync::Arc;
use std::time::Duration;

use crate::engine_support::*;
use tsm_core::cache::{Bound, ChunkCache};
use tsm_core::engine::CompressionMode;
use tsm_core::metrics::MetricsRegistry;
use tsm_core::{IndexType, RemoteStorageManager, RsmError, StorageBackend};
use tsm_storage::fault::{Fault, FaultInjectingBackend, Op};

/// Far longer than any timeout below: if a bound is not enforced the call succeeds after
/// the stall and the test fails on `expect_err`.
const HANG: Duration = Duration::from_secs(30);
const LIMIT: Duration = Duration::from_millis(200);

fn engine(world: &World, chunk_cache: bool) -> (Arc<FaultInjectingBackend>, RemoteStorageManager) {
    let faulty = Arc::new(FaultInjectingBackend::new(world.backend.clone()));
    let backend: Arc<dyn StorageBackend> = faulty.clone();
    let mut opts = options(1000, CompressionMode::On, None);
    opts.manifest_get_timeout = LIMIT;
    opts.indexes_get_timeout = LIMIT;
    opts.chunk_get_timeout = LIMIT;
    let registry = MetricsRegistry::new();
    let cache = chunk_cache.then(|| ChunkCache::memory(Bound::Bytes(1 << 20), None, &registry));
    let engine = RemoteStorageManager::with_registry(backend, opts, registry)
        .expect("engine options")
        .with_chunk_cache(cache);
    (faulty, engine)
}

/// A world, its engine and one copied segment; `warm` reads byte 0 first (caches the
/// manifest, and chunk 0 when there is a chunk cache).
async fn copied(
    chunk_cache: bool,
    seed: u64,
    warm: bool,
) -> (
    World,
    Arc<FaultInjectingBackend>,
    RemoteStorageManager,
    Segment,
) {
    let world = World::new();
    let (faulty, engine) = engine(&world, chunk_cache);
    let seg = segment(&world.path("s"), record_batches(40, 0, seed), true, seed);
    engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy");
    if warm {
        check_range(&engine, &seg, 0, Some(0), "warm the manifest").await;
    }
    (world, faulty, engine, seg)
}

fn assert_timeout(e: &RsmError, key: &str, object: &str) {
    assert!(matches!(e, RsmError::Timeout { .. }), "not a timeout: {e}");
    let text = e.to_string();
    assert!(text.contains(key) && text.contains(object), "{text}");
    assert!(e.is_transient(), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_manifest_load_times_out_then_recovers() {
    let (_world, faulty, engine, seg) = copied(false, 70, false).await;
    // The first fetch reads the manifest: stall it.
    faulty.on_nth(Op::Fetch, faulty.calls(Op::Fetch) + 1, Fault::Stall(HANG));
    let e = read_all(&engine, &seg.metadata, 0, None)
        .await
        .expect_err("stalled manifest");
    assert_timeout(&e, "fetch.manifest.cache.get.timeout.ms", ".rsm-manifest");
    faulty.clear();
    check_range(&engine, &seg, 0, None, "after the stall").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_index_load_times_out_then_recovers() {
    let (_world, faulty, engine, seg) = copied(false, 71, true).await;
    // The manifest is cached; the next GET is the index's.
    faulty.on_every(Op::Fetch, Fault::Stall(HANG));
    let e = engine
        .fetch_index(&seg.metadata, IndexType::Offset)
        .await
        .expect_err("stalled index");
    assert_timeout(&e, "fetch.indexes.cache.get.timeout.ms", ".indexes");
    faulty.clear();
    let got = engine
        .fetch_index(&seg.metadata, IndexType::Offset)
        .await
        .expect("index");
    assert_eq!(got.as_ref(), seg.indexes["OFFSET"].as_slice());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_chunk_cache_load_times_out_then_recovers() {
    let (_world, faulty, engine, seg) = copied(true, 72, true).await;
    // Chunk 0 is cached now; chunk 2 is not: its GET hangs.
    faulty.on_every(Op::Fetch, Fault::Stall(HANG));
    let e = read_all(&engine, &seg.metadata, 2500, Some(2600))
        .await
        .expect_err("stalled chunk");
    assert_timeout(&e, "fetch.chunk.cache.get.timeout.ms", "chunk 2");
    faulty.clear();
    check_range(&engine, &seg, 2500, Some(2600), "after the stall").await;
}
