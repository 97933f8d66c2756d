//! [`MeteredBackend`]: a [`StorageBackend`] wrapper counting requests, errors, bytes up and
//! down, and per-operation latency into a [`MetricsRegistry`].
//!
//! Metric names (`<op>` is `upload`, `fetch`, `delete`, `list`):
//! `backend.<op>.requests`, `backend.<op>.errors` (failed calls plus failures while
//! streaming), `backend.bytes.uploaded` (body bytes handed to the store, failed uploads
//! included), `backend.bytes.downloaded` (bytes read from fetch streams), latency
//! `backend.<op>` (upload and delete: the whole call; fetch: until the stream is returned,
//! i.e. the first response; list: not timed). Adds no buffering.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use futures::StreamExt;

use super::{BackendError, ByteRange, ByteStream, ListStream, ObjectKey, StorageBackend};
use crate::metrics::{Counter, LatencyHistogram, MetricsRegistry};

#[derive(Debug)]
struct OpMetrics {
    requests: Arc<Counter>,
    errors: Arc<Counter>,
    latency: Arc<LatencyHistogram>,
}

impl OpMetrics {
    fn new(registry: &MetricsRegistry, op: &str) -> Self {
        Self {
            requests: registry.counter(&format!("backend.{op}.requests")),
            errors: registry.counter(&format!("backend.{op}.errors")),
            latency: registry.histogram(&format!("backend.{op}")),
        }
    }
}

/// Wraps a backend and records its metrics; forwards every call unchanged.
#[derive(Debug)]
pub struct MeteredBackend {
    inner: Arc<dyn StorageBackend>,
    upload: OpMetrics,
    fetch: OpMetrics,
    delete: OpMetrics,
    list: OpMetrics,
    bytes_up: Arc<Counter>,
    bytes_down: Arc<Counter>,
}

impl MeteredBackend {
    /// Records `inner`'s calls into `registry` (see the module docs for the names).
    pub fn new(inner: Arc<dyn StorageBackend>, registry: &MetricsRegistry) -> Self {
        Self {
            inner,
            upload: OpMetrics::new(registry, "upload"),
            fetch: OpMetrics::new(registry, "fetch"),
            delete: OpMetrics::new(registry, "delete"),
            list: OpMetrics::new(registry, "list"),
            bytes_up: registry.counter("backend.bytes.uploaded"),
            bytes_down: registry.counter("backend.bytes.downloaded"),
        }
    }
}

impl fmt::Display for MeteredBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.inner)
    }
}

#[async_trait]
impl StorageBackend for MeteredBackend {
    async fn upload(
        &self,
        key: &ObjectKey,
        body: ByteStream,
        size: Option<u64>,
    ) -> Result<u64, BackendError> {
        self.upload.requests.inc();
        let up = self.bytes_up.clone();
        let body = body
            .inspect(move |item| {
                if let Ok(b) = item {
                    up.add(b.len() as u64);
                }
            })
            .boxed();
        let start = Instant::now();
        let result = self.inner.upload(key, body, size).await;
        self.upload.latency.record(start.elapsed());
        if result.is_err() {
            self.upload.errors.inc();
        }
        result
    }

    async fn fetch(
        &self,
        key: &ObjectKey,
        range: Option<ByteRange>,
    ) -> Result<ByteStream, BackendError> {
        self.fetch.requests.inc();
        let start = Instant::now();
        let result = self.inner.fetch(key, range).await;
        self.fetch.latency.record(start.elapsed());
        match result {
            Ok(stream) => {
                let down = self.bytes_down.clone();
                let errors = self.fetch.errors.clone();
                Ok(stream
                    .inspect(move |item| match item {
                        Ok(b) => down.add(b.len() as u64),
                        Err(_) => errors.inc(),
                    })
                    .boxed())
            }
            Err(e) => {
                self.fetch.errors.inc();
                Err(e)
            }
        }
    }

    async fn delete(&self, keys: &[ObjectKey]) -> Result<(), BackendError> {
        self.delete.requests.inc();
        let start = Instant::now();
        let result = self.inner.delete(keys).await;
        self.delete.latency.record(start.elapsed());
        if result.is_err() {
            self.delete.errors.inc();
        }
        result
    }

    fn upload_buffer_bytes(&self) -> u64 {
        self.inner.upload_buffer_bytes()
    }

    fn reads_are_local(&self) -> bool {
        self.inner.reads_are_local()
    }

    fn list(&self, prefix: &ObjectKey) -> ListStream {
        self.list.requests.inc();
        let errors = self.list.errors.clone();
        self.inner
            .list(prefix)
            .inspect(move |item| {
                if item.is_err() {
                    errors.inc();
                }
            })
            .boxed()
    }
}
