//! # tsm-backend-gcs
//!
//! The Google Cloud Storage backend of tsm: a [`StorageBackend`] over one bucket, selected
//! with `storage.backend.class=gcs` (or the Java plugin's class name
//! `io.aiven.kafka.tieredstorage.storage.gcs.GcsStorage`) and configured by the
//! `storage.gcs.*` keys in [`KEYS`] (see [`config`]).
//!
//! # Brief overview
//! [`GcsBackend`] receives object bytes from tsm-storage's engine (`.log`, `.indexes`,
//! `.rsm-manifest` objects) and stores them in the bucket; it streams them back for the
//! broker's fetches. Uploads and reads go through Google's `google-cloud-storage` crate;
//! list, delete and stat through the GCS JSON API (`client.rs` says why).
//!
//! # Operator's sharp edges
//! - **Memory**: each upload in flight holds at most `storage.gcs.resumable.upload.chunk.size`
//!   bytes (default 25 MiB) plus one stream item. Uploads are always resumable uploads.
//! - **Failed uploads**: nothing becomes visible under the key. The SDK does not expose the
//!   resumable session URI, so an interrupted session is not cancelled explicitly; GCS
//!   expires it after one week. Uncommitted session data is not billed as object storage.
//! - **Metrics** ([`metrics`]): requests counted at the call sites by kind into the
//!   engine's registry (`client.gcs.*`); SDK-internal retries are not visible.
//! - **Retries**: the SDK retries idempotent requests on 408/429/5xx with exponential
//!   backoff; our JSON API calls retry the same statuses, both up to 10 attempts.
//! - **Credentials**: exactly one of `storage.gcs.credentials.default=true`,
//!   `storage.gcs.credentials.json`, `storage.gcs.credentials.path`; none means anonymous
//!   and is only accepted with `storage.gcs.endpoint.url` (emulators). The path is re-read
//!   when the file changes. See the crate README for Workload Identity.
//! - **IAM**: needs `storage.objects.create`, `.get`, `.list`, `.delete` on the bucket
//!   (role `roles/storage.objectUser`).

#![deny(rustdoc::broken_intra_doc_links)]

mod client;
pub mod config;
mod credential;
mod error;
pub mod metrics;

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use tsm_storage::config::BuildFuture;
use tsm_storage::{BackendError, BackendKind, ByteRange, ConfigError, ObjectKey, StorageBackend};
use tsm_storage::{ByteStream, ListStream};

pub use config::{CredentialsSource, GcsConfig, KEYS};

use client::GcsClient;

/// `storage.backend.class=gcs` (alias: the Java plugin's
/// `io.aiven.kafka.tieredstorage.storage.gcs.GcsStorage`), reading the keys in [`KEYS`].
pub static KIND: BackendKind = BackendKind {
    name: "gcs",
    aliases: &["io.aiven.kafka.tieredstorage.storage.gcs.GcsStorage"],
    keys: KEYS,
    build: build_kind,
    validate: |storage| GcsConfig::from_storage(storage).map(drop),
    upload_buffer_bytes: |storage| {
        GcsConfig::from_storage(storage).map(|c| resumable_buffer_bytes(c.chunk_size))
    },
};

/// Bytes one resumable upload buffers: the chunk being sent (`resumable.upload.chunk.size`)
/// plus the one being filled.
fn resumable_buffer_bytes(chunk: u64) -> u64 {
    chunk.saturating_mul(2)
}

fn build_kind(storage: tsm_storage::StorageConfig) -> BuildFuture {
    Box::pin(async move {
        let config = GcsConfig::from_storage(&storage)?;
        let backend = GcsBackend::with_metrics(config, storage.metrics()).await?;
        Ok(Arc::new(backend) as Arc<dyn StorageBackend>)
    })
}

/// A [`StorageBackend`] storing objects in one GCS bucket.
///
/// Cheap to share (`Arc` inside); `Display` is `gcs(gs://<bucket>)`.
#[derive(Debug, Clone)]
pub struct GcsBackend {
    client: Arc<GcsClient>,
}

