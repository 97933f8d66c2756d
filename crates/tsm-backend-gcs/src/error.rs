//! GCS failures -> [`BackendError`], in one place.
//!
//! Both the SDK's errors ([`google_cloud_storage::Error`], carrying an HTTP status when the
//! service answered) and the JSON API calls we make ourselves end in [`classify`], the
//! single status -> meaning table of this backend (the HTTP statuses are those of the
//! [GCS JSON API](https://cloud.google.com/storage/docs/json_api/v1/status-codes)). Every
//! error names the bucket (`gs://bucket`), the object ([`ObjectKey`]'s `Display`, prefix
//! masked when `key.prefix.mask` is set) and the HTTP status.

use tsm_storage::BoxError;
use tsm_storage::{BackendError, ByteRange, ObjectKey};

/// Which call failed; decides how 416 is read and names the operation in messages.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    Upload,
    Fetch(Option<ByteRange>),
    Delete,
    List,
    Stat,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Upload => "upload",
            Op::Fetch(_) => "fetch",
            Op::Delete => "delete",
            Op::List => "list",
            Op::Stat => "stat",
        }
    }
}

/// A failure before it is given its meaning.
pub(crate) struct Failure {
    /// HTTP status, when the service answered.
    pub status: Option<u16>,
    /// No answer, but a retry may cure it (timeout, connection refused / reset).
    pub transient_io: bool,
    /// Short description (no secrets, no raw keys).
    pub message: String,
    /// The underlying error.
    pub source: Option<BoxError>,
}

impl Failure {
    /// From an SDK error: status from [`google_cloud_storage::Error::http_status_code`],
    /// transport failures (timeout, connect, I/O) treated as transient.
    pub(crate) fn from_sdk(e: google_cloud_storage::Error) -> Self {
        let status = e.http_status_code();
        let transient_io =
            status.is_none() && (e.is_timeout() || e.is_io() || e.is_connect() || e.is_transport());
        Self {
            status,
            transient_io,
            message: summarize(&e.to_string()),
            source: Some(Box::new(e)),
        }
    }

    /// From a reqwest error (JSON API calls).
    pub(crate) fn from_reqwest(e: reqwest::Error) -> Self {
        let status = e.status().map(|s| s.as_u16());
        let transient_io = status.is_none() && (e.is_timeout() || e.is_connect() || e.is_request());
        // reqwest's Display includes the URL, which holds the real object name: drop it.
        let e = e.without_url();
        Self {
            status,
            transient_io,
            message: summarize(&e.to_string()),
            source: Some(Box::new(e)),
        }
    }

    /// From an HTTP answer with an unexpected status; `body` is the service's error JSON.
    pub(crate) fn from_status(status: u16, body: &str) -> Self {
        let message = serde_json::from_str::<serde_json::Value>(body)
            .ok()
            .and_then(|v| {
                v.pointer("/error/message")
                    .and_then(|m| m.as_str())
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| summarize(body));
        Self {
            status: Some(status),
            transient_io: false,
            message,
            source: None,
        }
    }

    /// A failure with no status (protocol surprises, bad responses).
    pub(crate) fn other(message: impl Into<String>, source: Option<BoxError>) -> Self {
        Self {
            status: None,
            transient_io: false,
            message: message.into(),
            source,
        }
    }
}

/// Keeps messages to one short line (service bodies can be whole HTML pages).
fn summarize(s: &str) -> String {
    let line = s.lines().next().unwrap_or_default().trim();
    if line.len() > 300 {
        let mut end = 300;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &line[..end])
    } else {
        line.to_string()
    }
}

