//! [`AsyncCache`]: a bounded, expiring async cache with single-flight loads, on top of
//! `moka::future::Cache` (TinyLFU admission, per-entry weights, time-to-live).
//!
//! Values come from the caller's loader future (a download, a decode) and go back to every
//! caller asking for the same key. Concurrent [`AsyncCache::get_or_load`] calls for one
//! missing key run ONE loader; the others wait for it. A loader that fails is not cached
//! (all waiters get its error, the next call loads again); a loader whose caller is
//! cancelled (its future dropped) is not cached either, and a waiting caller takes over
//! with its own loader.
//!
//! Memory: bounded by [`Bound`]: entries, or bytes as measured by the weigher (values
//! larger than `u32::MAX` bytes weigh `u32::MAX`). An entry-bounded cache with a weigher
//! counts each entry as its weight in entries (the manifest cache: one per 16 KiB). Eviction is approximate: moka applies
//! evictions in batches, so the cache may briefly exceed its bound by the entries inserted
//! since the last maintenance run.
//!
//! Metrics (names under `cache.<name>.`): `hits`, `misses` (calls that ran the loader),
//! `loads`, `load.errors`, `load.success.nanos` / `load.failure.nanos` (summed load
//! times), `evictions` (size or expiry) and, by cause, `evictions.size` /
//! `evictions.expired` with their weights `eviction.weight.size` /
//! `eviction.weight.expired` (the weigher's value: bytes for byte-bounded caches, else 1
//! per entry or the entry's weight in entries), latency `cache.<name>.load`. Invalidation and replacement are not
//! evictions (as in Caffeine, which the Java plugin uses).

use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

use moka::notification::RemovalCause;

use super::SharedError;
use crate::metrics::{Counter, LatencyHistogram, MetricsRegistry};

/// What bounds the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// At most this many entries.
    Entries(u64),
    /// At most this many bytes, as measured by the cache's weigher.
    Bytes(u64),
    /// No bound (config value `-1`): entries leave only by TTL or invalidation.
    Unbounded,
}

type Weigher<K, V> = Arc<dyn Fn(&K, &V) -> u64 + Send + Sync>;
type RemovalHook<K, V> = Arc<dyn Fn(Arc<K>, V) + Send + Sync>;

/// Builds an [`AsyncCache`].
pub struct AsyncCacheBuilder<K, V> {
    name: String,
    bound: Bound,
    ttl: Option<Duration>,
    weigher: Option<Weigher<K, V>>,
    registry: Option<MetricsRegistry>,
    on_remove: Option<RemovalHook<K, V>>,
    lru: bool,
}

