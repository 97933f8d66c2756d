//! tsm-backend-gcs against a real fake-gcs-server.
//!
//! Start it with `scripts/services/fake-gcs.sh start` (or run `scripts/test.sh 31`) and set
//! `TSM_TEST_GCS_ENDPOINT=http://127.0.0.1`. Without the variable every test fails (there is
//! no way to skip them and pass). Each test makes its own bucket, so tests run in parallel.
//! Retries are capped at 2 attempts so a broken setup fails fast instead of looking hung.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use tsm_backend_gcs::{GcsBackend, GcsConfig, KIND};
use tsm_storage::ByteStream;
use tsm_storage::{BackendError, ByteRange, ObjectKey, StorageBackend, StorageConfig};

/// The resumable upload quantum, used as the test chunk size to get many chunks cheaply.
const Q: usize = 256 * 1024;

fn endpoint() -> String {
    match std::env::var("TSM_TEST_GCS_ENDPOINT") {
        Ok(v) if !v.trim().is_empty() => v.trim().trim_end_matches('/').to_string(),
        _ => panic!(
            "TSM_TEST_GCS_ENDPOINT is not set. Start fake-gcs-server with \
             `scripts/services/fake-gcs.sh start` and set TSM_TEST_GCS_ENDPOINT=http://127.0.0.1 \
             (or run `scripts/test.sh 31`)."
        ),
    }
}

