//! The engine's own counters and latency histograms, read by
//! [`RemoteStorageManager::metrics`](super::RemoteStorageManager::metrics) as a
//! [`MetricsSnapshot`]. Lock-free atomics; a latency histogram has power-of-two millisecond
//! buckets, so p50/p99 are upper bucket bounds (within a factor of 2).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::metrics::{LatencySummary, MetricsSnapshot};

const BUCKETS: usize = 24; // up to 2^23 ms (~2.3 h)

#[derive(Default)]
pub(crate) struct Latency {
    count: AtomicU64,
    sum_us: AtomicU64,
    max_us: AtomicU64,
    buckets: [AtomicU64; BUCKETS],
}

impl Latency {
    pub(crate) fn record(&self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_us.fetch_add(us, Ordering::Relaxed);
        self.max_us.fetch_max(us, Ordering::Relaxed);
        let ms = us / 1000;
        let b = (64 - ms.leading_zeros() as usize).min(BUCKETS - 1);
        self.buckets[b].fetch_add(1, Ordering::Relaxed);
    }

    fn summary(&self) -> LatencySummary {
        let count = self.count.load(Ordering::Relaxed);
        let counts: Vec<u64> = self
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        let quantile = |q: f64| -> f64 {
            let total: u64 = counts.iter().sum();
            if total == 0 {
                return 0.0;
            }
            let target = (total as f64 * q).ceil() as u64;
            let mut seen = 0;
            for (i, c) in counts.iter().enumerate() {
                seen += c;
                if seen >= target {
                    return if i == 0 { 1.0 } else { (1u64 << i) as f64 };
                }
            }
            (1u64 << (BUCKETS - 1)) as f64
        };
        let max_ms = self.max_us.load(Ordering::Relaxed) as f64 / 1000.0;
        LatencySummary {
            count,
            sum_ms: self.sum_us.load(Ordering::Relaxed) as f64 / 1000.0,
            p50_ms: quantile(0.5).min(max_ms.max(0.001)),
            p99_ms: quantile(0.99).min(max_ms.max(0.001)),
            max_ms,
        }
    }
}

/// Every engine metric. Counter names are `<op>.count`, `<op>.errors`, `bytes.uploaded`,
/// `bytes.downloaded`; latency names are the operations.
#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) copy_count: AtomicU64,
    pub(crate) copy_errors: AtomicU64,
    pub(crate) fetch_count: AtomicU64,
    pub(crate) fetch_errors: AtomicU64,
    pub(crate) fetch_index_count: AtomicU64,
    pub(crate) fetch_index_errors: AtomicU64,
    pub(crate) delete_count: AtomicU64,
    pub(crate) delete_errors: AtomicU64,
    pub(crate) bytes_uploaded: AtomicU64,
    pub(crate) bytes_downloaded: AtomicU64,
    pub(crate) copy_latency: Latency,
    pub(crate) fetch_latency: Latency,
    pub(crate) fetch_index_latency: Latency,
    pub(crate) delete_latency: Latency,
}

impl Stats {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> MetricsSnapshot {
        let mut s = MetricsSnapshot::default();
        let counters = [
            ("copy.count", &self.copy_count),
            ("copy.errors", &self.copy_errors),
            ("fetch.count", &self.fetch_count),
            ("fetch.errors", &self.fetch_errors),
            ("fetch.index.count", &self.fetch_index_count),
            ("fetch.index.errors", &self.fetch_index_errors),
            ("delete.count", &self.delete_count),
            ("delete.errors", &self.delete_errors),
            ("bytes.uploaded", &self.bytes_uploaded),
            ("bytes.downloaded", &self.bytes_downloaded),
        ];
        for (name, c) in counters {
            s.counters
                .insert(name.to_string(), c.load(Ordering::Relaxed));
        }
        let latencies = [
            ("copy", &self.copy_latency),
            ("fetch", &self.fetch_latency),
            ("fetch.index", &self.fetch_index_latency),
            ("delete", &self.delete_latency),
        ];
        for (name, l) in latencies {
            s.latencies.insert(name.to_string(), l.summary());
        }
        s
    }
}
