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
    }
}
