//! Counts the backend's requests to GCS into the engine's registry
//! ([`tsm_storage::config::StorageConfig::metrics`]), at the call sites (the Storage SDK has
//! no per-request hook): the request kinds of the Java plugin's `gcs-client-metrics`.
//!
//! - `client.gcs.object-get.requests`: object reads (`read_object`, one per fetch).
//! - `client.gcs.object-metadata-get.requests`: JSON API `objects.get` of metadata (the
//!   size check of [`crate::GcsBackend::stat`]), every attempt.
//! - `client.gcs.object-delete.requests`: JSON API deletes, every attempt.
//! - `client.gcs.resumable-upload-initiate.requests`: one per upload (the session start).
//! - `client.gcs.resumable-chunk-upload.requests`: the chunk PUTs of a completed upload,
//!   `max(1, ceil(stored bytes / resumable.upload.chunk.size))`.
//! - `client.gcs.other.requests`: JSON API listings, every attempt.
//! - `client.get.requests` (object reads) and `client.put.requests` (initiates and
//!   chunks), the totals of every backend.
//!
//! Not visible here, so not counted: retries and read resumes made inside the SDK
//! (`read_object`, resumable sessions), and the chunks of an upload that failed.

use std::sync::Arc;

use tsm_storage::metrics::{Counter, MetricsRegistry};

/// The counters; one set per backend.
#[derive(Debug, Clone)]
pub struct RequestMetrics {
    pub(crate) object_get: Arc<Counter>,
    pub(crate) metadata_get: Arc<Counter>,
    pub(crate) object_delete: Arc<Counter>,
    pub(crate) initiate: Arc<Counter>,
    pub(crate) chunk_upload: Arc<Counter>,
    pub(crate) other: Arc<Counter>,
    pub(crate) gets: Arc<Counter>,
    pub(crate) puts: Arc<Counter>,
}

impl RequestMetrics {
    /// Counts into `registry` (see the module docs for the names).
    pub fn new(registry: &MetricsRegistry) -> Self {
        let c = |k: &str| registry.counter(&format!("client.gcs.{k}.requests"));
        Self {
            object_get: c("object-get"),
            metadata_get: c("object-metadata-get"),
            object_delete: c("object-delete"),
            initiate: c("resumable-upload-initiate"),
            chunk_upload: c("resumable-chunk-upload"),
            other: c("other"),
            gets: registry.counter("client.get.requests"),
            puts: registry.counter("client.put.requests"),
        }
    }

    /// One object read.
    pub(crate) fn object_read(&self) {
        self.object_get.inc();
        self.gets.inc();
    }

    /// One upload session started.
    pub(crate) fn upload_started(&self) {
        self.initiate.inc();
        self.puts.inc();
    }

    /// The chunks of a completed upload of `stored` bytes in chunks of `chunk` bytes.
    pub(crate) fn upload_completed(&self, stored: u64, chunk: u64) {
        let n = stored.div_ceil(chunk.max(1)).max(1);
        self.chunk_upload.add(n);
        self.puts.add(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_of_an_upload() {
        let r = MetricsRegistry::new();
        let m = RequestMetrics::new(&r);
        m.upload_started();
        m.upload_completed(0, 8);
        m.upload_completed(17, 8);
        let s = r.snapshot();
        assert_eq!(s.counter("client.gcs.resumable-chunk-upload.requests"), 4);
        assert_eq!(s.counter("client.put.requests"), 5);
    }
}
