//! # tsm-storage
//!
//! The storage abstraction of tsm: where a segment's `.log`, `.indexes` and
//! `.rsm-manifest` objects go, and nothing about what is in them. The engine (tsm-core)
//! hands bytes down through [`StorageBackend`]; each store implements it once: the
//! filesystem and in-memory backends here ([`filesystem`], [`memory`]), S3, GCS and Azure
//! in the `tsm-backend-*` crates, which depend on this crate only (not on the engine, its
//! caches, codec or crypto). Metrics, rate limits, fault injection and upload compensation
//! wrap the same trait ([`metered`], [`rate_limit`], [`fault`], [`gate`], [`compensation`],
//! [`layers`]) instead of adding flags to backends.
//!
//! What else a backend needs lives here too: its `storage.*` configuration
//! ([`config::StorageConfig`], [`config::BackendKind`], [`config::ConfigError`]),
//! [`config::Secret`] for credential values, the request-metrics registry it counts into
//! ([`metrics::MetricsRegistry`], which the engine shares for its own metrics), the one
//! multipart writer of the stores that upload in parts ([`multipart`]: S3, Azure), and the
//! contract suite every backend's tests run (`contract`, behind the feature `contract-tests`).
//!
//! The engine (tsm-core) and the plugin, the operator tool and the bench use it by its own name.

mod error;
mod key;
mod range;

pub mod config;
pub mod metrics;

#[cfg(any(feature = "contract-tests", test))]
pub mod contract;

pub use error::{BackendError, BoxError};
pub use key::ObjectKey;
pub use range::ByteRange;

pub use config::{BackendKind, ConfigError, StorageConfig};

use std::fmt::{Debug, Display};

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;

/// A stream of object bytes, in order. Items are whatever sizes the store delivers.
pub type ByteStream = BoxStream<'static, Result<Bytes, BackendError>>;

/// A listing: one [`ObjectMeta`] per object, in no guaranteed order.
pub type ListStream = BoxStream<'static, Result<ObjectMeta, BackendError>>;

/// One object found by [`StorageBackend::list`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectMeta {
    /// The full object key (bucket-relative, including `key.prefix`).
    pub key: String,
    /// Stored size in bytes.
    pub size: u64,
    /// When the object was last written, as the store reports it (S3 `LastModified`, GCS
    /// `updated`, Azure `Last-Modified`, file mtime); `None` when the store did not say.
    /// Used to tell an abandoned upload from one in flight (`tsm ls --orphans`, `tsm gc`).
    pub last_modified: Option<std::time::SystemTime>,
}

/// An object store holding tsm's objects.
///
/// # Contract
/// Every backend passes `tsm_storage::contract` (feature `contract-tests`) against its real
/// service. In short:
/// - `upload` is atomic: readers see the whole new object or the previous state, never a
///   partial one; uploading an existing key replaces it.
/// - `fetch` with `range = None` returns the whole object (a 0-byte object yields no bytes).
///   With an inclusive range `start..=end`: `end` past the last byte is clamped to it;
///   `start >= size` (including any range on a 0-byte object) is
///   [`BackendError::InvalidRange`]. A missing key is [`BackendError::NotFound`].
/// - `delete` is idempotent and batched: missing keys are success.
/// - Errors name the key through [`ObjectKey`]'s `Display`, which masks `key.prefix` when
///   `key.prefix.mask` is set.
///
/// # Wrappers
/// A wrapper must implement every method and forward what it does not change.
#[async_trait]
pub trait StorageBackend: Send + Sync + Debug + Display + 'static {
    /// Stores `body` under `key` and returns the number of bytes stored.
    ///
    /// `size` is the exact body length when known (lets a backend choose a single PUT);
    /// `None` means unknown. Memory held by the backend must be bounded (multipart part
    /// size x (parts in flight + 1), see [`multipart`]), never the whole body.
    /// On error nothing is visible under `key` that was not there before (or the old
    /// object remains), and any multipart / block / resumable state is aborted.
    async fn upload(
        &self,
        key: &ObjectKey,
        body: ByteStream,
        size: Option<u64>,
    ) -> Result<u64, BackendError>;

    /// Streams the object, or the inclusive `range` of it (see the contract above).
    /// The returned stream downloads lazily; dropping it stops the download.
    async fn fetch(
        &self,
        key: &ObjectKey,
        range: Option<ByteRange>,
    ) -> Result<ByteStream, BackendError>;

    /// Deletes every key (batched as the store allows, e.g. 1000 per S3 DeleteObjects).
    /// Missing keys are success.
    async fn delete(&self, keys: &[ObjectKey]) -> Result<(), BackendError>;

    /// Lists the objects whose key starts with `prefix` (a raw key prefix, not a
    /// directory), lazily, page by page.
    fn list(&self, prefix: &ObjectKey) -> ListStream;

    /// Bytes this backend buffers for one upload at most (multipart part size x (parts in
    /// flight + 1), [`multipart::PartLimits::buffer_bytes`]; a resumable chunk); 0 when it
    /// streams. The
    /// engine reserves it from its memory budget for each copy
    /// (`engine/lifecycle/budget.rs`). Required, as every method: a wrapper that forgot
    /// it would under-reserve every copy by its inner backend's buffers.
    fn upload_buffer_bytes(&self) -> u64;

    /// `true` when a read costs no network round trip (a local filesystem): there is no
    /// latency for read-ahead to hide, and the kernel's page cache reads ahead of a
    /// sequential reader already. The engine then reads plain segments at exact ranges
    /// only (`tsm.fetch.read.ahead.plain=auto`, `engine/fetch.rs`). Network stores answer
    /// `false`; a wrapper forwards its inner backend's answer.
    fn reads_are_local(&self) -> bool;
}

pub mod compensation;
pub mod fault;
pub mod filesystem;
pub mod gate;
pub mod layers;
pub mod memory;
pub mod metered;
pub mod multipart;
pub mod progress;
pub mod rate_limit;
