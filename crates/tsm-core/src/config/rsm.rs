//! [`RsmConfig`]: the broker's `rsm.config.*` map (prefix stripped, values as strings)
//! validated into typed settings in one step ([`RsmConfig::from_props`]).
//!
//! Input: the `Map<String,String>` from `RemoteStorageManager.configure` (KIP-405), via the
//! JNI layer or the CLI. Output: the settings the engine, caches and backend builder use.
//! Every invalid value is a [`ConfigError`] naming the key, the value (`<redacted>` for
//! secret backend keys) and what is allowed; unknown keys are logged (`tracing::warn!`, key
//! name only) and ignored, as the Java plugin's `ConfigDef` does.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use tracing_subscriber::filter::LevelFilter;

use super::names::*;
use super::{BackendKind, ConfigError, ConfigKeyDoc, StorageConfig};

/// A KIP-917 custom metadata field (`custom.metadata.fields.include`), in the Java
/// plugin's `SegmentCustomMetadataField` order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CustomMetadataField {
    /// `REMOTE_SIZE`: bytes stored for the segment (all three objects).
    RemoteSize,
    /// `OBJECT_PREFIX`: the `key.prefix` used at copy time.
    ObjectPrefix,
    /// `OBJECT_KEY`: the object key main path (without prefix and suffix).
    ObjectKey,
}

impl CustomMetadataField {
    /// Every field, in their canonical order.
    pub const ALL: [Self; 3] = [Self::RemoteSize, Self::ObjectPrefix, Self::ObjectKey];

    /// The name used in `custom.metadata.fields.include`, e.g. `REMOTE_SIZE`.
    pub fn config_name(self) -> &'static str {
        match self {
            Self::RemoteSize => "REMOTE_SIZE",
            Self::ObjectPrefix => "OBJECT_PREFIX",
            Self::ObjectKey => "OBJECT_KEY",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.config_name() == name)
    }
}

/// One RSA key pair on the key ring (`encryption.key.pairs.<id>.*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPairConfig {
    /// The key-pair id (never contains `:`).
    pub id: String,
    /// `encryption.key.pairs.<id>.public.key.file`: PEM file of the RSA public key.
    pub public_key_file: PathBuf,
    /// `encryption.key.pairs.<id>.private.key.file`: PEM file of the RSA private key.
    pub private_key_file: PathBuf,
}

/// Encryption settings, present when `encryption.enabled=true`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncryptionConfig {
    /// `encryption.key.pair.id`: the pair new data keys are wrapped with; always one of
    /// `key_pairs`.
    pub active_key_pair_id: String,
    /// `encryption.key.pairs`: every pair on the ring, in the listed order.
    pub key_pairs: Vec<KeyPairConfig>,
    /// `tsm.encryption.plaintext.reads`: segments stored without encryption are read
    /// (default false: refused).
    pub plaintext_reads: bool,
}

/// Which chunk cache (`fetch.chunk.cache.class`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChunkCacheKind {
    /// `memory` (or `...MemoryChunkCache`): chunks in RAM.
    Memory,
    /// `disk` (or `...DiskChunkCache`): chunk files under `fetch.chunk.cache.path`.
    Disk {
        /// `fetch.chunk.cache.path`: an existing directory; the cache uses its own
        /// subdirectory in it.
        path: PathBuf,
    },
}

/// `fetch.chunk.cache.*`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkCacheConfig {
    /// `None`: no chunk cache (the default).
    pub kind: Option<ChunkCacheKind>,
    /// `fetch.chunk.cache.size` in bytes; `None` = no cache (`-1` is refused).
    pub size_bytes: Option<u64>,
    /// `fetch.chunk.cache.retention.ms`; `None` = forever (`-1`). Default 10 min.
    pub retention: Option<Duration>,
    /// `fetch.chunk.cache.prefetch.max.size` in bytes. Default 0.
    pub prefetch_max_size: u32,
    /// `fetch.chunk.cache.get.timeout.ms`. Default 10 s.
    pub get_timeout: Duration,
    /// `fetch.chunk.cache.thread.pool.size` (accepted, unused). Default 0.
    pub thread_pool_size: u32,
}

/// `fetch.manifest.cache.*`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestCacheConfig {
    /// `fetch.manifest.cache.size`: maximum entries (`-1`, unbounded, is refused; `None`
    /// only from Rust callers). Default 1000.
    pub max_entries: Option<u64>,
    /// `fetch.manifest.cache.retention.ms`; `None` = forever. Default 1 h.
    pub retention: Option<Duration>,
    /// `fetch.manifest.cache.get.timeout.ms`. Default 10 s.
    pub get_timeout: Duration,
    /// `fetch.manifest.cache.thread.pool.size` (accepted, unused). Default 0.
    pub thread_pool_size: u32,
}

