//! Configuration: the `Map<String,String>` the broker hands to `configure` (prefix
//! `rsm.config.` already stripped) turned into validated settings in one step
//! ([`RsmConfig::from_props`]).
//!
//! Key names and defaults are the Java plugin's (Aiven tiered-storage-for-apache-kafka),
//! so a cluster can switch plugins without touching its properties. [`CONFIG_KEYS`] (core)
//! and each [`BackendKind::keys`] (`storage.*`) are the single source of truth;
//! [`render_configuration_markdown`] turns them into `docs/configuration.md`; [`check()`]
//! lists every problem of a map (`tsm config check`).

mod check;
mod docs;
pub mod effective;
pub mod names;
mod rsm;

pub use check::{ConfigProblem, KeyFiles, check};
pub use docs::render_configuration_markdown;
pub use names::{CONFIG_KEYS, JNI_KEYS};
pub use rsm::{
    ChunkCacheConfig, ChunkCacheKind, CustomMetadataField, EncryptionConfig, IndexesCacheConfig,
    KeyPairConfig, LifecycleConfig, LogConfig, ManifestCacheConfig, RsmConfig, UnknownKey,
    closest_key,
};
pub use tsm_storage::config::Secret;
pub use tsm_storage::config::{BackendKind, BuildFuture, ConfigError, ConfigKeyDoc, StorageConfig};
