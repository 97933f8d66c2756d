//! `s3.legacy.md5.plugin.enabled`: a `Content-MD5` header on the requests whose S3 API
//! requires a checksum, as the Java plugin's `LegacyMd5Plugin` (AWS SDK for Java 2.30+) adds
//! it.
//!
//! Since early 2025 the AWS SDKs send such requests with a flexible checksum
//! (`x-amz-checksum-crc32`) instead of `Content-MD5`. AWS S3 and current S3-compatible
//! stores accept either; older ones refuse a DeleteObjects without `Content-MD5`
//! (`MissingContentMD5`, "Missing required header for this request: Content-Md5"), so the
//! broker's batched delete fails. [`LegacyMd5`] is an SDK interceptor: before the request
//! is signed, it computes the MD5 of the (in-memory) body of such a request and sets
//! `Content-MD5` (base64), which is then signed with the other headers. The CRC32 header
//! stays, as with the Java plugin. Of the operations tsm sends, only DeleteObjects requires
//! a checksum ([`REQUIRES_CHECKSUM`]); uploads are left alone.

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextMut;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use md5::{Digest, Md5};

/// The S3 operations tsm sends whose API requires a checksum (`httpChecksumRequired` in the
/// S3 model): those that get `Content-MD5`.
pub const REQUIRES_CHECKSUM: &[&str] = &["DeleteObjects"];

/// The interceptor (see the module docs).
#[derive(Clone, Copy, Debug, Default)]
pub struct LegacyMd5;

/// `Content-MD5` of `body`: the base64 of its MD5 digest.
pub fn content_md5(body: &[u8]) -> String {
    aws_smithy_types::base64::encode(Md5::digest(body))
}

