//! Tier health: whether tiering makes progress, per topic-partition this engine copies, and
//! what is in flight, so that tiering never stops without a sign.
//!
//! Data comes from the engine's front door (`engine/mod.rs`): each copy registers when it
//! starts (`TierHealth::copy_started`) and its `CopyTicket` reports how it ended; each
//! fetch and fetchIndex likewise (`TierHealth::read_started`). It goes to:
//! - the metrics snapshot (`TierHealth::gauges`): gauges `copy.in_flight`,
//!   `copy.oldest.age.ms`, `fetch.in_flight`, `fetch.oldest.age.ms` (fetchLogSegment opens
//!   and fetchIndex calls; 0 when none), `tier.partitions.failing` (partitions whose last
//!   copy failed), `tier.partitions.stalled` (partitions with a copy past its stall bound);
//!   counters `copy.failures.<class>` and `fetch.failures.<class>` ([`ErrorClass::name`]);
//! - `TierHealth::partitions`: one [`PartitionHealth`] per partition (the plugin's
//!   per-partition MBeans);
//! - log lines (target `tsm_core::engine::health`): WARN when a copy has run longer than
//!   `tsm.copy.stall.warn.factor` times what its segment's size takes at the copy rate
//!   measured on this engine (and at least [`HealthSettings::stall_warn_min`]), once per
//!   copy; WARN when `tsm.copy.failures.warn.count` copies in a row failed for one
//!   partition, then at most every [`FAILURE_WARN_INTERVAL`] while they keep failing; INFO
//!   when a partition warned about copies a segment again. Each line names the partition,
//!   the segment, the error and its class, and the key or thing to look at. At most
//!   [`WARN_LINES_PER_MINUTE`] WARN lines a minute in all (a store outage fails every
//!   partition at once); the next line written says how many were held back.
//!
//! The copy rate is an average over this engine's successful copies of at least 4 MiB
//! (bytes of the segment over the copy's wall time); before the first, [`ASSUMED_RATE`].
//! The stall check runs on a watcher task (`spawn_watcher`, every [`CHECK_INTERVAL`])
//! started with the engine when a tokio runtime is at hand; it ends with `close` or when
//! the engine is dropped, and holds nothing of it in between.
//!
//! Bounds: one small entry per partition copied since the engine started (at most
//! [`MAX_PARTITIONS`]; healthy idle ones are dropped first), one per call in flight. One
//! mutex, held for map updates only; lines are written after it is released.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::names;
use crate::metrics::{Counter, MetricsRegistry};
use crate::{ErrorClass, RemoteLogSegmentMetadata, RsmError};

/// Default `tsm.copy.stall.warn.factor`.
pub const DEFAULT_STALL_WARN_FACTOR: u32 = 4;
/// Default `tsm.copy.failures.warn.count`.
pub const DEFAULT_FAILURES_WARN_COUNT: u32 = 3;
/// Shortest run before a copy is reported as stalled, whatever its size.
pub const DEFAULT_STALL_WARN_MIN: Duration = Duration::from_secs(60);
/// Least time between two "copies keep failing" lines of one partition.
pub const FAILURE_WARN_INTERVAL: Duration = Duration::from_secs(300);
/// Most WARN lines of this module in one minute.
pub const WARN_LINES_PER_MINUTE: u32 = 20;
/// How often the watcher looks for stalled copies.
pub const CHECK_INTERVAL: Duration = Duration::from_secs(1);
/// Copy rate (bytes/s) assumed before one was measured: a single upload stream to a
/// cloud object store, conservatively.
pub const ASSUMED_RATE: f64 = 8.0 * 1024.0 * 1024.0;
/// Smallest copy (segment bytes) whose rate is measured: below it fixed costs dominate.
const RATE_MIN_BYTES: u64 = 4 << 20;
/// Most partitions tracked.
pub const MAX_PARTITIONS: usize = 100_000;
/// A partition without failures or copies in flight for this long may be dropped.
const IDLE_PRUNE: Duration = Duration::from_secs(3600);

/// When the tier-health lines are written (`tsm.copy.stall.warn.factor`,
/// `tsm.copy.failures.warn.count`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HealthSettings {
    /// A copy is stalled once it has run this many times what its size takes at the
    /// measured rate (>= 1).
    pub stall_warn_factor: u32,
    /// Copies in a row failed for one partition before a WARN line (>= 1).
    pub failures_warn_count: u32,
    /// A copy is never stalled before this (default [`DEFAULT_STALL_WARN_MIN`]).
    pub stall_warn_min: Duration,
}

