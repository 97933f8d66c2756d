//! The core `rsm.config.*` keys: names, defaults and docs in one table ([`CONFIG_KEYS`]),
//! the single source of truth for parsing ([`super::RsmConfig::from_props`]) and for
//! `docs/configuration.md` ([`super::render_configuration_markdown`]).
//!
//! Names and defaults are the Java plugin's (Aiven tiered-storage-for-apache-kafka:
//! `RemoteStorageManagerConfig`, `ChunkManagerFactoryConfig`, `MemoryChunkCacheConfig`,
//! `DiskChunkCacheConfig`, `SegmentManifestCacheConfig`, `SegmentIndexesCacheConfig`).

use super::ConfigKeyDoc;

/// `storage.backend.class`
pub const STORAGE_BACKEND_CLASS: &str = "storage.backend.class";
/// `chunk.size`
pub const CHUNK_SIZE: &str = "chunk.size";
/// `compression.enabled`
pub const COMPRESSION_ENABLED: &str = "compression.enabled";
/// `compression.heuristic.enabled`
pub const COMPRESSION_HEURISTIC_ENABLED: &str = "compression.heuristic.enabled";
/// `encryption.enabled`
pub const ENCRYPTION_ENABLED: &str = "encryption.enabled";
/// `encryption.key.pair.id`
pub const ENCRYPTION_KEY_PAIR_ID: &str = "encryption.key.pair.id";
/// `encryption.key.pairs`
pub const ENCRYPTION_KEY_PAIRS: &str = "encryption.key.pairs";
/// `key.prefix`
pub const KEY_PREFIX: &str = "key.prefix";
/// `key.prefix.mask`
pub const KEY_PREFIX_MASK: &str = "key.prefix.mask";
/// `custom.metadata.fields.include`
pub const CUSTOM_METADATA_FIELDS_INCLUDE: &str = "custom.metadata.fields.include";
/// `upload.rate.limit.bytes.per.second`
pub const UPLOAD_RATE_LIMIT: &str = "upload.rate.limit.bytes.per.second";
/// `segment.format`
pub const SEGMENT_FORMAT: &str = "segment.format";
/// `metrics.num.samples`
pub const METRICS_NUM_SAMPLES: &str = "metrics.num.samples";
/// `metrics.recording.level`
pub const METRICS_RECORDING_LEVEL: &str = "metrics.recording.level";
/// `metrics.sample.window.ms`
pub const METRICS_SAMPLE_WINDOW_MS: &str = "metrics.sample.window.ms";
/// `broker.id` (added by the broker)
pub const BROKER_ID: &str = "broker.id";
/// `node.id` (added by KRaft brokers, Kafka 4.4 on)
pub const NODE_ID: &str = "node.id";
/// `fetch.chunk.cache.class`
pub const CHUNK_CACHE_CLASS: &str = "fetch.chunk.cache.class";
/// `fetch.chunk.cache.size`
pub const CHUNK_CACHE_SIZE: &str = "fetch.chunk.cache.size";
/// `fetch.chunk.cache.retention.ms`
pub const CHUNK_CACHE_RETENTION_MS: &str = "fetch.chunk.cache.retention.ms";
/// `fetch.chunk.cache.prefetch.max.size`
pub const CHUNK_CACHE_PREFETCH_MAX_SIZE: &str = "fetch.chunk.cache.prefetch.max.size";
/// `fetch.chunk.cache.path`
pub const CHUNK_CACHE_PATH: &str = "fetch.chunk.cache.path";
/// `fetch.chunk.cache.get.timeout.ms`
pub const CHUNK_CACHE_GET_TIMEOUT_MS: &str = "fetch.chunk.cache.get.timeout.ms";
/// `fetch.chunk.cache.thread.pool.size`
pub const CHUNK_CACHE_THREAD_POOL_SIZE: &str = "fetch.chunk.cache.thread.pool.size";
/// `fetch.manifest.cache.size`
pub const MANIFEST_CACHE_SIZE: &str = "fetch.manifest.cache.size";
/// `fetch.manifest.cache.retention.ms`
pub const MANIFEST_CACHE_RETENTION_MS: &str = "fetch.manifest.cache.retention.ms";
/// `fetch.manifest.cache.get.timeout.ms`
pub const MANIFEST_CACHE_GET_TIMEOUT_MS: &str = "fetch.manifest.cache.get.timeout.ms";
/// `fetch.manifest.cache.thread.pool.size`
pub const MANIFEST_CACHE_THREAD_POOL_SIZE: &str = "fetch.manifest.cache.thread.pool.size";
/// `fetch.indexes.cache.size`
pub const INDEXES_CACHE_SIZE: &str = "fetch.indexes.cache.size";
/// `fetch.indexes.cache.retention.ms`
pub const INDEXES_CACHE_RETENTION_MS: &str = "fetch.indexes.cache.retention.ms";
/// `fetch.indexes.cache.get.timeout.ms`
pub const INDEXES_CACHE_GET_TIMEOUT_MS: &str = "fetch.indexes.cache.get.timeout.ms";
/// `fetch.indexes.cache.thread.pool.size`
pub const INDEXES_CACHE_THREAD_POOL_SIZE: &str = "fetch.indexes.cache.thread.pool.size";
/// `tsm.storage.get.first.byte.timeout.ms` (tsm only)
pub const STORAGE_GET_FIRST_BYTE_TIMEOUT_MS: &str = "tsm.storage.get.first.byte.timeout.ms";
/// `tsm.storage.get.idle.timeout.ms` (tsm only)
pub const STORAGE_GET_IDLE_TIMEOUT_MS: &str = "tsm.storage.get.idle.timeout.ms";
/// `tsm.storage.get.timeout.ms` (tsm only)
pub const STORAGE_GET_TIMEOUT_MS: &str = "tsm.storage.get.timeout.ms";
/// `tsm.storage.upload.timeout.ms` (tsm only)
pub const STORAGE_UPLOAD_TIMEOUT_MS: &str = "tsm.storage.upload.timeout.ms";
/// `tsm.storage.delete.timeout.ms` (tsm only)
pub const STORAGE_DELETE_TIMEOUT_MS: &str = "tsm.storage.delete.timeout.ms";
/// `tsm.memory.budget.bytes` (tsm only)
pub const MEMORY_BUDGET_BYTES: &str = "tsm.memory.budget.bytes";
/// `tsm.memory.copy.bytes` (tsm only)
pub const MEMORY_COPY_BYTES: &str = "tsm.memory.copy.bytes";
/// `tsm.max.in.flight` (tsm only)
pub const MAX_IN_FLIGHT: &str = "tsm.max.in.flight";
/// `tsm.fetch.gets.in.flight` (tsm only)
pub const FETCH_GETS_IN_FLIGHT: &str = "tsm.fetch.gets.in.flight";
/// `tsm.fetch.read.ahead.bytes` (tsm only)
pub const FETCH_READ_AHEAD_BYTES: &str = "tsm.fetch.read.ahead.bytes";
/// `tsm.fetch.read.ahead.store.bytes` (tsm only)
pub const FETCH_READ_AHEAD_STORE_BYTES: &str = "tsm.fetch.read.ahead.store.bytes";
/// `tsm.fetch.read.ahead.plain` (tsm only)
pub const FETCH_READ_AHEAD_PLAIN: &str = "tsm.fetch.read.ahead.plain";
/// `tsm.fetch.sub.range.min.bytes` (tsm only)
pub const FETCH_SUB_RANGE_MIN_BYTES: &str = "tsm.fetch.sub.range.min.bytes";
/// `tsm.encryption.plaintext.reads` (tsm only)
pub const ENCRYPTION_PLAINTEXT_READS: &str = "tsm.encryption.plaintext.reads";
/// `tsm.integrity.required` (tsm only)
pub const INTEGRITY_REQUIRED: &str = "tsm.integrity.required";
/// `tsm.close.timeout.ms` (tsm only)
pub const CLOSE_TIMEOUT_MS: &str = "tsm.close.timeout.ms";
/// `tsm.fetch.stream.idle.timeout.ms` (tsm only)
pub const FETCH_STREAM_IDLE_TIMEOUT_MS: &str = "tsm.fetch.stream.idle.timeout.ms";
/// `tsm.copy.stall.warn.factor` (tsm only)
pub const COPY_STALL_WARN_FACTOR: &str = "tsm.copy.stall.warn.factor";
/// `tsm.copy.failures.warn.count` (tsm only)
pub const COPY_FAILURES_WARN_COUNT: &str = "tsm.copy.failures.warn.count";

