//! The operation lifecycle (`engine/lifecycle`) over the real filesystem backend, with a
//! store that hangs (`FaultInjectingBackend` stalling calls): every remote wait ends at its
//! deadline with a retriable error and the same call succeeds once the store answers; a
//! failed or dropped copy leaves nothing behind; the memory budget is given back after
//! every call, also on error and cancellation, and a call that cannot get budget waits
//! then fails retriably; a flipped byte of a compressed (unencrypted) chunk is an error.

mod engine_support;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use engine_support::*;
use futures::{StreamExt, TryStreamExt, stream};
use tsm_core::engine::CompressionMode;
use tsm_core::engine::lifecycle::Deadlines;
use tsm_core::{IndexType, ObjectKey, RemoteStorageManager, RsmError, StorageBackend};
use tsm_storage::fault::{Fault, FaultInjectingBackend, Op};

/// Far longer than any deadline below.
const HANG: Duration = Duration::from_secs(3600);
const LIMIT: Duration = Duration::from_millis(300);
/// A call still running at this point hung (3x its deadline plus the whole-upload bound).
const HUNG: Duration = Duration::from_secs(10);

fn engine(
    world: &World,
    compression: CompressionMode,
) -> (Arc<FaultInjectingBackend>, RemoteStorageManager) {
    let faulty = Arc::new(FaultInjectingBackend::new(world.backend.clone()));
    let backend: Arc<dyn StorageBackend> = faulty.clone();
    let mut opts = options(1000, compression, None);
    opts.deadlines = Deadlines {
        first_byte: LIMIT,
        idle: LIMIT,
        get: Duration::from_secs(2),
        upload: Duration::from_secs(2),
        delete: LIMIT,
    };
    (faulty, RemoteStorageManager::new(backend, opts))
}

async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(HUNG, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: still running after {HUNG:?} (hung)"))
}