fn unique_bucket() -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!(
        "tsm-test-{}-{}-{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Creates a bucket through the JSON API (`buckets.insert`).
async fn create_bucket(endpoint: &str, name: &str) {
    let response = reqwest::Client::new()
        .post(format!("{endpoint}/storage/v1/b"))
        .query(&[("project", "tsm-test")])
        .json(&serde_json::json!({ "name": name }))
        .send()
        .await
        .unwrap_or_else(|e| panic!("fake-gcs-server at {endpoint} unreachable: {e}"));
    assert!(
        response.status().is_success(),
        "creating bucket {name}: HTTP {}",
        response.status()
    );
}

fn storage_config(endpoint: &str, bucket: &str) -> StorageConfig {
    let map: BTreeMap<String, String> = [
        ("gcs.bucket.name", bucket),
        ("gcs.endpoint.url", endpoint),
        ("gcs.resumable.upload.chunk.size", &Q.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    StorageConfig::new(map)
}

/// A backend on a fresh bucket.
async fn backend() -> (GcsBackend, String) {
    let endpoint = endpoint();
    let bucket = unique_bucket();
    create_bucket(&endpoint, &bucket).await;
    let mut config = GcsConfig::from_storage(&storage_config(&endpoint, &bucket)).unwrap();
    config.max_attempts = 2;
    config.list_page_size = 3;
    (GcsBackend::new(config).await.unwrap(), bucket)
}

fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// `bytes` as a stream of `piece`-sized items.
fn body(bytes: &[u8], piece: usize) -> ByteStream {
    let items: Vec<Result<Bytes, BackendError>> = bytes
        .chunks(piece.max(1))
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    futures::stream::iter(items).boxed()
}

async fn read_all(stream: ByteStream) -> Result<Vec<u8>, BackendError> {
    let parts: Vec<Bytes> = stream.try_collect().await?;
    Ok(parts.concat())
}

async fn fetch(
    b: &GcsBackend,
    key: &ObjectKey,
    range: Option<(u64, u64)>,
) -> Result<Vec<u8>, BackendError> {
    let range = range.map(|(s, e)| ByteRange::new(s, e).unwrap());
    read_all(b.fetch(key, range).await?).await
}

#[tokio::test]
async fn uploads_round_trip_at_chunk_boundaries() {
    let (b, _) = backend().await;
    let sizes = [0, 1, 1000, Q - 1, Q, Q + 1, 2 * Q, 3 * Q + 123];
    for (i, &size) in sizes.iter().enumerate() {
        let payload = data(size, i as u8);
        for known in [true, false] {
            let key = ObjectKey::plain(format!("sizes/{size}-{known}.log"));
            let declared = known.then_some(size as u64);
            let stored = b.upload(&key, body(&payload, 100_003), declared).await;
            let stored = stored.unwrap_or_else(|e| panic!("upload {size} B known={known}: {e}"));
            assert_eq!(stored, size as u64, "stored size of {key}");
            assert_eq!(b.stat(&key).await.unwrap(), Some(size as u64), "{key}");
            let back = fetch(&b, &key, None).await.unwrap();
            assert!(
                back == payload,
                "{key}: {} bytes back, {size} sent",
                back.len()
            );
        }
    }
}

#[tokio::test]
async fn larger_unknown_size_stream_in_odd_pieces() {
    let (b, _) = backend().await;
    let payload = data(5 * 1024 * 1024 + 7, 9);
    let key = ObjectKey::plain("big/segment.log");
    assert_eq!(
        b.upload(&key, body(&payload, 65_537), None).await.unwrap(),
        payload.len() as u64
    );
    assert!(fetch(&b, &key, None).await.unwrap() == payload);
    let tail = fetch(&b, &key, Some((payload.len() as u64 - 10, u64::MAX - 1)))
        .await
        .unwrap();
    assert_eq!(tail, payload[payload.len() - 10..]);
}

#[tokio::test]
async fn one_stream_item_larger_than_several_chunks() {
    let (b, _) = backend().await;
    // The SDK splits items at chunk boundaries; the item itself is the caller's memory.
    let payload = data(4 * Q + 3, 5);
    for declared in [Some(payload.len() as u64), None] {
        let key = ObjectKey::plain(format!("one-item/{declared:?}.log"));
        let one = futures::stream::iter(vec![Ok(Bytes::from(payload.clone()))]).boxed();
        assert_eq!(
            b.upload(&key, one, declared).await.unwrap(),
            payload.len() as u64
        );
        assert!(fetch(&b, &key, None).await.unwrap() == payload, "{key}");
    }
}

#[tokio::test]
async fn ranged_reads_clamp_and_reject_like_the_contract() {
    let (b, _) = backend().await;
    let payload = data(1000, 1);
    let key = ObjectKey::plain("ranges/a.log");
    b.upload(&key, body(&payload, 333), Some(1000))
        .await
        .unwrap();

    assert_eq!(fetch(&b, &key, Some((0, 0))).await.unwrap(), payload[..1]);
    assert_eq!(
        fetch(&b, &key, Some((999, 999))).await.unwrap(),
        payload[999..]
    );
    assert_eq!(
        fetch(&b, &key, Some((500, 599))).await.unwrap(),
        payload[500..600]
    );
    assert_eq!(
        fetch(&b, &key, Some((990, 5000))).await.unwrap(),
        payload[990..]
    );
    // "To the end" ranges near u64::MAX (the SDK overflows on them unless capped).
    assert_eq!(fetch(&b, &key, Some((0, u64::MAX))).await.unwrap(), payload);
    assert_eq!(
        fetch(&b, &key, Some((998, u64::MAX))).await.unwrap(),
        payload[998..]
    );
    for (s, e) in [
        (1000, 1000),
        (1000, 2000),
        (5000, 6000),
        (u64::MAX - 1, u64::MAX),
    ] {
        match fetch(&b, &key, Some((s, e))).await {
            Err(BackendError::InvalidRange { range, .. }) => {
                assert_eq!((range.start, range.end), (s, e));
            }
            other => panic!("range {s}-{e} of 1000 bytes: {other:?}"),
        }
    }
}

#[tokio::test]
async fn empty_object_reads_whole_and_rejects_ranges() {
    let (b, _) = backend().await;
    let key = ObjectKey::plain("empty/zero.log");
    assert_eq!(b.upload(&key, body(&[], 1), Some(0)).await.unwrap(), 0);
    assert!(fetch(&b, &key, None).await.unwrap().is_empty());
    // fake-gcs-server answers `Content-Range: bytes 0--1/0` here; the backend must still
    // give InvalidRange as real GCS (416) does.
    for (s, e) in [(0, 0), (0, 10), (5, 9)] {
        match fetch(&b, &key, Some((s, e))).await {
            Err(BackendError::InvalidRange { .. }) => {}
            other => panic!("range {s}-{e} of an empty object: {other:?}"),
        }
    }
}

#[tokio::test]
async fn missing_objects_are_not_found_and_errors_mask_the_prefix() {
    let (b, bucket) = backend().await;
    let key = ObjectKey::new("tenant-secret/", "t/0/missing.log", true);
    for range in [None, Some((0, 10))] {
        let e = fetch(&b, &key, range).await.unwrap_err();
        assert!(e.is_not_found(), "{e}");
        let text = e.to_string();
        assert!(text.contains("<prefix>/t/0/missing.log"), "{text}");
        assert!(!text.contains("tenant-secret"), "{text}");
        assert!(text.contains(&format!("gs://{bucket}")), "{text}");
        assert!(text.contains("HTTP 404"), "{text}");
    }
    assert_eq!(b.stat(&key).await.unwrap(), None);
}

#[tokio::test]
async fn delete_is_idempotent_and_concurrent() {
    let (b, _) = backend().await;
    let keys: Vec<ObjectKey> = (0..40)
        .map(|i| ObjectKey::plain(format!("del/{i}.log")))
        .collect();
    for k in &keys[..20] {
        b.upload(k, body(b"x", 1), Some(1)).await.unwrap();
    }
    // 20 present, 20 missing.
    b.delete(&keys).await.unwrap();
    for k in &keys[..20] {
        assert!(fetch(&b, k, None).await.unwrap_err().is_not_found(), "{k}");
    }
    b.delete(&keys).await.unwrap();
    b.delete(&[]).await.unwrap();
}

#[tokio::test]
async fn list_pages_through_a_prefix() {
    let (b, _) = backend().await;
    for i in 0..7 {
        let key = ObjectKey::plain(format!("list/p/{i}.log"));
        b.upload(&key, body(&data(i * 10, 0), 7), None)
            .await
            .unwrap();
    }
    b.upload(&ObjectKey::plain("list/q/x.log"), body(b"q", 1), Some(1))
        .await
        .unwrap();
    // Page size is 3 in these tests: 7 objects take 3 pages.
    let mut found: Vec<(String, u64)> = b
        .list(&ObjectKey::plain("list/p/"))
        .map_ok(|m| (m.key, m.size))
        .try_collect()
        .await
        .unwrap();
    found.sort();
    let want: Vec<(String, u64)> = (0..7)
        .map(|i| (format!("list/p/{i}.log"), i * 10))
        .collect();
    assert_eq!(found, want);
    let none: Vec<_> = b
        .list(&ObjectKey::plain("list/nothing/"))
        .try_collect()
        .await
        .unwrap();
    assert!(none.is_empty());
}

#[tokio::test]
async fn upload_replaces_an_existing_object() {
    let (b, _) = backend().await;
    let key = ObjectKey::plain("replace/a.log");
    b.upload(&key, body(&data(Q + 5, 1), 4096), None)
        .await
        .unwrap();
    let second = data(10, 2);
    b.upload(&key, body(&second, 3), Some(10)).await.unwrap();
    assert_eq!(fetch(&b, &key, None).await.unwrap(), second);
}

#[tokio::test]
async fn failed_stream_commits_nothing_and_reports_the_stream_error() {
    let (b, _) = backend().await;
    let key = ObjectKey::plain("fail/a.log");
    // Two full chunks reach the service before the stream fails.
    let good = data(2 * Q + 10, 3);
    let failing = futures::stream::iter(
        good.chunks(Q / 2)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect::<Vec<_>>()
            .into_iter()
            .chain(std::iter::once(Err(BackendError::Other {
                key: key.clone(),
                detail: "disk read failed".into(),
                source: None,
            }))),
    )
    .boxed();
    let e = b.upload(&key, failing, None).await.unwrap_err();
    assert!(e.to_string().contains("disk read failed"), "{e}");
    assert!(fetch(&b, &key, None).await.unwrap_err().is_not_found());

    // An existing object survives a failed replacement.
    b.upload(&key, body(b"old", 3), Some(3)).await.unwrap();
    let failing = futures::stream::iter(vec![
        Ok(Bytes::from(data(Q + 1, 4))),
        Err(BackendError::Other {
            key: key.clone(),
            detail: "broken".into(),
            source: None,
        }),
    ])
    .boxed();
    assert!(b.upload(&key, failing, None).await.is_err());
    assert_eq!(fetch(&b, &key, None).await.unwrap(), b"old");
}

#[tokio::test]
async fn declared_size_must_match_the_body() {
    let (b, _) = backend().await;
    let short = ObjectKey::plain("size/short.log");
    let e = b
        .upload(&short, body(&data(50, 0), 7), Some(100))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("50 bytes"), "{e}");
    assert!(fetch(&b, &short, None).await.unwrap_err().is_not_found());

    let long = ObjectKey::plain("size/long.log");
    let e = b
        .upload(&long, body(&data(100, 0), 7), Some(50))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("longer"), "{e}");
    assert!(fetch(&b, &long, None).await.unwrap_err().is_not_found());

    // Exactly at a chunk boundary, with one extra byte in a separate item.
    let edge = ObjectKey::plain("size/edge.log");
    let mut payload = data(Q, 0);
    payload.push(1);
    let stream = futures::stream::iter(vec![
        Ok(Bytes::copy_from_slice(&payload[..Q])),
        Ok(Bytes::copy_from_slice(&payload[Q..])),
    ])
    .boxed();
    assert!(b.upload(&edge, stream, Some(Q as u64)).await.is_err());
    assert!(fetch(&b, &edge, None).await.unwrap_err().is_not_found());
}

#[tokio::test]
async fn missing_bucket_fails_fast_with_bucket_and_status() {
    let endpoint = endpoint();
    let bucket = unique_bucket(); // never created
    let mut config = GcsConfig::from_storage(&storage_config(&endpoint, &bucket)).unwrap();
    config.max_attempts = 2;
    let b = GcsBackend::new(config).await.unwrap();
    let key = ObjectKey::plain("x.log");
    let e = b.upload(&key, body(b"abc", 3), Some(3)).await.unwrap_err();
    assert!(
        !e.is_not_found(),
        "a missing bucket is not a missing object: {e}"
    );
    let text = e.to_string();
    assert!(text.contains(&format!("gs://{bucket}")), "{text}");
    let e = b
        .list(&ObjectKey::plain(""))
        .try_collect::<Vec<_>>()
        .await
        .unwrap_err();
    assert!(e.to_string().contains("HTTP 404"), "{e}");
}

#[tokio::test]
async fn kind_builds_from_java_plugin_keys() {
    let endpoint = endpoint();
    let bucket = unique_bucket();
    create_bucket(&endpoint, &bucket).await;
    assert!(KIND.matches("gcs"));
    assert!(KIND.matches("io.aiven.kafka.tieredstorage.storage.gcs.GcsStorage"));
    let backend = (KIND.build)(storage_config(&endpoint, &bucket))
        .await
        .unwrap();
    assert_eq!(backend.to_string(), format!("gcs(gs://{bucket})"));
    let key = ObjectKey::plain("kind/a.log");
    backend
        .upload(&key, body(b"hello", 2), Some(5))
        .await
        .unwrap();
    let back = read_all(backend.fetch(&key, None).await.unwrap())
        .await
        .unwrap();
    assert_eq!(back, b"hello");
}

/// One test per property of tsm-storage's backend contract suite, each on its own bucket,
/// with 256 KiB resumable chunks so the large object spans several chunks.
macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        mod contract {
            use super::*;
            use tsm_storage::contract::{self, ContractOptions};

            fn opts() -> ContractOptions {
                ContractOptions::default().with_large_object_size(3 * Q as u64 + 1)
            }

            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let (b, _) = backend().await;
                    contract::$name(&b, &opts()).await;
                }
            )*
        }
    };
}

contract!(
    upload_fetch_delete,
    overwrite_keeps_latest,
    ranged_reads,
    range_past_end_clamped,
    range_start_past_end_invalid,
    zero_byte_object,
    missing_key_not_found,
    delete_missing_keys,
    delete_many_keys,
    concurrent_uploads,
    large_object_streamed,
    failed_upload_not_visible,
    list_by_prefix,
);

/// The whole suite again with the production default chunk size (25 MiB), built from the
/// Java plugin's keys through [`KIND`], with the large object just over one chunk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contract_suite_with_default_chunk_size() {
    let endpoint = endpoint();
    let bucket = unique_bucket();
    create_bucket(&endpoint, &bucket).await;
    let map: BTreeMap<String, String> = [
        ("gcs.bucket.name", bucket.as_str()),
        ("gcs.endpoint.url", endpoint.as_str()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let mut config = GcsConfig::from_storage(&StorageConfig::new(map)).unwrap();
    config.max_attempts = 2;
    let b = GcsBackend::new(config).await.unwrap();
    let opts = tsm_storage::contract::ContractOptions::default()
        .with_large_object_size(25 * 1024 * 1024 + 1)
        .with_many_keys(50);
    tsm_storage::contract::run_all(&b, &opts).await;
}