/// `fetch.indexes.cache.*`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexesCacheConfig {
    /// `fetch.indexes.cache.size` in bytes (`-1`, unbounded, is refused; `None` only from
    /// Rust callers). Default 10 MiB.
    pub size_bytes: Option<u64>,
    /// `fetch.indexes.cache.retention.ms`; `None` = forever. Default 10 min.
    pub retention: Option<Duration>,
    /// `fetch.indexes.cache.get.timeout.ms`. Default 10 s.
    pub get_timeout: Duration,
    /// `fetch.indexes.cache.thread.pool.size` (accepted, unused). Default 0.
    pub thread_pool_size: u32,
}

/// The validated plugin configuration. Built only by [`RsmConfig::from_props`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RsmConfig {
    /// `storage.backend.class`: the selected backend kind.
    pub backend: &'static BackendKind,
    /// The `storage.*` keys with `storage.` stripped, for [`BackendKind::build`].
    pub storage: StorageConfig,
    /// `chunk.size` in bytes, 1..=1073741823.
    pub chunk_size: u32,
    /// `compression.enabled`.
    pub compression_enabled: bool,
    /// `compression.heuristic.enabled` (only ever true when compression is enabled).
    pub compression_heuristic_enabled: bool,
    /// `encryption.*`; `None` when `encryption.enabled=false`.
    pub encryption: Option<EncryptionConfig>,
    /// `key.prefix`, prepended verbatim to every object key.
    pub key_prefix: String,
    /// `key.prefix.mask`.
    pub key_prefix_mask: bool,
    /// `tsm.integrity.required`: segments without integrity data are refused (default
    /// false: read and counted).
    pub integrity_required: bool,
    /// `custom.metadata.fields.include`, deduplicated, in canonical order.
    pub custom_metadata_fields: Vec<CustomMetadataField>,
    /// `upload.rate.limit.bytes.per.second`; `None` = unlimited.
    pub upload_rate_limit_bytes_per_second: Option<u64>,
    /// `fetch.chunk.cache.*`.
    pub chunk_cache: ChunkCacheConfig,
    /// `fetch.manifest.cache.*`.
    pub manifest_cache: ManifestCacheConfig,
    /// `fetch.indexes.cache.*`.
    pub indexes_cache: IndexesCacheConfig,
    /// `broker.id`, when the broker passed it.
    pub broker_id: Option<i64>,
    /// The `tsm.storage.*.timeout.ms`, `tsm.memory.budget.bytes`, `tsm.max.in.flight` and
    /// `tsm.close.timeout.ms` keys.
    pub lifecycle: LifecycleConfig,
    /// `tsm.fetch.gets.in.flight`, `tsm.fetch.read.ahead.bytes`,
    /// `tsm.fetch.read.ahead.store.bytes`.
    pub reads: ReadsConfig,
    /// `tsm.log.level`, `tsm.log.filter`.
    pub log: LogConfig,
}

/// `tsm.log.level` and `tsm.log.filter`: what the plugin's native log forwarding lets
/// through (applied by crate tsm-jni's `logging`; the operator tool uses `RUST_LOG`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogConfig {
    /// `tsm.log.level`: the level of tsm's own targets; `None`: the broker's.
    pub level: Option<LevelFilter>,
    /// `tsm.log.filter`: extra `EnvFilter` directives (validated), verbatim.
    pub filter: Option<String>,
}

impl LogConfig {
    /// `tsm.log.level` and `tsm.log.filter` of `props` (`rsm.config.` stripped).
    ///
    /// # Errors
    /// A [`ConfigError`] naming the key: a level that is not `off`, `error`, `warn`,
    /// `info`, `debug` or `trace`; a filter `EnvFilter` refuses.
    pub fn from_props(props: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let problems = Problems::default();
        let log = parse_log(&Props { map: props }, &problems);
        match problems.into_vec().into_iter().next() {
            Some(e) => Err(e),
            None => Ok(log),
        }
    }
}

fn parse_log(p: &Props<'_>, pb: &Problems) -> LogConfig {
    let level = p
        .get(LOG_LEVEL)
        .and_then(|v| match v.parse::<LevelFilter>() {
            // Numbers parse too (1 = error ... 5 = trace); only names are documented.
            Ok(l) if v.chars().all(|c| c.is_ascii_alphabetic()) => Some(l),
            _ => {
                pb.push(ConfigError::new(
                    LOG_LEVEL,
                    v,
                    "off, error, warn, info, debug or trace",
                ));
                None
            }
        });
    let filter =
        p.get(LOG_FILTER).and_then(
            |v| match tracing_subscriber::EnvFilter::builder().parse(v) {
                Ok(_) => Some(v.to_string()),
                Err(e) => {
                    pb.push(ConfigError::new(
                        LOG_FILTER,
                        v,
                        format!("comma-separated EnvFilter directives such as target=level ({e})"),
                    ));
                    None
                }
            },
        );
    LogConfig { level, filter }
}

