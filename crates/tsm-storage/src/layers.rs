//! [`layered`]: the standard wrapper stack the engine puts around the configured backend.
//!
//! `RateLimited( Metered( backend ) )`: the rate limit (`upload.rate.limit.bytes.per.second`)
//! is outermost so throttling waits do not count as store latency; the metrics wrapper sits
//! directly on the store so `backend.*` metrics describe the store itself.

use std::sync::Arc;

use super::StorageBackend;
use super::metered::MeteredBackend;
use super::rate_limit::RateLimitedBackend;
use crate::metrics::MetricsRegistry;

/// Wraps `backend` with metrics (into `registry`) and, when `upload_rate_limit` (bytes per
/// second) is set, the upload rate limit.
pub fn layered(
    backend: Arc<dyn StorageBackend>,
    upload_rate_limit: Option<u64>,
    registry: &MetricsRegistry,
) -> Arc<dyn StorageBackend> {
    let metered: Arc<dyn StorageBackend> = Arc::new(MeteredBackend::new(backend, registry));
    match upload_rate_limit {
        Some(rate) => Arc::new(RateLimitedBackend::new(metered, rate)),
        None => metered,
    }
}
