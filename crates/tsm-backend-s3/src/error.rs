//! S3 failures -> [`BackendError`], in one place: [`classify`] maps an SDK error (HTTP status
//! and S3 error code, or a transport failure) to its meaning for the engine.
//!
//! Every message names the operation, the bucket, the endpoint (with [`classify_at`]),
//! the key (masked [`ObjectKey`] `Display`; for a listing [`listing_key`],
//! `s3://<bucket>/<prefix>`), the HTTP status and the S3 error code, or, when no response
//! arrived, why (the innermost causes, e.g. `Connection refused`):
//! `error on t/0/x.log: s3 GetObject on bucket tiered at https://s3.example: HTTP 403
//! AccessDenied: Access Denied (request id ...)`,
//! `transient error on s3://tiered/: s3 ListObjectsV2 on bucket tiered at
//! http://127.0.0.1:1: no HTTP response (connection failure: tcp connect error: Connection
//! refused (os error 111))`.

use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_runtime_api::http::Response;
use tsm_storage::{BackendError, ByteRange, ObjectKey};

/// What the engine should make of a failed S3 call, decided from the status and code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meaning {
    /// The object is missing (404 with `NoSuchKey` or no code, e.g. on HEAD).
    NotFound,
    /// The range starts at or past the end (416, `InvalidRange`).
    InvalidRange,
    /// A retry may help: throttling (429, `SlowDown`), 5xx, timeouts, connection failures.
    Transient,
    /// Anything else: 403 (permissions), 401, a missing bucket (`NoSuchBucket`), 400...
    Other,
}

/// The single status -> meaning table. `status` is `None` when no HTTP response arrived
/// (connection refused or reset, timeout), which is transient.
pub fn meaning(status: Option<u16>, code: Option<&str>) -> Meaning {
    match (status, code) {
        (_, Some("NoSuchBucket")) => Meaning::Other,
        (_, Some("NoSuchKey" | "NotFound")) | (Some(404), None) => Meaning::NotFound,
        (Some(404), Some(_)) => Meaning::Other,
        (Some(416), _) | (_, Some("InvalidRange")) => Meaning::InvalidRange,
        (
            _,
            Some(
                "SlowDown"
                | "RequestTimeout"
                | "InternalError"
                | "ServiceUnavailable"
                | "XMinioServerNotInitialized",
            ),
        ) => Meaning::Transient,
        (Some(408 | 429 | 500..=599), _) | (None, _) => Meaning::Transient,
        _ => Meaning::Other,
    }
}

/// A short hint for the operator, from the status.
fn hint(status: Option<u16>, code: Option<&str>) -> &'static str {
    match (status, code) {
        (_, Some("NoSuchBucket")) => " (check storage.s3.bucket.name and storage.s3.region)",
        (Some(301 | 307), _) | (_, Some("PermanentRedirect" | "AuthorizationHeaderMalformed")) => {
            " (the bucket is in another region: check storage.s3.region)"
        }
        (_, Some("ExpiredToken" | "TokenRefreshRequired" | "InvalidToken")) => {
            " (the credentials expired: renew the session token or let the SDK's provider \
             refresh them; retrying does not help)"
        }
        (_, Some("RequestTimeTooSkewed")) => {
            " (this host's clock is more than 15 minutes from the store's: fix the clock \
             (NTP); retrying does not help, and requests are signed when sent, so no wait in \
             tsm causes it)"
        }
        (Some(403), _) => " (permission denied: check the IAM policy of the credentials)",
        (Some(401), _) | (_, Some("InvalidAccessKeyId" | "SignatureDoesNotMatch")) => {
            " (unauthenticated: check the credentials)"
        }
        _ => "",
    }
}

/// The key a failed listing of `prefix` reports: `s3://<bucket>/<prefix>`, never empty
/// (a listing of the whole bucket has an empty prefix, which made `error on : ...`).
/// A masked `key.prefix` stays masked (`<prefix>/...`; the bucket is in the detail).
pub fn listing_key(bucket: &str, prefix: &ObjectKey) -> ObjectKey {
    let masked = prefix.to_string() != prefix.as_str();
    ObjectKey::new(
        &format!("s3://{bucket}/{}", prefix.prefix()),
        prefix.suffix(),
        masked,
    )
}

/// The innermost (at most two) causes of `err`, e.g. `tcp connect error: Connection
/// refused (os error 111)`; empty when it has none.
fn causes(err: &(dyn std::error::Error + 'static)) -> String {
    let mut chain: Vec<String> = Vec::new();
    let mut cur = err.source();
    while let Some(e) = cur {
        let text = e.to_string();
        if !text.is_empty() && chain.last() != Some(&text) {
            chain.push(text);
        }
        cur = e.source();
    }
    let from = chain.len().saturating_sub(2);
    chain[from..].join(": ")
}

/// Converts a failed SDK call. `op` is the S3 operation name (`GetObject`), `range` the
/// range asked for (for [`BackendError::InvalidRange`]). The message names no endpoint:
/// prefer [`classify_at`].
pub fn classify<E>(
    op: &str,
    bucket: &str,
    key: &ObjectKey,
    range: Option<ByteRange>,
    err: SdkError<E, Response>,
) -> BackendError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    classify_at(op, bucket, None, key, range, err)
}

