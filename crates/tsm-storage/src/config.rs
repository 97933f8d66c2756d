//! The `storage.*` keys handed to a backend, how backends plug in ([`BackendKind`]), and
//! the error every configuration problem is reported with ([`ConfigError`], shared with
//! the engine's own keys).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::StorageBackend;
use crate::metrics::MetricsRegistry;

mod secret;

pub use secret::Secret;

/// A configuration value that is not allowed. Names the full key (as the operator wrote
/// it, without `rsm.config.`), the value (`<redacted>` for secrets) and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid configuration {key}={value}: {allowed}")]
pub struct ConfigError {
    /// The full key, e.g. `storage.s3.bucket.name`.
    pub key: String,
    /// The value given (`<redacted>` for secret keys, `<missing>` when absent).
    pub value: String,
    /// What is allowed, e.g. "an integer from 5242880 to 5368709120".
    pub allowed: String,
}

impl ConfigError {
    /// A new error; `value` is shown as given, so pass `<redacted>` for secrets.
    pub fn new(
        key: impl Into<String>,
        value: impl Into<String>,
        allowed: impl Into<String>,
    ) -> Self {
        Self {
            key: key.into(),
            value: value.into(),
            allowed: allowed.into(),
        }
    }
}

/// The documentation of one configuration key; the single source of truth for
/// `docs/configuration.md`.
#[derive(Debug, Clone, Copy)]
pub struct ConfigKeyDoc {
    /// The full key without `rsm.config.`, e.g. `chunk.size` or, for a backend key,
    /// `storage.s3.bucket.name` (backends read it from [`StorageConfig`] as
    /// `s3.bucket.name`; see [`ConfigKeyDoc::storage_key`]).
    pub name: &'static str,
    /// The default, as text (`""` when there is none; say "required" in `doc`).
    pub default: &'static str,
    /// What it does, units, allowed values.
    pub doc: &'static str,
    /// True when the value is a secret: never printed, logged or put in an error.
    pub secret: bool,
}

impl ConfigKeyDoc {
    /// For a backend key (`storage.s3.bucket.name`), the name inside [`StorageConfig`]
    /// (`s3.bucket.name`); other keys are returned unchanged.
    pub fn storage_key(&self) -> &'static str {
        self.name.strip_prefix("storage.").unwrap_or(self.name)
    }
}

/// The `storage.*` keys, with `storage.` stripped, plus typed getters whose errors name
/// the full key (`storage.<key>`), and the engine's metrics registry the backend records
/// its client metrics into ([`StorageConfig::metrics`]).
#[derive(Clone, Default)]
pub struct StorageConfig {
    values: BTreeMap<String, String>,
    /// Keys (without `storage.`) whose values are secrets: errors show `<redacted>`.
    secret_keys: Vec<&'static str>,
    /// Where the backend counts its requests (a private registry unless the engine set
    /// its own with [`StorageConfig::with_metrics`]).
    metrics: MetricsRegistry,
}

