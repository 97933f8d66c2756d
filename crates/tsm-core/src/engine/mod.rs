//! The RemoteStorageManager engine: copy, ranged fetch, fetchIndex, delete (KIP-405).
//!
//! Data flow (docs/object-format.md):
//! - `copy.rs`: the broker's segment files -> chunks of `chunk.size` (tsm-codec) ->
//!   compress / encrypt ([`crate::transform`], tsm-codec's ordered bounded-parallel
//!   pipeline) -> `.log` upload while reading; then `.indexes`; then `.rsm-manifest`
//!   (the commit marker). Any failure deletes all three keys (best effort). Each chunk job
//!   reads its own range of the segment file into a buffer from `chunk_buffers.rs` (reused
//!   within the copy).
//! - fetch: see "The fetch path, file by file" below.
//! - `fetch_index.rs`: fetchIndex, one ranged GET of one index's stored bytes in
//!   `.indexes` (cached).
//! - `delete.rs`: the three keys in one batched delete; idempotent.
//!
//! Reads and delete honour `object_prefix` / `object_key` from the segment's KIP-917 custom
//! metadata ([`crate::object_keys::SegmentKeys::for_read`]): the keys are resolved here,
//! once per call, and handed down.
//!
//! # The fetch path, file by file
//! A fetch reads top-down: each file calls only the files after it in this list (all of
//! them read the shared state, `EngineShared`, defined here, and none calls back into a
//! file above it).
//! 1. `mod.rs`, [`RemoteStorageManager::fetch_log_segment`]: closed check, the segment's
//!    keys and name, the `fetch` span and metrics; then 2.
//! 2. `fetch.rs`: the manifest (3), the range checks, does this open read ahead (4), then
//!    one of three sources per stream: through a chunk store (5); a plain segment's exact
//!    range: plan (7) -> GETs (8); a transformed segment's chunks: plan (7) -> GETs (8)
//!    -> cut and restore (9) -> trimmed to the range.
//! 3. `manifests.rs`: the manifest and the segment's transform, through the manifest cache
//!    (one GET of `.rsm-manifest` on a miss), under the segment's generation
//!    (`generations.rs`: taken first, part of every cache key of the segment, ended by a
//!    delete or overwrite, so nothing cached of an older version is ever served).
//! 4. `sequential.rs`: read positions per segment; an open reads ahead when it is the
//!    second in a row to continue the previous stream.
//! 5. `cached.rs`: chunk by chunk through the chunk cache or the default read-ahead store
//!    (a plain segment read ahead: the exact bytes up to the next chunk boundary first),
//!    read-ahead loads started, awaited and finished through 6; each chunk load: plan (7)
//!    -> GETs (8) -> restore (9).
//! 6. `readahead.rs`: the read-ahead loads in flight (keyed, as their chunks, by the
//!    segment's generation: none is found after a delete or overwrite), the default
//!    read-ahead store.
//! 7. `ranges.rs`: the ranged GETs of a stream (pure arithmetic; [`ranges::Part`]s).
//! 8. `window.rs`: issues a plan's GETs (several in flight), hands their bytes out in order.
//! 9. `decode.rs`: stored bytes cut into stored chunks, decrypted and decompressed.
//!
//! Below all of them: `lifecycle/` (deadlines, memory budget). `fetch_index.rs` uses 3 and
//! the lifecycle the same way.
//!
//! # Lifecycle: deadlines, memory, clean-up
//! Every call runs inside [`lifecycle`]: each store call is bounded by the deadlines (the
//! engine wraps its backend in [`lifecycle::DeadlineBackend`]), each call reserves its
//! working set from one memory budget first ([`lifecycle::budget`]), and a failed or
//! dropped copy deletes what it wrote ([`lifecycle::cleanup`]).
//!
//! # Concurrency
//! Each call's own state lives on the heap: the entry points box the futures of the files
//! below (and the cache loads box theirs), so a caller that polls a call on its own stack
//! (`block_on`, a test thread's 2 MiB) holds a few hundred bytes of it, not the nested
//! state machines (hundreds of KiB in a debug build).
//! [`RemoteStorageManager`] is `Send + Sync`; share it in an `Arc`. Every call owns its
//! state; [`RemoteStorageManager::close`] flips a flag so new calls fail with
//! [`RsmError::Closed`] while calls and streams in flight keep the shared state alive
//! (`Arc`) and finish within their deadlines; [`RemoteStorageManager::shutdown`] also
//! waits (bounded) for clean-up in flight.
//!
//! # Metrics and tracing
//! `copy.*`, `fetch.*` (time to open the stream: manifest and range checks),
//! `fetch.index.*`, `delete.*` counts, errors and latencies, tier health (`health.rs`:
//! copies and fetches in flight, failures by class, per-partition copy progress and the
//! WARN lines of a stalled or failing tier), `bytes.uploaded` /
//! `bytes.downloaded`, plus `cache.<name>.*` and, through `configure`, the backend
//! wrappers' metrics, all in [`RemoteStorageManager::metrics`]. Each call runs in a
//! `tracing` span (`copy`, `fetch`, `fetch_index`, `delete`) naming the segment.

