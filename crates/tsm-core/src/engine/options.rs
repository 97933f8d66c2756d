//! [`EngineOptions`]: the settings the engine runs with, derived from
//! [`crate::config::RsmConfig`] by [`EngineOptions::from_config`] (which also loads
//! the key ring from its PEM files), or built directly by Rust tools and tests.

use std::sync::Arc;
use std::time::Duration;

use tsm_crypto::KeyRing;

use super::lifecycle::Deadlines;
use crate::RsmError;
use crate::config::{CustomMetadataField, RsmConfig};
use crate::custom_metadata::CUSTOM_METADATA_MAX_BYTES;

/// Whether `.log` chunks are compressed (docs/object-format.md "Compression").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompressionMode {
    /// `compression.enabled=false`.
    Off,
    /// `compression.enabled=true`, heuristic off: always zstd.
    On,
    /// `compression.heuristic.enabled=true`: zstd only when tsm-codec's record-batch walk
    /// says the segment is mostly uncompressed batches.
    Heuristic,
}

/// Engine settings. Sizes in bytes.
#[derive(Clone)]
pub struct EngineOptions {
    /// `chunk.size`: original bytes per chunk (>= 1).
    pub chunk_size: u32,
    /// Compression decision.
    pub compression: CompressionMode,
    /// zstd level for chunks and for the manifest's `transformedChunks` (3 as in Java).
    pub compression_level: i32,
    /// The key ring when `encryption.enabled=true`.
    pub key_ring: Option<Arc<KeyRing>>,
    /// `tsm.encryption.plaintext.reads`: with a key ring, segments stored without
    /// encryption are read (false: refused as [`RsmError::Corrupt`]).
    pub plaintext_reads: bool,
    /// `tsm.integrity.required`: segments without integrity data (written by the Java
    /// plugin or an older tsm) are refused as [`RsmError::Corrupt`] (false: read, counted).
    pub integrity_required: bool,
    /// Whether copy records integrity data in the manifest (`manifest/integrity.rs`).
    /// Always true from the configuration; false only in benchmarks that measure its cost.
    pub write_integrity: bool,
    /// `key.prefix`, verbatim.
    pub key_prefix: String,
    /// `key.prefix.mask`.
    pub key_prefix_mask: bool,
    /// `custom.metadata.fields.include`.
    pub custom_metadata_fields: Vec<CustomMetadataField>,
    /// Largest custom metadata copy may return (the broker's
    /// `remote.log.metadata.custom.metadata.max.bytes`, default 128).
    pub custom_metadata_max_bytes: usize,
    /// Chunks transformed at once (copy and fetch); bounds pipeline memory to about
    /// `max_in_flight x 2 x chunk_size`.
    pub max_in_flight: usize,
    /// Upper bound of one coalesced ranged GET on fetch (stored bytes); a single chunk
    /// larger than this is still fetched in one GET.
    pub max_get_bytes: u64,
    /// `fetch.chunk.cache.prefetch.max.size`: stored bytes downloaded ahead of a read into
    /// the chunk cache (only with a chunk cache).
    pub prefetch_max_size: u64,
    /// Manifest cache bound (`fetch.manifest.cache.size`, entries; `None` = unbounded).
    /// Cached manifests hold the unwrapped data key, so an RSA unwrap happens once per
    /// segment, not per fetch.
    pub manifest_cache_entries: Option<u64>,
    /// Manifest cache TTL (`fetch.manifest.cache.retention.ms`; `None` = forever).
    pub manifest_cache_ttl: Option<Duration>,
    /// Indexes cache bound (`fetch.indexes.cache.size`, bytes; `None` = unbounded).
    pub indexes_cache_bytes: Option<u64>,
    /// Indexes cache TTL (`fetch.indexes.cache.retention.ms`; `None` = forever).
    pub indexes_cache_ttl: Option<Duration>,
    /// Longest wait for one manifest load through the manifest cache
    /// (`fetch.manifest.cache.get.timeout.ms`, default 10 s); then [`RsmError::Timeout`].
    pub manifest_get_timeout: Duration,
    /// Longest wait for one index load through the indexes cache
    /// (`fetch.indexes.cache.get.timeout.ms`, default 10 s).
    pub indexes_get_timeout: Duration,
    /// Longest wait for one chunk (its coalesced GET and prefetch) through the chunk cache
    /// (`fetch.chunk.cache.get.timeout.ms`, default 10 s; only with a chunk cache).
    pub chunk_get_timeout: Duration,
    /// Bounds of every store call (`tsm.storage.*.timeout.ms`; see `engine/lifecycle`).
    pub deadlines: Deadlines,
    /// `tsm.memory.budget.bytes`: what all calls of this engine may hold at once.
    pub memory_budget_bytes: u64,
    /// `tsm.memory.copy.bytes`: the copies' pool (`None`: derived, see
    /// `engine/lifecycle/budget.rs`).
    pub memory_copy_bytes: Option<u64>,
    /// `tsm.close.timeout.ms`: how long shutdown waits for clean-up in flight.
    pub close_timeout: Duration,
    /// `tsm.fetch.stream.idle.timeout.ms`: how long a fetch stream may stay unread before
    /// the plugin layer that holds it (the JNI bridge) releases it.
    pub stream_idle_timeout: Duration,
    /// `tsm.copy.stall.warn.factor`, `tsm.copy.failures.warn.count`: when tier-health
    /// lines are written (`engine/health.rs`).
    pub health: super::health::HealthSettings,
    /// `tsm.fetch.gets.in.flight`: ranged GETs one fetch stream (or one segment's
    /// read-ahead) keeps in flight at most (>= 1). See [`DEFAULT_GETS_IN_FLIGHT`].
    pub gets_in_flight: usize,
    /// `tsm.fetch.read.ahead.bytes`: stored bytes read ahead of a sequential reader (the
    /// broker's consecutive fetches of one segment); 0: off.
    pub read_ahead_bytes: u64,
    /// `tsm.fetch.read.ahead.store.bytes`: bound of the default in-memory read-ahead store
    /// used when no chunk cache is configured (carved out of `memory_budget_bytes`, at most
    /// half of it); 0: no store, no read-ahead without a chunk cache.
    pub read_ahead_store_bytes: u64,
    /// `tsm.fetch.read.ahead.plain`: whether plain segments are read ahead without a chunk
    /// cache. `None` (`auto`, the default): yes unless the backend's reads are local
    /// ([`StorageBackend::reads_are_local`](tsm_storage::StorageBackend::reads_are_local));
    /// the engine resolves it when built, so [`RemoteStorageManager::options`](super::RemoteStorageManager::options)
    /// shows `Some(_)`.
    pub read_ahead_plain: Option<bool>,
    /// Original bytes of a plain segment's first read, split into parallel sub-range GETs
    /// (the broker's `max.partition.fetch.bytes`, 1 MiB, by default).
    pub first_read_bytes: u64,
    /// Largest GET after a stream's first read / first chunk (stored bytes; whole chunks
    /// for transformed segments, at least one); default 4 MiB, one default chunk: a
    /// whole-segment stream of a plain segment makes as many GETs as the Java plugin's
    /// (1 MiB parts made 4x its requests: docs/benchmarks.md, "Issue 18, fourth pass").
    pub get_part_bytes: u64,
    /// `tsm.fetch.sub.range.min.bytes`: smallest sub-range a first read or a wanted chunk
    /// is split into (bytes); default [`DEFAULT_MIN_SUB_RANGE_BYTES`].
    pub min_sub_range_bytes: u64,
}