impl std::fmt::Debug for StorageConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Values may be secrets: show keys only.
        f.debug_struct("StorageConfig")
            .field("keys", &self.values.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl StorageConfig {
    /// From keys with `storage.` already stripped.
    pub fn new(values: BTreeMap<String, String>) -> Self {
        Self {
            values,
            secret_keys: Vec::new(),
            metrics: MetricsRegistry::new(),
        }
    }

    /// Records the backend's client metrics (`client.*`, see [`crate::metrics`]) into
    /// `registry`; the engine passes its own so one snapshot holds everything.
    pub fn with_metrics(mut self, registry: &MetricsRegistry) -> Self {
        self.metrics = registry.clone();
        self
    }

    /// The registry a backend records its client metrics into (shared, cheap to clone).
    pub fn metrics(&self) -> &MetricsRegistry {
        &self.metrics
    }

    /// Marks the keys (without `storage.`) whose values must never appear in errors; the
    /// engine (tsm-core's `RsmConfig::from_props`) passes the backend's
    /// [`ConfigKeyDoc::secret`] keys.
    pub fn with_secret_keys(mut self, keys: impl IntoIterator<Item = &'static str>) -> Self {
        self.secret_keys.extend(keys);
        self
    }

    /// `value` as an error may show it: `<redacted>` for a secret key.
    pub fn shown<'a>(&self, key: &str, value: &'a str) -> &'a str {
        if self.secret_keys.contains(&key) {
            "<redacted>"
        } else {
            value
        }
    }

    /// Raw value of `storage.<key>` (trimmed), `None` when absent or empty.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values
            .get(key)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    }

    /// All keys present (without `storage.`).
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }

    /// `storage.<key>`, or a [`ConfigError`] saying it is required.
    pub fn require(&self, key: &str) -> Result<&str, ConfigError> {
        self.get(key)
            .ok_or_else(|| ConfigError::new(format!("storage.{key}"), "<missing>", "required"))
    }

    /// `storage.<key>` parsed as a boolean (`true`/`false`, any case).
    pub fn get_bool(&self, key: &str, default: bool) -> Result<bool, ConfigError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
            Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
            Some(v) => Err(ConfigError::new(
                format!("storage.{key}"),
                self.shown(key, v),
                "true or false",
            )),
        }
    }

    /// `storage.<key>` parsed as an integer in `min..=max`.
    pub fn get_u64(&self, key: &str, default: u64, min: u64, max: u64) -> Result<u64, ConfigError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v
                .parse::<u64>()
                .ok()
                .filter(|n| (min..=max).contains(n))
                .ok_or_else(|| {
                    ConfigError::new(
                        format!("storage.{key}"),
                        self.shown(key, v),
                        format!("an integer from {min} to {max}"),
                    )
                }),
        }
    }
}

/// What [`BackendKind::build`] returns: the built backend, or an error naming a key.
pub type BuildFuture = BoxFuture<'static, Result<Arc<dyn StorageBackend>, ConfigError>>;

/// A kind of backend: its names for `storage.backend.class`, its keys, and how to build it.
///
/// Backend crates export one `pub static KIND: BackendKind` (this crate exports the
/// filesystem one); the final assembly (tsm-jni, tsm-cli) passes the list of kinds it
/// links to the engine.
pub struct BackendKind {
    /// Canonical name, e.g. `s3`.
    pub name: &'static str,
    /// Other accepted values of `storage.backend.class`, e.g. the Java plugin's class
    /// name `io.aiven.kafka.tieredstorage.storage.s3.S3Storage`.
    pub aliases: &'static [&'static str],
    /// Every `storage.*` key this backend reads.
    pub keys: &'static [ConfigKeyDoc],
    /// Builds the backend from its `storage.*` keys. Async because cloud SDKs load
    /// credentials asynchronously. Errors name the key.
    pub build: fn(StorageConfig) -> BuildFuture,
    /// Checks the `storage.*` keys as `build` would, without building anything, reading
    /// credentials or making a request (`tsm config check`). Errors name the key (first
    /// problem only).
    pub validate: fn(&StorageConfig) -> Result<(), ConfigError>,
    /// The bytes one upload of the backend `build` would make buffers
    /// ([`StorageBackend::upload_buffer_bytes`]), from the keys alone: what `tsm config
    /// check` plans the engine's memory pools with, as `configure` does with the built
    /// backend. Errors as `validate`.
    pub upload_buffer_bytes: fn(&StorageConfig) -> Result<u64, ConfigError>,
}

impl BackendKind {
    /// True when `class` (a `storage.backend.class` value) selects this kind.
    pub fn matches(&self, class: &str) -> bool {
        let class = class.trim();
        class.eq_ignore_ascii_case(self.name) || self.aliases.contains(&class)
    }
}

impl std::fmt::Debug for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendKind")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
