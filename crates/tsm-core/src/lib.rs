//! # tsm-core
//!
//! The engine of tsm, a KIP-405 `RemoteStorageManager` for Apache Kafka. The JNI plugin,
//! the CLI and Rust tools all call [`RemoteStorageManager`].
//!
//! A segment's way through this crate (file names follow it):
//! `engine/copy.rs` reads the broker's segment files, chunks and transforms them
//! (tsm-codec, tsm-crypto) and uploads `.log`, `.indexes`, then `.rsm-manifest` through a
//! [`StorageBackend`] (the tsm-storage crate); `engine/fetch.rs` reads the manifest, maps a
//! byte range to chunks, downloads and detransforms them lazily.
//!
//! Facts: `docs/object-format.md` (the on-bucket format) and `docs/broker-contract.md`
//! (what the broker does with the plugin).

/// Counters and latency histograms (tsm-storage's, shared by the engine and the backends).
pub use tsm_storage::metrics;

pub mod cache;
pub mod config;
pub mod custom_metadata;
pub mod engine;
pub mod error;
pub mod manifest;
pub mod object_keys;
pub mod segment;
pub mod transform;

pub use config::{BackendKind, ConfigError, StorageConfig};
pub use engine::{
    CopyOutcome, MetricsSnapshot, ObjectType, PartitionHealth, RemoteStorageManager, SegmentStream,
};
pub use error::{ErrorClass, RsmError};
pub use segment::{IndexType, KafkaUuid, LogSegmentData, RemoteLogSegmentMetadata};
pub use tsm_storage::{BackendError, ByteRange, ByteStream, ObjectKey, ObjectMeta, StorageBackend};