/// `tsm.log.level` (tsm only)
pub const LOG_LEVEL: &str = "tsm.log.level";
/// `tsm.log.filter` (tsm only)
pub const LOG_FILTER: &str = "tsm.log.filter";

/// Prefix of the keys read by the plugin's JNI layer and Java classes (crate tsm-jni),
/// removed before the engine sees the map.
pub const JNI_KEY_PREFIX: &str = "tsm.jni.";
/// `tsm.jni.worker.threads` (tsm only, plugin only)
pub const JNI_WORKER_THREADS: &str = "tsm.jni.worker.threads";
/// The largest `tsm.jni.worker.threads`.
pub const JNI_WORKER_THREADS_MAX: u64 = 256;
/// `tsm.jni.native.dir` (tsm only, plugin only; read by the Java class `NativeLoader`)
pub const JNI_NATIVE_DIR: &str = "tsm.jni.native.dir";

/// Prefix of the per-key-pair keys `encryption.key.pairs.<id>.public.key.file` and
/// `encryption.key.pairs.<id>.private.key.file`.
pub const ENCRYPTION_KEY_PAIRS_PREFIX: &str = "encryption.key.pairs.";
/// Suffix of a key pair's public key file key.
pub const PUBLIC_KEY_FILE_SUFFIX: &str = ".public.key.file";
/// Suffix of a key pair's private key file key.
pub const PRIVATE_KEY_FILE_SUFFIX: &str = ".private.key.file";
/// Prefix of the keys handed to the backend (stripped before it sees them).
pub const STORAGE_PREFIX: &str = "storage.";