impl Default for HealthSettings {
    fn default() -> Self {
        Self {
            stall_warn_factor: DEFAULT_STALL_WARN_FACTOR,
            failures_warn_count: DEFAULT_FAILURES_WARN_COUNT,
            stall_warn_min: DEFAULT_STALL_WARN_MIN,
        }
    }
}

/// One topic-partition's tiering as this engine has seen it since it started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionHealth {
    /// Topic name.
    pub topic: String,
    /// Partition number.
    pub partition: i32,
    /// Time since its last successful copy; `None`: none since the engine started.
    pub since_last_success: Option<Duration>,
    /// Age of its oldest copy in flight; `None`: none in flight.
    pub oldest_copy: Option<Duration>,
    /// Its copies in flight.
    pub copies_in_flight: u32,
    /// Copies that failed since its last successful one.
    pub consecutive_failures: u32,
    /// The class of its last failure, until a copy succeeds.
    pub last_failure: Option<ErrorClass>,
}

type Tp = (String, i32);

/// The tier-health state of one engine (see the module doc).
pub(crate) struct TierHealth {
    settings: HealthSettings,
    state: Mutex<State>,
    copy_failures: Vec<Arc<Counter>>,
    fetch_failures: Vec<Arc<Counter>>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    partitions: HashMap<Tp, Partition>,
    copies: HashMap<u64, CopyInFlight>,
    reads: HashMap<u64, Instant>,
    /// Measured copy rate, bytes/s.
    rate: Option<f64>,
    limiter: Limiter,
}

struct Partition {
    last_success: Option<Instant>,
    last_activity: Instant,
    consecutive_failures: u32,
    last_failure: Option<ErrorClass>,
    last_failure_warn: Option<Instant>,
    /// A WARN line was written about it since its last successful copy.
    warned: bool,
}

struct CopyInFlight {
    tp: Tp,
    segment: String,
    bytes: u64,
    started: Instant,
    warned: bool,
}

/// The shared bound on WARN lines.
#[derive(Default)]
struct Limiter {
    window_start: Option<Instant>,
    lines: u32,
    held_back: u64,
}

impl Limiter {
    /// `Some(lines held back since the last one written)` when a line may be written now.
    fn admit(&mut self, now: Instant) -> Option<u64> {
        let fresh = self
            .window_start
            .is_none_or(|s| now.duration_since(s) >= Duration::from_secs(60));
        if fresh {
            self.window_start = Some(now);
            self.lines = 0;
        }
        if self.lines >= WARN_LINES_PER_MINUTE {
            self.held_back += 1;
            return None;
        }
        self.lines += 1;
        Some(std::mem::take(&mut self.held_back))
    }
}

/// A line to write once the lock is released.
enum Line {
    Warn(String),
    Info(String),
}

fn emit(lines: Vec<Line>) {
    for l in lines {
        match l {
            Line::Warn(m) => tracing::warn!("{m}"),
            Line::Info(m) => tracing::info!("{m}"),
        }
    }
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// What to look at for a failure of `class`.
fn advice(class: ErrorClass) -> &'static str {
    match class {
        ErrorClass::Timeout => {
            "the store answers too slowly or not at all: check its latency and reachability; \
             the bounds are tsm.storage.*.timeout.ms"
        }
        ErrorClass::Throttled => {
            "the store throttles requests: raise its request limits or lower the copy rate \
             (upload.rate.limit.bytes.per.second, the broker's \
             remote.log.manager.copier.thread.pool.size)"
        }
        ErrorClass::Unavailable => {
            "the store is unreachable or failing: check its endpoint (storage.*) and status"
        }
        ErrorClass::Auth => {
            "the credentials are denied or expired: check the storage.* credentials and the \
             bucket's permissions; the broker cannot cure this by retrying"
        }
        ErrorClass::Rejected => "the store refused the request: check the storage.* settings",
        ErrorClass::NotFound => {
            "something the copy needs does not exist: check the bucket (storage.*) and the \
             segment files on local disk"
        }
        ErrorClass::Corrupt => "stored data does not match its manifest: run tsm verify",
        ErrorClass::Config => "check the encryption.* keys and the key ring files",
        ErrorClass::Internal => {
            "a local I/O failure or a tsm bug: check the broker's log directory, else report \
             this line"
        }
    }
}