mod cached;
mod chunk_buffers;
mod copy;
mod decode;
mod delete;
mod fetch;
mod fetch_index;
mod generations;
pub mod health;
pub mod lifecycle;
mod manifests;
mod options;
pub mod ranges;
mod readahead;
mod sequential;
mod stats;
mod window;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use bytes::Bytes;
use futures::stream::BoxStream;
use tracing::Instrument;

use crate::cache::{AsyncCache, Bound, ChunkCache};
use crate::config::RsmConfig;
use crate::custom_metadata::CustomMetadata;
use crate::metrics::MetricsRegistry;
pub use crate::metrics::MetricsSnapshot;
use crate::object_keys::SegmentKeys;
use crate::{
    BackendKind, IndexType, LogSegmentData, RemoteLogSegmentMetadata, RsmError, StorageBackend,
};
pub use health::{HealthSettings, PartitionHealth};
pub use options::{
    CompressionMode, DEFAULT_GETS_IN_FLIGHT, DEFAULT_MAX_GET_BYTES, DEFAULT_MIN_SUB_RANGE_BYTES,
    DEFAULT_READ_AHEAD_BYTES, DEFAULT_READ_AHEAD_STORE_BYTES, EngineOptions,
};
pub use sequential::is_sequential;
use stats::Stats;

/// The bytes of a segment range, in order, downloaded lazily: nothing is fetched beyond
/// what the consumer of the stream polls for (plus configured prefetch), and dropping the
/// stream stops further downloads.
pub type SegmentStream = BoxStream<'static, Result<Bytes, RsmError>>;

/// One configured plugin instance; safe to share between threads (`Arc`).
pub struct RemoteStorageManager {
    inner: Arc<EngineShared>,
}

/// State shared by the calls and the streams they return.
pub(crate) struct EngineShared {
    pub(crate) backend: Arc<dyn StorageBackend>,
    pub(crate) opts: EngineOptions,
    pub(crate) stats: Stats,
    /// Cache metrics (`cache.<name>.*`).
    pub(crate) registry: MetricsRegistry,
    /// (Manifest key, segment generation) -> parsed manifest with its unwrapped cipher.
    pub(crate) manifests: AsyncCache<(String, u64), Arc<manifests::Segment>>,
    /// (`.indexes` key, segment generation, index) -> the index's original bytes.
    pub(crate) indexes: AsyncCache<(String, u64, IndexType), Bytes>,
    /// Each segment's generation, part of every cache key of it (`engine/generations.rs`).
    pub(crate) generations: generations::Generations,
    /// Restored chunks (`fetch.chunk.cache.*`), when configured.
    pub(crate) chunks: Option<ChunkCache>,
    /// Read-ahead loads in flight, the default read-ahead store (`engine/readahead.rs`).
    pub(crate) reads: readahead::ReadAhead,
    /// Where each segment's last stream started and how far it was read: does the next
    /// open read ahead (`engine/sequential.rs`).
    pub(crate) positions: sequential::Positions,
    /// Deadlines, memory budget, close bound (`lifecycle`).
    pub(crate) lifecycle: lifecycle::Lifecycle,
    /// Copy progress per partition, calls in flight, failures by class (`health.rs`).
    pub(crate) health: Arc<health::TierHealth>,
    closed: AtomicBool,
    /// Cancelled by `close`: copies in flight stop (and clean up) instead of running on.
    pub(crate) closing: tokio_util::sync::CancellationToken,
    /// Copies in flight, so `shutdown` can wait until each has stopped and spawned its
    /// clean-up.
    copies: tokio_util::task::TaskTracker,
}