impl GcsBackend {
    /// Builds the SDK and JSON API clients. Makes no request: a wrong bucket or missing
    /// permission shows on the first call.
    ///
    /// # Errors
    /// [`ConfigError`] naming the credentials key when the credentials cannot be loaded
    /// (unreadable file, unsupported JSON type), or `storage.gcs.endpoint.url` when the
    /// client cannot be built.
    pub async fn new(config: GcsConfig) -> Result<Self, ConfigError> {
        Self::with_metrics(config, &tsm_storage::metrics::MetricsRegistry::new()).await
    }

    /// As [`GcsBackend::new`], counting requests into `registry` ([`metrics`]).
    ///
    /// # Errors
    /// As [`GcsBackend::new`].
    pub async fn with_metrics(
        config: GcsConfig,
        registry: &tsm_storage::metrics::MetricsRegistry,
    ) -> Result<Self, ConfigError> {
        let key = match &config.credentials {
            CredentialsSource::Json(_) => "storage.gcs.credentials.json",
            CredentialsSource::Path(_) => "storage.gcs.credentials.path",
            CredentialsSource::Default => "storage.gcs.credentials.default",
            CredentialsSource::Anonymous => "storage.gcs.endpoint.url",
        };
        let value = match &config.credentials {
            CredentialsSource::Json(_) => "<redacted>".to_string(),
            CredentialsSource::Path(p) => p.display().to_string(),
            CredentialsSource::Default => "true".to_string(),
            CredentialsSource::Anonymous => config.endpoint.clone().unwrap_or_default(),
        };
        let client = GcsClient::new(&config, metrics::RequestMetrics::new(registry))
            .await
            .map_err(|e| ConfigError::new(key, value, e))?;
        tracing::debug!(bucket = %config.bucket, credentials = ?config.credentials, "GCS backend ready");
        Ok(Self {
            client: Arc::new(client),
        })
    }

    /// The size in bytes of `key`, `None` when missing (JSON API `objects.get`; one
    /// request). Not part of [`StorageBackend`]; for tools and tests.
    ///
    /// # Errors
    /// [`BackendError`] as for [`StorageBackend::fetch`].
    pub async fn stat(&self, key: &ObjectKey) -> Result<Option<u64>, BackendError> {
        self.client.stat(key).await
    }
}

impl fmt::Display for GcsBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gcs(gs://{})", self.client.bucket())
    }
}

#[async_trait]
impl StorageBackend for GcsBackend {
    /// One resumable upload (`uploadType=resumable`), sent in chunks of
    /// `storage.gcs.resumable.upload.chunk.size` bytes; atomic (the object appears when
    /// the last chunk is committed). A declared `size` that the body does not match is an
    /// error and nothing is committed.
    async fn upload(
        &self,
        key: &ObjectKey,
        body: ByteStream,
        size: Option<u64>,
    ) -> Result<u64, BackendError> {
        self.client.upload(key, body, size).await
    }

    /// One `GET` (`alt=media`, with `Range: bytes=start-end`): an end past the object is
    /// clamped by GCS; a start at or past the end is 416 -> [`BackendError::InvalidRange`].
    async fn fetch(
        &self,
        key: &ObjectKey,
        range: Option<ByteRange>,
    ) -> Result<ByteStream, BackendError> {
        self.client.fetch(key, range).await
    }

    /// Concurrent JSON API `DELETE`s (GCS has no multi-object delete outside the batch
    /// endpoint); 404 is success.
    async fn delete(&self, keys: &[ObjectKey]) -> Result<(), BackendError> {
        self.client.delete(keys).await
    }

    /// JSON API `objects.list` with `prefix`, one page (up to 1000 objects) at a time.
    fn list(&self, prefix: &ObjectKey) -> ListStream {
        self.client.list(prefix)
    }

    /// The resumable upload buffer (`resumable.upload.chunk.size`) plus the chunk being
    /// filled.
    fn upload_buffer_bytes(&self) -> u64 {
        resumable_buffer_bytes(self.client.upload_chunk_bytes)
    }

    /// A network store: every read is a round trip.
    fn reads_are_local(&self) -> bool {
        false
    }
}