impl TierHealth {
    pub(crate) fn new(settings: HealthSettings, registry: &MetricsRegistry) -> Self {
        let counters = |op: &str| {
            ErrorClass::ALL
                .iter()
                .map(|c| registry.counter(&format!("{op}.failures.{}", c.name())))
                .collect()
        };
        Self {
            settings,
            state: Mutex::new(State::default()),
            copy_failures: counters("copy"),
            fetch_failures: counters("fetch"),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A copy of `metadata`'s segment starts; the ticket reports its end.
    pub(crate) fn copy_started(&self, metadata: &RemoteLogSegmentMetadata) -> CopyTicket<'_> {
        let now = Instant::now();
        let mut s = self.lock();
        s.next_id += 1;
        let id = s.next_id;
        let tp = (metadata.topic.clone(), metadata.partition);
        s.copies.insert(
            id,
            CopyInFlight {
                tp,
                segment: super::segment_name(metadata),
                bytes: u64::try_from(metadata.segment_size_in_bytes).unwrap_or(0),
                started: now,
                warned: false,
            },
        );
        CopyTicket {
            health: self,
            id,
            done: false,
        }
    }

    /// A fetchLogSegment open or a fetchIndex starts; the ticket reports its end.
    pub(crate) fn read_started(&self) -> ReadTicket<'_> {
        let mut s = self.lock();
        s.next_id += 1;
        let id = s.next_id;
        s.reads.insert(id, Instant::now());
        ReadTicket {
            health: self,
            id,
            done: false,
        }
    }

    /// How long a copy of `bytes` may run before it counts as stalled.
    fn stall_bound(&self, rate: Option<f64>, bytes: u64) -> Duration {
        let expected = bytes as f64 / rate.unwrap_or(ASSUMED_RATE).max(1.0);
        let bound = expected * f64::from(self.settings.stall_warn_factor.max(1));
        Duration::try_from_secs_f64(bound)
            .unwrap_or(Duration::MAX)
            .max(self.settings.stall_warn_min)
    }

    /// `None`: the copy was dropped (the broker gave up on it, or `close`), which says
    /// nothing about the store.
    fn copy_ended(&self, id: u64, outcome: Option<Result<(), &RsmError>>) {
        let now = Instant::now();
        let mut lines = Vec::new();
        {
            let mut s = self.lock();
            let Some(c) = s.copies.remove(&id) else {
                return;
            };
            let outcome = match outcome {
                None | Some(Err(RsmError::Closed)) => return,
                Some(o) => o,
            };
            let elapsed = now.duration_since(c.started);
            if outcome.is_ok() && c.bytes >= RATE_MIN_BYTES && !elapsed.is_zero() {
                let sample = c.bytes as f64 / elapsed.as_secs_f64();
                s.rate = Some(s.rate.map_or(sample, |r| 0.7 * r + 0.3 * sample));
            }
            let state = &mut *s;
            let p = state.partitions.entry(c.tp.clone()).or_insert(Partition {
                last_success: None,
                last_activity: now,
                consecutive_failures: 0,
                last_failure: None,
                last_failure_warn: None,
                warned: false,
            });
            p.last_activity = now;
            let (topic, partition) = &c.tp;
            match outcome {
                Ok(()) => {
                    if p.warned || c.warned {
                        let failed = match p.consecutive_failures {
                            0 => String::new(),
                            n => format!(" after {n} failed copies"),
                        };
                        lines.push(Line::Info(format!(
                            "tier health: tiering of {topic}-{partition} recovered: {} copied \
                             in {}{failed}",
                            c.segment,
                            secs(elapsed)
                        )));
                    }
                    p.last_success = Some(now);
                    p.consecutive_failures = 0;
                    p.last_failure = None;
                    p.last_failure_warn = None;
                    p.warned = false;
                }
                Err(e) => {
                    let class = e.class();
                    if let Some(c) = self.copy_failures.get(usize::from(class.code() - 1)) {
                        c.inc();
                    }
                    p.consecutive_failures = p.consecutive_failures.saturating_add(1);
                    p.last_failure = Some(class);
                    let due = p
                        .last_failure_warn
                        .is_none_or(|t| now.duration_since(t) >= FAILURE_WARN_INTERVAL);
                    if p.consecutive_failures >= self.settings.failures_warn_count.max(1) && due {
                        p.last_failure_warn = Some(now);
                        p.warned = true;
                        let n = p.consecutive_failures;
                        let retried = if e.is_transient() {
                            "the broker retries it"
                        } else {
                            "not retriable"
                        };
                        let failed = match n {
                            1 => "1 copy failed".to_string(),
                            n => format!("{n} copies in a row failed"),
                        };
                        if let Some(held) = state.limiter.admit(now) {
                            lines.push(Line::Warn(format!(
                                "tier health: {failed} for {topic}-{partition}; the last, of {}, \
                                 after {}: {class} ({retried}): {e}; {}{}",
                                c.segment,
                                secs(elapsed),
                                advice(class),
                                held_back(held)
                            )));
                        }
                    }
                }
            }
            if state.partitions.len() > MAX_PARTITIONS {
                prune(state, now);
            }
        }
        emit(lines);
    }