/// The largest `chunk.size` (bytes): Java's `Integer.MAX_VALUE / 2`.
pub const MAX_CHUNK_SIZE: u64 = 1_073_741_823;
/// The smallest `upload.rate.limit.bytes.per.second`: 1 MiB/s.
pub const MIN_UPLOAD_RATE_LIMIT: u64 = 1_048_576;

const fn key(name: &'static str, default: &'static str, doc: &'static str) -> ConfigKeyDoc {
    ConfigKeyDoc {
        name,
        default,
        doc,
        secret: false,
    }
}

/// Every core key (backend keys live in each [`super::BackendKind::keys`]), in the order
/// `docs/configuration.md` lists them. Keys with `<id>` stand for one key per key pair.
pub const CONFIG_KEYS: &[ConfigKeyDoc] = &[
    key(
        STORAGE_BACKEND_CLASS,
        "",
        "Required. The storage backend: `filesystem`, `s3`, `gcs` or `azure` (those linked \
         into this build), or the Java plugin's class name for it (e.g. \
         `io.aiven.kafka.tieredstorage.storage.s3.S3Storage`). Its keys are under `storage.`.",
    ),
    key(
        CHUNK_SIZE,
        "",
        "Required. Size in bytes of the chunks a segment is cut into before compression and \
         encryption; the unit of ranged fetches and of the chunk cache. An integer from 1 to \
         1073741823; 4194304 (4 MiB) is a good start.",
    ),
    key(
        COMPRESSION_ENABLED,
        "false",
        "Compress each chunk with zstd. `true` or `false`.",
    ),
    key(
        COMPRESSION_HEURISTIC_ENABLED,
        "false",
        "Only compress segments whose record batches are not already compressed (checked on \
         the batch headers). Requires `compression.enabled=true`. `true` or `false`.",
    ),
    key(
        ENCRYPTION_ENABLED,
        "false",
        "Encrypt each chunk with AES-256-GCM under a per-segment data key wrapped with RSA. \
         Requires `encryption.key.pair.id` and `encryption.key.pairs`. `true` or `false`.",
    ),
    key(
        ENCRYPTION_KEY_PAIR_ID,
        "",
        "Required when encryption is enabled. The id of the key pair new segments are \
         encrypted with; must be listed in `encryption.key.pairs`.",
    ),
    key(
        ENCRYPTION_KEY_PAIRS,
        "",
        "Required when encryption is enabled. Comma-separated ids of every key pair on the key \
         ring (the active one plus those older segments may use). Ids may not contain `:`.",
    ),
    key(
        ENCRYPTION_PLAINTEXT_READS,
        "false",
        "tsm only. With `encryption.enabled=true`, whether segments stored without \
         encryption (a manifest without `encryption`) are read. `false` (the default): such a \
         segment is refused with an error naming it, because whoever can write the bucket \
         could otherwise plant plaintext objects that the broker serves as an encrypted \
         segment. `true` while a cluster that turned encryption on still has segments tiered \
         before it (set it back once they have expired). Ignored without encryption. `true` \
         or `false`.",
    ),
    key(
        INTEGRITY_REQUIRED,
        "false",
        "tsm only. Whether segments without integrity data are refused. tsm records in each \
         manifest the segment's identity and a digest of every stored chunk and index, and a \
         MAC under the segment's data key when it is encrypted, and checks them on every read \
         (docs/security.md). Segments written by the Java plugin or an older tsm have none: \
         `false` (the default) reads them unchecked and counts them (JMX \
         `integrity-unverified-segments`), so a cluster can switch plugins; `true` refuses them \
         with an error naming the segment, once every such segment has expired or been \
         rewritten. `true` or `false`.",
    ),
    key(
        "encryption.key.pairs.<id>.public.key.file",
        "",
        "Required for each id in `encryption.key.pairs`. Path of the RSA public key (PEM).",
    ),
    key(
        "encryption.key.pairs.<id>.private.key.file",
        "",
        "Required for each id in `encryption.key.pairs`. Path of the RSA private key (PEM).",
    ),
    key(
        KEY_PREFIX,
        "",
        "Prepended verbatim (no separator added) to every object key.",
    ),
    key(
        KEY_PREFIX_MASK,
        "false",
        "Print `<prefix>` instead of `key.prefix` in logs and errors. `true` or `false`.",
    ),
    key(
        CUSTOM_METADATA_FIELDS_INCLUDE,
        "",
        "Comma-separated fields returned to the broker as KIP-917 custom metadata: \
         `REMOTE_SIZE`, `OBJECT_PREFIX`, `OBJECT_KEY`. Empty: none.",
    ),
    key(
        UPLOAD_RATE_LIMIT,
        "",
        "Upper bound on uploaded bytes per second (every byte of every object). Unset: no \
         limit. An integer from 1048576 (1 MiB/s) to 2147483647.",
    ),
    key(
        SEGMENT_FORMAT,
        "kafka",
        "The format of uploaded segments. Only `kafka` is supported (the Java plugin's \
         `iceberg` is not).",
    ),
    key(
        METRICS_NUM_SAMPLES,
        "2",
        "Samples kept per JMX metric, as in the Java plugin: rates and averages span \
         `metrics.num.samples` x `metrics.sample.window.ms` (docs/metrics.md). An integer of \
         at least 1.",
    ),
    key(
        METRICS_RECORDING_LEVEL,
        "INFO",
        "Recording level of the JMX metrics, as in the Java plugin: the per-partition ones \
         count only at `DEBUG` or `TRACE` (docs/metrics.md). `INFO`, `DEBUG` or `TRACE`.",
    ),
    key(
        METRICS_SAMPLE_WINDOW_MS,
        "30000",
        "Sample window (ms) of the JMX metrics' rates, averages and maxima, as in the Java \
         plugin (docs/metrics.md). An integer of at least 1.",
    ),
    key(
        BROKER_ID,
        "",
        "Set by the broker; used in logs and tsm's MBean name when `node.id` is not set \
         (`node.id` wins: Kafka 5.0 passes only `node.id`). An integer.",
    ),
    key(
        NODE_ID,
        "",
        "Set by KRaft brokers; names the broker in logs and tsm's MBean name, before \
         `broker.id` (KAFKA-18628 deprecates `broker.id` for plugins). An integer.",
    ),
    key(
        CHUNK_CACHE_CLASS,
        "",
        "Chunk cache: `memory` or `disk` (or the Java plugin's class names \
         `io.aiven.kafka.tieredstorage.fetch.cache.MemoryChunkCache` / \
         `io.aiven.kafka.tieredstorage.fetch.cache.DiskChunkCache`). Unset: no chunk cache.",
    ),
    key(
        CHUNK_CACHE_SIZE,
        "",
        "Required when a chunk cache is set. Cache size in bytes (of original, detransformed \
         chunk bytes). `-1` (unbounded, accepted by the Java plugin) is refused: an unbounded \
         cache can take all of the broker's memory or disk.",
    ),
    key(
        CHUNK_CACHE_RETENTION_MS,
        "600000",
        "How long (ms) a cached chunk lives after it was loaded; `-1` means forever.",
    ),
    key(
        CHUNK_CACHE_PREFETCH_MAX_SIZE,
        "0",
        "Bytes after a fetched range to download ahead (through coalesced GETs) and cache. \
         An integer from 0 to 2147483647.",
    ),
    key(
        CHUNK_CACHE_PATH,
        "",
        "Required for the disk chunk cache. Existing writable directory; the cache keeps its \
         files in its own subdirectory `tsm-chunk-cache` (with a marker file) and never \
         touches anything else. When the disk refuses a chunk file (full), at most 32 MiB of \
         chunks are kept in memory instead; beyond that a chunk is not cached.",
    ),
    key(
        CHUNK_CACHE_GET_TIMEOUT_MS,
        "10000",
        "How long (ms) a fetch waits for a chunk load through the chunk cache (its ranged GET and prefetch) before failing with a retriable error naming the chunk. At least 1.",
    ),
    key(
        CHUNK_CACHE_THREAD_POOL_SIZE,
        "0",
        "Accepted for compatibility with the Java plugin (loads run on the async runtime). \
         An integer from 0 to 1024.",
    ),
    key(
        MANIFEST_CACHE_SIZE,
        "1000",
        "Maximum number of segment manifests cached (`-1`, unbounded, is refused). A manifest \
         counts once per started 16 KiB of its object (the usual one a few KiB: once), so \
         the cache holds at most this many x 16 KiB whatever the bucket holds.",
    ),
    key(
        MANIFEST_CACHE_RETENTION_MS,
        "3600000",
        "How long (ms) a cached manifest lives after it was loaded; `-1` means forever.",
    ),
    key(
        MANIFEST_CACHE_GET_TIMEOUT_MS,
        "10000",
        "How long (ms) a call waits for a manifest load (GET and data-key unwrap) before failing with a retriable error naming the manifest. At least 1.",
    ),
    key(
        MANIFEST_CACHE_THREAD_POOL_SIZE,
        "0",
        "Accepted for compatibility with the Java plugin. An integer from 0 to 1024.",
    ),
    key(
        INDEXES_CACHE_SIZE,
        "10485760",
        "Size in bytes of the segment indexes cache (`-1`, unbounded, is refused).",
    ),
    key(
        INDEXES_CACHE_RETENTION_MS,
        "600000",
        "How long (ms) a cached index lives after it was loaded; `-1` means forever.",
    ),
    key(
        INDEXES_CACHE_GET_TIMEOUT_MS,
        "10000",
        "How long (ms) a call waits for an index load (ranged GET of `.indexes`) before failing with a retriable error naming the index. At least 1.",
    ),
    key(
        INDEXES_CACHE_THREAD_POOL_SIZE,
        "0",
        "Accepted for compatibility with the Java plugin. An integer from 0 to 1024.",
    ),
    key(
        STORAGE_GET_FIRST_BYTE_TIMEOUT_MS,
        "30000",
        "tsm only. Longest wait (ms) from issuing a GET to its first body byte, for every \
         backend; also bounds a fetch's wait for memory budget. Then the call fails with a \
         retriable error naming the object, the byte range and this key. At least 1.",
    ),
    key(
        STORAGE_GET_IDLE_TIMEOUT_MS,
        "30000",
        "tsm only. Longest gap (ms) between two body items of a GET while the reader waits, \
         and longest time the store may take nothing of an upload: no body bytes pulled, no \
         request body frame sent (S3), no part or block finished; or not complete it after \
         the last. A slow link that keeps moving is not idle, nor are waits on tsm's side \
         (compression, upload.rate.limit.bytes.per.second). At least 1.",
    ),
    key(
        STORAGE_GET_TIMEOUT_MS,
        "120000",
        "tsm only. Longest time (ms) one GET may keep its reader waiting in all (first byte, \
         gaps, transfer): a store that trickles bytes fails here. A GET is at most 8 MiB or \
         one chunk. At least 1.",
    ),
    key(
        STORAGE_UPLOAD_TIMEOUT_MS,
        "600000",
        "tsm only. Longest upload (ms) of one object (`.log`, `.indexes`, manifest), whole \
         call, not counting the waits of upload.rate.limit.bytes.per.second; also bounds a \
         copy's wait for memory. At least 1.",
    ),
    key(
        STORAGE_DELETE_TIMEOUT_MS,
        "30000",
        "tsm only. Longest (batched) delete call (ms), including the clean-up of a failed or \
         cancelled copy. At least 1.",
    ),
    key(
        MEMORY_BUDGET_BYTES,
        "536870912",
        "tsm only. Native memory (bytes) all calls of this plugin instance may hold at once: \
         the default read-ahead store, the copies' pool (tsm.memory.copy.bytes) and the \
         reads' pool (the rest): copy pipelines, the backend's part/block buffers, fetch \
         GETs and chunk loads (formulas in docs/configuration.md). A call waits for memory \
         of its own pool only (reads never wait behind copies) instead of allocating past \
         it. Refused at startup when a pool cannot hold one call of its class. The caches \
         are bounded separately. At least 1048576.",
    ),
    key(
        MEMORY_COPY_BYTES,
        "",
        "tsm only. The copies' pool: bytes of tsm.memory.budget.bytes only copies reserve \
         from (each copy its whole working set, once). Unset: half of what the read-ahead \
         store leaves, or one copy's working set when that is larger. Refused at startup \
         when it cannot hold one copy or leaves the reads less than one read.",
    ),
    key(
        MAX_IN_FLIGHT,
        "",
        "tsm only. Chunks transformed at once by one copy or fetch (compression, \
         encryption). Unset: one per core. An integer from 1 to 256.",
    ),
    key(
        FETCH_GETS_IN_FLIGHT,
        "10",
        "tsm only. Ranged GETs one fetch stream, or one segment's read-ahead, keeps in \
         flight: a first read or a wanted chunk is split into up to this many sub-range \
         GETs, read-ahead runs up to this many chunk GETs at once. One connection to a \
         store carries about 80 MB/s and waits ~20 ms for a first byte, so 500 MB/s per \
         catching-up partition needs about 9 (4 MiB chunks). Each GET is reserved from `tsm.memory.budget.bytes`. An \
         integer from 1 to 64.",
    ),
    key(
        FETCH_READ_AHEAD_BYTES,
        "41943040",
        "tsm only. Stored bytes read ahead of a sequential reader: when the broker's \
         fetchLogSegment of a segment starts within what its previous one read, for the \
         second time in a row (a lagging consumer), the chunks after the one being read are \
         downloaded in parallel GETs \
         into the chunk cache (`fetch.chunk.cache.*` when set, else the read-ahead store) \
         so each stored byte is downloaded once. Never more original bytes than half the \
         store (chunk cache or read-ahead store) holds, shared by the segments reading ahead \
         at the time (at least one chunk each). Random reads get no read-ahead. `0` turns \
         it off. An integer from 0 to 2147483647.",
    ),
    key(
        FETCH_READ_AHEAD_STORE_BYTES,
        "83886080",
        "tsm only. Size in bytes of the in-memory read-ahead store used when no \
         `fetch.chunk.cache.class` is set; taken out of `tsm.memory.budget.bytes` (at most \
         half of it). Each segment reading ahead gets half the store divided by the number of \
         segments reading ahead at once: raise it for many concurrent catch-ups (e.g. 20 \
         chunks per catching-up partition). `0`: no read-ahead without a chunk cache. An \
         integer from 0 to 2147483647.",
    ),
    key(
        FETCH_READ_AHEAD_PLAIN,
        "auto",
        "tsm only. Whether read-ahead (`tsm.fetch.read.ahead.bytes`) applies to plain \
         segments (neither compressed nor encrypted) without a chunk cache. `auto`: yes, \
         unless the backend reads a local directory (`filesystem`), where a read costs no \
         round trip and the kernel's page cache reads ahead already: plain segments are then \
         read at exact ranges, straight from the file. `true` for a filesystem backend on a \
         network or FUSE mount (NFS, EFS, a bucket mounted as files); `false` to never \
         read plain segments ahead. Transformed segments are read ahead whatever this says. \
         `auto`, `true` or `false`.",
    ),
    key(
        FETCH_SUB_RANGE_MIN_BYTES,
        "262144",
        "tsm only. Smallest sub-range GET a read's first bytes (a plain segment's first \
         1 MiB, a transformed segment's wanted chunk) are split into, up to \
         `tsm.fetch.gets.in.flight` of them in parallel: the broker's 1 MiB read of a plain \
         segment is 4 GETs of 256 KiB, its last byte a round trip plus a quarter of the \
         transfer away. Where requests cost more than that latency, `1048576` makes it one \
         GET (the Java plugin's count for that read, without its 4 MiB download). \
         Read-ahead GETs (whole chunks) are not split. An integer from 1024 to 2147483647.",
    ),
    key(
        CLOSE_TIMEOUT_MS,
        "30000",
        "tsm only. How long (ms) `close()` waits for clean-up in flight (deletes of \
         cancelled copies, multipart aborts) before the native runtime stops. At least 1.",
    ),
    key(
        FETCH_STREAM_IDLE_TIMEOUT_MS,
        "300000",
        "tsm only. A `fetchLogSegment` stream the broker has not read for this long (ms) \
         gives back its memory (buffered bytes, reservations, downloads in flight); a later \
         read of it fails with a retriable error naming this key, and a new fetch of the \
         range works. The broker leaves streams unclosed on some error paths (KAFKA-18923). \
         At least 1000.",
    ),
    key(
        COPY_STALL_WARN_FACTOR,
        "4",
        "tsm only. A copy that has run this many times what its segment's size takes at the \
         copy rate measured on this broker (8 MB/s assumed before the first copy of 4 MiB or \
         more), and at least 60 s, is reported once by a WARN line naming the segment, and \
         counts in the gauge `tier.partitions.stalled` (docs/metrics.md). Only a warning: \
         the copy goes on until `tsm.storage.upload.timeout.ms`. An integer from 1 to 1000.",
    ),
    key(
        COPY_FAILURES_WARN_COUNT,
        "3",
        "tsm only. After this many copies in a row failed for one partition, a WARN line \
         names the partition, the segment, the error, its class (timeout, throttled, auth, \
         ...) and what to look at; repeated at most every 5 minutes while copies keep \
         failing, and an INFO line when a copy succeeds again. An integer from 1 to 1000.",
    ),
    key(
        LOG_LEVEL,
        "",
        "tsm only. Level of tsm's own native log records (targets `tsm_*`): `off`, `error`, \
         `warn`, `info`, `debug` or `trace`. Unset: the level the broker's logging (log4j \
         through SLF4J) gives the logger `io.tsm.kafka.native` (which inherits \
         `io.tsm.kafka`'s). The SDKs and the HTTP/TLS stack stay at `warn` whatever this \
         says (see `tsm.log.filter`). Records still pass the broker's logger levels too.",
    ),
    key(
        LOG_FILTER,
        "",
        "tsm only. Extra directives for the native log filter, in tracing-subscriber's \
         `EnvFilter` syntax, applied after `tsm.log.level` (a more specific target wins): \
         e.g. `aws_smithy_runtime=debug,hyper_util=debug` to see the S3 SDK's requests. \
         Header values, credentials, signatures and key material are redacted from every \
         record at every level.",
    ),
];