/// Spawns a copy of `seg` and returns once its `.log` is stored (waiting on the event, not
/// the clock); the caller has made a later upload hang.
async fn copy_until_log_stored(
    world: &World,
    engine: &Arc<RemoteStorageManager>,
    seg: &Segment,
) -> tokio::task::JoinHandle<Result<Option<Vec<u8>>, RsmError>> {
    let task = {
        let (engine, metadata, data) = (engine.clone(), seg.metadata.clone(), seg.data.clone());
        tokio::spawn(async move { engine.copy_log_segment_data(&metadata, &data).await })
    };
    within("the .log upload", async {
        while !world.keys().await.iter().any(|k| k.ends_with(".log")) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    task
}

fn assert_deadline(e: &RsmError, key: &str) {
    assert!(e.is_transient(), "not retriable: {e}");
    assert!(e.to_string().contains(key), "does not name {key}: {e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_store_fails_each_call_at_its_deadline_then_recovers() {
    let world = World::new();
    let (faulty, engine) = engine(&world, CompressionMode::On);
    let seg = segment(&world.path("s"), record_batches(40, 0, 1), true, 1);
    engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy");
    // Manifest cached: the chunk GET is what hangs (the case the broker pinned a thread on).
    check_range(&engine, &seg, 0, Some(0), "warm the manifest").await;

    faulty.on_every(Op::Fetch, Fault::Stall(HANG));
    let n = seg.log.len() as u64;
    let e = within(
        "uncached fetch",
        read_all(&engine, &seg.metadata, n / 2, None),
    )
    .await
    .expect_err("deadline");
    assert_deadline(&e, "tsm.storage.get.first.byte.timeout.ms");
    assert!(e.to_string().contains(".log"), "{e}");
    let e = within(
        "fetchIndex",
        engine.fetch_index(&seg.metadata, IndexType::Timestamp),
    )
    .await
    .expect_err("deadline");
    assert!(e.is_transient(), "{e}");

    faulty.on_every(Op::Delete, Fault::Stall(HANG));
    let e = within("delete", engine.delete_log_segment_data(&seg.metadata))
        .await
        .expect_err("deadline");
    assert_deadline(&e, "tsm.storage.delete.timeout.ms");

    faulty.clear();
    check_range(&engine, &seg, n / 2, None, "after the store answers again").await;
    check_indexes(&engine, &seg, "after the store answers again").await;
    engine
        .delete_log_segment_data(&seg.metadata)
        .await
        .expect("delete");
    assert_eq!(engine.memory_in_use(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_upload_fails_at_its_deadline_and_leaves_nothing() {
    let world = World::new();
    let (faulty, engine) = engine(&world, CompressionMode::Off);
    let seg = segment(&world.path("s"), Rng::new(2).bytes(5000), true, 2);
    // The .log goes up; the .indexes upload hangs.
    faulty.on_nth(Op::Upload, 2, Fault::Stall(HANG));
    let e = within(
        "copy",
        engine.copy_log_segment_data(&seg.metadata, &seg.data),
    )
    .await
    .expect_err("deadline");
    assert!(e.is_transient(), "{e}");
    assert!(e.to_string().contains(".indexes"), "{e}");
    assert!(
        world.keys().await.is_empty(),
        "left: {:?}",
        world.keys().await
    );
    faulty.clear();
    engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy after the store answers");
    check_range(&engine, &seg, 0, None, "copied after a failure").await;
    assert_eq!(engine.memory_in_use(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_copy_deletes_what_it_wrote() {
    let world = World::new();
    let (faulty, engine) = engine(&world, CompressionMode::On);
    let engine = Arc::new(engine);
    let seg = segment(&world.path("s"), record_batches(40, 0, 3), true, 3);
    faulty.on_nth(Op::Upload, 2, Fault::Stall(HANG));
    // Then drop the copy.
    let task = copy_until_log_stored(&world, &engine, &seg).await;
    assert!(engine.memory_in_use() > 0, "a copy in flight holds budget");
    task.abort();
    assert!(task.await.expect_err("aborted").is_cancelled());
    assert!(engine.shutdown(HUNG).await, "compensation did not finish");
    assert!(
        world.keys().await.is_empty(),
        "left: {:?}",
        world.keys().await
    );
    assert_eq!(engine.memory_in_use(), 0);
    assert!(matches!(
        engine.copy_log_segment_data(&seg.metadata, &seg.data).await,
        Err(RsmError::Closed)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_is_held_by_open_streams_and_exhaustion_is_a_retriable_wait() {
    let world = World::new();
    let faulty = Arc::new(FaultInjectingBackend::new(world.backend.clone()));
    let mut opts = options(1000, CompressionMode::On, None);
    opts.memory_budget_bytes = 1 << 20;
    opts.deadlines.first_byte = LIMIT;
    // No read-ahead store: the stream holds its restore window from open to drop (through
    // a store it holds budget only while a chunk loads; engine_reads.rs tests that path).
    opts.read_ahead_store_bytes = 0;
    let engine = RemoteStorageManager::new(faulty.clone(), opts);
    let seg = segment(&world.path("s"), record_batches(40, 0, 4), true, 4);
    engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy");
    assert_eq!(engine.memory_in_use(), 0, "after copy");

    let mut open = engine
        .fetch_log_segment(&seg.metadata, 0, None)
        .await
        .expect("fetch");
    let first = open.next().await.expect("item").expect("bytes");
    assert!(!first.is_empty());
    assert!(
        engine.memory_in_use() > 0,
        "an open stream holds its window"
    );
    drop(open);
    assert_eq!(
        engine.memory_in_use(),
        0,
        "a dropped stream gives its window back"
    );

    // A failed call gives it back too.
    faulty.on_every(Op::Fetch, Fault::Error);
    read_all(&engine, &seg.metadata, 0, None)
        .await
        .expect_err("injected");
    faulty.clear();
    assert_eq!(engine.memory_in_use(), 0, "after an error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exhausted_budget_waits_at_most_the_deadline() {
    let world = World::new();
    let mut opts = options(1 << 20, CompressionMode::On, None);
    opts.memory_budget_bytes = 1 << 20; // smaller than one fetch window of 1 MiB chunks
    opts.deadlines.first_byte = LIMIT;
    // No read-ahead store: the stream reserves its restore pipeline when it opens.
    opts.read_ahead_store_bytes = 0;
    let engine = world.engine(opts);
    let seg = segment(&world.path("s"), record_batches(40, 0, 5), true, 5);
    engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy (takes the whole budget, runs alone)");
    let held = engine
        .fetch_log_segment(&seg.metadata, 0, None)
        .await
        .expect("first stream takes the whole budget");
    assert_eq!(engine.memory_in_use(), engine.memory_budget());
    let e = within(
        "second fetch",
        engine.fetch_log_segment(&seg.metadata, 0, None),
    )
    .await
    .err()
    .expect("no budget left");
    assert!(e.is_transient(), "{e}");
    assert!(e.to_string().contains("tsm.memory.budget.bytes"), "{e}");
    drop(held);
    check_range(&engine, &seg, 0, None, "with the budget back").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_byte_of_a_compressed_chunk_is_an_error() {
    let world = World::new();
    let engine = world.engine(options(64 * 1024, CompressionMode::On, None));
    let seg = segment(&world.path("s"), record_batches(200, 0, 6), true, 6);
    engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy");
    let log = world
        .keys()
        .await
        .into_iter()
        .find(|k| k.ends_with(".log"))
        .expect("a .log");
    let key = ObjectKey::plain(log);
    let parts: Vec<Bytes> = world
        .backend
        .fetch(&key, None)
        .await
        .expect("fetch")
        .try_collect()
        .await
        .expect("read");
    let mut bytes = parts.concat();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    let len = bytes.len() as u64;
    world
        .backend
        .upload(
            &key,
            stream::once(async move { Ok(Bytes::from(bytes)) }).boxed(),
            Some(len),
        )
        .await
        .expect("tamper");
    let e = read_all(&engine, &seg.metadata, 0, None)
        .await
        .expect_err("a flipped byte must not read back as data");
    assert!(matches!(e, RsmError::Corrupt { .. }), "{e}");
    assert!(e.to_string().contains("chunk"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_purges_the_segments_cached_chunks() {
    use tsm_core::cache::{Bound, ChunkCache};
    use tsm_core::metrics::MetricsRegistry;
    let world = World::new();
    let registry = MetricsRegistry::new();
    let cache = ChunkCache::memory(Bound::Bytes(1 << 20), None, &registry);
    let engine = RemoteStorageManager::with_registry(
        world.backend.clone(),
        options(1000, CompressionMode::On, None),
        registry,
    )
    .with_chunk_cache(Some(cache.clone()));
    let seg = segment(&world.path("s"), record_batches(40, 0, 7), true, 7);
    engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy");
    check_range(&engine, &seg, 0, None, "fill the chunk cache").await;
    read_ahead_idle(&engine).await;
    cache.run_pending_tasks().await;
    assert!(cache.weighted_size() > 0);
    engine
        .delete_log_segment_data(&seg.metadata)
        .await
        .expect("delete");
    // The cache's size follows removals in maintenance batches (moka): run them until
    // nothing is left, a bounded number of times. A chunk that really stays fails below.
    let mut left = u64::MAX;
    for _ in 0..200 {
        cache.run_pending_tasks().await;
        left = cache.weighted_size();
        if left == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(left, 0, "chunks of a deleted segment stay cached");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_stops_a_copy_in_flight_and_shutdown_waits_for_its_clean_up() {
    let world = World::new();
    let (faulty, engine) = engine(&world, CompressionMode::On);
    let engine = Arc::new(engine);
    let seg = segment(&world.path("s"), record_batches(40, 0, 8), true, 8);
    // The .indexes upload hangs far beyond any bound here: only close can end the copy.
    faulty.on_nth(Op::Upload, 2, Fault::Stall(HANG));
    let task = copy_until_log_stored(&world, &engine, &seg).await;
    assert!(
        within("shutdown", engine.shutdown(HUNG)).await,
        "clean-up left running"
    );
    let r = within("the closed copy", task).await.expect("copy task");
    assert!(matches!(r, Err(RsmError::Closed)), "{r:?}");
    assert!(
        world.keys().await.is_empty(),
        "left: {:?}",
        world.keys().await
    );
    assert_eq!(engine.memory_in_use(), 0);
}
