//! No credential, signature or auth header value reaches the broker's log, at any level:
//! real S3 calls against MinIO (PutObject, a multipart upload, ranged GetObject,
//! ListObjectsV2, DeleteObjects, and a call with a session token MinIO refuses) with
//! every target at TRACE, through the plugin's own subscriber (`logging::init`,
//! `logging::configure`, `logging::drain`).
//!
//! A control phase first runs the same calls under a capturing subscriber that keeps the
//! records as formatted BEFORE redaction: they must contain the signature, the
//! `Authorization` value and the session token (so the assertions below would fail
//! without the redaction step) and `logging::redact` must remove all of them.
//! Then, with tsm's default levels, no SDK/HTTP record below WARN is forwarded.
//!
//! `#[ignore]`d in plain `cargo test` (no service there); scripts/test.d/30-s3.sh runs it
//! with `--ignored` after starting MinIO. Environment as the S3 backend's MinIO tests
//! (`scripts/services/minio.sh env`); without `TSM_TEST_S3_ENDPOINT` the test fails.

use bytes::Bytes;
use futures::StreamExt;
use regex::Regex;
use std::collections::BTreeMap;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::{Layer, SubscriberExt};
use tsm_backend_s3::S3Backend;
use tsm_core::config::{LogConfig, StorageConfig};
use tsm_jni::logging;
use tsm_storage::{ByteRange, ObjectKey, StorageBackend};

mod common;
use common::{Capture, collect_while};

const SESSION_TOKEN: &str = "FwoGZXIvYXdzEFAKESESSIONTOKENtsmRedactionTest0123456789";
const PART: usize = 5 * 1024 * 1024;