/// The lifecycle keys (deadlines, memory budget, close); see `engine/lifecycle`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct LifecycleConfig {
    /// `tsm.storage.get.first.byte.timeout.ms`, default 30 s.
    pub get_first_byte_timeout: Duration,
    /// `tsm.storage.get.idle.timeout.ms`, default 30 s.
    pub get_idle_timeout: Duration,
    /// `tsm.storage.get.timeout.ms`, default 2 min.
    pub get_timeout: Duration,
    /// `tsm.storage.upload.timeout.ms`, default 10 min.
    pub upload_timeout: Duration,
    /// `tsm.storage.delete.timeout.ms`, default 30 s.
    pub delete_timeout: Duration,
    /// `tsm.memory.budget.bytes`, default 512 MiB.
    pub memory_budget_bytes: u64,
    /// `tsm.memory.copy.bytes`; `None`: derived (`engine/lifecycle/budget.rs`).
    pub memory_copy_bytes: Option<u64>,
    /// `tsm.max.in.flight`; `None`: one per core.
    pub max_in_flight: Option<usize>,
    /// `tsm.close.timeout.ms`, default 30 s.
    pub close_timeout: Duration,
    /// `tsm.fetch.stream.idle.timeout.ms`, default 5 min.
    pub stream_idle_timeout: Duration,
    /// `tsm.copy.stall.warn.factor`, default 4.
    pub copy_stall_warn_factor: u32,
    /// `tsm.copy.failures.warn.count`, default 3.
    pub copy_failures_warn_count: u32,
}

/// The read-path keys (parallel GETs, read-ahead); see `engine/cached.rs`,
/// `engine/window.rs`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReadsConfig {
    /// `tsm.fetch.gets.in.flight`, default 10.
    pub gets_in_flight: usize,
    /// `tsm.fetch.read.ahead.bytes`, default 40 MiB; 0: off.
    pub read_ahead_bytes: u64,
    /// `tsm.fetch.read.ahead.store.bytes`, default 80 MiB; 0: no default store.
    pub read_ahead_store_bytes: u64,
    /// `tsm.fetch.read.ahead.plain`: `None` for `auto` (the default: on unless the
    /// backend's reads are local), else the value given.
    pub read_ahead_plain: Option<bool>,
    /// `tsm.fetch.sub.range.min.bytes`, default 256 KiB.
    pub min_sub_range_bytes: u64,
}

/// Typed reads of the raw map; errors name the key. Values are trimmed (as Kafka's
/// `ConfigDef` does); an empty value counts as absent.
struct Props<'a> {
    map: &'a BTreeMap<String, String>,
}

