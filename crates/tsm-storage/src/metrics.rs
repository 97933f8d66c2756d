//! Metrics: counters and latency histograms, readable as a [`MetricsSnapshot`] (the JNI
//! layer exports them as JMX MBeans / KIP-877 metrics).
//!
//! Data comes from the engine (tsm-core: its copy / fetch paths and caches), the backend
//! wrapper ([`MeteredBackend`](crate::metered::MeteredBackend)) and the storage clients,
//! which each hold `Arc`s of their [`Counter`]s and
//! [`LatencyHistogram`]s from a shared [`MetricsRegistry`]; recording is one relaxed atomic
//! add (no lock, no allocation). [`MetricsRegistry::snapshot`] copies every value out.
//!
//! Names: `<component>.<what>`, e.g. `backend.fetch.requests`, `backend.bytes.uploaded`,
//! `cache.chunk.hits`; latencies by operation, e.g. `backend.upload`. Storage clients
//! (the S3, GCS and Azure backends, which get the registry from
//! [`StorageConfig::metrics`](crate::config::StorageConfig::metrics)) count every HTTP
//! request they send, retries included, as `client.<backend>.<request>.requests` (see each
//! backend's module docs), plus `client.get.requests` / `client.put.requests` for all
//! reads / writes of any backend. Gauges (current values, not monotonic: memory in use,
//! cache sizes) are added by the engine when it takes a snapshot (tsm-core's
//! `RemoteStorageManager::metrics`).
//!
//! Windowed maximum: each histogram also keeps the largest observation since the last
//! [`MetricsRegistry::snapshot_window`] (one consumer, the plugin's metrics poller, which
//! feeds Kafka's windowed `Max` stats); [`MetricsRegistry::snapshot`] leaves it alone.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A point-in-time copy of every metric.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetricsSnapshot {
    /// Monotonic counters by name, e.g. `copy.count`, `bytes.uploaded`.
    pub counters: BTreeMap<String, u64>,
    /// Latency summaries by operation name, e.g. `copy`, `fetch`.
    pub latencies: BTreeMap<String, LatencySummary>,
    /// Current values by name (not monotonic), e.g. `memory.in_use.bytes`,
    /// `cache.chunk.entries`.
    pub gauges: BTreeMap<String, u64>,
}

impl MetricsSnapshot {
    /// Adds every metric of `other` (a name present in both: `other` wins).
    pub fn merge(&mut self, other: MetricsSnapshot) {
        self.counters.extend(other.counters);
        self.latencies.extend(other.latencies);
        self.gauges.extend(other.gauges);
    }

    /// The counter `name`, 0 when absent.
    pub fn counter(&self, name: &str) -> u64 {
        self.counters.get(name).copied().unwrap_or(0)
    }
}

/// Summary of a latency histogram, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatencySummary {
    /// Number of observations.
    pub count: u64,
    /// Sum of all observations (ms).
    pub sum_ms: f64,
    /// Median (ms).
    pub p50_ms: f64,
    /// 99th percentile (ms).
    pub p99_ms: f64,
    /// Maximum (ms).
    pub max_ms: f64,
    /// Maximum since the previous [`MetricsRegistry::snapshot_window`] (ms; 0 when nothing
    /// was observed since). Only filled by `snapshot_window`; 0 in a plain snapshot.
    pub window_max_ms: f64,
}

/// A monotonic counter (one relaxed atomic).
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds 1.
    pub fn inc(&self) {
        self.add(1);
    }

    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// The current value.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Number of histogram buckets: bucket `i` counts observations below `2^i` µs (the last
/// one everything above ~4.6 h).
const BUCKETS: usize = 44;