fn server() -> BTreeMap<String, String> {
    let endpoint = std::env::var("TSM_TEST_S3_ENDPOINT").unwrap_or_else(|_| {
        panic!(
            "TSM_TEST_S3_ENDPOINT is not set: run scripts/test.sh 30 (starts MinIO), or \
             `eval $(scripts/services/minio.sh env)` after `minio.sh start`"
        )
    });
    let var = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
    let mut m = BTreeMap::new();
    m.insert("s3.endpoint.url".to_string(), endpoint);
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

fn body(data: Vec<u8>) -> tsm_storage::ByteStream {
    futures::stream::iter(
        data.chunks(1 << 20)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect::<Vec<_>>(),
    )
    .boxed()
}

/// The S3 calls whose records are checked. Every call must succeed except the one with
/// the (fake) session token.
async fn s3_calls(settings: &BTreeMap<String, String>, bucket: &str) {
    let mut s = settings.clone();
    s.insert("s3.bucket.name".into(), bucket.into());
    let b = S3Backend::from_storage_config(&StorageConfig::new(s.clone()))
        .await
        .expect("S3 backend");
    b.sdk_client()
        .create_bucket()
        .bucket(bucket)
        .send()
        .await
        .expect("create bucket");
    let small = ObjectKey::plain("t/small.log");
    let big = ObjectKey::plain("t/big.log");
    b.upload(&small, body(b"hello".to_vec()), Some(5))
        .await
        .expect("PutObject");
    let data: Vec<u8> = (0..PART + 1000).map(|i| (i % 251) as u8).collect();
    b.upload(&big, body(data.clone()), Some(data.len() as u64))
        .await
        .expect("multipart upload");
    let range = ByteRange::new(10, 20).expect("range");
    let mut got = Vec::new();
    let mut stream = b.fetch(&big, Some(range)).await.expect("GetObject");
    while let Some(chunk) = stream.next().await {
        got.extend_from_slice(&chunk.expect("body"));
    }
    assert_eq!(got, data[10..=20]);
    let listed: Vec<_> = b.list(&ObjectKey::plain("t/")).collect().await;
    assert_eq!(listed.len(), 2, "{listed:?}");
    b.delete(&[small, big]).await.expect("DeleteObjects");
    b.sdk_client()
        .delete_bucket()
        .bucket(bucket)
        .send()
        .await
        .expect("delete bucket");

    // A session token: sent as x-amz-security-token (MinIO refuses the fake one).
    s.insert("aws.session.token".into(), SESSION_TOKEN.into());
    let with_token = S3Backend::from_storage_config(&StorageConfig::new(s))
        .await
        .expect("S3 backend with a session token");
    let refused = with_token
        .upload(
            &ObjectKey::plain("t/token.log"),
            body(b"x".to_vec()),
            Some(1),
        )
        .await;
    assert!(refused.is_err(), "MinIO accepted a fake session token");
}

fn bucket(phase: &str) -> String {
    format!("tsm-log-redaction-{phase}-{}", std::process::id())
}

/// What must never be logged, as found in `text`.
fn leaks(text: &str, secret: &str, access_key: &str) -> Vec<String> {
    let patterns = [
        // SigV4 signatures (header and query forms) and the credential scope.
        r"(?i)signature=[0-9a-f]{16,}",
        r"(?i)credential=[A-Za-z0-9]",
        r"AWS4-HMAC-SHA256 [^*]",
        // Header values of the auth headers (Debug of the header map: "name": "value"
        // or "name": HeaderValue { .. "value" }).
        r#"(?i)"(authorization|x-amz-security-token)":\s*(HeaderValue \{ _private: H0\()?"[^*"]"#,
    ];
    let mut found: Vec<String> = patterns
        .iter()
        .filter_map(|p| Regex::new(p).ok())
        .filter_map(|re| re.find(text).map(|m| m.as_str().to_string()))
        .collect();
    for s in [secret, SESSION_TOKEN, &format!("Credential={access_key}")] {
        if text.contains(s) {
            found.push(s.to_string());
        }
    }
    found
}

#[test]
#[ignore = "needs MinIO: run by scripts/test.d/30-s3.sh (cargo test -- --ignored)"]
fn no_credential_reaches_the_log_at_trace() {
    let settings = server();
    let secret = settings["aws.secret.access.key"].clone();
    let access_key = settings["aws.access.key.id"].clone();

    // 1. Control: the records before redaction carry credentials.
    let capture = Capture::default();
    let sub = tracing_subscriber::registry().with(capture.clone().with_filter(LevelFilter::TRACE));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    tracing::subscriber::with_default(sub, || rt.block_on(s3_calls(&settings, &bucket("raw"))));
    let raw = capture.0.lock().expect("records").clone();
    assert!(raw.len() > 50, "few records at TRACE: {}", raw.len());
    let raw_text: String = raw.iter().map(|(_, _, t)| format!("{t}\n")).collect();
    let raw_leaks = leaks(&raw_text, &secret, &access_key);
    for what in ["signature=", "AWS4-HMAC-SHA256", SESSION_TOKEN] {
        assert!(
            raw_leaks
                .iter()
                .any(|l| l.to_ascii_lowercase().contains(&what.to_ascii_lowercase())),
            "control: the unredacted TRACE records should show {what:?} (else this test \
             proves nothing); found {raw_leaks:?}"
        );
    }
    for (target, _, text) in &raw {
        let left = leaks(&logging::redact(text), &secret, &access_key);
        assert!(
            left.is_empty(),
            "redact() left {left:?} in a record of {target}"
        );
    }

    // 2. The plugin's subscriber, every target at TRACE: what Java would receive. Only the
    // secret key is registered (as configure does for declared secrets); the session
    // token must go by the header patterns alone.
    logging::init(3);
    logging::register_secrets([secret.clone()]);
    let trace_all = LogConfig {
        level: Some(LevelFilter::TRACE),
        filter: Some("trace".into()),
    };
    let d = logging::configure(&trace_all);
    assert!(d.ends_with(",trace"), "{d}");
    let records = collect_while(|| {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        rt.block_on(s3_calls(&settings, &bucket("plugin")));
    });
    let trace_from = |prefix: &str| {
        records
            .iter()
            .filter(|(level, target, _)| level == "5" && target.starts_with(prefix))
            .count()
    };
    let (sdk, http) = (trace_from("aws_"), trace_from("hyper"));
    assert!(
        sdk > 0 && http > 0,
        "TRACE records: {sdk} from aws_*, {http} from hyper*; {} in all",
        records.len()
    );
    for (_, target, text) in &records {
        let left = leaks(text, &secret, &access_key);
        assert!(
            left.is_empty(),
            "the log got {left:?} from {target}: {text}"
        );
    }
    assert!(
        records.iter().any(|(_, _, t)| t.contains("****")),
        "nothing was redacted at TRACE"
    );

    // 3. Default levels (tsm at the broker's INFO, the stack at WARN): no SDK or HTTP
    // record below WARN is forwarded.
    logging::configure(&LogConfig::default());
    let records = collect_while(|| {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        rt.block_on(s3_calls(&settings, &bucket("default")));
    });
    for (level, target, text) in &records {
        let own = logging::OWN_TARGETS.iter().any(|t| target.starts_with(t));
        assert!(
            own || level.as_str() <= "2",
            "level {level} record of {target} forwarded at default levels: {text}"
        );
    }
}