impl<'a> Props<'a> {
    fn get(&self, key: &str) -> Option<&'a str> {
        self.map
            .get(key)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    }

    fn require(&self, key: &str) -> Result<&'a str, ConfigError> {
        self.get(key)
            .ok_or_else(|| ConfigError::new(key, "<missing>", "required"))
    }

    fn bool(&self, key: &str, default: bool) -> Result<bool, ConfigError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
            Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
            Some(v) => Err(ConfigError::new(key, v, "true or false")),
        }
    }

    /// `auto` (or absent): `Ok(None)`; `true` / `false`: `Ok(Some(_))`.
    fn auto_bool(&self, key: &str) -> Result<Option<bool>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) if v.eq_ignore_ascii_case("auto") => Ok(None),
            Some(v) if v.eq_ignore_ascii_case("true") => Ok(Some(true)),
            Some(v) if v.eq_ignore_ascii_case("false") => Ok(Some(false)),
            Some(v) => Err(ConfigError::new(key, v, "auto, true or false")),
        }
    }

    fn int(&self, key: &str, min: i64, max: i64) -> Result<Option<i64>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .parse::<i64>()
                .ok()
                .filter(|n| (min..=max).contains(n))
                .map(Some)
                .ok_or_else(|| ConfigError::new(key, v, format!("an integer from {min} to {max}"))),
        }
    }

    /// A retention in ms where `-1` means forever: `Ok(None)` for `-1`.
    fn retention(&self, key: &str, default_ms: u64) -> Result<Option<Duration>, ConfigError> {
        match self.get(key) {
            None => Ok(Some(Duration::from_millis(default_ms))),
            Some(v) => match v.parse::<i64>() {
                Ok(-1) => Ok(None),
                Ok(n) if n >= 0 => Ok(Some(Duration::from_millis(n as u64))),
                _ => Err(ConfigError::new(
                    key,
                    v,
                    format!("-1 (forever) or an integer from 0 to {}", i64::MAX),
                )),
            },
        }
    }

    /// The size of a cache: an integer from 0. `-1`, which the Java plugin reads as
    /// "unbounded", is refused: an unbounded cache can take all of the broker's memory (or
    /// the disk chunk cache's disk), and tsm bounds every cache. Always `Some` when `Ok`
    /// (the cache configs keep `Option` for Rust callers that build them by hand).
    fn cache_size(&self, key: &str, default: Option<u64>) -> Result<Option<u64>, ConfigError> {
        match self.get(key) {
            Some(v) if v.parse::<i64>() == Ok(-1) => Err(ConfigError::new(
                key,
                v,
                format!(
                    "an integer from 0 to {}; -1 (unbounded, which the Java plugin accepts) is \
                     refused: an unbounded cache can take all of the broker's memory (or disk, \
                     for the disk chunk cache): give its size",
                    i64::MAX
                ),
            )),
            _ => self
                .int(key, 0, i64::MAX)
                .map(|n| n.map(|n| n as u64).or(default)),
        }
    }

    fn millis(&self, key: &str, default_ms: u64) -> Result<Duration, ConfigError> {
        Ok(Duration::from_millis(
            self.int(key, 1, i64::MAX)?.map_or(default_ms, |v| v as u64),
        ))
    }

    fn pool_size(&self, key: &str) -> Result<u32, ConfigError> {
        Ok(self.int(key, 0, 1024)?.unwrap_or(0) as u32)
    }

    /// A comma-separated list, entries trimmed, empty entries dropped.
    fn list(&self, key: &str) -> Vec<&'a str> {
        self.get(key)
            .map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The known key closest to a mistyped `key` (`compresion.enabled` ->
/// `compression.enabled`): at most 3 edits away, or within a quarter of its length.
pub fn closest_key<'k>(key: &str, known: impl Iterator<Item = &'k str>) -> Option<&'k str> {
    let limit = (key.len() / 4).max(3);
    known
        .map(|k| (strsim::levenshtein(key, k), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Java class names of the chunk caches, current and older releases.
const MEMORY_CACHE_ALIASES: &[&str] = &[
    "io.aiven.kafka.tieredstorage.fetch.cache.MemoryChunkCache",
    "io.aiven.kafka.tieredstorage.chunkmanager.cache.InMemoryChunkCache",
];
const DISK_CACHE_ALIASES: &[&str] = &[
    "io.aiven.kafka.tieredstorage.fetch.cache.DiskChunkCache",
    "io.aiven.kafka.tieredstorage.chunkmanager.cache.DiskBasedChunkCache",
];

impl RsmConfig {
    /// Validates the broker's map (`rsm.config.` stripped; `broker.id` may be present).
    ///
    /// `kinds` are the backends linked into this build; `storage.backend.class` must
    /// select one of them by name or alias. The `storage.*` keys are handed over (prefix
    /// stripped) in [`RsmConfig::storage`]; the backend validates them when built, here
    /// only unknown ones are warned about (key name only, with the closest known key).
    ///
    /// # Errors
    /// The first invalid value found, as a [`ConfigError`] naming key, value and what is
    /// allowed. Required keys: `storage.backend.class`, `chunk.size`, and the encryption
    /// and chunk-cache keys when those are enabled. [`super::check()`] reports every
    /// problem instead of the first.
    pub fn from_props(
        props: BTreeMap<String, String>,
        kinds: &[&'static BackendKind],
    ) -> Result<Self, ConfigError> {
        let keys: Vec<String> = props.keys().cloned().collect();
        let problems = Problems::default();
        let parsed = Self::parse(props, kinds, &problems);
        if let Some(first) = problems.into_vec().into_iter().next() {
            return Err(first);
        }
        let config = parsed
            .ok_or_else(|| ConfigError::new(STORAGE_BACKEND_CLASS, "<missing>", "required"))?;
        for unknown in unknown_keys(&keys, Some(config.backend), kinds) {
            match unknown.backend {
                Some(backend) => tracing::warn!(
                    key = %unknown.key,
                    backend,
                    did_you_mean = unknown.did_you_mean.unwrap_or(""),
                    "unknown storage configuration key ignored"
                ),
                None => tracing::warn!(
                    key = %unknown.key,
                    did_you_mean = unknown.did_you_mean.unwrap_or(""),
                    "unknown configuration key ignored"
                ),
            }
        }
        Ok(config)
    }

    /// Parses `props`, recording every invalid value in `problems` (in key order of the
    /// checks, so the first is what [`RsmConfig::from_props`] reports) and going on with
    /// the default. `None` when there is no usable backend class.
    pub(super) fn parse(
        props: BTreeMap<String, String>,
        kinds: &[&'static BackendKind],
        problems: &Problems,
    ) -> Option<Self> {
        let p = Props { map: &props };
        let pb = problems;

        let backend = match p.require(STORAGE_BACKEND_CLASS) {
            Err(e) => {
                pb.push(e);
                None
            }
            Ok(class) => {
                let found = kinds.iter().copied().find(|k| k.matches(class));
                if found.is_none() {
                    let names: Vec<&str> = kinds.iter().map(|k| k.name).collect();
                    pb.push(ConfigError::new(
                        STORAGE_BACKEND_CLASS,
                        class,
                        format!(
                            "one of the backends linked into this build: {} (or their Java class names)",
                            names.join(", ")
                        ),
                    ));
                }
                found
            }
        };

        let chunk_size = match p.int(CHUNK_SIZE, 1, MAX_CHUNK_SIZE as i64) {
            Ok(Some(v)) => v as u32,
            Ok(None) => {
                pb.push(ConfigError::new(
                    CHUNK_SIZE,
                    "<missing>",
                    format!("required: an integer from 1 to {MAX_CHUNK_SIZE}"),
                ));
                0
            }
            Err(e) => {
                pb.push(e);
                0
            }
        };

        let compression_enabled = pb.or(p.bool(COMPRESSION_ENABLED, false), false);
        let compression_heuristic_enabled =
            pb.or(p.bool(COMPRESSION_HEURISTIC_ENABLED, false), false);
        if compression_heuristic_enabled && !compression_enabled {
            pb.push(ConfigError::new(
                COMPRESSION_HEURISTIC_ENABLED,
                "true",
                "false unless compression.enabled=true",
            ));
        }

        let plaintext_reads = pb.or(p.bool(ENCRYPTION_PLAINTEXT_READS, false), false);
        let encryption = if pb.or(p.bool(ENCRYPTION_ENABLED, false), false) {
            parse_encryption(&p, pb, plaintext_reads)
        } else {
            None
        };

        let key_prefix = p.get(KEY_PREFIX).unwrap_or("").to_string();
        if let Err(why) = crate::object_keys::check_prefix(&key_prefix) {
            pb.push(ConfigError::new(
                KEY_PREFIX,
                &key_prefix,
                format!("a prefix without NUL, a leading '/' or '.'/'..' components ({why})"),
            ));
        }
        let key_prefix_mask = pb.or(p.bool(KEY_PREFIX_MASK, false), false);
        let integrity_required = pb.or(p.bool(INTEGRITY_REQUIRED, false), false);

        let mut fields = BTreeSet::new();
        for name in p.list(CUSTOM_METADATA_FIELDS_INCLUDE) {
            match CustomMetadataField::parse(name) {
                Some(field) => {
                    fields.insert(field);
                }
                None => pb.push(ConfigError::new(
                    CUSTOM_METADATA_FIELDS_INCLUDE,
                    p.get(CUSTOM_METADATA_FIELDS_INCLUDE).unwrap_or(""),
                    format!(
                        "a comma-separated list of REMOTE_SIZE, OBJECT_PREFIX, OBJECT_KEY \
                         (unknown field {name:?})"
                    ),
                )),
            }
        }

        let upload_rate_limit_bytes_per_second = pb
            .or(
                p.int(
                    UPLOAD_RATE_LIMIT,
                    MIN_UPLOAD_RATE_LIMIT as i64,
                    i32::MAX as i64,
                ),
                None,
            )
            .map(|v| v as u64);

        if let Some(v) = p.get(SEGMENT_FORMAT) {
            if v != "kafka" {
                pb.push(ConfigError::new(SEGMENT_FORMAT, v, "kafka"));
            }
        }
        pb.or(p.int(METRICS_NUM_SAMPLES, 1, i32::MAX as i64), None);
        pb.or(p.int(METRICS_SAMPLE_WINDOW_MS, 1, i64::MAX), None);
        if let Some(v) = p.get(METRICS_RECORDING_LEVEL) {
            if !["INFO", "DEBUG", "TRACE"].contains(&v) {
                pb.push(ConfigError::new(
                    METRICS_RECORDING_LEVEL,
                    v,
                    "INFO, DEBUG or TRACE",
                ));
            }
        }
        let id_range = (i64::from(i32::MIN), i64::from(i32::MAX));
        // `node.id` first: KAFKA-18628 deprecates `broker.id` for plugins, Kafka 5.0 drops it.
        let node_id = pb.or(p.int(NODE_ID, id_range.0, id_range.1), None);
        let broker_id = node_id.or_else(|| pb.or(p.int(BROKER_ID, id_range.0, id_range.1), None));

        let chunk_cache = parse_chunk_cache(&p, pb);
        let manifest_cache = ManifestCacheConfig {
            max_entries: pb.or(p.cache_size(MANIFEST_CACHE_SIZE, Some(1000)), Some(1000)),
            retention: pb.or(p.retention(MANIFEST_CACHE_RETENTION_MS, 3_600_000), None),
            get_timeout: pb.or(
                p.millis(MANIFEST_CACHE_GET_TIMEOUT_MS, 10_000),
                Duration::ZERO,
            ),
            thread_pool_size: pb.or(p.pool_size(MANIFEST_CACHE_THREAD_POOL_SIZE), 0),
        };
        let indexes_cache = IndexesCacheConfig {
            size_bytes: pb.or(
                p.cache_size(INDEXES_CACHE_SIZE, Some(10_485_760)),
                Some(10_485_760),
            ),
            retention: pb.or(p.retention(INDEXES_CACHE_RETENTION_MS, 600_000), None),
            get_timeout: pb.or(
                p.millis(INDEXES_CACHE_GET_TIMEOUT_MS, 10_000),
                Duration::ZERO,
            ),
            thread_pool_size: pb.or(p.pool_size(INDEXES_CACHE_THREAD_POOL_SIZE), 0),
        };

        let ms = |key: &str, default_ms: u64| pb.or(p.millis(key, default_ms), Duration::ZERO);
        let lifecycle = LifecycleConfig {
            get_first_byte_timeout: ms(STORAGE_GET_FIRST_BYTE_TIMEOUT_MS, 30_000),
            get_idle_timeout: ms(STORAGE_GET_IDLE_TIMEOUT_MS, 30_000),
            get_timeout: ms(STORAGE_GET_TIMEOUT_MS, 120_000),
            upload_timeout: ms(STORAGE_UPLOAD_TIMEOUT_MS, 600_000),
            delete_timeout: ms(STORAGE_DELETE_TIMEOUT_MS, 30_000),
            memory_budget_bytes: pb
                .or(p.int(MEMORY_BUDGET_BYTES, 1 << 20, i64::MAX), None)
                .map_or(512 << 20, |v| v as u64),
            memory_copy_bytes: pb
                .or(p.int(MEMORY_COPY_BYTES, 1 << 20, i64::MAX), None)
                .map(|v| v as u64),
            max_in_flight: pb
                .or(p.int(MAX_IN_FLIGHT, 1, 256), None)
                .map(|v| v as usize),
            close_timeout: ms(CLOSE_TIMEOUT_MS, 30_000),
            stream_idle_timeout: pb
                .or(p.int(FETCH_STREAM_IDLE_TIMEOUT_MS, 1000, i64::MAX), None)
                .map_or(Duration::from_secs(300), |v| {
                    Duration::from_millis(v as u64)
                }),
            copy_stall_warn_factor: pb
                .or(p.int(COPY_STALL_WARN_FACTOR, 1, 1000), None)
                .map_or(crate::engine::health::DEFAULT_STALL_WARN_FACTOR, |v| {
                    v as u32
                }),
            copy_failures_warn_count: pb
                .or(p.int(COPY_FAILURES_WARN_COUNT, 1, 1000), None)
                .map_or(crate::engine::health::DEFAULT_FAILURES_WARN_COUNT, |v| {
                    v as u32
                }),
        };

        let reads = ReadsConfig {
            gets_in_flight: pb
                .or(p.int(FETCH_GETS_IN_FLIGHT, 1, 64), None)
                .map_or(crate::engine::DEFAULT_GETS_IN_FLIGHT, |v| v as usize),
            read_ahead_bytes: pb
                .or(p.int(FETCH_READ_AHEAD_BYTES, 0, i64::from(i32::MAX)), None)
                .map_or(crate::engine::DEFAULT_READ_AHEAD_BYTES, |v| v as u64),
            read_ahead_store_bytes: pb
                .or(
                    p.int(FETCH_READ_AHEAD_STORE_BYTES, 0, i64::from(i32::MAX)),
                    None,
                )
                .map_or(crate::engine::DEFAULT_READ_AHEAD_STORE_BYTES, |v| v as u64),
            read_ahead_plain: pb.or(p.auto_bool(FETCH_READ_AHEAD_PLAIN), None),
            min_sub_range_bytes: pb
                .or(
                    p.int(FETCH_SUB_RANGE_MIN_BYTES, 1024, i64::from(i32::MAX)),
                    None,
                )
                .map_or(crate::engine::DEFAULT_MIN_SUB_RANGE_BYTES, |v| v as u64),
        };

        let log = parse_log(&p, pb);

        // The JNI layer's keys (removed before the engine sees the map in the plugin;
        // checked here for `tsm config check`).
        pb.or(
            p.int(JNI_WORKER_THREADS, 0, JNI_WORKER_THREADS_MAX as i64),
            None,
        );

        let backend = backend?;
        let mut storage_values = BTreeMap::new();
        for (k, v) in &props {
            if let Some(rest) = k.strip_prefix(STORAGE_PREFIX) {
                if k != STORAGE_BACKEND_CLASS {
                    storage_values.insert(rest.to_string(), v.clone());
                }
            }
        }

        Some(Self {
            backend,
            storage: StorageConfig::new(storage_values).with_secret_keys(
                backend
                    .keys
                    .iter()
                    .filter(|k| k.secret)
                    .map(|k| k.storage_key()),
            ),
            chunk_size,
            compression_enabled,
            compression_heuristic_enabled,
            encryption,
            key_prefix,
            key_prefix_mask,
            integrity_required,
            custom_metadata_fields: fields.into_iter().collect(),
            upload_rate_limit_bytes_per_second,
            chunk_cache,
            manifest_cache,
            indexes_cache,
            broker_id,
            lifecycle,
            reads,
            log,
        })
    }
}

/// Every invalid value found while parsing, in the order the checks ran.
#[derive(Default)]
pub(super) struct Problems(RefCell<Vec<ConfigError>>);

impl Problems {
    /// Records `e`.
    pub(super) fn push(&self, e: ConfigError) {
        self.0.borrow_mut().push(e);
    }

    /// The value of `r`, or `fallback` after recording its error.
    fn or<T>(&self, r: Result<T, ConfigError>, fallback: T) -> T {
        r.unwrap_or_else(|e| {
            self.push(e);
            fallback
        })
    }

    /// What was recorded.
    pub(super) fn into_vec(self) -> Vec<ConfigError> {
        self.0.into_inner()
    }
}

/// A key no part of tsm reads (it is ignored by the plugin).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    /// The key as given (without `rsm.config.`).
    pub key: String,
    /// The closest known key ([`closest_key`]), if one is near.
    pub did_you_mean: Option<&'static str>,
    /// For a `storage.*` key: the selected backend it is unknown to.
    pub backend: Option<&'static str>,
}

/// The keys of `keys` that tsm does not know: not a core key ([`CONFIG_KEYS`], the
/// per-key-pair keys, [`JNI_KEYS`]), and for `storage.*` keys not a key of `backend`
/// (when no backend could be selected: of none of `kinds`).
pub(super) fn unknown_keys<'a>(
    keys: impl IntoIterator<Item = &'a String>,
    backend: Option<&'static BackendKind>,
    kinds: &[&'static BackendKind],
) -> Vec<UnknownKey> {
    let mut out = Vec::new();
    for k in keys {
        if let Some(rest) = k.strip_prefix(STORAGE_PREFIX) {
            if k == STORAGE_BACKEND_CLASS {
                continue;
            }
            let candidates: Vec<&'static ConfigKeyDoc> = match backend {
                Some(b) => b.keys.iter().collect(),
                None => kinds.iter().flat_map(|b| b.keys.iter()).collect(),
            };
            if !candidates.iter().any(|d| d.storage_key() == rest) {
                out.push(UnknownKey {
                    key: k.clone(),
                    did_you_mean: closest_key(k, candidates.iter().map(|d| d.name)),
                    backend: backend.map(|b| b.name),
                });
            }
        } else if !is_core_key(k) {
            let known = CONFIG_KEYS.iter().chain(JNI_KEYS).map(|d| d.name);
            out.push(UnknownKey {
                key: k.clone(),
                did_you_mean: closest_key(k, known),
                backend: None,
            });
        }
    }
    out
}

/// `encryption.*`, or `None` after recording the problems in `pb`.
fn parse_encryption(
    p: &Props<'_>,
    pb: &Problems,
    plaintext_reads: bool,
) -> Option<EncryptionConfig> {
    let active = pb.or(p.require(ENCRYPTION_KEY_PAIR_ID).map(Some), None);
    let ids = p.list(ENCRYPTION_KEY_PAIRS);
    let listed = p.get(ENCRYPTION_KEY_PAIRS).unwrap_or("");
    if ids.is_empty() {
        pb.push(ConfigError::new(
            ENCRYPTION_KEY_PAIRS,
            p.get(ENCRYPTION_KEY_PAIRS).unwrap_or("<missing>"),
            "required when encryption.enabled=true: a comma-separated list of key-pair ids",
        ));
        return None;
    }
    let mut ok = active.is_some();
    let mut key_pairs: Vec<KeyPairConfig> = Vec::with_capacity(ids.len());
    for id in &ids {
        if id.contains(':') {
            pb.push(ConfigError::new(
                ENCRYPTION_KEY_PAIRS,
                listed,
                format!("key-pair ids without ':' (id {id:?})"),
            ));
            ok = false;
            continue;
        }
        if key_pairs.iter().any(|k| k.id == *id) {
            pb.push(ConfigError::new(
                ENCRYPTION_KEY_PAIRS,
                listed,
                format!("distinct key-pair ids (id {id:?} is listed twice)"),
            ));
            ok = false;
            continue;
        }
        let public = format!("{ENCRYPTION_KEY_PAIRS_PREFIX}{id}{PUBLIC_KEY_FILE_SUFFIX}");
        let private = format!("{ENCRYPTION_KEY_PAIRS_PREFIX}{id}{PRIVATE_KEY_FILE_SUFFIX}");
        match (p.require(&public), p.require(&private)) {
            (Ok(public), Ok(private)) => key_pairs.push(KeyPairConfig {
                id: (*id).to_string(),
                public_key_file: PathBuf::from(public),
                private_key_file: PathBuf::from(private),
            }),
            (public, private) => {
                for e in [public.err(), private.err()].into_iter().flatten() {
                    pb.push(e);
                }
                ok = false;
            }
        }
    }
    let active = active?;
    if !ids.contains(&active) {
        pb.push(ConfigError::new(
            ENCRYPTION_KEY_PAIR_ID,
            active,
            format!(
                "one of the ids in encryption.key.pairs ({})",
                ids.join(", ")
            ),
        ));
        return None;
    }
    ok.then(|| EncryptionConfig {
        active_key_pair_id: active.to_string(),
        key_pairs,
        plaintext_reads,
    })
}

/// `fetch.chunk.cache.*`, recording problems in `pb` (then without a cache).
fn parse_chunk_cache(p: &Props<'_>, pb: &Problems) -> ChunkCacheConfig {
    let kind = match p.get(CHUNK_CACHE_CLASS) {
        None => None,
        Some(v) if v.eq_ignore_ascii_case("memory") || MEMORY_CACHE_ALIASES.contains(&v) => {
            Some(ChunkCacheKind::Memory)
        }
        Some(v) if v.eq_ignore_ascii_case("disk") || DISK_CACHE_ALIASES.contains(&v) => {
            match p.require(CHUNK_CACHE_PATH) {
                Err(e) => {
                    pb.push(e);
                    None
                }
                Ok(path) if !PathBuf::from(path).is_dir() => {
                    pb.push(ConfigError::new(
                        CHUNK_CACHE_PATH,
                        path,
                        "an existing directory",
                    ));
                    None
                }
                Ok(path) => Some(ChunkCacheKind::Disk {
                    path: PathBuf::from(path),
                }),
            }
        }
        Some(v) => {
            pb.push(ConfigError::new(
                CHUNK_CACHE_CLASS,
                v,
                format!(
                    "memory, disk, {} or {}",
                    MEMORY_CACHE_ALIASES[0], DISK_CACHE_ALIASES[0]
                ),
            ));
            None
        }
    };
    let size_bytes = if p.get(CHUNK_CACHE_CLASS).is_some() && p.get(CHUNK_CACHE_SIZE).is_none() {
        pb.push(ConfigError::new(
            CHUNK_CACHE_SIZE,
            "<missing>",
            "required when fetch.chunk.cache.class is set: its size in bytes",
        ));
        None
    } else {
        let size = pb.or(p.cache_size(CHUNK_CACHE_SIZE, None), None);
        if kind.is_some() { size } else { None }
    };
    ChunkCacheConfig {
        kind,
        size_bytes,
        retention: pb.or(p.retention(CHUNK_CACHE_RETENTION_MS, 600_000), None),
        prefetch_max_size: pb
            .or(
                p.int(CHUNK_CACHE_PREFETCH_MAX_SIZE, 0, i64::from(i32::MAX)),
                None,
            )
            .unwrap_or(0) as u32,
        get_timeout: pb.or(p.millis(CHUNK_CACHE_GET_TIMEOUT_MS, 10_000), Duration::ZERO),
        thread_pool_size: pb.or(p.pool_size(CHUNK_CACHE_THREAD_POOL_SIZE), 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_the_nearest_known_key() {
        let known = || CONFIG_KEYS.iter().map(|d| d.name);
        assert_eq!(
            closest_key("compresion.enabled", known()),
            Some("compression.enabled")
        );
        assert_eq!(closest_key("chunk.sise", known()), Some("chunk.size"));
        assert_eq!(closest_key("something.else.entirely", known()), None);
    }
}