/// Default `tsm.fetch.gets.in.flight`. Bandwidth-delay product: one connection to an
/// object store carries about 80 MB/s and a GET waits about 20 ms for its first byte, so
/// a 4 MiB chunk GET takes ~72 ms (~58 MB/s effective); 500 MB/s per catching-up
/// partition needs 500 / 58 = 9 GETs in flight, 10 leaves headroom (8 measured 485 MB/s:
/// docs/benchmarks.md, "Issue 18, third pass").
pub const DEFAULT_GETS_IN_FLIGHT: usize = 10;
/// Default `tsm.fetch.read.ahead.bytes`: 10 GETs of 4 MiB chunks (see
/// [`DEFAULT_GETS_IN_FLIGHT`]).
pub const DEFAULT_READ_AHEAD_BYTES: u64 = 40 * 1024 * 1024;
/// Default `tsm.fetch.sub.range.min.bytes`: the broker's 1 MiB read in 4 parallel GETs
/// (at 80 MB/s per connection its transfer takes 3.3 ms instead of 13 ms after the round
/// trip).
pub const DEFAULT_MIN_SUB_RANGE_BYTES: u64 = 256 * 1024;
/// Default `tsm.fetch.read.ahead.store.bytes`: twice one sequential reader's read-ahead
/// (each segment reading ahead gets at most half the store).
pub const DEFAULT_READ_AHEAD_STORE_BYTES: u64 = 80 * 1024 * 1024;

