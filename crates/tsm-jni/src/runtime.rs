//! One tokio multi-thread runtime per plugin instance, built at `configure`, shared by the
//! instance, its operations and its open streams (each holds an `Arc<Rt>`); it shuts down
//! in the background when the last of them is gone, so `close()` during in-flight calls
//! never pulls the runtime from under them.

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::runtime::{Handle, Runtime};

/// The runtime of one plugin instance.
pub struct Rt(Option<Runtime>);

impl Rt {
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
        Ok(Self(Some(b.build()?)))
    }

    /// The runtime handle.
    pub fn handle(&self) -> &Handle {
        match &self.0 {
            Some(rt) => rt.handle(),
            // `0` is only `None` inside `drop`.
            None => unreachable!("runtime used after drop"),
        }
    }

    /// Runs `fut` to completion on the calling (Java) thread; the caller bounds it with a
    /// timeout so no wait is unbounded.
    pub fn block_on<F: std::future::Future>(&self, fut: F) -> F::Output {
        self.handle().block_on(fut)
    }
}

impl Drop for Rt {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            // Never blocks, and is allowed from any thread.
            rt.shutdown_background();
        }
    }
}
