//! [`SharedError`]: turning the one error of a shared (single-flight) load back into an
//! owned error for each waiting caller.
//!
//! A load shared by N callers produces one error, held in an `Arc`. The caller that gets
//! the last reference takes it back unchanged; the others get a rebuilt copy with the
//! same variant (so not-found stays not-found and transient stays transient) and the same
//! message; an error `source` chain is folded into the message text.

use std::sync::Arc;

use crate::RsmError;
use tsm_storage::BackendError;

/// An error that can be rebuilt from a shared `Arc` of itself.
pub trait SharedError: Sized + Send + Sync + 'static {
    /// The error itself when `shared` is the last reference, otherwise an equivalent copy.
    fn from_shared(shared: Arc<Self>) -> Self;
}

/// The error's `Display` followed by its `source` chain, `: `-separated.
fn with_sources(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(src) = cur {
        s.push_str(": ");
        s.push_str(&src.to_string());
        cur = src.source();
    }
    s
}

impl SharedError for BackendError {
    fn from_shared(shared: Arc<Self>) -> Self {
        Arc::try_unwrap(shared).unwrap_or_else(|e| copy_backend_error(&e))
    }
}

fn copy_backend_error(e: &BackendError) -> BackendError {
    match e {
        BackendError::NotFound { key, detail } => BackendError::NotFound {
            key: key.clone(),
            detail: detail.clone(),
        },
        BackendError::InvalidRange { key, range, size } => BackendError::InvalidRange {
            key: key.clone(),
            range: *range,
            size: *size,
        },
        BackendError::Transient { key, detail, .. } => BackendError::Transient {
            key: key.clone(),
            detail: source_detail(detail, e),
            source: None,
        },
        BackendError::Other { key, detail, .. } => BackendError::Other {
            key: key.clone(),
            detail: source_detail(detail, e),
            source: None,
        },
    }
}

/// `detail` plus the text of `e`'s sources.
fn source_detail(detail: &str, e: &BackendError) -> String {
    match std::error::Error::source(e) {
        Some(src) => format!("{detail}: {}", with_sources(src)),
        None => detail.to_string(),
    }
}

impl SharedError for RsmError {
    fn from_shared(shared: Arc<Self>) -> Self {
        Arc::try_unwrap(shared).unwrap_or_else(|e| match e.as_ref() {
            RsmError::Config(c) => RsmError::Config(c.clone()),
            RsmError::Backend(b) => RsmError::Backend(copy_backend_error(b)),
            RsmError::NotFound(s) => RsmError::NotFound(s.clone()),
            RsmError::InvalidArgument(s) => RsmError::InvalidArgument(s.clone()),
            RsmError::Corrupt { object, detail } => RsmError::Corrupt {
                object: object.clone(),
                detail: detail.clone(),
            },
            RsmError::Io { path, source } => RsmError::Io {
                path: path.clone(),
                source: std::io::Error::new(source.kind(), with_sources(source)),
            },
            RsmError::Crypto(s) => RsmError::Crypto(s.clone()),
            // A deadline hit inside a shared load (the manifest load of a fetchIndex) stays
            // a timeout: retriable for every waiting caller.
            RsmError::Timeout {
                what,
                after_ms,
                key,
            } => RsmError::Timeout {
                what: what.clone(),
                after_ms: *after_ms,
                key,
            },
            RsmError::MemoryWait {
                what,
                after_ms,
                deadline_key,
                pool_key,
            } => RsmError::MemoryWait {
                what: what.clone(),
                after_ms: *after_ms,
                deadline_key,
                pool_key,
            },
            RsmError::Closed => RsmError::Closed,
            RsmError::Internal(s) => RsmError::Internal(s.clone()),
        })
    }
}

impl SharedError for std::io::Error {
    fn from_shared(shared: Arc<Self>) -> Self {
        Arc::try_unwrap(shared)
            .unwrap_or_else(|e| std::io::Error::new(e.kind(), with_sources(e.as_ref())))
    }
}

impl SharedError for String {
    fn from_shared(shared: Arc<Self>) -> Self {
        Arc::try_unwrap(shared).unwrap_or_else(|e| e.as_ref().clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tsm_storage::ObjectKey;

    #[test]
    fn copies_keep_variant_and_message() {
        let e = Arc::new(RsmError::Backend(BackendError::transient(
            &ObjectKey::plain("k"),
            "timeout",
            std::io::Error::other("reset by peer"),
        )));
        let keep = e.clone();
        let copy = RsmError::from_shared(e);
        assert!(copy.is_transient());
        assert!(copy.to_string().contains("timeout"), "{copy}");
        assert!(copy.to_string().contains("reset by peer"), "{copy}");
        let nf = Arc::new(RsmError::NotFound("segment x".into()));
        let nf2 = nf.clone();
        assert!(RsmError::from_shared(nf).is_not_found());
        // Last reference: the same error back.
        assert!(matches!(RsmError::from_shared(nf2), RsmError::NotFound(s) if s == "segment x"));
        drop(keep);
        // A timeout shared by several waiters stays a (retriable) timeout for each.
        let t = Arc::new(RsmError::Timeout {
            what: "manifest m".into(),
            after_ms: 10,
            key: "fetch.manifest.cache.get.timeout.ms",
        });
        let _other = t.clone();
        let copy = RsmError::from_shared(t);
        assert!(matches!(copy, RsmError::Timeout { .. }), "{copy:?}");
        assert!(copy.is_transient());
    }
}