    fn read_ended(&self, id: u64, outcome: Option<Result<(), &RsmError>>) {
        self.lock().reads.remove(&id);
        if let Some(Err(e)) = outcome {
            if !matches!(e, RsmError::Closed) {
                if let Some(c) = self.fetch_failures.get(usize::from(e.class().code() - 1)) {
                    c.inc();
                }
            }
        }
    }

    /// Writes a WARN line for each copy in flight that passed its stall bound at `now` and
    /// was not reported yet.
    pub(crate) fn check(&self, now: Instant) {
        let mut lines = Vec::new();
        {
            let mut guard = self.lock();
            let s = &mut *guard;
            let rate = s.rate;
            for c in s.copies.values_mut() {
                let ran = now.saturating_duration_since(c.started);
                let bound = self.stall_bound(rate, c.bytes);
                if c.warned || ran <= bound {
                    continue;
                }
                c.warned = true;
                if let Some(p) = s.partitions.get_mut(&c.tp) {
                    p.warned = true;
                }
                let Some(held) = s.limiter.admit(now) else {
                    continue;
                };
                let measured = match rate {
                    Some(r) => format!("the measured {:.1} MB/s", r / 1e6),
                    None => format!("an assumed {:.1} MB/s", ASSUMED_RATE / 1e6),
                };
                lines.push(Line::Warn(format!(
                    "tier health: copy of {} ({} bytes) has run {}, more than {} times what \
                     its size takes at {measured} (at least {}): the store takes its bytes \
                     slowly or not at all; it fails at {} if it does not end; this warning: \
                     {}{}",
                    c.segment,
                    c.bytes,
                    secs(ran),
                    self.settings.stall_warn_factor,
                    secs(self.settings.stall_warn_min),
                    names::STORAGE_UPLOAD_TIMEOUT_MS,
                    names::COPY_STALL_WARN_FACTOR,
                    held_back(held)
                )));
            }
        }
        emit(lines);
    }

    /// Every partition copied since the engine started, sorted by topic and partition.
    pub(crate) fn partitions(&self) -> Vec<PartitionHealth> {
        let now = Instant::now();
        let s = self.lock();
        let mut out: BTreeMap<&Tp, PartitionHealth> = s
            .partitions
            .iter()
            .map(|(tp, p)| {
                (
                    tp,
                    PartitionHealth {
                        topic: tp.0.clone(),
                        partition: tp.1,
                        since_last_success: p.last_success.map(|t| now.duration_since(t)),
                        oldest_copy: None,
                        copies_in_flight: 0,
                        consecutive_failures: p.consecutive_failures,
                        last_failure: p.last_failure,
                    },
                )
            })
            .collect();
        for c in s.copies.values() {
            let h = out.entry(&c.tp).or_insert_with(|| PartitionHealth {
                topic: c.tp.0.clone(),
                partition: c.tp.1,
                since_last_success: None,
                oldest_copy: None,
                copies_in_flight: 0,
                consecutive_failures: 0,
                last_failure: None,
            });
            let age = now.duration_since(c.started);
            h.copies_in_flight += 1;
            h.oldest_copy = Some(h.oldest_copy.map_or(age, |a| a.max(age)));
        }
        out.into_values().collect()
    }