impl std::fmt::Debug for RemoteStorageManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteStorageManager")
            .field("backend", &self.inner.backend.to_string())
            .field("options", &self.inner.opts)
            .field("closed", &self.inner.closed.load(Ordering::Relaxed))
            .finish()
    }
}

impl EngineShared {
    /// After a delete or overwrite of a segment (once the store call returned): ends its
    /// generation, so nothing cached of it before, or cached later by calls that started
    /// before, is looked up again (`engine/generations.rs`); then drops what can be found
    /// of the ended generation (its manifest, indexes and, when that manifest is still
    /// cached, giving the chunk count, its restored chunks) to free their room.
    pub(crate) async fn invalidate(&self, keys: &SegmentKeys) {
        // Read-ahead loads in flight are left to end: they store under the ended
        // generation (`engine/readahead.rs`).
        let Some(g) = self.generations.bump(keys.log.as_str()) else {
            return;
        };
        let manifest_key = (keys.manifest.as_str().to_string(), g);
        let segment = self.manifests.get(&manifest_key).await;
        if let Some(index) = segment.map(|s| s.index.clone()) {
            for cache in self.chunks.iter().chain(self.reads.store.iter()) {
                cache
                    .invalidate_object(keys.log.as_str(), g, index.chunk_count())
                    .await;
            }
        }
        self.manifests.invalidate(&manifest_key).await;
        for t in IndexType::ALL {
            self.indexes
                .invalidate(&(keys.indexes.as_str().to_string(), g, t))
                .await;
        }
    }

    /// Keys for reading or deleting `metadata`'s objects, honouring custom-metadata
    /// overrides. Malformed custom metadata is an error naming the segment.
    pub(crate) fn read_keys(
        &self,
        metadata: &RemoteLogSegmentMetadata,
    ) -> Result<SegmentKeys, RsmError> {
        let custom = match &metadata.custom_metadata {
            None => None,
            Some(bytes) => Some(CustomMetadata::decode(bytes).map_err(|e| {
                RsmError::InvalidArgument(format!("segment {}: {e}", segment_name(metadata)))
            })?),
        };
        if let Some(c) = &custom {
            check_custom_keys(metadata, c)?;
        }
        Ok(SegmentKeys::for_read(
            metadata,
            custom.as_ref(),
            &self.opts.key_prefix,
            self.opts.key_prefix_mask,
        ))
    }
}

/// Checks a segment's KIP-917 key overrides before they address anything: the prefix as
/// `key.prefix` is checked ([`crate::object_keys::check_prefix`]), and the main path must
/// be a plain relative path ending in `-<segmentId>` of this very segment, so forged
/// custom metadata cannot point reads or deletes at another segment's objects.
fn check_custom_keys(
    metadata: &RemoteLogSegmentMetadata,
    custom: &CustomMetadata,
) -> Result<(), RsmError> {
    let refuse = |field: &str, value: &str, why: String| {
        RsmError::InvalidArgument(format!(
            "segment {}: custom metadata {field} {value:?} refused: {why}",
            segment_name(metadata)
        ))
    };
    if let Some(prefix) = &custom.object_prefix {
        crate::object_keys::check_prefix(prefix)
            .map_err(|why| refuse("object_prefix", prefix, why))?;
    }
    if let Some(key) = &custom.object_key {
        crate::object_keys::check_prefix(key).map_err(|why| refuse("object_key", key, why))?;
        let own = format!("-{}", metadata.segment_id);
        if !key.ends_with(&own) {
            return Err(refuse(
                "object_key",
                key,
                format!("it does not name this segment (it must end with {own:?})"),
            ));
        }
    }
    Ok(())
}

/// `<topic>-<partition> segment <segmentId> (start offset N)`, for errors and spans.
pub(crate) fn segment_name(m: &RemoteLogSegmentMetadata) -> String {
    format!(
        "{}-{} segment {} (start offset {})",
        m.topic, m.partition, m.segment_id, m.start_offset
    )
}

