//! The one error type every [`StorageBackend`](super::StorageBackend) returns.

use super::{ByteRange, ObjectKey};

/// A boxed source error (SDK error, I/O error).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What went wrong in a store call. Every variant names the object ([`ObjectKey`]'s
/// `Display`, prefix masked when configured); the store's own detail (HTTP status, error
/// code, bucket) goes in the message or `source`.
///
/// Exhaustive on purpose: the engine copies an error variant by variant for every waiter
/// of a shared fetch (tsm-core's `cache/shared_error.rs`), so a new variant must fail to
/// compile there rather than fall into a catch-all.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The object does not exist (HTTP 404, `ENOENT`).
    #[error("object {key} not found{}", detail_suffix(.detail))]
    NotFound {
        /// The missing object.
        key: ObjectKey,
        /// Store detail (bucket, status), may be empty.
        detail: String,
    },
    /// The requested range starts at or past the end of the object (HTTP 416).
    #[error("invalid range {range} for object {key} of {} bytes", size.map_or_else(|| "unknown".to_string(), |s| s.to_string()))]
    InvalidRange {
        /// The object read.
        key: ObjectKey,
        /// The range asked for.
        range: ByteRange,
        /// The object size in bytes, when the store told it.
        size: Option<u64>,
    },
    /// A failure a retry may cure: timeouts, throttling (429/503), connection resets.
    #[error("transient error on {key}: {detail}")]
    Transient {
        /// The object concerned.
        key: ObjectKey,
        /// What happened, with the store's status and code.
        detail: String,
        /// The underlying error.
        #[source]
        source: Option<BoxError>,
    },
    /// Anything else: permissions, bad configuration, a protocol error.
    #[error("error on {key}: {detail}")]
    Other {
        /// The object concerned.
        key: ObjectKey,
        /// What happened, with the store's status and code.
        detail: String,
        /// The underlying error.
        #[source]
        source: Option<BoxError>,
    },
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(" ({detail})")
    }
}

impl BackendError {
    /// True for [`BackendError::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    /// True for [`BackendError::Transient`].
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Transient { .. })
    }

    /// Shorthand for [`BackendError::Other`] with a source.
    pub fn other(key: &ObjectKey, detail: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::Other {
            key: key.clone(),
            detail: detail.into(),
            source: Some(source.into()),
        }
    }

    /// Shorthand for [`BackendError::Transient`] with a source.
    pub fn transient(
        key: &ObjectKey,
        detail: impl Into<String>,
        source: impl Into<BoxError>,
    ) -> Self {
        Self::Transient {
            key: key.clone(),
            detail: detail.into(),
            source: Some(source.into()),
        }
    }
}