/// The keys of the broker plugin itself (crate tsm-jni: its Java classes and JNI layer),
/// in the order `docs/configuration.md` lists them. The plugin removes them
/// ([`JNI_KEY_PREFIX`]) before the engine parses the rest; the operator tool ignores them.
pub const JNI_KEYS: &[ConfigKeyDoc] = &[
    key(
        JNI_WORKER_THREADS,
        "0",
        "tsm only, plugin only. Tokio worker threads of the plugin instance's native runtime; \
         `0` means one per core. An integer from 0 to 256.",
    ),
    key(
        JNI_NATIVE_DIR,
        "",
        "tsm only, plugin only. Directory the jar extracts its native library into when \
         `libtsm_jni.so` cannot be loaded in place from beside the jar; must be writable and \
         exec-mounted. Unset: `-Dtsm.native.dir`, else the environment variable \
         `TSM_NATIVE_DIR`, else `java.io.tmpdir`.",
    ),
];

/// True when `name` is a core key of [`CONFIG_KEYS`] or [`JNI_KEYS`], including the per-key-pair keys
/// `encryption.key.pairs.<id>.{public,private}.key.file` for any id.
pub fn is_core_key(name: &str) -> bool {
    if CONFIG_KEYS.iter().chain(JNI_KEYS).any(|k| k.name == name) {
        return true;
    }
    name.strip_prefix(ENCRYPTION_KEY_PAIRS_PREFIX)
        .and_then(|rest| {
            rest.strip_suffix(PUBLIC_KEY_FILE_SUFFIX)
                .or_else(|| rest.strip_suffix(PRIVATE_KEY_FILE_SUFFIX))
        })
        .is_some_and(|id| !id.is_empty())
}