/// The default read-ahead store's bound: `tsm.fetch.read.ahead.store.bytes`, at most half
/// the budget; 0 without read-ahead.
fn read_ahead_store_bytes(opts: &EngineOptions) -> u64 {
    if opts.read_ahead_bytes > 0 {
        opts.read_ahead_store_bytes
            .min(opts.memory_budget_bytes / 2)
    } else {
        0
    }
}

/// The memory pools `configure` plans for `opts` over a backend whose uploads buffer
/// `upload_buffers` bytes each ([`StorageBackend::upload_buffer_bytes`], or
/// `BackendKind::upload_buffer_bytes` from the keys alone), with the default read-ahead
/// store carved out first (`engine/lifecycle/budget.rs`). For `tsm config check`: the same
/// refusal, naming the same keys, as the broker's `configure` would give.
///
/// # Errors
/// [`RsmError::Config`] when a pool cannot hold one call of its class.
pub fn plan_pools(
    opts: &EngineOptions,
    upload_buffers: u64,
) -> Result<lifecycle::budget::PoolSizes, RsmError> {
    lifecycle::budget::plan(pool_inputs(
        opts,
        upload_buffers,
        read_ahead_store_bytes(opts),
    ))
}

/// What the memory pools are planned from (`engine/lifecycle/budget.rs`): the options,
/// the backend's upload buffers and the default read-ahead store's bound.
fn pool_inputs(
    opts: &EngineOptions,
    upload_buffers: u64,
    store: u64,
) -> lifecycle::budget::PoolInputs {
    use lifecycle::budget::{NOMINAL_INDEX_BYTES, copy_bytes, read_floor};
    let chunk = u64::from(opts.chunk_size);
    lifecycle::budget::PoolInputs {
        budget: opts.memory_budget_bytes,
        copies: opts.memory_copy_bytes,
        store,
        one_copy: copy_bytes(
            chunk,
            opts.max_in_flight,
            NOMINAL_INDEX_BYTES,
            upload_buffers,
        ),
        one_read: read_floor(chunk, opts.first_read_bytes.max(opts.get_part_bytes)),
    }
}

