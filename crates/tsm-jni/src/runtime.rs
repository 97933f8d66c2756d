//! One tokio multi-thread runtime per plugin instance, built at `configure`, shared by the
//! instance, its operations and its open streams (each holds an `Arc<InstanceRuntime>`); it shuts down
//! when the last of them is gone, so `close()` during in-flight calls never pulls the
//! runtime from under them. Before it stops it waits, at most `tsm.close.timeout.ms`, for
//! compensations still running (`tsm_storage::compensation`: the delete of a copy
//! cancelled by a thread interrupt, a multipart abort), which a plain shutdown would kill.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::runtime::{Handle, Runtime};

/// The tokio runtime of one plugin instance, and how long its `Drop` waits for
/// compensations.
pub struct InstanceRuntime {
    /// `Some` until `Drop` takes it.
    runtime: Option<Runtime>,
    /// Bound of `Drop`'s wait for compensations, in ms (`tsm.close.timeout.ms`).
    drain_timeout_ms: AtomicU64,
}

/// Default bound of the wait for compensations when the runtime stops (ms).
const DEFAULT_DRAIN_MS: u64 = 30_000;

impl InstanceRuntime {
    /// Builds a multi-thread runtime with `worker_threads` workers (0 = tokio's default,
    /// one per core), I/O and timers on. Threads are named `tsm-rsm-<n>`.
    pub fn new(worker_threads: usize) -> std::io::Result<Self> {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.enable_all().thread_name(format!("tsm-rsm-{n}"));
        if worker_threads > 0 {
            b.worker_threads(worker_threads);
        }
        Ok(Self {
            runtime: Some(b.build()?),
            drain_timeout_ms: AtomicU64::new(DEFAULT_DRAIN_MS),
        })
    }

    /// How long `Drop` waits for compensations (`tsm.close.timeout.ms`).
    pub fn set_drain_timeout(&self, timeout: Duration) {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        self.drain_timeout_ms.store(ms, Ordering::Relaxed);
    }

    /// The runtime handle.
    pub fn handle(&self) -> &Handle {
        match &self.runtime {
            Some(rt) => rt.handle(),
            // `runtime` is only `None` inside `drop`.
            None => unreachable!("runtime used after drop"),
        }
    }

    /// The runtime's gauges from tokio's stable `RuntimeMetrics`: `runtime.workers` (worker
    /// threads), `runtime.workers.active` (workers not parked right now: their
    /// park/unpark count is even), `runtime.queue.depth` (tasks in the global injection
    /// queue; the workers' local queues are not exposed by stable tokio) and
    /// `runtime.tasks.alive`. The plugin reports them as the caches' thread-pool metrics.
    pub fn gauges(&self) -> Vec<(String, u64)> {
        let m = self.handle().metrics();
        let workers = m.num_workers();
        let active = (0..workers)
            .filter(|&w| m.worker_park_unpark_count(w).is_multiple_of(2))
            .count();
        vec![
            ("runtime.workers".into(), workers as u64),
            ("runtime.workers.active".into(), active as u64),
            ("runtime.queue.depth".into(), m.global_queue_depth() as u64),
            ("runtime.tasks.alive".into(), m.num_alive_tasks() as u64),
        ]
    }

    /// Runs `fut` to completion on the calling (Java) thread; the caller bounds it with a
    /// timeout so no wait is unbounded.
    pub fn block_on<F: std::future::Future>(&self, fut: F) -> F::Output {
        self.handle().block_on(fut)
    }
}

impl Drop for InstanceRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            // Clean-up spawned by cancelled calls finishes first (bounded); a drop on a
            // runtime thread cannot block, and skips the wait.
            if Handle::try_current().is_err() && tsm_storage::compensation::pending() > 0 {
                let limit = Duration::from_millis(self.drain_timeout_ms.load(Ordering::Relaxed));
                rt.block_on(tsm_storage::compensation::wait_idle(limit));
            }
            // Never blocks, and is allowed from any thread.
            rt.shutdown_background();
        }
    }
}