impl<K, V> AsyncCacheBuilder<K, V>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// Entry bound (default [`Bound::Unbounded`]).
    pub fn bound(mut self, bound: Bound) -> Self {
        self.bound = bound;
        self
    }

    /// Time-to-live after load (`None`, the default: forever).
    pub fn ttl(mut self, ttl: Option<Duration>) -> Self {
        self.ttl = ttl;
        self
    }

    /// The size of an entry: bytes for [`Bound::Bytes`], entries it counts as for
    /// [`Bound::Entries`] (default: 1 per entry).
    pub fn weigher(mut self, f: impl Fn(&K, &V) -> u64 + Send + Sync + 'static) -> Self {
        self.weigher = Some(Arc::new(f));
        self
    }

    /// Records `cache.<name>.*` metrics in `registry` (default: a private registry).
    pub fn metrics(mut self, registry: &MetricsRegistry) -> Self {
        self.registry = Some(registry.clone());
        self
    }

    /// Called with every value leaving the cache: evicted (size), expired, invalidated or
    /// replaced (then with the old value), e.g. to delete its file. Runs on the cache's
    /// maintenance path: must not panic or block for long.
    pub fn on_remove(mut self, f: impl Fn(Arc<K>, V) + Send + Sync + 'static) -> Self {
        self.on_remove = Some(Arc::new(f));
        self
    }

    /// Plain LRU eviction instead of moka's default TinyLFU admission. TinyLFU refuses a
    /// new entry that was seen less often than the one it would evict: right for manifests,
    /// wrong for chunks, which are read once in order (prefetched chunks were refused when
    /// the cache was full and downloaded again).
    pub fn lru(mut self) -> Self {
        self.lru = true;
        self
    }

    /// The cache.
    pub fn build(self) -> AsyncCache<K, V> {
        let registry = self.registry.unwrap_or_default();
        let m = CacheMetrics::new(&registry, &self.name);
        let mut b = moka::future::Cache::builder();
        match self.bound {
            Bound::Entries(n) | Bound::Bytes(n) => {
                b = b.max_capacity(n);
                if let Some(w) = self.weigher.clone() {
                    b = b.weigher(move |k, v| u32::try_from(w(k, v)).unwrap_or(u32::MAX));
                }
            }
            Bound::Unbounded => {}
        }
        if let Some(ttl) = self.ttl {
            b = b.time_to_live(ttl);
        }
        if self.lru {
            b = b.eviction_policy(moka::policy::EvictionPolicy::lru());
        }
        let evicted = m.evicted.clone();
        let weigh = self.weigher.clone();
        let on_remove = self.on_remove.clone();
        b = b.eviction_listener(move |k, v, cause: RemovalCause| {
            if cause.was_evicted() {
                let weight = weigh.as_ref().map_or(1, |w| w(&k, &v));
                evicted.record(cause, weight);
            }
            if let Some(f) = &on_remove {
                f(k, v);
            }
        });
        AsyncCache {
            inner: b.build(),
            metrics: Arc::new(m),
        }
    }
}

#[derive(Debug)]
struct CacheMetrics {
    hits: Arc<Counter>,
    misses: Arc<Counter>,
    loads: Arc<Counter>,
    load_errors: Arc<Counter>,
    load_success_nanos: Arc<Counter>,
    load_failure_nanos: Arc<Counter>,
    evicted: Arc<Evictions>,
    load_latency: Arc<LatencyHistogram>,
}

/// Eviction counters, in total and by cause (size, expiry).
#[derive(Debug)]
struct Evictions {
    total: Arc<Counter>,
    size: Arc<Counter>,
    expired: Arc<Counter>,
    size_weight: Arc<Counter>,
    expired_weight: Arc<Counter>,
}

impl Evictions {
    fn record(&self, cause: RemovalCause, weight: u64) {
        self.total.inc();
        match cause {
            RemovalCause::Expired => {
                self.expired.inc();
                self.expired_weight.add(weight);
            }
            _ => {
                self.size.inc();
                self.size_weight.add(weight);
            }
        }
    }
}

impl CacheMetrics {
    fn new(r: &MetricsRegistry, name: &str) -> Self {
        let c = |what: &str| r.counter(&format!("cache.{name}.{what}"));
        Self {
            hits: c("hits"),
            misses: c("misses"),
            loads: c("loads"),
            load_errors: c("load.errors"),
            load_success_nanos: c("load.success.nanos"),
            load_failure_nanos: c("load.failure.nanos"),
            evicted: Arc::new(Evictions {
                total: c("evictions"),
                size: c("evictions.size"),
                expired: c("evictions.expired"),
                size_weight: c("eviction.weight.size"),
                expired_weight: c("eviction.weight.expired"),
            }),
            load_latency: r.histogram(&format!("cache.{name}.load")),
        }
    }
}

/// A bounded async cache with single-flight loading; cheap to clone (shared). See the
/// [module docs](crate::cache::async_cache).
pub struct AsyncCache<K, V> {
    inner: moka::future::Cache<K, V>,
    metrics: Arc<CacheMetrics>,
}

impl<K, V> Clone for AsyncCache<K, V> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            metrics: self.metrics.clone(),
        }
    }
}

impl<K, V> std::fmt::Debug for AsyncCache<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncCache")
            .field("entries", &self.inner.entry_count())
            .field("weighted_size", &self.inner.weighted_size())
            .finish()
    }
}

