//! Engine metrics: counters and latency histograms, readable as a snapshot (the JNI layer
//! exports them as JMX MBeans / KIP-877 metrics).

use std::collections::BTreeMap;

/// A point-in-time copy of every metric.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetricsSnapshot {
    /// Monotonic counters by name, e.g. `copy.count`, `bytes.uploaded`.
    pub counters: BTreeMap<String, u64>,
    /// Latency summaries by operation name, e.g. `copy`, `fetch`.
    pub latencies: BTreeMap<String, LatencySummary>,
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
}
