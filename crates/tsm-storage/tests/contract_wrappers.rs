//! The backend wrappers (metrics, rate limit, fault injection) pass the contract suite
//! over the filesystem and in-memory backends, and do what they say.
//!
//! Rate-limit tests run on tokio's paused clock: elapsed time is virtual and exact, so the
//! assertions are deterministic, not timing-dependent.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use tsm_storage::contract::{self, ContractOptions, pattern, pattern_stream};
use tsm_storage::fault::{Fault, FaultInjectingBackend, Op};
use tsm_storage::filesystem::FilesystemBackend;
use tsm_storage::memory::MemoryBackend;
use tsm_storage::metered::MeteredBackend;
use tsm_storage::metrics::MetricsRegistry;
use tsm_storage::rate_limit::{RateLimitedBackend, TokenBucket};
use tsm_storage::{ByteRange, ObjectKey, StorageBackend};

const MIB: u64 = 1024 * 1024;

fn fs() -> (tempfile::TempDir, Arc<dyn StorageBackend>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let b = FilesystemBackend::new(dir.path()).expect("backend");
    (dir, Arc::new(b))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_wrappers_stacked_pass_the_contract() {
    let (_dir, inner) = fs();
    let registry = MetricsRegistry::new();
    let faults: Arc<dyn StorageBackend> = Arc::new(FaultInjectingBackend::new(inner));
    let limited: Arc<dyn StorageBackend> = Arc::new(RateLimitedBackend::new(faults, 1024 * MIB));
    let metered = MeteredBackend::new(limited, &registry);
    contract::run_all(&metered, &ContractOptions::default()).await;
    let s = registry.snapshot();
    assert!(s.counter("backend.upload.requests") > 500);
    assert!(s.counter("backend.bytes.uploaded") > 8 * MIB);
    assert!(s.counter("backend.bytes.downloaded") > 8 * MIB);
    assert!(s.counter("backend.fetch.errors") > 0); // NotFound / InvalidRange cases
    assert!(s.latencies["backend.upload"].count > 500);
}

#[tokio::test]
async fn metered_counts_requests_errors_and_bytes() {
    let registry = MetricsRegistry::new();
    let b = MeteredBackend::new(Arc::new(MemoryBackend::new()), &registry);
    let k = ObjectKey::plain("a/b");
    let body = futures::stream::iter([
        Ok(Bytes::from_static(b"hello")),
        Ok(Bytes::from_static(b" world")),
    ])
    .boxed();
    b.upload(&k, body, Some(11)).await.expect("upload");
    let got: Vec<Bytes> = b
        .fetch(&k, ByteRange::new(0, 4))
        .await
        .expect("fetch")
        .try_collect()
        .await
        .expect("read");
    assert_eq!(got.concat(), b"hello");
    assert!(b.fetch(&ObjectKey::plain("missing"), None).await.is_err());
    b.delete(std::slice::from_ref(&k)).await.expect("delete");
    let listed: Vec<_> = b
        .list(&ObjectKey::plain("a/"))
        .try_collect()
        .await
        .expect("list");
    assert!(listed.is_empty());
    let s = registry.snapshot();
    assert_eq!(s.counter("backend.upload.requests"), 1);
    assert_eq!(s.counter("backend.upload.errors"), 0);
    assert_eq!(s.counter("backend.bytes.uploaded"), 11);
    assert_eq!(s.counter("backend.fetch.requests"), 2);
    assert_eq!(s.counter("backend.fetch.errors"), 1);
    assert_eq!(s.counter("backend.bytes.downloaded"), 5);
    assert_eq!(s.counter("backend.delete.requests"), 1);
    assert_eq!(s.counter("backend.list.requests"), 1);
    assert_eq!(s.latencies["backend.fetch"].count, 2);
}

#[tokio::test(start_paused = true)]
async fn rate_limit_applies_to_every_uploaded_byte() {
    let inner = MemoryBackend::new();
    let b = RateLimitedBackend::new(Arc::new(inner.clone()), MIB);
    let start = tokio::time::Instant::now();
    // 5 MiB in 64 KiB items: the first MiB is the burst, the other 4 take 4 s.
    let n = b
        .upload(
            &ObjectKey::plain("a"),
            pattern_stream(1, 5 * MIB, 64 * 1024),
            None,
        )
        .await
        .expect("upload");
    assert_eq!(n, 5 * MIB);
    let elapsed = start.elapsed();
    assert!(elapsed >= Duration::from_secs(4), "{elapsed:?}");
    assert!(elapsed < Duration::from_millis(4100), "{elapsed:?}");
    // A second object shares the same budget: 2 MiB in one item takes 2 s more.
    let start = tokio::time::Instant::now();
    b.upload(
        &ObjectKey::plain("b"),
        pattern_stream(2, 2 * MIB, 2 * MIB as usize),
        Some(2 * MIB),
    )
    .await
    .expect("upload");
    let elapsed = start.elapsed();
    assert!(elapsed >= Duration::from_secs(2), "{elapsed:?}");
    assert!(elapsed < Duration::from_millis(2100), "{elapsed:?}");
    // Fetches are not limited.
    let start = tokio::time::Instant::now();
    let _: Vec<Bytes> = b
        .fetch(&ObjectKey::plain("a"), None)
        .await
        .expect("fetch")
        .try_collect()
        .await
        .expect("read");
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(inner.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn concurrent_uploads_share_the_rate() {
    let b = Arc::new(RateLimitedBackend::new(Arc::new(MemoryBackend::new()), MIB));
    let start = tokio::time::Instant::now();
    let uploads = (0..4).map(|i| {
        let b = b.clone();
        async move {
            b.upload(
                &ObjectKey::plain(format!("k{i}")),
                pattern_stream(i, MIB, 128 * 1024),
                None,
            )
            .await
            .expect("upload")
        }
    });
    futures::future::join_all(uploads).await;
    // 4 MiB total at 1 MiB/s with a 1 MiB burst: 3 s.
    let elapsed = start.elapsed();
    assert!(elapsed >= Duration::from_secs(3), "{elapsed:?}");
    assert!(elapsed < Duration::from_millis(3100), "{elapsed:?}");
}

#[test]
fn token_bucket_debt() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime");
    rt.block_on(async {
        let bucket = TokenBucket::new(1000, 500);
        assert_eq!(bucket.reserve(500), Duration::ZERO);
        assert_eq!(bucket.reserve(1000), Duration::from_secs(1));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(bucket.reserve(0), Duration::ZERO);
    });
}

#[tokio::test]
async fn fault_injection_fails_the_nth_call_and_cuts_streams() {
    let inner = MemoryBackend::new();
    let b = FaultInjectingBackend::new(Arc::new(inner.clone()));
    let k = ObjectKey::plain("obj");
    let data = pattern(9, 0, 50_000);
    b.on_nth(Op::Upload, 1, Fault::Error);
    let once = |d: &Bytes| {
        let d = d.clone();
        futures::stream::once(async move { Ok(d) }).boxed()
    };
    let e = b
        .upload(&k, once(&data), None)
        .await
        .expect_err("1st upload must fail");
    assert!(
        e.is_transient() && e.to_string().contains("injected fault"),
        "{e}"
    );
    assert!(inner.is_empty());
    b.upload(&k, once(&data), None).await.expect("2nd upload");
    // Upload body cut after 100 bytes: the inner backend sees the failure, keeps the old object.
    b.on_nth(Op::Upload, 3, Fault::CutAfter(100));
    assert!(
        b.upload(&k, once(&pattern(10, 0, 1000)), None)
            .await
            .is_err()
    );
    // Fetch cut after 20_000 bytes.
    b.on_nth(Op::Fetch, 1, Fault::CutAfter(20_000));
    let mut got = Vec::new();
    let mut s = b.fetch(&k, None).await.expect("fetch");
    let mut failed = false;
    while let Some(item) = s.next().await {
        match item {
            Ok(bytes) => got.extend_from_slice(&bytes),
            Err(e) => {
                assert!(e.to_string().contains("cut after 20000"), "{e}");
                failed = true;
            }
        }
    }
    assert!(failed);
    assert_eq!(got, data[..20_000]);
    let full: Vec<Bytes> = b
        .fetch(&k, None)
        .await
        .expect("fetch")
        .try_collect()
        .await
        .expect("read");
    assert_eq!(full.concat(), data);
    b.on_every(Op::Delete, Fault::Error);
    assert!(b.delete(std::slice::from_ref(&k)).await.is_err());
    assert!(b.delete(std::slice::from_ref(&k)).await.is_err());
    b.clear();
    b.delete(&[k]).await.expect("delete");
    assert_eq!(b.calls(Op::Upload), 3);
    assert_eq!(b.calls(Op::Fetch), 2);
    assert_eq!(b.calls(Op::Delete), 3);
}

#[tokio::test(start_paused = true)]
async fn layered_stack_meters_and_limits() {
    let registry = MetricsRegistry::new();
    let b = tsm_storage::layers::layered(Arc::new(MemoryBackend::new()), Some(MIB), &registry);
    let start = tokio::time::Instant::now();
    b.upload(
        &ObjectKey::plain("x"),
        pattern_stream(3, 3 * MIB, 64 * 1024),
        None,
    )
    .await
    .expect("upload");
    assert!(start.elapsed() >= Duration::from_secs(2));
    assert_eq!(
        registry.snapshot().counter("backend.bytes.uploaded"),
        3 * MIB
    );
    let unlimited = tsm_storage::layers::layered(Arc::new(MemoryBackend::new()), None, &registry);
    let start = tokio::time::Instant::now();
    unlimited
        .upload(
            &ObjectKey::plain("y"),
            pattern_stream(3, 3 * MIB, 64 * 1024),
            None,
        )
        .await
        .expect("upload");
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(registry.snapshot().counter("backend.upload.requests"), 2);
}
