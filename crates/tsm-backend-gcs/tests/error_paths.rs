//! Error and retry paths, which fake-gcs-server cannot produce: a canned-response HTTP
//! server on `127.0.0.1:0` answers every request with one status (as object_store's
//! `mock_server` does). Runs under plain `cargo test`, no emulator needed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tsm_backend_gcs::{GcsBackend, GcsConfig};
use tsm_storage::{BackendError, ByteRange, ObjectKey, StorageBackend, StorageConfig};

/// Answers every request with `status` and a GCS-style JSON error; counts requests.
struct Canned {
    endpoint: String,
    requests: Arc<AtomicUsize>,
}

async fn canned(status: u16) -> Canned {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(AtomicUsize::new(0));
    let counter = requests.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                // Read the head and any Content-Length body, then answer and close.
                let mut buf = Vec::new();
                let mut chunk = [0_u8; 8192];
                let head_end = loop {
                    let Ok(n) = socket.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
                let body_len = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                let mut have = buf.len() - head_end;
                while have < body_len {
                    match socket.read(&mut chunk).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => have += n,
                    }
                }
                counter.fetch_add(1, Ordering::SeqCst);
                let body =
                    format!(r#"{{"error":{{"code":{status},"message":"canned {status}"}}}}"#);
                let response = format!(
                    "HTTP/1.1 {status} Canned\r\ncontent-type: application/json\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    Canned { endpoint, requests }
}

async fn backend(endpoint: &str, attempts: u32) -> GcsBackend {
    let map: BTreeMap<String, String> = [
        ("gcs.bucket.name", "canned-bucket"),
        ("gcs.endpoint.url", endpoint),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let mut config = GcsConfig::from_storage(&StorageConfig::new(map)).unwrap();
    config.max_attempts = attempts;
    GcsBackend::new(config).await.unwrap()
}

fn key() -> ObjectKey {
    ObjectKey::new("secret-prefix/", "t/0/a.log", true)
}

fn assert_names_things(e: &BackendError, status: u16) {
    let text = e.to_string();
    assert!(text.contains("gs://canned-bucket"), "{text}");
    assert!(text.contains(&format!("HTTP {status}")), "{text}");
    assert!(text.contains("<prefix>/t/0/a.log"), "{text}");
    assert!(!text.contains("secret-prefix"), "{text}");
}

#[tokio::test]
async fn json_api_retries_503_up_to_the_attempt_limit_then_is_transient() {
    let server = canned(503).await;
    let b = backend(&server.endpoint, 3).await;
    let e = b.delete(&[key()]).await.unwrap_err();
    assert!(e.is_transient(), "{e}");
    assert_names_things(&e, 503);
    assert_eq!(server.requests.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn list_403_is_permission_denied_and_not_retried() {
    let server = canned(403).await;
    let b = backend(&server.endpoint, 3).await;
    let e = b.list(&key()).try_collect::<Vec<_>>().await.unwrap_err();
    assert!(matches!(e, BackendError::Other { .. }), "{e}");
    assert!(e.to_string().contains("permission denied"), "{e}");
    assert!(e.to_string().contains("canned 403"), "{e}");
    assert_names_things(&e, 403);
    assert_eq!(server.requests.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn sdk_read_statuses_map_to_meanings() {
    let server = canned(404).await;
    let b = backend(&server.endpoint, 2).await;
    let e = b.fetch(&key(), None).await.err().unwrap();
    assert!(e.is_not_found(), "{e}");
    assert_names_things(&e, 404);

    let server = canned(416).await;
    let b = backend(&server.endpoint, 2).await;
    let e = b
        .fetch(&key(), ByteRange::new(100, 200))
        .await
        .err()
        .unwrap();
    assert!(matches!(e, BackendError::InvalidRange { .. }), "{e}");

    let server = canned(503).await;
    let b = backend(&server.endpoint, 2).await;
    let e = b.fetch(&key(), None).await.err().unwrap();
    assert!(e.is_transient(), "{e}");
    assert_names_things(&e, 503);
}

#[tokio::test]
async fn sdk_upload_401_is_unauthenticated() {
    let server = canned(401).await;
    let b = backend(&server.endpoint, 2).await;
    let body = futures::stream::iter(vec![Ok(Bytes::from_static(b"abc"))]).boxed();
    let e = b.upload(&key(), body, Some(3)).await.unwrap_err();
    assert!(matches!(e, BackendError::Other { .. }), "{e}");
    assert!(e.to_string().contains("unauthenticated"), "{e}");
    assert_names_things(&e, 401);
}

#[tokio::test]
async fn unreachable_endpoint_is_transient() {
    // Bind then drop: the port is (almost certainly) closed now.
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap().port()
    };
    let b = backend(&format!("http://127.0.0.1:{port}"), 1).await;
    let e = b.delete(&[key()]).await.unwrap_err();
    assert!(e.is_transient(), "{e}");
    let e = b.fetch(&key(), None).await.err().unwrap();
    assert!(e.is_transient(), "{e}");
}