    /// The gauges of the module doc.
    pub(crate) fn gauges(&self, g: &mut BTreeMap<String, u64>) {
        let now = Instant::now();
        let s = self.lock();
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let oldest = |it: &mut dyn Iterator<Item = Instant>| {
            it.map(|t| ms(now.duration_since(t))).max().unwrap_or(0)
        };
        g.insert("copy.in_flight".into(), s.copies.len() as u64);
        g.insert(
            "copy.oldest.age.ms".into(),
            oldest(&mut s.copies.values().map(|c| c.started)),
        );
        g.insert("fetch.in_flight".into(), s.reads.len() as u64);
        g.insert(
            "fetch.oldest.age.ms".into(),
            oldest(&mut s.reads.values().copied()),
        );
        let failing = s
            .partitions
            .values()
            .filter(|p| p.consecutive_failures > 0)
            .count();
        g.insert("tier.partitions.failing".into(), failing as u64);
        let mut stalled: Vec<&Tp> = s
            .copies
            .values()
            .filter(|c| now.duration_since(c.started) > self.stall_bound(s.rate, c.bytes))
            .map(|c| &c.tp)
            .collect();
        stalled.sort();
        stalled.dedup();
        g.insert("tier.partitions.stalled".into(), stalled.len() as u64);
    }
}

fn held_back(n: u64) -> String {
    match n {
        0 => String::new(),
        n => format!(" ({n} more tier-health warnings were held back in the last minute)"),
    }
}

/// Drops partitions with nothing to report (no failure, no copy in flight, idle for
/// [`IDLE_PRUNE`]); if that is not enough, the longest idle healthy ones.
fn prune(s: &mut State, now: Instant) {
    let busy: std::collections::HashSet<Tp> = s.copies.values().map(|c| c.tp.clone()).collect();
    s.partitions.retain(|tp, p| {
        p.consecutive_failures > 0
            || busy.contains(tp)
            || now.duration_since(p.last_activity) < IDLE_PRUNE
    });
    if s.partitions.len() > MAX_PARTITIONS {
        let mut idle: Vec<(Instant, Tp)> = s
            .partitions
            .iter()
            .filter(|(tp, p)| p.consecutive_failures == 0 && !busy.contains(*tp))
            .map(|(tp, p)| (p.last_activity, tp.clone()))
            .collect();
        idle.sort();
        let excess = s.partitions.len() - MAX_PARTITIONS;
        for (_, tp) in idle.into_iter().take(excess) {
            s.partitions.remove(&tp);
        }
    }
}

/// A copy in flight; [`CopyTicket::finish`] reports its outcome, dropping it unfinished
/// reports a cancelled copy (which counts neither way).
pub(crate) struct CopyTicket<'a> {
    health: &'a TierHealth,
    id: u64,
    done: bool,
}

impl CopyTicket<'_> {
    /// The copy ended with `r`.
    pub(crate) fn finish<T>(mut self, r: &Result<T, RsmError>) {
        self.done = true;
        self.health
            .copy_ended(self.id, Some(r.as_ref().map(|_| ())));
    }
}

impl Drop for CopyTicket<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.health.copy_ended(self.id, None);
        }
    }
}

/// A fetch or fetchIndex in flight (see [`CopyTicket`]).
pub(crate) struct ReadTicket<'a> {
    health: &'a TierHealth,
    id: u64,
    done: bool,
}

impl ReadTicket<'_> {
    /// The call ended with `r`.
    pub(crate) fn finish<T>(mut self, r: &Result<T, RsmError>) {
        self.done = true;
        self.health
            .read_ended(self.id, Some(r.as_ref().map(|_| ())));
    }
}

impl Drop for ReadTicket<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.health.read_ended(self.id, None);
        }
    }
}

