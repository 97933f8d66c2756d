//! The S3 backend against a real MinIO server (see `common` for the environment):
//! round trips, range semantics, 0-byte objects, multipart edge sizes, batched delete,
//! listing, error mapping, credentials and abort of failed or dropped multipart uploads.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::{PART, backend, body, data, etag, get, pending_uploads, read_all};
use futures::StreamExt;
use tsm_storage::config::StorageConfig;
use tsm_storage::{BackendError, ByteRange, ByteStream, ObjectKey, StorageBackend};

fn range(s: u64, e: u64) -> Option<ByteRange> {
    ByteRange::new(s, e)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_object_round_trip_and_ranges() {
    let b = backend("small", &[]).await;
    let k = ObjectKey::plain("topic-x/0/00000000000000000000-abc.log");
    let n = b
        .upload(&k, body(b"hello world", 3), Some(11))
        .await
        .unwrap();
    assert_eq!(n, 11);
    assert_eq!(get(&b, &k).await, b"hello world");
    for (s, e, want) in [
        (0, 0, &b"h"[..]),
        (10, 10, b"d"),
        (6, 10, b"world"),
        (6, 1000, b"world"),
        (0, u64::MAX, b"hello world"),
    ] {
        let got = read_all(b.fetch(&k, range(s, e)).await.unwrap()).await;
        assert_eq!(got, want, "range {s}-{e}");
    }
    for (s, e) in [(11, 11), (11, 20), (500, 600)] {
        let err = b.fetch(&k, range(s, e)).await.err().expect("invalid range");
        assert!(
            matches!(err, BackendError::InvalidRange { .. }),
            "range {s}-{e}: {err}"
        );
        assert!(err.to_string().contains(k.as_str()), "{err}");
    }
    // Replacing an object.
    b.upload(&k, body(b"bye", 10), None).await.unwrap();
    assert_eq!(get(&b, &k).await, b"bye");
}

/// Every request reaches the engine's registry (the SDK interceptor of `src/metrics.rs`),
/// counted by operation, with GET/PUT totals; built through the kind, as the engine does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_counted_by_operation() {
    let mut settings = common::server();
    let bucket = common::bucket_name("metrics");
    common::create_bucket(&settings, &bucket).await;
    settings.insert("s3.bucket.name".into(), bucket);
    let registry = tsm_storage::metrics::MetricsRegistry::new();
    let b = (tsm_backend_s3::KIND.build)(StorageConfig::new(settings).with_metrics(&registry))
        .await
        .unwrap();
    let small = ObjectKey::plain("m/small.log");
    b.upload(&small, body(b"abc", 2), Some(3)).await.unwrap();
    let big = ObjectKey::plain("m/big.log");
    let bytes = data(PART + 10, 3);
    b.upload(&big, body(&bytes, 65_536), None).await.unwrap();
    read_all(b.fetch(&small, None).await.unwrap()).await;
    read_all(b.fetch(&big, range(0, 9)).await.unwrap()).await;
    assert!(b.fetch(&ObjectKey::plain("m/missing"), None).await.is_err());
    b.delete(&[small, big]).await.unwrap();
    let s = registry.snapshot();
    let c = |n: &str| s.counter(&format!("client.s3.{n}"));
    assert_eq!(c("put-object.requests"), 1, "{s:?}");
    assert_eq!(c("create-multipart-upload.requests"), 1);
    assert_eq!(c("upload-part.requests"), 2);
    assert_eq!(c("complete-multipart-upload.requests"), 1);
    assert_eq!(c("get-object.requests"), 3, "two reads and a 404");
    assert_eq!(c("delete-objects.requests"), 1);
    assert_eq!(c("errors.other"), 1, "the 404");
    assert_eq!(s.counter("client.get.requests"), 3);
    assert_eq!(s.counter("client.put.requests"), 5);
    assert_eq!(s.latencies["client.s3.upload-part"].count, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_byte_objects() {
    let b = backend("zero", &[]).await;
    for (i, size) in [Some(0), None].into_iter().enumerate() {
        let k = ObjectKey::plain(format!("empty-{i}.indexes"));
        let empty: ByteStream = futures::stream::empty().boxed();
        assert_eq!(b.upload(&k, empty, size).await.unwrap(), 0);
        assert!(get(&b, &k).await.is_empty());
        for (s, e) in [(0, 0), (0, 10), (3, 3)] {
            let err = b.fetch(&k, range(s, e)).await.err().expect("invalid range");
            assert!(matches!(err, BackendError::InvalidRange { .. }), "{err}");
        }
    }
    let listed: Vec<_> = b
        .list(&ObjectKey::plain("empty-"))
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .map(|m| m.unwrap())
        .collect();
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|m| m.size == 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_object_is_not_found_with_masked_key() {
    let b = backend("missing", &[]).await;
    let k = ObjectKey::new("tenant-secret/", "t/0/missing.log", true);
    let err = b.fetch(&k, None).await.err().expect("not found");
    assert!(err.is_not_found(), "{err}");
    let msg = format!("{err} {err:?}");
    assert!(!msg.contains("tenant-secret"), "{msg}");
    assert!(msg.contains("<prefix>/t/0/missing.log"), "{msg}");
    assert!(msg.contains("404"), "{msg}");
    assert!(msg.contains(b.bucket()), "{msg}");
    let err = b.fetch(&k, range(0, 10)).await.err().expect("not found");
    assert!(err.is_not_found(), "{err}");
    // Deleting a missing key is success.
    b.delete(&[k]).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn part_size_larger_than_the_object_is_one_put() {
    let b = backend("onepart", &[]).await;
    let k = ObjectKey::plain("one.log");
    let bytes = data(PART - 1, 1);
    b.upload(&k, body(&bytes, 100_000), None).await.unwrap();
    assert_eq!(get(&b, &k).await, bytes);
    assert!(!etag(&b, &k).await.contains('-'), "single PUT expected");
    // Exactly one part: still a single PutObject.
    let bytes = data(PART, 2);
    b.upload(&k, body(&bytes, 1 << 20), Some(PART as u64))
        .await
        .unwrap();
    assert_eq!(get(&b, &k).await, bytes);
    assert!(!etag(&b, &k).await.contains('-'), "single PUT expected");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exact_multiples_of_the_part_size() {
    let b = backend("multiple", &[]).await;
    for (parts, size_known) in [(2usize, true), (3, false)] {
        let k = ObjectKey::plain(format!("exact-{parts}.log"));
        let bytes = data(parts * PART, parts as u8);
        let size = size_known.then_some(bytes.len() as u64);
        // Items of an odd size so parts are cut across items.
        let n = b.upload(&k, body(&bytes, 1_000_003), size).await.unwrap();
        assert_eq!(n, bytes.len() as u64);
        assert_eq!(get(&b, &k).await, bytes);
        assert!(
            etag(&b, &k).await.ends_with(&format!("-{parts}\"")),
            "{parts} parts expected, etag {}",
            etag(&b, &k).await
        );
        // A range across the part boundary.
        let s = PART as u64 - 5;
        let got = read_all(b.fetch(&k, range(s, s + 9)).await.unwrap()).await;
        assert_eq!(got, &bytes[s as usize..s as usize + 10]);
    }
    assert!(pending_uploads(&b).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multipart_with_a_short_last_part_and_one_part_in_flight() {
    let b = backend("remainder", &[("s3.multipart.upload.parts.in.flight", "1")]).await;
    let k = ObjectKey::plain("rem.log");
    let bytes = data(2 * PART + 12_345, 9);
    b.upload(&k, body(&bytes, PART), Some(bytes.len() as u64))
        .await
        .unwrap();
    assert_eq!(get(&b, &k).await, bytes);
    assert!(etag(&b, &k).await.ends_with("-3\""));
    // The tail, clamped.
    let s = bytes.len() as u64 - 100;
    let got = read_all(b.fetch(&k, range(s, s + 1000)).await.unwrap()).await;
    assert_eq!(got, &bytes[s as usize..]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_body_aborts_the_multipart_upload() {
    let b = backend("bodyfail", &[]).await;
    let k = ObjectKey::plain("fail.log");
    let first = Bytes::from(data(PART + 10, 3));
    let items: Vec<Result<Bytes, BackendError>> = vec![
        Ok(first),
        Err(BackendError::Other {
            key: k.clone(),
            detail: "source file vanished".into(),
            source: None,
        }),
    ];
    let err = b
        .upload(&k, futures::stream::iter(items).boxed(), None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("source file vanished"), "{err}");
    assert!(b.fetch(&k, None).await.err().unwrap().is_not_found());
    assert!(pending_uploads(&b).await.is_empty(), "upload not aborted");

    // A size that does not match the body: error, nothing visible, nothing pending.
    let bytes = data(PART + 1, 4);
    let err = b
        .upload(&k, body(&bytes, 1 << 20), Some(PART as u64 + 2))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("size"), "{err}");
    assert!(b.fetch(&k, None).await.err().unwrap().is_not_found());
    assert!(pending_uploads(&b).await.is_empty(), "upload not aborted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_upload_is_aborted() {
    let b = backend("dropped", &[]).await;
    let k = ObjectKey::plain("dropped.log");
    // Two parts, then a body that never ends.
    let start = futures::stream::iter(vec![Ok(Bytes::from(data(2 * PART + 1, 5)))]);
    let never: ByteStream = start.chain(futures::stream::pending()).boxed();
    let b2 = b.clone();
    let k2 = k.clone();
    let task = tokio::spawn(async move { b2.upload(&k2, never, None).await });
    // Wait (by condition, not by time) until the multipart upload exists and part 1 is in.
    loop {
        let ids = pending_uploads(&b).await;
        if let Some(id) = ids.first() {
            let parts = b
                .sdk_client()
                .list_parts()
                .bucket(b.bucket())
                .key(k.as_str())
                .upload_id(id)
                .send()
                .await
                .unwrap();
            if parts.parts().len() >= 2 {
                break;
            }
        }
        assert!(!task.is_finished(), "upload ended: {:?}", task.await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    task.abort();
    let _ = task.await;
    // The guard spawned AbortMultipartUpload: wait for it to take effect.
    while !pending_uploads(&b).await.is_empty() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(b.fetch(&k, None).await.err().unwrap().is_not_found());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_more_than_1000_keys_and_list_pages() {
    let b = backend("delete", &[]).await;
    let keys: Vec<ObjectKey> = (0..1234)
        .map(|i| ObjectKey::plain(format!("seg/{i:05}.log")))
        .collect();
    futures::stream::iter(keys.iter().cloned())
        .map(|k| {
            let b = b.clone();
            async move { b.upload(&k, body(b"x", 1), Some(1)).await.unwrap() }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
    // Listing pages through more than 1000 objects.
    let listed = b
        .list(&ObjectKey::plain("seg/"))
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    assert_eq!(listed.len(), 1234);
    // Delete them all plus some missing keys, in one call (two DeleteObjects batches).
    let mut all = keys.clone();
    all.extend((0..10).map(|i| ObjectKey::plain(format!("never/{i}"))));
    b.delete(&all).await.unwrap();
    let left = b.list(&ObjectKey::plain("seg/")).collect::<Vec<_>>().await;
    assert!(left.is_empty(), "{} objects left", left.len());
    // Idempotent.
    b.delete(&all).await.unwrap();
    b.delete(&[]).await.unwrap();
}

/// `s3.legacy.md5.plugin.enabled=true` (Content-MD5 on DeleteObjects, besides the SDK's
/// CRC32): a current store accepts the batched delete as before. That the header is sent,
/// and what an old store that demands it does, is tested in `src/legacy_md5.rs`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_delete_with_legacy_md5() {
    let b = backend("legacy-md5", &[("s3.legacy.md5.plugin.enabled", "true")]).await;
    let keys: Vec<ObjectKey> = (0..3)
        .map(|i| ObjectKey::plain(format!("md5/{i}.log")))
        .collect();
    for k in &keys {
        b.upload(k, body(b"abc", 2), Some(3)).await.unwrap();
    }
    let mut all = keys.clone();
    all.push(ObjectKey::plain("md5/missing.log"));
    b.delete(&all).await.unwrap();
    let left = b.list(&ObjectKey::plain("md5/")).collect::<Vec<_>>().await;
    assert!(left.is_empty(), "{} objects left", left.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_name_bucket_status_and_code() {
    let settings = common::server();
    // A bucket that does not exist: not "not found" (a configuration error).
    let mut s = settings.clone();
    s.insert("s3.bucket.name".into(), "tsm-no-such-bucket-here".into());
    let b = tsm_backend_s3::S3Backend::from_storage_config(&StorageConfig::new(s))
        .await
        .unwrap();
    let k = ObjectKey::plain("a.log");
    let err = b.fetch(&k, None).await.err().unwrap();
    assert!(!err.is_not_found(), "{err}");
    let msg = err.to_string();
    for want in [
        "tsm-no-such-bucket-here",
        "404",
        "NoSuchBucket",
        "a.log",
        "GetObject",
    ] {
        assert!(msg.contains(want), "{want} missing in: {msg}");
    }
    // Wrong credentials: 403 with the S3 code; the secret never appears.
    let bucket = common::bucket_name("creds");
    common::create_bucket(&settings, &bucket).await;
    let mut s = settings.clone();
    s.insert("s3.bucket.name".into(), bucket);
    s.insert("aws.secret.access.key".into(), "wrong-secret-xyz".into());
    let b = tsm_backend_s3::S3Backend::from_storage_config(&StorageConfig::new(s))
        .await
        .unwrap();
    let err = b.upload(&k, body(b"x", 1), Some(1)).await.unwrap_err();
    let msg = format!("{err} {err:?}");
    assert!(msg.contains("403"), "{msg}");
    assert!(msg.contains("SignatureDoesNotMatch"), "{msg}");
    assert!(!msg.contains("wrong-secret-xyz"), "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_file_and_backend_kind() {
    let mut settings = common::server();
    let bucket = common::bucket_name("credfile");
    common::create_bucket(&settings, &bucket).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("credentials");
    let access = settings.remove("aws.access.key.id").unwrap();
    let secret = settings.remove("aws.secret.access.key").unwrap();
    std::fs::write(
        &path,
        format!("[default]\naws_access_key_id = {access}\naws_secret_access_key = {secret}\n"),
    )
    .unwrap();
    settings.insert("s3.bucket.name".into(), bucket);
    settings.insert(
        "aws.credentials.file".into(),
        path.to_string_lossy().into_owned(),
    );
    // Built through the BackendKind, by the Java plugin's class name.
    let kind = &tsm_backend_s3::KIND;
    assert!(kind.matches("io.aiven.kafka.tieredstorage.storage.s3.S3Storage"));
    assert!(kind.matches("s3"));
    let b = (kind.build)(StorageConfig::new(settings)).await.unwrap();
    assert!(b.to_string().starts_with("S3("));
    let k = ObjectKey::plain("via-file.log");
    b.upload(&k, body(b"abc", 2), Some(3)).await.unwrap();
    let got = read_all(b.fetch(&k, None).await.unwrap()).await;
    assert_eq!(got, b"abc");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_encryption_sse_s3_and_sse_kms() {
    let kms_key = std::env::var("TSM_TEST_S3_KMS_KEY_ID").expect(
        "TSM_TEST_S3_KMS_KEY_ID is not set: MinIO must be started by scripts/services/minio.sh \
         (it configures a test KMS key)",
    );
    let cases: [(&[(&str, &str)], &str); 2] = [
        (&[("s3.sse.algorithm", "AES256")], "AES256"),
        (
            &[
                ("s3.sse.algorithm", "aws:kms"),
                ("s3.sse.kms.key.id", kms_key.as_str()),
            ],
            "aws:kms",
        ),
    ];
    for (settings, want) in cases {
        let b = backend("sse", settings).await;
        for (name, bytes) in [("small.log", data(1000, 1)), ("big.log", data(PART + 3, 2))] {
            let k = ObjectKey::plain(name);
            b.upload(&k, body(&bytes, 1 << 20), None)
                .await
                .unwrap_or_else(|e| panic!("{want} upload of {name}: {e}"));
            assert_eq!(get(&b, &k).await, bytes, "{want} {name}");
            let head = b
                .sdk_client()
                .head_object()
                .bucket(b.bucket())
                .key(k.as_str())
                .send()
                .await
                .unwrap();
            assert_eq!(
                head.server_side_encryption().map(|s| s.as_str()),
                Some(want),
                "{name}"
            );
        }
    }
}