impl RemoteStorageManager {
    /// Builds the engine from the broker's map (`rsm.config.` stripped, all values as
    /// strings, `broker.id` included). `backends` lists the backend kinds linked into this
    /// build; `storage.backend.class` picks one of them. Errors name the key.
    pub async fn configure(
        props: BTreeMap<String, String>,
        backends: &[&'static BackendKind],
    ) -> Result<Self, RsmError> {
        let cfg = RsmConfig::from_props(props, backends)?;
        let opts = EngineOptions::from_config(&cfg)?;
        // One registry: the backend's client metrics, the wrappers', the caches', ours.
        let registry = MetricsRegistry::new();
        let backend = (cfg.backend.build)(cfg.storage.clone().with_metrics(&registry)).await?;
        // Backend metrics, and the upload rate limit on every byte uploaded.
        let backend = tsm_storage::layers::layered(
            backend,
            cfg.upload_rate_limit_bytes_per_second,
            &registry,
        );
        let chunks = ChunkCache::from_config(&cfg.chunk_cache, &registry)?;
        Ok(Self::with_registry(backend, opts, registry)?.with_chunk_cache(chunks))
    }

    /// Puts `cache` in front of chunk downloads (see `engine/cached.rs`); call right after
    /// construction (later calls, once the engine is shared, have no effect).
    ///
    /// A chunk cache replaces the default read-ahead store (read-ahead then goes into the
    /// chunk cache) and gives the store's share of the memory budget back to the calls.
    pub fn with_chunk_cache(mut self, cache: Option<ChunkCache>) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            if cache.is_some() && inner.reads.store.is_some() {
                inner.reads = readahead::ReadAhead::new(0, &inner.registry);
                // Without the store both pools only grow (budget.rs: `plan`), so the plan
                // that held with the store holds; were it refused, the smaller pools stay.
                if let Ok(sizes) = lifecycle::budget::plan(pool_inputs(
                    &inner.opts,
                    inner.backend.upload_buffer_bytes(),
                    0,
                )) {
                    inner.lifecycle.pools = lifecycle::budget::Pools::new(sizes);
                }
            }
            inner.chunks = cache;
        }
        self
    }

    /// An engine over an already built backend (Rust tools, tests). The backend is used
    /// as given (wrap it with `tsm_storage::layers::layered` for metrics and rate limit).
    ///
    /// # Errors
    /// [`RsmError::Config`] when the memory pools cannot hold one call of their class
    /// (`engine/lifecycle/budget.rs`), naming the keys.
    pub fn new(backend: Arc<dyn StorageBackend>, opts: EngineOptions) -> Result<Self, RsmError> {
        Self::with_registry(backend, opts, MetricsRegistry::new())
    }

    /// As [`RemoteStorageManager::new`], recording cache metrics into `registry` (share it
    /// with backend wrappers to get one snapshot).
    pub fn with_registry(
        backend: Arc<dyn StorageBackend>,
        mut opts: EngineOptions,
        registry: MetricsRegistry,
    ) -> Result<Self, RsmError> {
        // `auto`: no read-ahead of plain segments where a read costs no round trip.
        opts.read_ahead_plain = Some(
            opts.read_ahead_plain
                .unwrap_or_else(|| !backend.reads_are_local()),
        );
        let manifests = AsyncCache::builder("manifest")
            .bound(
                opts.manifest_cache_entries
                    .map_or(Bound::Unbounded, Bound::Entries),
            )
            .weigher(|_k: &(String, u64), v: &Arc<manifests::Segment>| v.weight())
            .ttl(opts.manifest_cache_ttl)
            .metrics(&registry)
            .build();
        let indexes = AsyncCache::builder("indexes")
            .bound(
                opts.indexes_cache_bytes
                    .map_or(Bound::Unbounded, Bound::Bytes),
            )
            .ttl(opts.indexes_cache_ttl)
            .weigher(|_k: &(String, u64, IndexType), v: &Bytes| v.len() as u64)
            .metrics(&registry)
            .build();
        // Every store call the engine makes is bounded here, whatever the backend.
        let backend: Arc<dyn StorageBackend> =
            Arc::new(lifecycle::DeadlineBackend::new(backend, opts.deadlines));
        // The default read-ahead store's bound comes out of the budget (at most half).
        let store_bytes = read_ahead_store_bytes(&opts);
        let sizes = plan_pools(&opts, backend.upload_buffer_bytes())?;
        let reads = readahead::ReadAhead::new(store_bytes, &registry);
        let lifecycle = lifecycle::Lifecycle {
            deadlines: opts.deadlines,
            pools: lifecycle::budget::Pools::new(sizes),
            close_timeout: opts.close_timeout,
            stream_idle_timeout: opts.stream_idle_timeout,
        };
        let health = Arc::new(health::TierHealth::new(opts.health, &registry));
        let closing = tokio_util::sync::CancellationToken::new();
        health::spawn_watcher(Arc::downgrade(&health), closing.clone());
        Ok(Self {
            inner: Arc::new(EngineShared {
                lifecycle,
                health,
                backend,
                opts,
                stats: Stats::new(&registry),
                registry,
                manifests,
                indexes,
                chunks: None,
                reads,
                positions: sequential::Positions::new(),
                generations: generations::Generations::new(),
                closed: AtomicBool::new(false),
                closing,
                copies: tokio_util::task::TaskTracker::new(),
            }),
        })
    }

    /// The options this engine runs with.
    pub fn options(&self) -> &EngineOptions {
        &self.inner.opts
    }

    /// The backend this engine stores to.
    pub fn backend(&self) -> &Arc<dyn StorageBackend> {
        &self.inner.backend
    }

    fn check_open(&self) -> Result<(), RsmError> {
        if self.inner.closed.load(Ordering::Acquire) {
            Err(RsmError::Closed)
        } else {
            Ok(())
        }
    }

    /// `copyLogSegmentData`: uploads `.log`, `.indexes`, then `.rsm-manifest`; returns the
    /// KIP-917 custom metadata bytes (`None` when no field is configured). Durable when
    /// it returns; on error, deletes what it wrote.
    ///
    /// Memory: at most `max_in_flight` chunks (original + stored) in the transform
    /// pipeline, one chunk read ahead, one index at a time, plus what the backend buffers
    /// (its part/block size x parts in flight). Never the whole segment.
    pub async fn copy_log_segment_data(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        data: &LogSegmentData,
    ) -> Result<Option<Vec<u8>>, RsmError> {
        Ok(self
            .copy_log_segment_data_reporting(metadata, data)
            .await?
            .custom_metadata)
    }

    /// As [`copy_log_segment_data`](Self::copy_log_segment_data), also returning the
    /// stored bytes of each object uploaded (the plugin's per-object-type upload metrics).
    pub async fn copy_log_segment_data_reporting(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        data: &LogSegmentData,
    ) -> Result<CopyOutcome, RsmError> {
        self.check_open()?;
        let span = tracing::info_span!("copy", segment = %segment_name(metadata));
        let t = Instant::now();
        let ticket = self.inner.health.copy_started(metadata);
        // `close` stops a copy in flight: its future is dropped here, and its guard deletes
        // what it wrote (a compensation `shutdown` waits for).
        let copy = self
            .inner
            .copies
            .track_future(Box::pin(copy::copy(&self.inner, metadata, data)).instrument(span));
        let r = tokio::select! {
            r = copy => r,
            () = self.inner.closing.cancelled() => Err(RsmError::Closed),
        };
        self.inner.stats.copy.record(t, &r);
        ticket.finish(&r);
        r
    }

    /// `fetchLogSegment`: bytes `start..=end` of the original segment (`end = None`: to
    /// the end; an `end` past the segment is clamped; `start` past the end is
    /// [`RsmError::InvalidArgument`]). Fetching from 0 of a 0-byte segment gives an empty
    /// stream. The manifest is read before this returns; chunk downloads happen as the
    /// stream is polled.
    pub async fn fetch_log_segment(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        start: u64,
        end: Option<u64>,
    ) -> Result<SegmentStream, RsmError> {
        self.check_open()?;
        let name = segment_name(metadata);
        let span = tracing::debug_span!("fetch", segment = %name, start, end);
        let t = Instant::now();
        let ticket = self.inner.health.read_started();
        let r = match self.inner.read_keys(metadata) {
            Ok(keys) => {
                Box::pin(fetch::fetch(&self.inner, metadata, keys, &name, start, end))
                    .instrument(span)
                    .await
            }
            Err(e) => Err(e),
        };
        self.inner.stats.fetch.record(t, &r);
        ticket.finish(&r);
        let served = self.inner.stats.bytes_served.clone();
        r.map(|s| {
            use futures::StreamExt;
            s.inspect(move |item| {
                if let Ok(b) = item {
                    served.add(b.len() as u64);
                }
            })
            .boxed()
        })
    }

    /// `fetchIndex`: the exact bytes given at copy time. A segment without a transaction
    /// index gives [`RsmError::NotFound`] for [`IndexType::Transaction`].
    pub async fn fetch_index(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        index: IndexType,
    ) -> Result<Bytes, RsmError> {
        self.check_open()?;
        let name = segment_name(metadata);
        let span = tracing::debug_span!(
            "fetch_index",
            segment = %name,
            index = index.java_name()
        );
        let t = Instant::now();
        let ticket = self.inner.health.read_started();
        let r = match self.inner.read_keys(metadata) {
            Ok(keys) => {
                Box::pin(fetch_index::fetch_index(
                    &self.inner,
                    metadata,
                    keys,
                    &name,
                    index,
                ))
                .instrument(span)
                .await
            }
            Err(e) => Err(e),
        };
        self.inner.stats.fetch_index.record(t, &r);
        ticket.finish(&r);
        r
    }

    /// `deleteLogSegmentData`: removes all three objects; idempotent (missing objects,
    /// including a missing manifest, are success).
    pub async fn delete_log_segment_data(
        &self,
        metadata: &RemoteLogSegmentMetadata,
    ) -> Result<(), RsmError> {
        self.check_open()?;
        let span = tracing::info_span!("delete", segment = %segment_name(metadata));
        let t = Instant::now();
        let r = match self.inner.read_keys(metadata) {
            Ok(keys) => {
                Box::pin(delete::delete(&self.inner, keys))
                    .instrument(span)
                    .await
            }
            Err(e) => Err(e),
        };
        self.inner.stats.delete.record(t, &r);
        r
    }

    /// `close`: new calls fail with [`RsmError::Closed`]; copies in flight stop with
    /// [`RsmError::Closed`] and delete what they wrote (the broker copies the segment
    /// again after its restart); read-ahead loads in flight stop and store nothing; fetch streams, fetchIndex and deletes in flight finish or
    /// fail on their own (each bounded by its deadlines). Idempotent.
    pub fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
        self.inner.closing.cancel();
    }

    /// [`close`](Self::close) (which also cancels read-ahead loads in flight), then waits at
    /// most `timeout` in all for the stopped copies, the read-ahead loads and the clean-up
    /// in flight (deletes of cancelled copies, multipart aborts:
    /// `tsm_storage::compensation`); returns true when none is left
    /// (`engine/lifecycle/close.rs`). Call before stopping the runtime the engine runs on.
    pub async fn shutdown(&self, timeout: std::time::Duration) -> bool {
        self.close();
        lifecycle::close::drain(timeout, &self.inner.copies, &self.inner.reads.tasks).await
    }

    /// `tsm.fetch.stream.idle.timeout.ms`: how long a fetch stream may stay unread before
    /// the layer holding it (the JNI bridge's open streams) drops it, giving back its memory.
    pub fn stream_idle_timeout(&self) -> std::time::Duration {
        self.inner.lifecycle.stream_idle_timeout
    }

    /// `tsm.close.timeout.ms`: the bound [`shutdown`](Self::shutdown) is given by the plugin.
    pub fn close_timeout(&self) -> std::time::Duration {
        self.inner.lifecycle.close_timeout
    }

    /// Bytes of the memory budget (`tsm.memory.budget.bytes`) held by calls in flight,
    /// both pools.
    pub fn memory_in_use(&self) -> u64 {
        self.copy_memory_in_use() + self.read_memory_in_use()
    }

    /// Bytes of the copies' pool (`tsm.memory.copy.bytes`) held by copies in flight; also
    /// the gauge `memory.copy.reserved.bytes`.
    pub fn copy_memory_in_use(&self) -> u64 {
        self.inner.lifecycle.pools.copies.in_use()
    }

    /// Bytes of the reads' pool held by fetch streams, fetchIndex and read-ahead; also the
    /// gauge `memory.read.reserved.bytes`.
    pub fn read_memory_in_use(&self) -> u64 {
        self.inner.lifecycle.pools.reads.in_use()
    }

    /// The pools' sizes, bytes: (copies, reads). See `engine/lifecycle/budget.rs`.
    pub fn memory_pools(&self) -> (u64, u64) {
        let p = &self.inner.lifecycle.pools;
        (p.copies.total(), p.reads.total())
    }

    /// The memory budget, bytes (`tsm.memory.budget.bytes`): the two pools and the
    /// default read-ahead store's share ([`Self::read_ahead_store_bytes`]).
    pub fn memory_budget(&self) -> u64 {
        let (copies, reads) = self.memory_pools();
        copies + reads + self.read_ahead_store_bytes()
    }

    /// The share of the memory budget set aside for the default read-ahead store (0 with
    /// a chunk cache or read-ahead off); also the gauge `memory.readahead.store.bytes`.
    pub fn read_ahead_store_bytes(&self) -> u64 {
        self.inner.reads.store_bytes
    }

    /// Read-ahead chunk loads running now (`engine/cached.rs`; each ends within the store
    /// deadlines and `fetch.chunk.cache.get.timeout.ms`). Also the gauge
    /// `fetch.read.ahead.loads`.
    pub fn read_ahead_loads(&self) -> usize {
        self.inner.reads.loads()
    }

    /// Tiering progress of every partition this engine copied since it started, sorted by
    /// topic and partition (`engine/health.rs`; the plugin's per-partition MBeans).
    pub fn tier_health(&self) -> Vec<PartitionHealth> {
        self.inner.health.partitions()
    }

    /// True once [`RemoteStorageManager::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    /// Current counters and latency summaries, plus the gauges: `memory.in_use.bytes`,
    /// `memory.budget.bytes`, per pool `memory.{copy,read}.reserved.bytes` and
    /// `memory.{copy,read}.pool.bytes` and, per cache (`manifest`, `indexes`, `chunk` when
    /// configured), `cache.<name>.entries` and `cache.<name>.weight` (bytes for the byte-
    /// bounded caches, else entries; approximate, see `cache::async_cache`), and the tier
    /// health gauges (`copy.in_flight`, `copy.oldest.age.ms`, ...: `engine/health.rs`).
    pub fn metrics(&self) -> MetricsSnapshot {
        self.with_gauges(self.inner.registry.snapshot())
    }

    /// As [`metrics`](Self::metrics), with each latency's `window_max_ms` (the maximum since
    /// the previous call, see [`MetricsRegistry::snapshot_window`]). For the one periodic
    /// reader that feeds windowed statistics (the Kafka plugin's metrics poller).
    pub fn metrics_window(&self) -> MetricsSnapshot {
        self.with_gauges(self.inner.registry.snapshot_window())
    }

    fn with_gauges(&self, mut m: MetricsSnapshot) -> MetricsSnapshot {
        let g = &mut m.gauges;
        g.insert("memory.in_use.bytes".into(), self.memory_in_use());
        g.insert("memory.budget.bytes".into(), self.memory_budget());
        g.insert(
            "memory.copy.reserved.bytes".into(),
            self.copy_memory_in_use(),
        );
        g.insert(
            "memory.read.reserved.bytes".into(),
            self.read_memory_in_use(),
        );
        let (copy_pool, read_pool) = self.memory_pools();
        g.insert("memory.copy.pool.bytes".into(), copy_pool);
        g.insert("memory.read.pool.bytes".into(), read_pool);
        g.insert(
            "memory.readahead.store.bytes".into(),
            self.read_ahead_store_bytes(),
        );
        g.insert(
            "fetch.read.ahead.loads".into(),
            self.read_ahead_loads() as u64,
        );
        let i = &self.inner;
        i.health.gauges(g);
        g.insert("cache.manifest.entries".into(), i.manifests.entry_count());
        g.insert("cache.manifest.weight".into(), i.manifests.weighted_size());
        g.insert("cache.indexes.entries".into(), i.indexes.entry_count());
        g.insert("cache.indexes.weight".into(), i.indexes.weighted_size());
        if let Some(c) = &i.chunks {
            g.insert("cache.chunk.entries".into(), c.entry_count());
            g.insert("cache.chunk.weight".into(), c.weighted_size());
        }
        if let Some(c) = &i.reads.store {
            g.insert("cache.readahead.entries".into(), c.entry_count());
            g.insert("cache.readahead.weight".into(), c.weighted_size());
        }
        m
    }
}

