//! Requests are signed when they are sent, not when the call that needs them started.
//!
//! S3 (and MinIO) reject a SigV4 request whose signing time is more than 15 minutes from
//! the server's clock (`RequestTimeTooSkewed`, HTTP 403). A copy can wait longer than that
//! inside tsm before its first request: for its working set from the copies' memory pool
//! (`tsm.storage.upload.timeout.ms` bounds the wait, 10 minutes by default, and a broker
//! that retries keeps copies queued). If anything on the path built and signed its
//! requests before such a wait, every copy after a long queue would fail.
//!
//! A real 20-minute wait does not fit in CI, so the client's clock moves instead: the
//! engine runs over the S3 backend against MinIO with an SDK time source 20 minutes
//! behind while its copies queue, and the time source is set to the real time at the
//! moment the queue moves (as if the 20 minutes had passed while the server's clock stood
//! still). A request signed before that moment carries a time 20 minutes behind MinIO's
//! and is rejected; a request signed when sent is accepted.
//!
//! - Copy A holds the copies' pool (its upload is held by [`UploadGate`], a wrapper in
//!   front of the real backend); copy B waits for memory behind it. The clock is then set
//!   right and the gate opened: both copies succeed and read back byte for byte.
//! - The control: a copy that runs while the clock is 20 minutes behind fails with
//!   `RequestTimeTooSkewed`, its error names the clock and is not retriable (class
//!   `auth`), and it leaves no object behind.
//!   Without it the test could not tell a signed-when-sent request from a server that
//!   does not check the time.
//!
//! Environment: the `TSM_TEST_S3_*` variables of `common` (MinIO; `scripts/test.d/30-s3.sh`).

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use aws_smithy_async::time::TimeSource;
use futures::{StreamExt, TryStreamExt};
use tsm_backend_s3::{S3Backend, S3Client, S3Config};
use tsm_core::engine::EngineOptions;
use tsm_core::{ErrorClass, RemoteStorageManager};
use tsm_storage::config::StorageConfig;
use tsm_storage::{BackendError, ByteRange, ByteStream, ListStream, ObjectKey, StorageBackend};

use common::segment::{Segment, segment};

/// How far behind the client's clock is while the copies queue (MinIO allows 15 min).
const BEHIND: Duration = Duration::from_secs(20 * 60);
/// `chunk.size` of the engine.
const CHUNK: u32 = 1 << 20;
/// Segment size: more than one part, so the `.log` is a multipart upload.
const LOG_SIZE: usize = common::PART + 3 * (CHUNK as usize) + 777;

/// An SDK time source `behind` seconds behind the real clock (0: the real clock).
#[derive(Debug, Clone, Default)]
struct Clock {
    behind_secs: Arc<AtomicI64>,
}

impl Clock {
    fn set_behind(&self, d: Duration) {
        let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
        self.behind_secs.store(secs, Ordering::SeqCst);
    }
}

impl TimeSource for Clock {
    fn now(&self) -> SystemTime {
        let behind = self.behind_secs.load(Ordering::SeqCst).max(0) as u64;
        SystemTime::now() - Duration::from_secs(behind)
    }
}

/// Holds every `upload` until opened, in front of a real backend; counts the held ones.
#[derive(Debug)]
struct UploadGate {
    inner: Arc<dyn StorageBackend>,
    open: tokio::sync::watch::Receiver<bool>,
    held: AtomicUsize,
}

impl std::fmt::Display for UploadGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.inner, f)
    }
}

#[async_trait::async_trait]
impl StorageBackend for UploadGate {
    async fn upload(
        &self,
        key: &ObjectKey,
        body: ByteStream,
        size: Option<u64>,
    ) -> Result<u64, BackendError> {
        let mut open = self.open.clone();
        if !*open.borrow() {
            self.held.fetch_add(1, Ordering::SeqCst);
            let opened = open.wait_for(|o| *o).await.is_ok();
            self.held.fetch_sub(1, Ordering::SeqCst);
            assert!(opened, "the test dropped its gate with an upload held");
        }
        self.inner.upload(key, body, size).await
    }

    async fn fetch(
        &self,
        key: &ObjectKey,
        range: Option<ByteRange>,
    ) -> Result<ByteStream, BackendError> {
        self.inner.fetch(key, range).await
    }

    async fn delete(&self, keys: &[ObjectKey]) -> Result<(), BackendError> {
        self.inner.delete(keys).await
    }

    fn list(&self, prefix: &ObjectKey) -> ListStream {
        self.inner.list(prefix)
    }

    fn upload_buffer_bytes(&self) -> u64 {
        self.inner.upload_buffer_bytes()
    }

    fn reads_are_local(&self) -> bool {
        self.inner.reads_are_local()
    }
}

/// The S3 backend over a new bucket whose SDK client signs with `clock`.
async fn backend_with_clock(test: &str, clock: &Clock) -> S3Backend {
    let mut settings: BTreeMap<String, String> = common::server();
    let bucket = common::bucket_name(test);
    common::create_bucket(&settings, &bucket).await;
    settings.insert("s3.bucket.name".into(), bucket.clone());
    let cfg = StorageConfig::new(settings);
    let plain = S3Backend::from_storage_config(&cfg)
        .await
        .expect("build backend");
    let sdk = plain
        .sdk_client()
        .config()
        .to_builder()
        .time_source(clock.clone())
        .build();
    S3Backend::from_client(S3Client {
        sdk: aws_sdk_s3::Client::from_conf(sdk),
        bucket: Arc::from(bucket.as_str()),
        cfg: Arc::new(S3Config::from_storage_config(&cfg).expect("S3 settings")),
    })
}

