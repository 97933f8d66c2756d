//! Compensations: the clean-up work a failed or cancelled call leaves to run after it is
//! gone (delete the objects of an abandoned copy, abort a multipart upload), spawned on the
//! current tokio runtime and counted, so that shutdown can wait for them instead of
//! killing them with the runtime.
//!
//! Who spawns: the engine's copy guard (`engine/lifecycle/cleanup.rs`) when a copy future
//! is dropped, the multipart writer ([`crate::multipart`]) and S3's unanswered-create guard
//! when an upload is dropped. Who waits: `RemoteStorageManager::shutdown` and the JNI runtime before it stops. Each compensation
//! must bound its own remote waits (the engine's deadlines, or [`spawn`]'s `limit`): a
//! silent store cannot make shutdown hang, only wait for the `tsm.close.timeout.ms` bound.
//!
//! The count is per loaded library (a process-wide static): two plugin instances in one
//! JVM wait for each other's compensations too, which only ever lengthens a bounded wait.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

static PENDING: AtomicUsize = AtomicUsize::new(0);
static IDLE: Notify = Notify::const_new();

/// Decrements the count when the task ends, panics or is dropped by runtime shutdown.
struct Pending;

impl Drop for Pending {
    fn drop(&mut self) {
        if PENDING.fetch_sub(1, Ordering::AcqRel) == 1 {
            IDLE.notify_waiters();
        }
    }
}

/// Spawns `work` (named `what` in logs) on the current tokio runtime, bounded by `limit`.
/// Returns false, and runs nothing, when called outside a runtime (the caller logs what
/// it could not undo).
pub fn spawn<F>(what: String, limit: Duration, work: F) -> bool
where
    F: Future<Output = ()> + Send + 'static,
{
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        tracing::warn!(what, "compensation not run: no tokio runtime");
        return false;
    };
    PENDING.fetch_add(1, Ordering::AcqRel);
    let guard = Pending;
    rt.spawn(async move {
        let _guard = guard;
        if tokio::time::timeout(limit, work).await.is_err() {
            tracing::warn!(
                what,
                limit_ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                "compensation gave up at its deadline; `tsm ls --orphans` shows what is left"
            );
        }
    });
    true
}

/// Compensations spawned and not yet finished.
pub fn pending() -> usize {
    PENDING.load(Ordering::Acquire)
}

/// Waits until no compensation is pending, at most `limit`; true when none is left.
pub async fn wait_idle(limit: Duration) -> bool {
    let wait = async {
        loop {
            let idle = IDLE.notified();
            if pending() == 0 {
                return;
            }
            idle.await;
        }
    };
    tokio::time::timeout(limit, wait).await.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waits_for_spawned_work_and_counts_dropped_tasks() {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        assert!(spawn("test".into(), Duration::from_secs(10), async move {
            let _ = rx.await;
        }));
        assert!(pending() >= 1);
        assert!(!wait_idle(Duration::from_millis(20)).await);
        tx.send(()).expect("task alive");
        assert!(wait_idle(Duration::from_secs(5)).await);
    }

    #[tokio::test]
    async fn a_compensation_is_bounded_by_its_limit() {
        assert!(spawn(
            "silent".into(),
            Duration::from_millis(10),
            futures::future::pending()
        ));
        assert!(wait_idle(Duration::from_secs(5)).await);
    }

    #[test]
    fn outside_a_runtime_nothing_is_spawned() {
        assert!(!spawn("x".into(), Duration::from_secs(1), async {}));
    }
}