/// Default of the three `fetch.*.cache.get.timeout.ms` keys (the Java plugin's default).
pub(super) const DEFAULT_GET_TIMEOUT: Duration = Duration::from_secs(10);

impl std::fmt::Debug for EngineOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineOptions")
            .field("chunk_size", &self.chunk_size)
            .field("compression", &self.compression)
            .field(
                "encryption",
                &self.key_ring.as_ref().map(|r| r.active_id().to_string()),
            )
            .field("key_prefix_mask", &self.key_prefix_mask)
            .field("custom_metadata_fields", &self.custom_metadata_fields)
            .field("max_in_flight", &self.max_in_flight)
            .field("max_get_bytes", &self.max_get_bytes)
            .field("deadlines", &self.deadlines)
            .field("memory_budget_bytes", &self.memory_budget_bytes)
            .field("memory_copy_bytes", &self.memory_copy_bytes)
            .field("stream_idle_timeout", &self.stream_idle_timeout)
            .field("health", &self.health)
            .field("gets_in_flight", &self.gets_in_flight)
            .field("read_ahead_bytes", &self.read_ahead_bytes)
            .field("read_ahead_store_bytes", &self.read_ahead_store_bytes)
            .field("read_ahead_plain", &self.read_ahead_plain)
            .finish_non_exhaustive()
    }
}

/// Default bound of one coalesced GET: 8 MiB of stored bytes.
pub const DEFAULT_MAX_GET_BYTES: u64 = 8 * 1024 * 1024;

impl EngineOptions {
    /// Defaults for `chunk_size`: no compression, no encryption, no prefix, no custom
    /// metadata.
    pub fn new(chunk_size: u32) -> Self {
        Self {
            chunk_size: chunk_size.max(1),
            compression: CompressionMode::Off,
            compression_level: tsm_codec::compression::DEFAULT_LEVEL,
            key_ring: None,
            plaintext_reads: false,
            integrity_required: false,
            write_integrity: true,
            key_prefix: String::new(),
            key_prefix_mask: false,
            custom_metadata_fields: Vec::new(),
            custom_metadata_max_bytes: CUSTOM_METADATA_MAX_BYTES,
            max_in_flight: tsm_codec::pipeline::default_max_in_flight(),
            max_get_bytes: DEFAULT_MAX_GET_BYTES,
            prefetch_max_size: 0,
            manifest_cache_entries: Some(1000),
            manifest_cache_ttl: Some(Duration::from_secs(3600)),
            indexes_cache_bytes: Some(10 * 1024 * 1024),
            indexes_cache_ttl: Some(Duration::from_secs(600)),
            manifest_get_timeout: DEFAULT_GET_TIMEOUT,
            indexes_get_timeout: DEFAULT_GET_TIMEOUT,
            chunk_get_timeout: DEFAULT_GET_TIMEOUT,
            deadlines: Deadlines::default(),
            memory_budget_bytes: super::lifecycle::budget::DEFAULT_MEMORY_BUDGET,
            memory_copy_bytes: None,
            close_timeout: super::lifecycle::DEFAULT_CLOSE_TIMEOUT,
            stream_idle_timeout: super::lifecycle::DEFAULT_STREAM_IDLE_TIMEOUT,
            health: super::health::HealthSettings::default(),
            gets_in_flight: DEFAULT_GETS_IN_FLIGHT,
            read_ahead_bytes: DEFAULT_READ_AHEAD_BYTES,
            read_ahead_store_bytes: DEFAULT_READ_AHEAD_STORE_BYTES,
            read_ahead_plain: None,
            first_read_bytes: 1024 * 1024,
            get_part_bytes: 4 * 1024 * 1024,
            min_sub_range_bytes: DEFAULT_MIN_SUB_RANGE_BYTES,
        }
    }