/// [`classify`], with the endpoint the request went to in the message
/// (`s3 ListObjectsV2 on bucket b at http://127.0.0.1:1: ...`;
/// [`crate::S3Client::endpoint`]).
pub fn classify_at<E>(
    op: &str,
    bucket: &str,
    endpoint: Option<&str>,
    key: &ObjectKey,
    range: Option<ByteRange>,
    err: SdkError<E, Response>,
) -> BackendError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let status = err.raw_response().map(|r| r.status().as_u16());
    let request_id = err
        .raw_response()
        .and_then(|r| r.headers().get("x-amz-request-id"))
        .map(str::to_string);
    let (code, message) = match &err {
        SdkError::ServiceError(se) => (
            se.err().code().map(str::to_string),
            se.err().message().map(str::to_string),
        ),
        _ => (None, None),
    };
    let kind = match &err {
        SdkError::TimeoutError(_) => "timeout",
        SdkError::DispatchFailure(_) => "connection failure",
        SdkError::ResponseError(_) => "unreadable response",
        SdkError::ConstructionFailure(_) => "request not built",
        _ => "",
    };
    let mut detail = format!("s3 {op} on bucket {bucket}");
    if let Some(e) = endpoint {
        detail.push_str(&format!(" at {e}"));
    }
    detail.push(':');
    match status {
        Some(s) => detail.push_str(&format!(" HTTP {s}")),
        None => {
            let why = causes(&err);
            match (kind, why.is_empty()) {
                (_, true) => detail.push_str(&format!(" no HTTP response ({kind})")),
                ("", false) => detail.push_str(&format!(" no HTTP response ({why})")),
                (_, false) => detail.push_str(&format!(" no HTTP response ({kind}: {why})")),
            }
        }
    }
    if let Some(c) = &code {
        detail.push_str(&format!(" {c}"));
    }
    if let Some(m) = &message {
        detail.push_str(&format!(": {m}"));
    }
    if let Some(r) = &request_id {
        detail.push_str(&format!(" (request id {r})"));
    }
    detail.push_str(hint(status, code.as_deref()));
    if matches!(err, SdkError::ConstructionFailure(_)) {
        return BackendError::other(key, detail, err);
    }
    match (meaning(status, code.as_deref()), range) {
        (Meaning::NotFound, _) => BackendError::NotFound {
            key: key.clone(),
            detail,
        },
        (Meaning::InvalidRange, Some(range)) => BackendError::InvalidRange {
            key: key.clone(),
            range,
            size: None,
        },
        (Meaning::Transient, _) => BackendError::transient(key, detail, err),
        _ => BackendError::other(key, detail, err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_table() {
        assert_eq!(meaning(Some(404), Some("NoSuchKey")), Meaning::NotFound);
        assert_eq!(meaning(Some(404), None), Meaning::NotFound);
        assert_eq!(meaning(Some(404), Some("NoSuchBucket")), Meaning::Other);
        assert_eq!(meaning(Some(404), Some("NoSuchUpload")), Meaning::Other);
        assert_eq!(
            meaning(Some(416), Some("InvalidRange")),
            Meaning::InvalidRange
        );
        assert_eq!(meaning(Some(503), Some("SlowDown")), Meaning::Transient);
        assert_eq!(meaning(Some(500), None), Meaning::Transient);
        assert_eq!(meaning(Some(429), None), Meaning::Transient);
        assert_eq!(meaning(None, None), Meaning::Transient);
        assert_eq!(meaning(Some(403), Some("AccessDenied")), Meaning::Other);
        assert_eq!(meaning(Some(400), Some("InvalidArgument")), Meaning::Other);
    }

    #[test]
    fn listing_keys_are_never_empty_and_stay_masked() {
        let k = listing_key("b", &ObjectKey::plain(""));
        assert_eq!(k.to_string(), "s3://b/");
        let k = listing_key("b", &ObjectKey::new("tiered/", "orders-", false));
        assert_eq!(k.to_string(), "s3://b/tiered/orders-");
        let k = listing_key("b", &ObjectKey::new("secret/", "orders-", true));
        assert_eq!(k.to_string(), "<prefix>/orders-");
        // Masking on but no prefix configured: nothing to hide.
        let k = listing_key("b", &ObjectKey::new("", "orders-", true));
        assert_eq!(k.to_string(), "s3://b/orders-");
    }

    #[test]
    fn hints_point_to_keys() {
        assert!(hint(Some(404), Some("NoSuchBucket")).contains("storage.s3.bucket.name"));
        assert!(hint(Some(403), Some("AccessDenied")).contains("IAM"));
        assert_eq!(hint(Some(500), None), "");
        // An expired session token is not retriable and says so (not a transient error).
        assert!(hint(Some(400), Some("ExpiredToken")).contains("expired"));
        assert!(hint(Some(403), Some("RequestTimeTooSkewed")).contains("clock"));
        // A skewed host clock stays skewed: not retriable (tests/clock.rs).
        assert_eq!(
            meaning(Some(403), Some("RequestTimeTooSkewed")),
            Meaning::Other
        );
        assert_eq!(meaning(Some(400), Some("ExpiredToken")), Meaning::Other);
    }
}