/// Starts the stall watcher of `health` on the current tokio runtime (none: no watcher,
/// the gauges still tell). It ends when `closing` is cancelled or `health` is dropped.
pub(crate) fn spawn_watcher(health: Weak<TierHealth>, closing: CancellationToken) {
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return;
    };
    rt.spawn(async move {
        let mut tick = tokio::time::interval(CHECK_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = closing.cancelled() => return,
            }
            let Some(h) = health.upgrade() else {
                return;
            };
            h.check(Instant::now());
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BackendError, KafkaUuid, ObjectKey};

    fn meta(partition: i32, bytes: i32) -> RemoteLogSegmentMetadata {
        RemoteLogSegmentMetadata {
            topic_id: KafkaUuid { msb: 1, lsb: 2 },
            topic: "t".into(),
            partition,
            segment_id: KafkaUuid { msb: 1, lsb: 2 },
            start_offset: 0,
            end_offset: 9,
            max_timestamp_ms: 0,
            broker_id: 0,
            event_timestamp_ms: 0,
            segment_leader_epochs: BTreeMap::new(),
            segment_size_in_bytes: bytes,
            custom_metadata: None,
        }
    }

    fn denied() -> Result<(), RsmError> {
        Err(RsmError::Backend(BackendError::Other {
            key: ObjectKey::new("", "t/0/x.log", false),
            detail: "s3 PutObject: HTTP 403 AccessDenied".into(),
            source: None,
        }))
    }

    fn health() -> (TierHealth, MetricsRegistry) {
        let registry = MetricsRegistry::new();
        let settings = HealthSettings {
            stall_warn_factor: 2,
            failures_warn_count: 2,
            stall_warn_min: Duration::from_secs(10),
        };
        (TierHealth::new(settings, &registry), registry)
    }

    #[tokio::test(start_paused = true)]
    async fn failures_count_by_class_and_a_success_resets_them() {
        let (h, registry) = health();
        h.copy_started(&meta(0, 1)).finish(&denied());
        h.copy_started(&meta(0, 1)).finish(&denied());
        h.copy_started(&meta(1, 1)).finish(&Ok(()));
        let p = h.partitions();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].consecutive_failures, 2);
        assert_eq!(p[0].last_failure, Some(ErrorClass::Auth));
        assert_eq!(p[0].since_last_success, None);
        assert_eq!(p[1].consecutive_failures, 0);
        assert!(p[1].since_last_success.is_some());
        assert_eq!(registry.snapshot().counter("copy.failures.auth"), 2);
        let mut g = BTreeMap::new();
        h.gauges(&mut g);
        assert_eq!(g["tier.partitions.failing"], 1);
        h.copy_started(&meta(0, 1)).finish(&Ok(()));
        let p = h.partitions();
        assert_eq!((p[0].consecutive_failures, p[0].last_failure), (0, None));
        // A dropped (cancelled) copy counts neither way.
        drop(h.copy_started(&meta(0, 1)));
        assert_eq!(h.partitions()[0].consecutive_failures, 0);
        assert_eq!(h.partitions()[0].copies_in_flight, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_copy_past_its_bound_is_stalled_and_its_age_grows() {
        let (h, _) = health();
        // 64 MiB at the assumed 8 MiB/s: 8 s, x2 = 16 s (above the 10 s minimum).
        let ticket = h.copy_started(&meta(0, 64 << 20));
        tokio::time::advance(Duration::from_secs(15)).await;
        let mut g = BTreeMap::new();
        h.gauges(&mut g);
        assert_eq!(g["copy.in_flight"], 1);
        assert_eq!(g["copy.oldest.age.ms"], 15_000);
        assert_eq!(g["tier.partitions.stalled"], 0);
        tokio::time::advance(Duration::from_secs(2)).await;
        h.check(Instant::now());
        h.gauges(&mut g);
        assert_eq!(g["tier.partitions.stalled"], 1);
        assert_eq!(h.partitions()[0].oldest_copy, Some(Duration::from_secs(17)));
        ticket.finish(&Ok(()));
        h.gauges(&mut g);
        assert_eq!((g["copy.in_flight"], g["copy.oldest.age.ms"]), (0, 0));
        // The 64 MiB in 17 s is this engine's rate now: 64 MiB takes 17 s, x2 = 34 s.
        let _t = h.copy_started(&meta(0, 64 << 20));
        tokio::time::advance(Duration::from_secs(30)).await;
        h.gauges(&mut g);
        assert_eq!(g["tier.partitions.stalled"], 0);
    }

    #[tokio::test(start_paused = true)]
    async fn warn_lines_are_bounded_per_minute() {
        let mut l = Limiter::default();
        let now = Instant::now();
        for _ in 0..WARN_LINES_PER_MINUTE {
            assert_eq!(l.admit(now), Some(0));
        }
        assert_eq!(l.admit(now), None);
        assert_eq!(l.admit(now), None);
        assert_eq!(l.admit(now + Duration::from_secs(60)), Some(2));
    }
}
