//! Shared by the MinIO tests: the server comes from the environment.
//!
//! - `TSM_TEST_S3_ENDPOINT` (e.g. `http://127.0.0.1:9900`), `TSM_TEST_S3_ACCESS_KEY`,
//!   `TSM_TEST_S3_SECRET_KEY`, `TSM_TEST_S3_REGION` (default `us-east-1`): set by
//!   `scripts/services/minio.sh env` / `scripts/test.d/30-s3.sh`.
//! - A missing endpoint fails the test (there is no way to skip them and pass).
#![allow(dead_code)]

pub(crate) mod segment;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};

use tsm_backend_s3::S3Backend;
use tsm_storage::config::StorageConfig;
use tsm_storage::contract;
use tsm_storage::{ByteStream, ObjectKey, StorageBackend};

/// Part size used by the tests: the S3 minimum, 5 MiB.
pub(crate) const PART: usize = 5 * 1024 * 1024;

/// The server settings. Panics when the endpoint is unset.
pub(crate) fn server() -> BTreeMap<String, String> {
    let endpoint = std::env::var("TSM_TEST_S3_ENDPOINT").unwrap_or_else(|_| {
        panic!(
            "TSM_TEST_S3_ENDPOINT is not set: start MinIO with scripts/services/minio.sh start \
             and `eval $(scripts/services/minio.sh env)`, or run scripts/test.sh 30"
        )
    });
    let var = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
    let mut m = BTreeMap::new();
    m.insert("s3.endpoint.url".into(), endpoint);
    m.insert("s3.region".into(), var("TSM_TEST_S3_REGION", "us-east-1"));
    m.insert("s3.path.style.access.enabled".into(), "true".into());
    m.insert(
        "aws.access.key.id".into(),
        var("TSM_TEST_S3_ACCESS_KEY", "tsm-minio"),
    );
    m.insert(
        "aws.secret.access.key".into(),
        var("TSM_TEST_S3_SECRET_KEY", "tsm-minio-secret"),
    );
    m.insert("s3.multipart.upload.part.size".into(), PART.to_string());
    m.insert("s3.multipart.upload.parts.in.flight".into(), "2".into());
    m
}

/// A fresh bucket name for one test.
pub(crate) fn bucket_name(test: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut name = format!(
        "tsm-{}-{}-{}-{}",
        test.replace('_', "-"),
        std::process::id(),
        nanos,
        N.fetch_add(1, Ordering::Relaxed)
    );
    name.truncate(63);
    name.trim_end_matches('-').to_string()
}

/// Creates `bucket` on the server (with the test credentials).
pub(crate) async fn create_bucket(settings: &BTreeMap<String, String>, bucket: &str) {
    let mut s = settings.clone();
    s.insert("s3.bucket.name".into(), bucket.into());
    let b = S3Backend::from_storage_config(&StorageConfig::new(s))
        .await
        .expect("build backend");
    b.sdk_client()
        .create_bucket()
        .bucket(bucket)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create bucket {bucket}: {e:?}"));
}

/// A backend over a new bucket, with `extra` settings on top of the server ones.
pub(crate) async fn backend(test: &str, extra: &[(&str, &str)]) -> S3Backend {
    let mut settings = server();
    let bucket = bucket_name(test);
    create_bucket(&settings, &bucket).await;
    settings.insert("s3.bucket.name".into(), bucket);
    for (k, v) in extra {
        settings.insert(k.to_string(), v.to_string());
    }
    S3Backend::from_storage_config(&StorageConfig::new(settings))
        .await
        .expect("build backend")
}

/// `n` bytes of a recognisable pattern (test stream `seed` of `tsm_storage::contract`).
pub(crate) fn data(n: usize, seed: u8) -> Vec<u8> {
    contract::pattern_vec(u64::from(seed), n)
}

/// `bytes` as a body stream of items of `item` bytes (odd sizes cross part boundaries).
pub(crate) fn body(bytes: &[u8], item: usize) -> ByteStream {
    contract::chunked_body(bytes, item)
}

/// Reads a fetched stream into memory (tests only).
pub(crate) async fn read_all(s: ByteStream) -> Vec<u8> {
    contract::read_to_vec(s).await
}

/// Fetches the whole object.
pub(crate) async fn get(b: &S3Backend, key: &ObjectKey) -> Vec<u8> {
    read_all(b.fetch(key, None).await.expect("fetch")).await
}

/// The ETag of `key` (multipart ETags end in `-<parts>`).
pub(crate) async fn etag(b: &S3Backend, key: &ObjectKey) -> String {
    b.sdk_client()
        .head_object()
        .bucket(b.bucket())
        .key(key.as_str())
        .send()
        .await
        .expect("head")
        .e_tag()
        .unwrap_or_default()
        .to_string()
}

/// Upload ids of the multipart uploads in progress in the bucket.
pub(crate) async fn pending_uploads(b: &S3Backend) -> Vec<String> {
    b.sdk_client()
        .list_multipart_uploads()
        .bucket(b.bucket())
        .send()
        .await
        .expect("list multipart uploads")
        .uploads()
        .iter()
        .filter_map(|u| u.upload_id().map(str::to_string))
        .collect()
}