impl Intercept for LegacyMd5 {
    fn name(&self) -> &'static str {
        "tsm-legacy-md5"
    }

    fn modify_before_signing(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let wanted = cfg
            .load::<Metadata>()
            .is_some_and(|m| REQUIRES_CHECKSUM.contains(&m.name()));
        if !wanted {
            return Ok(());
        }
        let request = context.request_mut();
        // These operations have XML bodies built in memory; a streaming body has none here.
        let Some(body) = request.body().bytes() else {
            return Err(
                "s3.legacy.md5.plugin.enabled: the request body is not in memory, \
                        no Content-MD5 can be computed"
                    .into(),
            );
        };
        let md5 = content_md5(body);
        request.headers_mut().insert("Content-MD5", md5);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;
    use tsm_storage::ObjectKey;
    use tsm_storage::config::StorageConfig;

    use super::*;
    use crate::client::{S3Client, build_client};
    use crate::config::{self, S3Config};

    #[test]
    fn content_md5_is_the_base64_digest() {
        // RFC 1321's test vector, in base64 (as S3 wants it).
        assert_eq!(content_md5(b""), "1B2M2Y8AsgTpgAmY7PhCfg==");
        assert_eq!(content_md5(b"abc"), "kAFQmDzST7DWlj99KOF/cg==");
    }

    /// One request as the store received it.
    #[derive(Debug, Clone)]
    struct Seen {
        line: String,
        headers: BTreeMap<String, String>,
        body: Vec<u8>,
    }

    /// An old S3-compatible store on 127.0.0.1 that demands `Content-MD5` on DeleteObjects:
    /// without it, 400 `MissingContentMD5`; with a wrong one, 400 `BadDigest`; with the
    /// right one, an empty `DeleteResult`. Every other request gets 200 with an empty body.
    /// Returns its endpoint and what it received (raw bytes off the socket).
    async fn old_store() -> (String, Arc<Mutex<Vec<Seen>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    let head_end = loop {
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i;
                        }
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
                    let mut lines = head.split("\r\n");
                    let line = lines.next().unwrap_or_default().to_string();
                    let headers: BTreeMap<String, String> = lines
                        .filter_map(|l| l.split_once(':'))
                        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                        .collect();
                    let len: usize = headers
                        .get("content-length")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0);
                    let mut body = buf[head_end + 4..].to_vec();
                    while body.len() < len {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => body.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let seen = Seen {
                        line,
                        headers,
                        body,
                    };
                    let (status, xml) = if seen.line.contains("?delete") {
                        match seen.headers.get("content-md5") {
                            None => (
                                "400 Bad Request",
                                "<Error><Code>MissingContentMD5</Code><Message>Missing required \
                                 header for this request: Content-Md5.</Message></Error>",
                            ),
                            Some(m) if *m != content_md5(&seen.body) => (
                                "400 Bad Request",
                                "<Error><Code>BadDigest</Code><Message>The Content-MD5 you \
                                 specified did not match what we received.</Message></Error>",
                            ),
                            Some(_) => (
                                "200 OK",
                                "<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
                                 </DeleteResult>",
                            ),
                        }
                    } else {
                        ("200 OK", "")
                    };
                    log.lock().expect("log").push(seen);
                    let reply = format!(
                        "HTTP/1.1 {status}\r\nContent-Type: application/xml\r\n\
                         Content-Length: {}\r\nConnection: close\r\n\r\n{xml}",
                        xml.len()
                    );
                    let _ = sock.write_all(reply.as_bytes()).await;
                    let _ = sock.shutdown().await;
                });
            }
        });
        (endpoint, seen)
    }

    async fn client(endpoint: &str, legacy_md5: bool) -> S3Client {
        let m: BTreeMap<String, String> = [
            (config::BUCKET_NAME, "old-bucket"),
            (config::REGION, "us-east-1"),
            (config::ENDPOINT_URL, endpoint),
            (config::PATH_STYLE, "true"),
            (config::ACCESS_KEY_ID, "id"),
            (config::SECRET_ACCESS_KEY, "secret"),
            (
                config::LEGACY_MD5,
                if legacy_md5 { "true" } else { "false" },
            ),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let cfg = S3Config::from_storage_config(&StorageConfig::new(m)).expect("config");
        let sdk = build_client(&cfg).await.expect("client");
        // One attempt per call: the store's 400s are final anyway.
        let sdk = aws_sdk_s3::Client::from_conf(
            sdk.config()
                .to_builder()
                .retry_config(aws_sdk_s3::config::retry::RetryConfig::disabled())
                .build(),
        );
        S3Client {
            sdk,
            bucket: Arc::from("old-bucket"),
            cfg: Arc::new(cfg),
        }
    }

    /// The request as sent over the wire carries `Content-MD5` (the MD5 of its body, and
    /// signed) with the key on, so a store that demands it deletes; without the key the
    /// same store refuses the delete, and the error says why.
    #[tokio::test]
    async fn delete_objects_carries_content_md5_for_a_store_that_demands_it() {
        let (endpoint, seen) = old_store().await;
        let keys = [
            ObjectKey::plain("t-x/0/00000000000000000000-a.log"),
            ObjectKey::plain("t-x/0/00000000000000000000-a.indexes"),
        ];

        let on = client(&endpoint, true).await;
        on.delete_objects(&keys)
            .await
            .expect("delete with Content-MD5");
        let sent = seen.lock().expect("log").pop().expect("one request");
        assert!(
            sent.line.starts_with("POST /old-bucket/?delete"),
            "{sent:?}"
        );
        let md5 = sent.headers.get("content-md5").expect("Content-MD5 sent");
        assert_eq!(*md5, content_md5(&sent.body));
        let auth = sent.headers.get("authorization").expect("signed");
        assert!(
            auth.contains("content-md5"),
            "Content-MD5 is signed: {auth}"
        );
        // As the Java plugin: the SDK's own checksum still goes along.
        assert!(
            sent.headers.contains_key("x-amz-checksum-crc32"),
            "{sent:?}"
        );
        assert!(
            String::from_utf8_lossy(&sent.body)
                .contains("<Key>t-x/0/00000000000000000000-a.log</Key>"),
            "{sent:?}"
        );
        // Other requests get no Content-MD5 (only where the API requires a checksum).
        on.put_object(&keys[0], bytes::Bytes::from_static(b"abc"))
            .await
            .expect("put");
        let put = seen.lock().expect("log").pop().expect("the put");
        assert!(put.line.starts_with("PUT "), "{put:?}");
        assert!(!put.headers.contains_key("content-md5"), "{put:?}");

        let off = client(&endpoint, false).await;
        let e = off
            .delete_objects(&keys)
            .await
            .expect_err("the store refuses a delete without Content-MD5");
        let sent = seen.lock().expect("log").pop().expect("one request");
        assert!(!sent.headers.contains_key("content-md5"), "{sent:?}");
        assert!(
            sent.headers.contains_key("x-amz-checksum-crc32"),
            "{sent:?}"
        );
        assert!(e.to_string().contains("MissingContentMD5"), "{e}");
    }
}