/// The one status -> meaning function of this backend.
///
/// | status | meaning |
/// |---|---|
/// | 404 | [`BackendError::NotFound`] (missing object, or missing bucket when listing) |
/// | 416 on a ranged fetch | [`BackendError::InvalidRange`] (start at or past the end) |
/// | 408, 429, 500, 502, 503, 504, or no answer (timeout, connect, I/O) | [`BackendError::Transient`] |
/// | 401 | [`BackendError::Other`]: unauthenticated (credentials missing, expired or wrong) |
/// | 403 | [`BackendError::Other`]: permission denied (IAM role on the bucket) |
/// | 412 | [`BackendError::Other`]: precondition failed |
/// | anything else | [`BackendError::Other`] |
pub(crate) fn classify(bucket: &str, key: &ObjectKey, op: Op, f: Failure) -> BackendError {
    let status_text = f
        .status
        .map_or_else(|| "no HTTP status".to_string(), |s| format!("HTTP {s}"));
    let meaning = match f.status {
        Some(401) => "unauthenticated: check storage.gcs.credentials.*",
        Some(403) => "permission denied: check the IAM roles on the bucket",
        Some(412) => "precondition failed",
        Some(404) => "not found",
        Some(408 | 429 | 500 | 502 | 503 | 504) => "retryable service error",
        _ => "",
    };
    let detail = if meaning.is_empty() {
        format!(
            "gs://{bucket}, {} failed, {status_text}: {}",
            op.name(),
            f.message
        )
    } else {
        format!(
            "gs://{bucket}, {} failed, {status_text}, {meaning}: {}",
            op.name(),
            f.message
        )
    };
    let transient = matches!(f.status, Some(408 | 429 | 500 | 502 | 503 | 504))
        || (f.status.is_none() && f.transient_io);
    match (f.status, op) {
        (Some(404), Op::Fetch(_) | Op::Stat) => BackendError::NotFound {
            key: key.clone(),
            detail: format!("gs://{bucket}, {status_text}"),
        },
        (Some(416), Op::Fetch(Some(range))) => BackendError::InvalidRange {
            key: key.clone(),
            range,
            size: None,
        },
        _ if transient => BackendError::Transient {
            key: key.clone(),
            detail,
            source: f.source,
        },
        _ => BackendError::Other {
            key: key.clone(),
            detail,
            source: f.source,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ObjectKey {
        ObjectKey::new("tenant-secret/", "topic/0/a.log", true)
    }

    #[test]
    fn statuses_map_to_meanings() {
        let range = ByteRange::new(10, 20);
        let e = classify(
            "bkt",
            &key(),
            Op::Fetch(range),
            Failure::from_status(416, ""),
        );
        assert!(matches!(e, BackendError::InvalidRange { .. }), "{e}");
        let e = classify(
            "bkt",
            &key(),
            Op::Fetch(None),
            Failure::from_status(404, ""),
        );
        assert!(e.is_not_found(), "{e}");
        for s in [408, 429, 500, 502, 503, 504] {
            let e = classify("bkt", &key(), Op::Delete, Failure::from_status(s, ""));
            assert!(e.is_transient(), "{s}: {e}");
        }
        let e = classify(
            "bkt",
            &key(),
            Op::Upload,
            Failure::from_status(403, r#"{"error":{"message":"no storage.objects.create"}}"#),
        );
        let text = e.to_string();
        assert!(matches!(e, BackendError::Other { .. }));
        assert!(
            text.contains("gs://bkt") && text.contains("HTTP 403"),
            "{text}"
        );
        assert!(text.contains("no storage.objects.create"), "{text}");
        assert!(text.contains("<prefix>/topic/0/a.log"), "{text}");
        assert!(!text.contains("tenant-secret"), "{text}");
    }

    #[test]
    fn no_status_is_transient_only_for_io() {
        let mut f = Failure::other("boom", None);
        assert!(!classify("b", &key(), Op::List, f).is_transient());
        f = Failure::other("reset", None);
        f.transient_io = true;
        assert!(classify("b", &key(), Op::List, f).is_transient());
    }

    #[test]
    fn long_bodies_are_cut() {
        let body = "x".repeat(5000);
        let f = Failure::from_status(500, &body);
        assert!(f.message.len() < 400);
    }
}