/// What a copy produced: the KIP-917 custom metadata and what it stored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CopyOutcome {
    /// The custom metadata bytes for the broker (`None` when no field is configured).
    pub custom_metadata: Option<Vec<u8>>,
    /// Each object uploaded, in upload order (`.log`, `.indexes`, `.rsm-manifest`), with
    /// the bytes stored (after compression and encryption).
    pub uploaded: Vec<(ObjectType, u64)>,
}

/// The three objects of a segment, named as the Java plugin's metrics tag them
/// (`object-type` = `log`, `indexes`, `rsm-manifest`: its `ObjectKeyFactory.Suffix`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ObjectType {
    /// The `.log` object (chunks of the segment).
    Log,
    /// The `.indexes` object (all indexes, concatenated).
    Indexes,
    /// The `.rsm-manifest` object (the commit marker).
    Manifest,
}

impl ObjectType {
    /// The key suffix without the dot: `log`, `indexes`, `rsm-manifest`.
    pub fn suffix(self) -> &'static str {
        match self {
            ObjectType::Log => "log",
            ObjectType::Indexes => "indexes",
            ObjectType::Manifest => "rsm-manifest",
        }
    }

    /// A one-byte code (0 log, 1 indexes, 2 manifest), for compact encodings.
    pub fn code(self) -> u8 {
        match self {
            ObjectType::Log => 0,
            ObjectType::Indexes => 1,
            ObjectType::Manifest => 2,
        }
    }
}

impl From<tsm_codec::PipelineError> for RsmError {
    /// A chunk transform that panicked or was cancelled by runtime shutdown: an internal
    /// failure of the "chunk transform pipeline" (no stored data is blamed).
    fn from(e: tsm_codec::PipelineError) -> Self {
        RsmError::Internal(format!("chunk transform pipeline: {e}"))
    }
}
