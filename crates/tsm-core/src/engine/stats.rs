//! The engine's own metrics, registered in the engine's [`MetricsRegistry`] (next to the
//! caches' and any backend wrapper's) and read by
//! [`RemoteStorageManager::metrics`](super::RemoteStorageManager::metrics) as one
//! [`MetricsSnapshot`](crate::metrics::MetricsSnapshot).
//!
//! Names: counters `<op>.count`, `<op>.errors` for `copy`, `fetch`, `fetch.index`,
//! `delete`, plus `bytes.uploaded` / `bytes.downloaded` (stored bytes) and
//! `fetch.bytes.served` (original segment bytes handed to the broker by fetch streams),
//! `integrity.unverified` (manifests loaded without integrity data) and
//! `integrity.failures` (integrity checks failed);
//! one latency histogram per operation, named after it.

use std::sync::Arc;
use std::time::Instant;

use crate::metrics::{Counter, LatencyHistogram, MetricsRegistry};

/// Calls, failures and latency of one engine operation.
pub(crate) struct OpMetrics {
    count: Arc<Counter>,
    errors: Arc<Counter>,
    latency: Arc<LatencyHistogram>,
}

impl OpMetrics {
    fn new(registry: &MetricsRegistry, op: &str) -> Self {
        Self {
            count: registry.counter(&format!("{op}.count")),
            errors: registry.counter(&format!("{op}.errors")),
            latency: registry.histogram(op),
        }
    }

    /// Records one call that started at `started` and ended with `result`.
    pub(crate) fn record<T, E>(&self, started: Instant, result: &Result<T, E>) {
        self.latency.record(started.elapsed());
        self.count.inc();
        if result.is_err() {
            self.errors.inc();
        }
    }
}

/// Every engine metric.
pub(crate) struct Stats {
    pub(crate) copy: OpMetrics,
    pub(crate) fetch: OpMetrics,
    pub(crate) fetch_index: OpMetrics,
    pub(crate) delete: OpMetrics,
    /// Stored bytes written to the backend (all three objects).
    pub(crate) bytes_uploaded: Arc<Counter>,
    /// Stored bytes read from the backend.
    pub(crate) bytes_downloaded: Arc<Counter>,
    /// Original segment bytes delivered by fetch streams (what the broker read).
    pub(crate) bytes_served: Arc<Counter>,
    /// Manifests loaded without integrity data (`manifest/integrity.rs`: written by the
    /// Java plugin or an older tsm), read unchecked unless `tsm.integrity.required`.
    pub(crate) integrity_unverified: Arc<Counter>,
    /// Integrity checks that failed: a MAC, digest or identity that does not match, or
    /// malformed integrity data.
    pub(crate) integrity_failures: Arc<Counter>,
}

impl Stats {
    pub(crate) fn new(registry: &MetricsRegistry) -> Self {
        Self {
            copy: OpMetrics::new(registry, "copy"),
            fetch: OpMetrics::new(registry, "fetch"),
            fetch_index: OpMetrics::new(registry, "fetch.index"),
            delete: OpMetrics::new(registry, "delete"),
            bytes_uploaded: registry.counter("bytes.uploaded"),
            bytes_downloaded: registry.counter("bytes.downloaded"),
            bytes_served: registry.counter("fetch.bytes.served"),
            integrity_unverified: registry.counter("integrity.unverified"),
            integrity_failures: registry.counter("integrity.failures"),
        }
    }
}