/// A latency histogram with power-of-two microsecond buckets: percentiles are the upper
/// bound of their bucket (exact within a factor of 2, capped at the observed maximum).
#[derive(Debug)]
pub struct LatencyHistogram {
    count: AtomicU64,
    sum_us: AtomicU64,
    max_us: AtomicU64,
    /// Maximum since the last [`LatencyHistogram::take_window_max_us`].
    window_max_us: AtomicU64,
    buckets: [AtomicU64; BUCKETS],
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self {
            count: AtomicU64::new(0),
            sum_us: AtomicU64::new(0),
            max_us: AtomicU64::new(0),
            window_max_us: AtomicU64::new(0),
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl LatencyHistogram {
    /// Records one observation.
    pub fn record(&self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_us.fetch_add(us, Ordering::Relaxed);
        self.max_us.fetch_max(us, Ordering::Relaxed);
        self.window_max_us.fetch_max(us, Ordering::Relaxed);
        let b = (64 - us.leading_zeros() as usize).min(BUCKETS - 1);
        self.buckets[b].fetch_add(1, Ordering::Relaxed);
    }

    /// The maximum observation (µs) since the previous call, and starts a new window.
    pub fn take_window_max_us(&self) -> u64 {
        self.window_max_us.swap(0, Ordering::Relaxed)
    }

    /// Count, sum, p50, p99 and max, in ms (`window_max_ms` 0).
    pub fn summary(&self) -> LatencySummary {
        let counts: Vec<u64> = self
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        let total: u64 = counts.iter().sum();
        let max_us = self.max_us.load(Ordering::Relaxed);
        let quantile = |q: f64| -> f64 {
            if total == 0 {
                return 0.0;
            }
            let target = ((total as f64 * q).ceil() as u64).max(1);
            let mut seen = 0;
            let mut upper_us = max_us;
            for (i, c) in counts.iter().enumerate() {
                seen += c;
                if seen >= target {
                    upper_us = 1u64 << i;
                    break;
                }
            }
            upper_us.min(max_us) as f64 / 1000.0
        };
        LatencySummary {
            count: self.count.load(Ordering::Relaxed),
            sum_ms: self.sum_us.load(Ordering::Relaxed) as f64 / 1000.0,
            p50_ms: quantile(0.5),
            p99_ms: quantile(0.99),
            max_ms: max_us as f64 / 1000.0,
            window_max_ms: 0.0,
        }
    }
}

/// Named counters and histograms. Look a metric up once (a short lock) and keep the
/// `Arc`; recording never locks. Cheap to clone (shared).
#[derive(Clone, Debug, Default)]
pub struct MetricsRegistry {
    inner: Arc<RegistryInner>,
}

#[derive(Debug, Default)]
struct RegistryInner {
    counters: Mutex<BTreeMap<String, Arc<Counter>>>,
    histograms: Mutex<BTreeMap<String, Arc<LatencyHistogram>>>,
}

impl MetricsRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The counter `name`, created at 0 on first use.
    pub fn counter(&self, name: &str) -> Arc<Counter> {
        let mut map = self
            .inner
            .counters
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        map.entry(name.to_string()).or_default().clone()
    }

    /// The histogram `name`, created empty on first use.
    pub fn histogram(&self, name: &str) -> Arc<LatencyHistogram> {
        let mut map = self
            .inner
            .histograms
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        map.entry(name.to_string()).or_default().clone()
    }

    /// Every registered metric's current value.
    pub fn snapshot(&self) -> MetricsSnapshot {
        self.snapshot_inner(false)
    }

    /// As [`snapshot`](Self::snapshot), with each latency's `window_max_ms` filled with
    /// the maximum since the previous call, and a new window started. Meant for ONE
    /// periodic reader (two readers would split the windows between them).
    pub fn snapshot_window(&self) -> MetricsSnapshot {
        self.snapshot_inner(true)
    }

    fn snapshot_inner(&self, window: bool) -> MetricsSnapshot {
        let counters = self
            .inner
            .counters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(k, c)| (k.clone(), c.get()))
            .collect();
        let latencies = self
            .inner
            .histograms
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(k, h)| {
                let mut l = h.summary();
                if window {
                    l.window_max_ms = h.take_window_max_us() as f64 / 1000.0;
                }
                (k.clone(), l)
            })
            .collect();
        MetricsSnapshot {
            counters,
            latencies,
            gauges: BTreeMap::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_histograms_snapshot() {
        let r = MetricsRegistry::new();
        let c = r.counter("a.count");
        c.inc();
        c.add(4);
        assert_eq!(r.counter("a.count").get(), 5);
        let h = r.histogram("op");
        for ms in [1u64, 2, 3, 100] {
            h.record(Duration::from_millis(ms));
        }
        let s = r.snapshot();
        assert_eq!(s.counter("a.count"), 5);
        assert_eq!(s.counter("missing"), 0);
        let l = &s.latencies["op"];
        assert_eq!(l.count, 4);
        assert!((l.sum_ms - 106.0).abs() < 1e-9);
        assert!((l.max_ms - 100.0).abs() < 1e-9);
        assert!(l.p50_ms >= 2.0 && l.p50_ms <= 4.1, "{l:?}");
        assert!((l.p99_ms - 100.0).abs() < 1e-9, "{l:?}");
        assert_eq!(
            LatencyHistogram::default().summary(),
            LatencySummary::default()
        );
    }

    #[test]
    fn window_max_resets_per_window_only() {
        let r = MetricsRegistry::new();
        let h = r.histogram("op");
        h.record(Duration::from_millis(50));
        h.record(Duration::from_millis(7));
        assert_eq!(r.snapshot().latencies["op"].window_max_ms, 0.0);
        assert!((r.snapshot_window().latencies["op"].window_max_ms - 50.0).abs() < 1e-9);
        h.record(Duration::from_millis(3));
        let w = r.snapshot_window();
        assert!((w.latencies["op"].window_max_ms - 3.0).abs() < 1e-9);
        assert!((w.latencies["op"].max_ms - 50.0).abs() < 1e-9);
        assert_eq!(r.snapshot_window().latencies["op"].window_max_ms, 0.0);
    }
}
