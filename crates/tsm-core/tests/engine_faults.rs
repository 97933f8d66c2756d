//! Store failures during copy and fetch, injected by core-store's `FaultInjectingBackend`
//! in front of the real filesystem backend: a failed upload of any of the three objects
//! leaves nothing behind and returns the store's error (transient stays transient); a
//! fetch stream cut mid-way is an error, and a retry succeeds; copy twice overwrites; a
//! stalled copy and copies failing in a row show in the tier-health gauges and WARN lines,
//! and the recovery in an INFO line.

use std::sync::Arc;

use crate::engine_support::*;
use tsm_core::engine::{CompressionMode, HealthSettings};
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

/// KAFKA-19981: the broker no longer deletes what a copy that failed retriably wrote, so
/// the plugin's clean-up must leave nothing, not even what the store commits late. The
/// manifest's upload is never answered (the copy gives up at its deadline) and reaches
/// the store 1.5 s later, after the copy's delete: the clean-up deletes the manifest once
/// more after `LATE_WRITE_GRACE`, so no manifest names deleted data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_a_manifest_the_store_commits_after_the_copy_gave_up_is_deleted_again() {
    use std::time::Duration;
    let world = World::new();
    let faulty = Arc::new(FaultInjectingBackend::new(world.backend.clone()));
    let late = Duration::from_millis(1500);
    faulty.on_nth(Op::Upload, 3, Fault::LateWrite(late)); // the manifest
    let mut opts = options(256, CompressionMode::On, None);
    opts.deadlines.upload = Duration::from_millis(500);
    opts.deadlines.idle = Duration::from_millis(500);
    let backend: Arc<dyn StorageBackend> = faulty.clone();
    let engine = RemoteStorageManager::new(backend, opts).expect("engine options");
    let seg = segment(&world.path("s"), record_batches(40, 0, 62), true, 62);
    let failed_at = tokio::time::Instant::now();
    let e = engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect_err("the manifest's upload is never answered");
    assert!(e.is_transient(), "{e}");
    assert!(world.keys().await.is_empty(), "{:?}", world.keys().await);
    // The store commits the manifest late: the test sees it land...
    let until = failed_at + late + Duration::from_secs(3);
    while !world
        .keys()
        .await
        .iter()
        .any(|k| k.ends_with(".rsm-manifest"))
    {
        assert!(
            tokio::time::Instant::now() < until,
            "the late manifest never landed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // ...and the clean-up's second delete removes it.
    let until = failed_at + tsm_core::engine::lifecycle::LATE_WRITE_GRACE + Duration::from_secs(3);
    while !world.keys().await.is_empty() {
        assert!(
            tokio::time::Instant::now() < until,
            "a manifest names deleted data: {:?}",
            world.keys().await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_cut_fetch_stream_is_an_error_and_retry_works() {
    let world = World::new();
    let faulty = Arc::new(FaultInjectingBackend::new(world.backend.clone()));
    let backend: Arc<dyn StorageBackend> = faulty.clone();
    // A plain segment without chunk digests: one exact-range stream, which the cut ends.
    let mut opts = options(1000, CompressionMode::Off, None);
    opts.write_integrity = false;
    let engine = RemoteStorageManager::new(backend, opts).expect("engine options");
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

/// The log lines of one test, written by a thread-local subscriber.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// Tiering never stops silently (engine/health.rs): a copy whose upload hangs shows as in
/// flight, ageing and stalled, with one WARN line, and its end as a recovery; copies failing
/// in a row count by class, give one WARN line (not one per retry) naming partition,
/// segment, class and error, and the next success resets the partition with an INFO line.
/// Current-thread runtime: the watcher task and the copies log on the test's thread.
#[tokio::test]
async fn engine_tier_health_reports_a_stalled_copy_failing_copies_and_the_recovery() {
    let lines = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(lines.clone())
        .with_ansi(false)
        .finish();
    let _log = tracing::subscriber::set_default(subscriber);
    let world = World::new();
    let faulty = Arc::new(FaultInjectingBackend::new(world.backend.clone()));
    let backend: Arc<dyn StorageBackend> = faulty.clone();
    let mut opts = options(256, CompressionMode::Off, None);
    opts.health = HealthSettings {
        stall_warn_factor: 1,
        failures_warn_count: 2,
        stall_warn_min: std::time::Duration::from_millis(200),
    };
    let engine = RemoteStorageManager::new(backend, opts).expect("engine options");

    // The `.log` upload hangs for 2.5 s: the watcher (every second) reports it once.
    faulty.on_nth(
        Op::Upload,
        1,
        Fault::Stall(std::time::Duration::from_millis(2500)),
    );
    let seg = segment(&world.path("s"), record_batches(40, 0, 70), false, 70);
    let probe = async {
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        engine.metrics()
    };
    let (copied, during) = tokio::join!(
        engine.copy_log_segment_data(&seg.metadata, &seg.data),
        probe
    );
    copied.expect("a slow copy still succeeds");
    assert_eq!(during.gauges["copy.in_flight"], 1);
    assert!(during.gauges["copy.oldest.age.ms"] >= 1400, "{during:?}");
    assert_eq!(during.gauges["tier.partitions.stalled"], 1);
    let text = lines.text();
    assert_eq!(text.matches("has run").count(), 1, "{text}");
    assert!(
        text.contains("WARN") && text.contains("topic-7 segment"),
        "{text}"
    );
    assert!(text.contains("tsm.storage.upload.timeout.ms"), "{text}");
    assert!(
        text.contains("INFO") && text.contains("recovered"),
        "{text}"
    );
    let after = engine.metrics();
    assert_eq!(after.gauges["copy.in_flight"], 0);
    assert_eq!(after.gauges["tier.partitions.stalled"], 0);

    // Three copies fail in a row: one WARN line (at the second), the class counted.
    faulty.clear();
    faulty.on_every(Op::Upload, Fault::Error);
    for seed in 71..74 {
        let seg = segment(&world.path("s"), record_batches(40, 0, seed), false, seed);
        engine
            .copy_log_segment_data(&seg.metadata, &seg.data)
            .await
            .expect_err("injected failure");
    }
    let health = engine.tier_health();
    assert_eq!(health.len(), 1, "{health:?}");
    assert_eq!(
        (health[0].topic.as_str(), health[0].partition),
        ("topic", 7)
    );
    assert_eq!(health[0].consecutive_failures, 3);
    assert_eq!(
        health[0].last_failure,
        Some(tsm_core::ErrorClass::Unavailable)
    );
    assert!(health[0].since_last_success.is_some());
    let m = engine.metrics();
    assert_eq!(m.counter("copy.failures.unavailable"), 3);
    assert_eq!(m.gauges["tier.partitions.failing"], 1);
    let text = lines.text();
    assert_eq!(text.matches("copies in a row failed").count(), 1, "{text}");
    assert!(
        text.contains("2 copies in a row failed for topic-7") && text.contains("injected fault"),
        "{text}"
    );
    assert!(
        text.contains("unavailable (the broker retries it)"),
        "{text}"
    );

    // The store is back: the next copy resets the partition and says so.
    faulty.clear();
    let seg = segment(&world.path("s"), record_batches(40, 0, 74), false, 74);
    engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("the store is back");
    let health = engine.tier_health();
    assert_eq!(health[0].consecutive_failures, 0);
    assert_eq!(health[0].last_failure, None);
    assert!(
        lines.text().contains("recovered: topic-7 segment")
            && lines.text().contains("after 3 failed copies"),
        "{}",
        lines.text()
    );
    assert_eq!(engine.metrics().gauges["tier.partitions.failing"], 0);
}