/// An engine over `backend` whose copies' pool holds one of this file's copies at a time:
/// the smallest pool `configure` accepts (one copy with indexes of the nominal size).
fn engine(backend: Arc<dyn StorageBackend>) -> RemoteStorageManager {
    use tsm_core::engine::lifecycle::budget::{NOMINAL_INDEX_BYTES, copy_bytes};
    let mut opts = EngineOptions::new(CHUNK);
    let need = |index: u64| {
        copy_bytes(
            u64::from(CHUNK),
            opts.max_in_flight,
            index,
            backend.upload_buffer_bytes(),
        )
    };
    let one_copy = need(NOMINAL_INDEX_BYTES);
    let ours = need(common::segment::OFFSET_INDEX_SIZE as u64);
    assert!(2 * ours > one_copy, "two copies would fit the pool");
    opts.memory_copy_bytes = Some(one_copy);
    opts.memory_budget_bytes = opts.memory_budget_bytes.max(4 * one_copy);
    let registry = tsm_core::metrics::MetricsRegistry::new();
    let backend = tsm_storage::layers::layered(backend, None, &registry);
    RemoteStorageManager::with_registry(backend, opts, registry).expect("engine options")
}

/// The whole `.log` of `seg`, read back through the engine.
async fn read_back(engine: &RemoteStorageManager, seg: &Segment) -> Vec<u8> {
    let s = Box::pin(engine.fetch_log_segment(&seg.metadata, 0, None))
        .await
        .expect("fetch");
    let parts: Vec<_> = s.try_collect().await.expect("read");
    parts.concat()
}

/// Keys in the bucket (straight from the backend, no engine).
async fn keys(backend: &S3Backend) -> Vec<String> {
    let mut out = Vec::new();
    let mut list = backend.list(&ObjectKey::plain(""));
    while let Some(item) = list.next().await {
        out.push(item.expect("list").key.as_str().to_string());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_queued_past_the_skew_window_are_signed_when_sent() {
    let clock = Clock::default();
    let s3 = backend_with_clock("clock-queue", &clock).await;
    let (open, gate_rx) = tokio::sync::watch::channel(false);
    let gate = Arc::new(UploadGate {
        inner: Arc::new(s3.clone()),
        open: gate_rx,
        held: AtomicUsize::new(0),
    });
    let engine = Arc::new(engine(gate.clone()));
    let dir = tempfile::tempdir().expect("temp dir");
    let (a, b) = (
        segment(dir.path(), "clock", LOG_SIZE, 1),
        segment(dir.path(), "clock", LOG_SIZE, 2),
    );
    clock.set_behind(BEHIND);

    // A takes the copies' pool and its first upload waits at the gate.
    let copy_a = tokio::spawn({
        let (engine, md, data) = (engine.clone(), a.metadata.clone(), a.data.clone());
        async move { engine.copy_log_segment_data(&md, &data).await }
    });
    let until = tokio::time::Instant::now() + Duration::from_secs(30);
    while gate.held.load(Ordering::SeqCst) == 0 {
        assert!(!copy_a.is_finished(), "copy A ended before its upload");
        assert!(tokio::time::Instant::now() < until, "copy A never uploaded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // B queues for memory behind A: it neither ends nor reaches the gate.
    let copy_b = tokio::spawn({
        let (engine, md, data) = (engine.clone(), b.metadata.clone(), b.data.clone());
        async move { engine.copy_log_segment_data(&md, &data).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!copy_b.is_finished(), "copy B did not wait for memory");
    assert_eq!(
        gate.held.load(Ordering::SeqCst),
        1,
        "B must wait for memory"
    );
    assert!(
        engine.copy_memory_in_use() > 0,
        "A holds the copies' pool while held"
    );

    // The 20 minutes "pass": the clock is right again when the queue moves.
    clock.set_behind(Duration::ZERO);
    open.send(true).expect("open the gate");
    for (name, copy) in [("A", copy_a), ("B", copy_b)] {
        tokio::time::timeout(Duration::from_secs(60), copy)
            .await
            .unwrap_or_else(|_| panic!("copy {name} hung"))
            .expect("copy task")
            .unwrap_or_else(|e| panic!("copy {name} after its wait: {e}"));
    }
    for seg in [&a, &b] {
        assert!(
            read_back(&engine, seg).await == seg.log,
            "segment read back differs"
        );
    }
}

/// The control: with the clock 20 minutes behind when the requests go out, MinIO rejects
/// them, the error says why, and the failed copy leaves nothing in the bucket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_signed_outside_the_skew_window_is_rejected_and_named() {
    let clock = Clock::default();
    let s3 = backend_with_clock("clock-control", &clock).await;
    let engine = engine(Arc::new(s3.clone()));
    let dir = tempfile::tempdir().expect("temp dir");
    let seg = segment(dir.path(), "clock", LOG_SIZE, 3);
    clock.set_behind(BEHIND);
    let e = Box::pin(engine.copy_log_segment_data(&seg.metadata, &seg.data))
        .await
        .expect_err("a request signed 20 minutes behind the server");
    let text = e.to_string();
    assert!(text.contains("RequestTimeTooSkewed"), "{text}");
    assert!(text.contains("clock"), "the error names the clock: {text}");
    // The store refused the signature: an operator's fault, which a retry does not fix.
    assert_eq!(e.class(), ErrorClass::Auth, "{text}");
    assert!(!e.is_transient(), "a skewed clock is not transient: {text}");
    clock.set_behind(Duration::ZERO);
    // The engine's clean-up of the failed copy runs with the clock right again.
    let until = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left = keys(&s3).await;
        if left.is_empty() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < until,
            "the failed copy left {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
