//! Store failures during copy and fetch, injected by core-store's `FaultInjectingBackend`
//! in front of the real filesystem backend: a failed upload of any of the three objects
//! leaves nothing behind and returns the store's error (transient stays transient); a
//! fetch stream cut mid-way is an error, and a retry succeeds; copy twice overwrites.

mod engine_support;

use std::sync::Arc;

use engine_support::*;
use tsm_core::engine::CompressionMode;
use tsm_core::{RemoteStorageManager, StorageBackend};
use tsm_storage::fault::{Fault, FaultInjectingBackend, Op};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_failed_upload_of_any_object_cleans_up() {
    let world = World::new();
    for (nth, fault) in [
        (1, Fault::Error),         // .log
        (1, Fault::CutAfter(500)), // .log body cut mid-way
        (2, Fault::Error),         // .indexes
        (3, Fault::Error),         // manifest
    ] {
        let faulty = Arc::new(FaultInjectingBackend::new(world.backend.clone()));
        faulty.on_nth(Op::Upload, nth, fault);
        let backend: Arc<dyn StorageBackend> = faulty.clone();
        let engine = RemoteStorageManager::new(backend, options(256, CompressionMode::On, None))
            .expect("engine options");
        let seg = segment(&world.path("s"), record_batches(40, 0, 60), true, 60);
        let e = engine
            .copy_log_segment_data(&seg.metadata, &seg.data)
            .await
            .expect_err("injected upload failure");
        assert!(e.is_transient(), "upload {nth} {fault:?}: {e}");
        assert!(e.to_string().contains("injected fault"), "{e}");
        assert!(
            world.keys().await.is_empty(),
            "upload {nth} {fault:?} left {:?}",
            world.keys().await
        );
        // The next attempt (a new segment id, as the broker does) succeeds.
        faulty.clear();
        let seg = segment(&world.path("s"), record_batches(40, 0, 61), true, 61);
        engine
            .copy_log_segment_data(&seg.metadata, &seg.data)
            .await
            .expect("retry");
        check_range(&engine, &seg, 0, None, "after retry").await;
        engine
            .delete_log_segment_data(&seg.metadata)
            .await
            .expect("delete");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_cut_fetch_stream_is_an_error_and_retry_works() {
    let world = World::new();
    let faulty = Arc::new(FaultInjectingBackend::new(world.backend.clone()));
    let backend: Arc<dyn StorageBackend> = faulty.clone();
    let engine = RemoteStorageManager::new(backend, options(1000, CompressionMode::Off, None))
        .expect("engine options");
    let seg = segment(&world.path("s"), Rng::new(62).bytes(5000), false, 62);
    engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy");
    check_range(&engine, &seg, 0, Some(0), "warm manifest").await;
    let n = faulty.calls(Op::Fetch);
    faulty.on_nth(Op::Fetch, n + 1, Fault::CutAfter(500)); // mid first chunk: the first GET is one chunk
    let e = read_all(&engine, &seg.metadata, 0, None)
        .await
        .expect_err("cut stream");
    assert!(
        e.is_transient() && e.to_string().contains("injected fault"),
        "{e}"
    );
    check_range(&engine, &seg, 0, None, "retry").await;
    // Copy twice (overwrite) keeps a readable segment.
    engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy again");
    check_range(&engine, &seg, 1234, Some(4321), "overwritten").await;
    check_indexes(&engine, &seg, "overwritten").await;
}