    /// From validated configuration; loads the key ring (errors name the key-pair id or
    /// file, never key material).
    pub fn from_config(cfg: &RsmConfig) -> Result<Self, RsmError> {
        let key_ring = match &cfg.encryption {
            None => None,
            Some(enc) => {
                let entries = enc.key_pairs.iter().map(|p| {
                    (
                        p.id.as_str(),
                        p.public_key_file.as_path(),
                        p.private_key_file.as_path(),
                    )
                });
                let ring = KeyRing::from_files(entries, &enc.active_key_pair_id)
                    .map_err(|e| RsmError::Crypto(format!("encryption key ring: {e}")))?;
                Some(Arc::new(ring))
            }
        };
        Ok(Self {
            key_ring,
            ..Self::settings_of(cfg)
        })
    }

    /// Every option of validated configuration but the key ring (not loaded: no file is
    /// read). What `tsm config check` plans the memory pools from.
    pub fn settings_of(cfg: &RsmConfig) -> Self {
        let compression = match (cfg.compression_enabled, cfg.compression_heuristic_enabled) {
            (false, _) => CompressionMode::Off,
            (true, false) => CompressionMode::On,
            (true, true) => CompressionMode::Heuristic,
        };
        Self {
            compression,
            plaintext_reads: cfg.encryption.as_ref().is_some_and(|e| e.plaintext_reads),
            integrity_required: cfg.integrity_required,
            key_prefix: cfg.key_prefix.clone(),
            key_prefix_mask: cfg.key_prefix_mask,
            custom_metadata_fields: cfg.custom_metadata_fields.clone(),
            prefetch_max_size: u64::from(cfg.chunk_cache.prefetch_max_size),
            manifest_cache_entries: cfg.manifest_cache.max_entries,
            manifest_cache_ttl: cfg.manifest_cache.retention,
            indexes_cache_bytes: cfg.indexes_cache.size_bytes,
            indexes_cache_ttl: cfg.indexes_cache.retention,
            manifest_get_timeout: cfg.manifest_cache.get_timeout,
            indexes_get_timeout: cfg.indexes_cache.get_timeout,
            chunk_get_timeout: cfg.chunk_cache.get_timeout,
            deadlines: Deadlines {
                first_byte: cfg.lifecycle.get_first_byte_timeout,
                idle: cfg.lifecycle.get_idle_timeout,
                get: cfg.lifecycle.get_timeout,
                upload: cfg.lifecycle.upload_timeout,
                delete: cfg.lifecycle.delete_timeout,
            },
            memory_budget_bytes: cfg.lifecycle.memory_budget_bytes,
            memory_copy_bytes: cfg.lifecycle.memory_copy_bytes,
            close_timeout: cfg.lifecycle.close_timeout,
            stream_idle_timeout: cfg.lifecycle.stream_idle_timeout,
            health: super::health::HealthSettings {
                stall_warn_factor: cfg.lifecycle.copy_stall_warn_factor,
                failures_warn_count: cfg.lifecycle.copy_failures_warn_count,
                ..Default::default()
            },
            gets_in_flight: cfg.reads.gets_in_flight,
            read_ahead_bytes: cfg.reads.read_ahead_bytes,
            read_ahead_store_bytes: cfg.reads.read_ahead_store_bytes,
            read_ahead_plain: cfg.reads.read_ahead_plain,
            min_sub_range_bytes: cfg.reads.min_sub_range_bytes,
            max_in_flight: cfg
                .lifecycle
                .max_in_flight
                .unwrap_or_else(tsm_codec::pipeline::default_max_in_flight),
            ..Self::new(cfg.chunk_size)
        }
    }
}
