//! # tsm-jni
//!
//! The native half of the Kafka broker plugin `io.tsm.kafka.TsmRemoteStorageManager`
//! (KIP-405). The Java class (in `src/main/java`, same folder as this crate) converts the
//! broker's objects into compact buffers (`wire`) and calls the `native` methods in
//! `exports`; those start engine calls on the instance's tokio runtime (`runtime`,
//! `instance`), which Java awaits in bounded slices (`ops`) so an interrupted broker
//! thread gets its exception promptly. Fetched segments are read lazily through
//! `stream`. Native `tracing` events reach SLF4J through `logging`; panics become Java
//! exceptions (`panic`). The linked storage backends are listed in `kinds`.
//!
//! What the broker does with the plugin: `docs/broker-contract.md`.

pub mod exports;
pub mod instance;
pub mod logging;
pub mod ops;
pub mod panic;
pub mod registry;
pub mod runtime;
pub mod stream;
pub mod wire;

use std::fmt::Write as _;

use tsm_core::MetricsSnapshot;

/// The snapshot as text lines: `counter <name> <value>`, `gauge <name> <value>` and
/// `latency <op> <count> <sum_ms> <p50_ms> <p99_ms> <max_ms> <window_max_ms>` (names
/// contain no spaces). Read by `io.tsm.kafka.TsmMetrics.parse`.
pub fn metrics_text(m: &MetricsSnapshot) -> String {
    let mut out = String::new();
    for (k, v) in &m.counters {
        let _ = writeln!(out, "counter {} {v}", k.replace(' ', "_"));
    }
    for (k, v) in &m.gauges {
        let _ = writeln!(out, "gauge {} {v}", k.replace(' ', "_"));
    }
    for (k, l) in &m.latencies {
        let _ = writeln!(
            out,
            "latency {} {} {} {} {} {} {}",
            k.replace(' ', "_"),
            l.count,
            l.sum_ms,
            l.p50_ms,
            l.p99_ms,
            l.max_ms,
            l.window_max_ms
        );
    }
    out
}

/// Lines `partition <topic> <partition> <since_last_success_ms> <oldest_copy_ms>
/// <copies_in_flight> <consecutive_failures> <last_failure_class>`, one per partition of
/// `RemoteStorageManager::tier_health` (-1: no success since start / no copy in flight;
/// the class as `ErrorClass::code`, 0 for none). Topic names have no spaces (Kafka's legal
/// characters). Read by `io.tsm.kafka.NativeMetricsFeed.partitions`.
pub fn tier_health_text(health: &[tsm_core::PartitionHealth]) -> String {
    let ms = |d: Option<std::time::Duration>| {
        d.map_or(-1, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    };
    let mut out = String::new();
    for p in health {
        let _ = writeln!(
            out,
            "partition {} {} {} {} {} {} {}",
            p.topic.replace(' ', "_"),
            p.partition,
            ms(p.since_last_success),
            ms(p.oldest_copy),
            p.copies_in_flight,
            p.consecutive_failures,
            p.last_failure.map_or(0, |c| c.code())
        );
    }
    out
}

/// An instance's metrics as [`metrics_text`]: the engine's snapshot (`window`: with the
/// windowed maxima, see `RemoteStorageManager::metrics_window`) plus its runtime's gauges
/// (`runtime::gauges`), then its partitions' tier health ([`tier_health_text`]).
pub fn instance_metrics_text(inst: &instance::Instance, window: bool) -> String {
    let engine = inst.engine();
    let mut m = if window {
        engine.metrics_window()
    } else {
        engine.metrics()
    };
    m.gauges.extend(inst.rt.gauges());
    m.gauges.extend(stream::gauges(&inst.rt));
    let mut text = metrics_text(&m);
    text.push_str(&tier_health_text(&engine.tier_health()));
    text
}
