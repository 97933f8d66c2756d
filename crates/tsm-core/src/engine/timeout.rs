//! The `fetch.*.cache.get.timeout.ms` bounds: how long a fetch waits for one load through a
//! cache (manifest, index, chunk) before failing with [`RsmError::Timeout`]. The timed-out
//! load is dropped; a caller waiting on the same single-flight load then runs its own
//! (crate::cache::AsyncCache), and nothing half-loaded is cached.

use std::future::Future;
use std::time::Duration;

use crate::RsmError;

/// `fut`, or [`RsmError::Timeout`] naming `what()` and `key` once `limit` has passed.
pub(crate) async fn bounded<T>(
    limit: Duration,
    key: &'static str,
    what: impl FnOnce() -> String,
    fut: impl Future<Output = Result<T, RsmError>>,
) -> Result<T, RsmError> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r,
        Err(_) => Err(RsmError::Timeout {
            what: what(),
            after_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
            key,
        }),
    }
}
