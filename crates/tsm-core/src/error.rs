//! The engine's error: what `RemoteStorageManager` calls return, mapped by the JNI layer
//! onto `RemoteResourceNotFoundException` / `RemoteStorageException` /
//! `RetriableRemoteStorageException`.

use crate::{BackendError, ConfigError};

/// An engine failure. Messages name the segment, object key (masked when configured),
/// byte range or configuration key involved; never key material or credentials.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RsmError {
    /// Invalid configuration.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A store call failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// A requested resource (segment, object, transaction index) does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The caller asked for something impossible (start past the end of the segment,
    /// custom metadata over its limit, ...).
    #[error("{0}")]
    InvalidArgument(String),
    /// Stored data does not match what the manifest says (corrupt manifest, truncated
    /// object, chunk failing authentication or decompression).
    #[error("corrupt data in {object}: {detail}")]
    Corrupt {
        /// The object (masked key) or segment.
        object: String,
        /// What is wrong, with chunk numbers and byte ranges.
        detail: String,
    },
    /// Reading a local segment file failed.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The local file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Encryption or key handling failed (unknown key-pair id, bad key file).
    #[error("{0}")]
    Crypto(String),
    /// Loading an object through a fetch cache took longer than its
    /// `fetch.*.cache.get.timeout.ms` (the load is abandoned; a retry starts a new one).
    #[error("timed out after {after_ms} ms loading {what} (raise {key} if the store is this slow)")]
    Timeout {
        /// The object (masked key) or chunk being loaded.
        what: String,
        /// The configured timeout, ms.
        after_ms: u64,
        /// The configuration key that set it.
        key: &'static str,
    },
    /// A call waited longer than its deadline for memory from its pool
    /// (`engine/lifecycle/budget.rs`): other calls of its class held it. Retriable.
    #[error(
        "waited {after_ms} ms ({deadline_key}) for {what}: the pool ({pool_key}) is held by \
         other calls of its class; raise {pool_key} if this persists"
    )]
    MemoryWait {
        /// The call and the bytes it asked for.
        what: String,
        /// How long it waited, ms.
        after_ms: u64,
        /// The deadline that bounded the wait.
        deadline_key: &'static str,
        /// The key sizing the pool.
        pool_key: &'static str,
    },
    /// The plugin was closed; no new calls are accepted.
    #[error("the remote storage manager is closed")]
    Closed,
    /// A bug, not bad input or a failing store: a broken invariant (an index that cannot
    /// be built from chunks this copy produced, an index missing after its upload) or a
    /// panic caught in a blocking task or the chunk transform pipeline. The message names
    /// the object or step; the broker sees a `RemoteStorageException`, as for `Io`.
    #[error("internal error: {0}")]
    Internal(String),
}

impl RsmError {
    /// True when the broker should see `RemoteResourceNotFoundException`.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound(_)) || matches!(self, Self::Backend(e) if e.is_not_found())
    }

    /// True when a retry may help (`RetriableRemoteStorageException` where available).
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Timeout { .. } | Self::MemoryWait { .. })
            || matches!(self, Self::Backend(e) if e.is_transient())
    }

    /// What kind of failure this is, for the operator ([`ErrorClass`]: metrics and the
    /// tier-health log lines of `engine/health.rs`).
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Config(_) | Self::Crypto(_) => ErrorClass::Config,
            Self::Backend(e) => ErrorClass::of_backend(e),
            Self::NotFound(_) => ErrorClass::NotFound,
            Self::InvalidArgument(_) => ErrorClass::Rejected,
            Self::Corrupt { .. } => ErrorClass::Corrupt,
            Self::Timeout { .. } | Self::MemoryWait { .. } => ErrorClass::Timeout,
            Self::Io { .. } | Self::Closed | Self::Internal(_) => ErrorClass::Internal,
        }
    }
}

/// The class of a failed call, as the operator acts on it. Names (`name`) are the metric
/// suffixes `copy.failures.<name>` / `fetch.failures.<name>`; codes (`code`, 1-based; 0
/// means no failure) are the per-partition gauge `copy-last-failure-class` (docs/metrics.md).
///
/// A store failure's class comes from the error the backend built (each backend writes
/// the store's answer as `HTTP <status>` and its error code into the message, see their
/// `error.rs`): 401 / 403 and the credential error codes are [`ErrorClass::Auth`], 429
/// and the throttling codes [`ErrorClass::Throttled`], a deadline or timeout
/// [`ErrorClass::Timeout`], any other retriable failure [`ErrorClass::Unavailable`], any
/// other refusal [`ErrorClass::Rejected`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// A deadline or cache wait passed (`tsm.storage.*.timeout.ms`,
    /// `fetch.*.cache.get.timeout.ms`) or memory was not free in time. Retriable.
    Timeout,
    /// The store throttles requests (HTTP 429, `SlowDown`, `ServerBusy`). Retriable.
    Throttled,
    /// The store is unreachable or failing (connection refused, 5xx). Retriable.
    Unavailable,
    /// The credentials are denied, unknown or expired (HTTP 401 / 403,
    /// `ExpiredToken`, ...). Not retriable: it needs the operator.
    Auth,
    /// The store or the engine refused the request for another reason (HTTP 400, 409, a
    /// missing bucket, a start offset past the segment's end).
    Rejected,
    /// A segment, object or local segment file does not exist.
    NotFound,
    /// Stored data does not match its manifest (or the manifest is invalid).
    Corrupt,
    /// Configuration or key material: an unknown key pair, encryption not configured.
    Config,
    /// A bug, a local I/O failure or a call cut short by `close`.
    Internal,
}

