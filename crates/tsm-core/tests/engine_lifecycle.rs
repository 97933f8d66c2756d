//! The operation lifecycle (`engine/lifecycle`) over the real filesystem backend, with a
//! store that hangs (`FaultInjectingBackend` stalling calls): every remote wait ends at its
//! deadline with a retriable error and the same call succeeds once the store answers; a
//! failed or dropped copy leaves nothing behind; the memory budget is given back after
//! every call, also on error and cancellation, and a call that cannot get budget waits
//! then fails retriably; a flipped byte of a compressed (unencrypted) chunk is an error.

use std::sync::Arc;
use std::time::Duration;

use crate::engine_support::*;
use bytes::Bytes;
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
    (
        faulty,
        RemoteStorageManager::new(backend, opts).expect("engine options"),
    )
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
async fn memory_is_given_back_after_streams_and_errors_and_tiny_pools_are_refused() {
    let world = World::new();
    let faulty = Arc::new(FaultInjectingBackend::new(world.backend.clone()));
    let mut opts = options(1000, CompressionMode::On, None);
    opts.deadlines.first_byte = LIMIT;
    // No read-ahead store: every chunk load is reserved while it runs, nothing kept.
    opts.read_ahead_store_bytes = 0;
    let mut tiny = opts.clone();
    tiny.memory_budget_bytes = 1 << 20;
    let Err(e) = RemoteStorageManager::new(faulty.clone(), tiny) else {
        panic!("a 1 MiB budget cannot hold one copy");
    };
    assert!(e.to_string().contains("tsm.memory.copy.bytes"), "{e}");
    let engine = RemoteStorageManager::new(faulty.clone(), opts).expect("engine options");
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
    drop(open);
    // The stream's chunk load runs on a task that sees the drop at its next await.
    settle(&engine).await;
    assert_eq!(
        engine.memory_in_use(),
        0,
        "a dropped stream gives its memory back"
    );

    // A failed call gives it back too.
    faulty.on_every(Op::Fetch, Fault::Error);
    read_all(&engine, &seg.metadata, 0, None)
        .await
        .expect_err("injected");
    faulty.clear();
    settle(&engine).await;
    assert_eq!(engine.memory_in_use(), 0, "after an error");
    check_range(&engine, &seg, 0, None, "transformed, without any store").await;
}

/// Waits up to 2 s for every reservation to be given back.
async fn settle(engine: &RemoteStorageManager) {
    for _ in 0..200 {
        if engine.memory_in_use() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Issue 30: a copy waiting for memory held every read queued behind it (one FIFO
/// budget). With a pool per class, a copy that waits for the copies' pool holds up no
/// read, and gets its memory once the copy before it ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_waiting_for_memory_does_not_hold_up_reads() {
    let world = World::new();
    let faulty = Arc::new(FaultInjectingBackend::new(world.backend.clone()));
    let chunk = 8 << 20;
    let mut opts = options(chunk, CompressionMode::On, None);
    opts.max_in_flight = 2;
    opts.deadlines = Deadlines {
        first_byte: Duration::from_secs(5),
        idle: Duration::from_secs(120),
        get: Duration::from_secs(120),
        upload: Duration::from_secs(120),
        delete: Duration::from_secs(5),
    };
    // Room for one copy only: (2 + 2) x (8 MiB + its stored bound) is about 64 MiB.
    opts.memory_copy_bytes = Some(100 << 20);
    let engine = Arc::new(RemoteStorageManager::new(faulty.clone(), opts).expect("engine options"));
    let a = segment(&world.path("a"), record_batches(40, 0, 11), true, 11);
    engine
        .copy_log_segment_data(&a.metadata, &a.data)
        .await
        .expect("copy a");
    // a: .log, .indexes, manifest. b's .log upload hangs, holding the copies' pool.
    faulty.on_nth(Op::Upload, 4, Fault::Stall(HANG));
    let b = segment(&world.path("b"), record_batches(40, 0, 12), true, 12);
    let c = segment(&world.path("c"), record_batches(40, 0, 13), true, 13);
    let copy_b = {
        let (engine, b_meta, b_data) = (engine.clone(), b.metadata.clone(), b.data.clone());
        tokio::spawn(async move { engine.copy_log_segment_data(&b_meta, &b_data).await })
    };
    within("copy b reserves", async {
        while engine.copy_memory_in_use() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    let held = engine.copy_memory_in_use();
    let copy_c = {
        let (engine, c_meta, c_data) = (engine.clone(), c.metadata.clone(), c.data.clone());
        tokio::spawn(async move { engine.copy_log_segment_data(&c_meta, &c_data).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !copy_c.is_finished(),
        "copy c did not wait for the copies' pool"
    );
    // tokio's semaphore hands a queued waiter permits as they free up, so c may hold
    // part of its reservation; the copies' pool never exceeds its size.
    assert!(
        engine.copy_memory_in_use() >= held,
        "b gave memory back early"
    );
    assert!(
        engine.copy_memory_in_use() <= engine.memory_pools().0,
        "c took memory the copies' pool has not got"
    );
    // Reads go on while c waits: each within its 5 s first-byte bound, all bytes right.
    for round in 0..5 {
        check_range(&engine, &a, 0, None, &format!("read {round} while c waits")).await;
    }
    assert!(!copy_c.is_finished());
    copy_b.abort();
    let _ = copy_b.await;
    within("copy c after b is gone", copy_c)
        .await
        .expect("task")
        .expect("copy c");
    check_range(&engine, &c, 0, None, "c").await;
    assert!(engine.shutdown(HUNG).await);
    assert_eq!(engine.memory_in_use(), 0);
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
    .expect("engine options")
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

/// Issue 30: a manifest was collected into one buffer outside the budget while it loaded
/// (up to 32 MiB each, hundreds of partitions at once). Its bytes are now reserved from the
/// reads' pool as they arrive: a bloated manifest (28 MiB of a field nobody reads) larger
/// than the reads' pool fails naming the pool's key and holds nothing afterwards; with room
/// in the pool it reads, and gives the memory back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bloated_manifest_is_read_within_the_reads_pool() {
    let world = World::new();
    let mut opts = options(1000, CompressionMode::Off, None);
    opts.read_ahead_store_bytes = 0;
    let writer = world.engine(opts.clone());
    let seg = segment(&world.path("s"), record_batches(20, 0, 21), false, 21);
    writer
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy");
    let manifest = world
        .keys()
        .await
        .into_iter()
        .find(|k| k.ends_with(".rsm-manifest"))
        .expect("manifest");
    let mut m: serde_json::Value =
        serde_json::from_slice(&get(&world, &manifest).await).expect("json");
    m["remoteLogSegmentMetadata"]["padding"] = "x".repeat(28 << 20).into();
    put(&world, &manifest, serde_json::to_vec(&m).expect("json")).await;

    let mut small = opts.clone();
    small.memory_budget_bytes = 44 << 20;
    small.memory_copy_bytes = Some(24 << 20);
    let small = world.engine(small);
    let e = read_all(&small, &seg.metadata, 0, None)
        .await
        .expect_err("a 28 MiB manifest in a 20 MiB pool");
    assert!(e.to_string().contains("tsm.memory.budget.bytes"), "{e}");
    settle(&small).await;
    assert_eq!(small.memory_in_use(), 0, "nothing held after the refusal");

    let roomy = world.engine(opts);
    check_range(&roomy, &seg, 0, None, "a bloated manifest within the pool").await;
    settle(&roomy).await;
    assert_eq!(roomy.memory_in_use(), 0, "its memory given back");
}
