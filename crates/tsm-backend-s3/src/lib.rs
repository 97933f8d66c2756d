//! tsm-backend-s3: the S3 [`StorageBackend`], on the official `aws-sdk-s3`.
//!
//! # Brief overview
//! [`S3Backend`] stores tsm's `.log`, `.indexes` and `.rsm-manifest` objects in one bucket
//! (`storage.s3.bucket.name`), under the keys the engine builds. It is selected with
//! `storage.backend.class = s3` or the Java plugin's class name
//! `io.aiven.kafka.tieredstorage.storage.s3.S3Storage` ([`KIND`]); its keys are in
//! [`config::KEYS`].
//!
//! - Upload ([`multipart`]): one PutObject up to the part size, else a multipart upload
//!   with concurrent parts, driven by the shared writer of `tsm_storage::multipart`;
//!   memory at most part size x (parts in flight + 1).
//! - Fetch ([`client::S3Client::get_object`]): GetObject with an HTTP `Range`, streamed as
//!   it arrives.
//! - Delete: DeleteObjects, 1000 keys per request; per-key errors are failures.
//! - Errors ([`error`]): one status -> meaning table; messages carry bucket, masked key,
//!   HTTP status and S3 error code.
//! - Metrics ([`metrics`]): an SDK interceptor counts every HTTP request (retries
//!   included) by S3 operation and failed attempts by error class, into the engine's
//!   registry (`client.s3.*`).
//!
//! # Operator's sharp edges
//! - A multipart upload that is neither completed nor aborted (broker killed mid-upload,
//!   S3 unreachable during the abort) keeps its parts, and they are billed. Add a bucket
//!   lifecycle rule `AbortIncompleteMultipartUpload` (e.g. after 1 day).
//! - S3-compatible stores (MinIO, Ceph) usually need `s3.endpoint.url` and
//!   `s3.path.style.access.enabled=true`. Checksums are sent only where the S3 API
//!   requires them unless `aws.checksum.check.enabled=true`: newer SDK defaults (CRC
//!   trailers on every upload) are rejected by many of them.
//! - Deleting a missing key is success, as in S3.
//! - Older S3-compatible stores refuse DeleteObjects without `Content-MD5` (the SDK sends a
//!   CRC32 checksum instead): `s3.legacy.md5.plugin.enabled=true` adds it ([`legacy_md5`]).

pub mod client;
pub mod config;
pub mod credential;
pub mod error;
pub mod legacy_md5;
pub mod metrics;
pub mod multipart;
mod part_body;

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use tsm_storage::StorageBackend;
use tsm_storage::config::{BackendKind, BuildFuture, ConfigError, StorageConfig};
use tsm_storage::{BackendError, ByteRange, ByteStream, ListStream, ObjectKey};

pub use client::S3Client;
pub use config::S3Config;

/// The S3 backend kind: `storage.backend.class = s3` (or the Java plugin's class name).
pub static KIND: BackendKind = BackendKind {
    name: "s3",
    aliases: &["io.aiven.kafka.tieredstorage.storage.s3.S3Storage"],
    keys: config::KEYS,
    build: build_kind,
    validate: |cfg| S3Config::from_storage_config(cfg).map(drop),
    upload_buffer_bytes: |cfg| {
        S3Config::from_storage_config(cfg).map(|c| multipart::limits(&c).buffer_bytes())
    },
};

fn build_kind(cfg: StorageConfig) -> BuildFuture {
    Box::pin(async move {
        let backend = S3Backend::from_storage_config(&cfg).await?;
        Ok(Arc::new(backend) as Arc<dyn StorageBackend>)
    })
}

/// A [`StorageBackend`] over one S3 bucket. Cheap to clone (the SDK client is shared).
///
/// `Display` is `S3(<bucket>)`; `Debug` shows no secrets.
#[derive(Clone, Debug)]
pub struct S3Backend {
    client: S3Client,
}

impl S3Backend {
    /// Builds the backend from its `storage.*` keys (see [`config::KEYS`]). Async because
    /// the SDK's default credential and region chains are loaded here. Errors name the key.
    pub async fn from_storage_config(cfg: &StorageConfig) -> Result<Self, ConfigError> {
        Self::with_metrics(S3Config::from_storage_config(cfg)?, cfg.metrics()).await
    }

    /// Builds the backend from a parsed [`S3Config`] (request metrics go to a private
    /// registry).
    pub async fn new(cfg: S3Config) -> Result<Self, ConfigError> {
        Self::with_metrics(cfg, &tsm_storage::metrics::MetricsRegistry::new()).await
    }

    /// Builds the backend from a parsed [`S3Config`], counting its requests into
    /// `registry` ([`metrics`]).
    pub async fn with_metrics(
        cfg: S3Config,
        registry: &tsm_storage::metrics::MetricsRegistry,
    ) -> Result<Self, ConfigError> {
        let sdk = client::build_client_with(&cfg, metrics::RequestMetrics::new(registry)).await?;
        Ok(Self {
            client: S3Client {
                sdk,
                bucket: Arc::from(cfg.bucket.as_str()),
                cfg: Arc::new(cfg),
            },
        })
    }

    /// A backend over a client built elsewhere, for tools and tests that set SDK options
    /// the `storage.*` keys do not have (a time source, an interceptor): typically
    /// `sdk_client().config().to_builder()` of a backend built from its keys, changed and
    /// rebuilt. Nothing is checked: `client.cfg` must be the settings `client.sdk` was
    /// built from.
    pub fn from_client(client: S3Client) -> Self {
        Self { client }
    }

    /// The bucket name.
    pub fn bucket(&self) -> &str {
        &self.client.bucket
    }

    /// The underlying SDK client, for tools and tests (bucket setup, inspection).
    pub fn sdk_client(&self) -> &aws_sdk_s3::Client {
        &self.client.sdk
    }
}

impl fmt::Display for S3Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "S3({})", self.client.bucket)
    }
}

#[async_trait]
impl StorageBackend for S3Backend {
    async fn upload(
        &self,
        key: &ObjectKey,
        body: ByteStream,
        size: Option<u64>,
    ) -> Result<u64, BackendError> {
        multipart::upload(&self.client, key, body, size).await
    }

    async fn fetch(
        &self,
        key: &ObjectKey,
        range: Option<ByteRange>,
    ) -> Result<ByteStream, BackendError> {
        self.client.get_object(key, range).await
    }

    async fn delete(&self, keys: &[ObjectKey]) -> Result<(), BackendError> {
        self.client.delete_objects(keys).await
    }

    fn list(&self, prefix: &ObjectKey) -> ListStream {
        self.client.list(prefix)
    }

    /// Part buffers of one multipart upload, as the shared writer holds them:
    /// `multipart.upload.part.size` x (`multipart.upload.parts.in.flight` + 1), the parts
    /// in flight and the one being read ([`tsm_storage::multipart::PartLimits::buffer_bytes`]).
    fn upload_buffer_bytes(&self) -> u64 {
        multipart::limits(&self.client.cfg).buffer_bytes()
    }

    /// A network store: every read is a round trip.
    fn reads_are_local(&self) -> bool {
        false
    }
}