impl ErrorClass {
    /// Every class, in code order.
    pub const ALL: [ErrorClass; 9] = [
        Self::Timeout,
        Self::Throttled,
        Self::Unavailable,
        Self::Auth,
        Self::Rejected,
        Self::NotFound,
        Self::Corrupt,
        Self::Config,
        Self::Internal,
    ];

    /// `timeout`, `throttled`, `unavailable`, `auth`, `rejected`, `not-found`, `corrupt`,
    /// `config` or `internal`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Timeout => "timeout",
            Self::Throttled => "throttled",
            Self::Unavailable => "unavailable",
            Self::Auth => "auth",
            Self::Rejected => "rejected",
            Self::NotFound => "not-found",
            Self::Corrupt => "corrupt",
            Self::Config => "config",
            Self::Internal => "internal",
        }
    }

    /// 1 (`timeout`) to 9 (`internal`), in [`Self::ALL`] order.
    pub fn code(self) -> u8 {
        Self::ALL
            .iter()
            .position(|c| *c == self)
            .map_or(0, |i| i as u8 + 1)
    }

    /// The class of a store failure (see the type's doc).
    fn of_backend(e: &BackendError) -> Self {
        const AUTH: &[&str] = &[
            "AccessDenied",
            "ExpiredToken",
            "TokenRefreshRequired",
            "InvalidToken",
            "InvalidAccessKeyId",
            "SignatureDoesNotMatch",
            "AuthenticationFailed",
            "AuthorizationFailure",
            "AuthorizationPermissionMismatch",
            "InvalidAuthenticationInfo",
            "invalid_grant",
        ];
        const THROTTLED: &[&str] = &["SlowDown", "Throttl", "TooManyRequests", "ServerBusy"];
        if let BackendError::NotFound { .. } = e {
            return Self::NotFound;
        }
        if let BackendError::InvalidRange { .. } = e {
            return Self::Corrupt;
        }
        let text = e.to_string();
        let status = http_status(&text);
        if matches!(status, Some(401 | 403)) || AUTH.iter().any(|c| text.contains(c)) {
            return Self::Auth;
        }
        if status == Some(429) || THROTTLED.iter().any(|c| text.contains(c)) {
            return Self::Throttled;
        }
        if !e.is_transient() {
            return Self::Rejected;
        }
        let lower = text.to_ascii_lowercase();
        if lower.contains("deadline") || lower.contains("timed out") || lower.contains("timeout") {
            Self::Timeout
        } else {
            Self::Unavailable
        }
    }
}

impl std::fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The first `HTTP <3 digits>` in a backend's message.
fn http_status(text: &str) -> Option<u16> {
    text.match_indices("HTTP ").find_map(|(i, m)| {
        let digits = text.get(i + m.len()..i + m.len() + 3)?;
        digits
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| digits.parse().ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::RsmError;

    #[test]
    fn a_panicking_chunk_transform_is_internal_not_io() {
        let e = RsmError::from(tsm_codec::PipelineError::Panicked {
            index: 3,
            message: "boom".to_string(),
        });
        assert!(matches!(e, RsmError::Internal(_)), "{e:?}");
        let m = e.to_string();
        assert!(
            m.starts_with("internal error: chunk transform pipeline"),
            "{m}"
        );
        assert!(m.contains("boom"), "{m}");
        assert!(!e.is_transient() && !e.is_not_found());
        assert_eq!(e.class(), super::ErrorClass::Internal);
    }

    fn backend(transient: bool, detail: &str) -> RsmError {
        let key = crate::ObjectKey::new("", "t/0/x.log", false);
        let detail = detail.to_string();
        RsmError::Backend(if transient {
            crate::BackendError::Transient {
                key,
                detail,
                source: None,
            }
        } else {
            crate::BackendError::Other {
                key,
                detail,
                source: None,
            }
        })
    }

    /// What the backends write (see their `error.rs`) lands in the class an operator acts on.
    #[test]
    fn store_failures_are_classified_from_the_backends_messages() {
        use super::ErrorClass::*;
        let cases = [
            (
                false,
                "s3 PutObject on bucket b: HTTP 403 AccessDenied: Access Denied",
                Auth,
            ),
            (
                false,
                "s3 PutObject on bucket b: HTTP 400 ExpiredToken: expired",
                Auth,
            ),
            (
                false,
                "gs://b, object-get failed, HTTP 401: Unauthorized",
                Auth,
            ),
            (
                true,
                "s3 UploadPart on bucket b: HTTP 503 SlowDown: reduce",
                Throttled,
            ),
            (true, "gs://b, HTTP 429: rate", Throttled),
            (true, "azure blob-get: HTTP 503 ServerBusy", Throttled),
            (
                true,
                "deadline: upload of t/0/x.log took longer than 600000 ms (k)",
                Timeout,
            ),
            (true, "s3 GetObject: no HTTP response (timeout)", Timeout),
            (
                true,
                "s3 GetObject: no HTTP response (connection failure: Connection refused)",
                Unavailable,
            ),
            (true, "s3 GetObject: HTTP 500 InternalError", Unavailable),
            (
                false,
                "s3 PutObject: HTTP 404 NoSuchBucket (check ...)",
                Rejected,
            ),
            (false, "HTTP 40", Rejected),
        ];
        for (transient, detail, class) in cases {
            assert_eq!(backend(transient, detail).class(), class, "{detail}");
        }
        let e = RsmError::Timeout {
            what: "x".into(),
            after_ms: 1,
            key: "k",
        };
        assert_eq!(e.class(), Timeout);
        let codes: Vec<u8> = super::ErrorClass::ALL.iter().map(|c| c.code()).collect();
        assert_eq!(codes, (1..=9).collect::<Vec<u8>>());
    }
}
