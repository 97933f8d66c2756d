//! Configuration: the `Map<String,String>` the broker hands to `configure` (prefix
//! `rsm.config.` already stripped) turned into validated settings in one step.
//!
//! Key names and defaults are the Java plugin's (Aiven tiered-storage-for-apache-kafka),
//! so a cluster can switch plugins without touching its properties.

mod storage;

pub use storage::{BackendKind, BuildFuture, ConfigError, ConfigKeyDoc, StorageConfig};
