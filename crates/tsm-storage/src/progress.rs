//! Upload progress as the store sees it, so a deadline can tell a slow store from a
//! stalled one.
//!
//! Whoever bounds an upload (the engine's deadline wrapper) runs it inside [`scope`] with
//! an [`UploadProgress`]; code below it finds it through a tokio task-local ([`current`]),
//! without any parameter threading through the `StorageBackend` trait, and reports:
//! - [`UploadProgress::record`]: the store took bytes (a request body frame was read by
//!   the HTTP client, a part or block finished). Backends call it where they can see it
//!   (the S3 backend per body frame of a part, the multipart writer per finished part);
//! - [`UploadProgress::body_sent`]: a request's body has all been handed to the HTTP
//!   client. Its bytes may still sit in buffers on the way (the kernel's, a proxy that
//!   buffers whole requests, a fault-injecting proxy), so the answer is awaited without
//!   counting idleness for the time the body takes at [`FLOOR_RATE`] — a 25 MiB part:
//!   200 s; then the idle bound applies again;
//! - [`local_wait`]: a wait on our side that is not the store's doing (the upload rate
//!   limiter's sleep). While one is running the upload is not idle, and its duration is
//!   reported by [`UploadProgress::local_waited`] so a whole-upload bound can leave it out.
//!
//! Outside a [`scope`] (no deadline wrapper: tools, tests) [`current`] is `None` and [`local_wait`] does nothing. A task spawned
//! from within a scope does not inherit it: the multipart writer runs each part's task in
//! the upload's scope again; code whose polling happens on tasks it does not control (an
//! HTTP client's connection task polls the request body) captures [`current`] when it
//! builds the request and reports through the handle.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

/// The slowest link (bytes per second) an upload's bytes are assumed to cross after the
/// HTTP client has sent them: 128 KiB/s.
pub const FLOOR_RATE: u64 = 128 * 1024;

tokio::task_local! {
    static CURRENT: Arc<UploadProgress>;
}

/// Progress of one upload: when the store last took bytes, and the local waits.
#[derive(Debug)]
pub struct UploadProgress {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    last: Instant,
    /// Local waits running now.
    waits: u32,
    /// Start of the oldest local wait running now.
    wait_started: Option<Instant>,
    /// Total of the local waits that ended.
    waited: Duration,
}

impl Default for UploadProgress {
    fn default() -> Self {
        Self::new()
    }
}

impl UploadProgress {
    /// Progress of an upload starting now.
    pub fn new() -> Self {
        Self {
            state: Mutex::new(State {
                last: Instant::now(),
                waits: 0,
                wait_started: None,
                waited: Duration::ZERO,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Plain assignments under the lock: a poisoned state is still consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The store took bytes now.
    pub fn record(&self) {
        let mut s = self.lock();
        s.last = s.last.max(Instant::now());
    }

    /// A request body of `bytes` has all been sent: its answer is not awaited as idleness
    /// for `bytes / FLOOR_RATE` from now (see the module docs).
    pub fn body_sent(&self, bytes: u64) {
        let credit = Duration::from_secs_f64(bytes as f64 / FLOOR_RATE as f64);
        let mut s = self.lock();
        s.last = s.last.max(Instant::now() + credit);
    }

    /// How long the store has taken nothing, not counting time in local waits: zero while
    /// a local wait runs (the store is not being asked for anything).
    pub fn idle_for(&self) -> Duration {
        let s = self.lock();
        if s.waits > 0 {
            Duration::ZERO
        } else {
            Instant::now().saturating_duration_since(s.last)
        }
    }

    /// Time spent in local waits so far (including one running now).
    pub fn local_waited(&self) -> Duration {
        let s = self.lock();
        s.waited + s.wait_started.map_or(Duration::ZERO, |t| t.elapsed())
    }

    fn begin_wait(&self) {
        let mut s = self.lock();
        s.waits += 1;
        if s.waits == 1 {
            s.wait_started = Some(Instant::now());
        }
    }

    fn end_wait(&self) {
        let mut s = self.lock();
        s.waits = s.waits.saturating_sub(1);
        if s.waits == 0 {
            if let Some(t) = s.wait_started.take() {
                s.waited += t.elapsed();
            }
            // The store is asked again from now on: idleness counts from here.
            s.last = s.last.max(Instant::now());
        }
    }
}

/// Runs `fut` with `progress` as the current upload's progress.
pub async fn scope<F: Future>(progress: Arc<UploadProgress>, fut: F) -> F::Output {
    CURRENT.scope(progress, fut).await
}

/// The current upload's progress, if running inside a [`scope`].
pub fn current() -> Option<Arc<UploadProgress>> {
    CURRENT.try_with(Arc::clone).ok()
}

/// Marks a local wait until the returned guard is dropped (no-op outside a [`scope`]).
pub fn local_wait() -> LocalWait {
    let progress = current();
    if let Some(p) = &progress {
        p.begin_wait();
    }
    LocalWait { progress }
}

/// A local wait in progress; ends when dropped (also when its future is cancelled).
#[derive(Debug)]
pub struct LocalWait {
    progress: Option<Arc<UploadProgress>>,
}

impl Drop for LocalWait {
    fn drop(&mut self) {
        if let Some(p) = &self.progress {
            p.end_wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn local_waits_are_not_idleness_and_are_summed() {
        let p = Arc::new(UploadProgress::new());
        scope(p.clone(), async {
            tokio::time::sleep(Duration::from_secs(3)).await;
            assert_eq!(
                current().map(|c| c.idle_for()),
                Some(Duration::from_secs(3))
            );
            {
                let _w = local_wait();
                tokio::time::sleep(Duration::from_secs(10)).await;
                assert_eq!(p.idle_for(), Duration::ZERO, "waiting locally");
                assert_eq!(p.local_waited(), Duration::from_secs(10));
            }
            assert_eq!(
                p.idle_for(),
                Duration::ZERO,
                "idleness restarts after the wait"
            );
            tokio::time::sleep(Duration::from_secs(2)).await;
            p.record();
            assert_eq!(p.idle_for(), Duration::ZERO);
        })
        .await;
        assert_eq!(p.local_waited(), Duration::from_secs(10));
        // A sent body of 1 MiB is 8 s of credit at the floor rate.
        p.body_sent(1 << 20);
        tokio::time::sleep(Duration::from_secs(8)).await;
        assert_eq!(p.idle_for(), Duration::ZERO);
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(p.idle_for(), Duration::from_secs(1));
        // Outside the scope nothing is reported.
        drop(local_wait());
        assert!(current().is_none());
    }
}