impl<K, V> AsyncCache<K, V>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// A builder; `name` labels the metrics (`cache.<name>.*`), e.g. `chunk`, `manifest`.
    pub fn builder(name: &str) -> AsyncCacheBuilder<K, V> {
        AsyncCacheBuilder {
            name: name.to_string(),
            bound: Bound::Unbounded,
            ttl: None,
            weigher: None,
            registry: None,
            on_remove: None,
            lru: false,
        }
    }

    /// The cached value of `key`, or the value `loader` produces (then cached).
    ///
    /// Concurrent calls for the same missing key share one load: only the first caller's
    /// `loader` runs, the others are dropped unpolled and their callers wait.
    ///
    /// # Errors
    /// The loader's error, for every caller that waited on that load; nothing is cached,
    /// so the next call runs a loader again. If the caller running the load is cancelled,
    /// a waiting caller runs its own loader instead.
    pub async fn get_or_load<F, E>(&self, key: K, loader: F) -> Result<V, E>
    where
        F: Future<Output = Result<V, E>> + Send,
        E: SharedError,
    {
        let m = self.metrics.clone();
        let timed = async move {
            m.loads.inc();
            let start = Instant::now();
            let r = loader.await;
            let took = start.elapsed();
            m.load_latency.record(took);
            let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
            if r.is_err() {
                m.load_errors.inc();
                m.load_failure_nanos.add(nanos);
            } else {
                m.load_success_nanos.add(nanos);
            }
            r
        };
        match self.inner.entry(key).or_try_insert_with(timed).await {
            Ok(entry) => {
                if entry.is_fresh() {
                    self.metrics.misses.inc();
                } else {
                    self.metrics.hits.inc();
                }
                Ok(entry.into_value())
            }
            Err(shared) => {
                self.metrics.misses.inc();
                Err(E::from_shared(shared))
            }
        }
    }

    /// The cached value of `key`, without loading (counts a hit or a miss).
    pub async fn get(&self, key: &K) -> Option<V> {
        let v = self.inner.get(key).await;
        if v.is_some() {
            self.metrics.hits.inc();
        } else {
            self.metrics.misses.inc();
        }
        v
    }

    /// The cached value of `key` without loading, counting a hit when found and nothing
    /// otherwise (the caller follows a miss with [`Self::get_or_load`], which counts it).
    pub async fn lookup(&self, key: &K) -> Option<V> {
        let v = self.inner.get(key).await;
        if v.is_some() {
            self.metrics.hits.inc();
        }
        v
    }

    /// Caches `value` under `key` (replacing any), e.g. chunks obtained by prefetch.
    pub async fn insert(&self, key: K, value: V) {
        self.inner.insert(key, value).await;
    }

    /// Removes `key`.
    pub async fn invalidate(&self, key: &K) {
        self.inner.invalidate(key).await;
    }

    /// Drops every cached entry whose key satisfies `pred`: one pass over the cache's
    /// entries (bounded by the cache's own bound, never by a count from elsewhere).
    pub async fn invalidate_where(&self, pred: impl Fn(&K) -> bool) {
        let keys: Vec<Arc<K>> = self
            .inner
            .iter()
            .filter_map(|(k, _)| pred(&k).then_some(k))
            .collect();
        for k in keys {
            self.inner.invalidate(k.as_ref()).await;
        }
    }

    /// True when `key` is cached (no metrics, no recency update).
    pub fn contains(&self, key: &K) -> bool {
        self.inner.contains_key(key)
    }

    /// Applies pending evictions now (moka batches them); for tests and shutdown.
    pub async fn run_pending_tasks(&self) {
        self.inner.run_pending_tasks().await;
    }

    /// Number of entries (approximate until [`Self::run_pending_tasks`]).
    pub fn entry_count(&self) -> u64 {
        self.inner.entry_count()
    }

    /// Total weight (bytes for [`Bound::Bytes`]; approximate as above).
    pub fn weighted_size(&self) -> u64 {
        self.inner.weighted_size()
    }
}
