//! The bounded waits of `RemoteStorageManager::shutdown`, under one deadline
//! (`tsm.close.timeout.ms`, given by the caller): copies in flight stop (the close token
//! cancelled them) and spawn their clean-up; read-ahead loads in flight end (the same token
//! cancelled them: their point was the broker's next fetch); then the clean-up in flight
//! (`tsm_storage::compensation`: deletes of cancelled copies, multipart aborts) ends.

use std::time::Duration;

use tokio_util::task::TaskTracker;

/// Waits at most `timeout` in all for `copies`, then `read_ahead`, then the clean-up in
/// flight; true when none of them is left. Both trackers are closed (no later task counts).
pub(crate) async fn drain(
    timeout: Duration,
    copies: &TaskTracker,
    read_ahead: &TaskTracker,
) -> bool {
    let until = tokio::time::Instant::now() + timeout;
    copies.close();
    read_ahead.close();
    let stopped = tokio::time::timeout_at(until, async {
        copies.wait().await;
        read_ahead.wait().await;
    })
    .await
    .is_ok();
    let left = until.saturating_duration_since(tokio::time::Instant::now());
    let idle = tsm_storage::compensation::wait_idle(left).await;
    if !stopped {
        tracing::warn!(
            copies = copies.len(),
            read_ahead_loads = read_ahead.len(),
            timeout_ms = ms(timeout),
            "copies or read-ahead loads still running at close"
        );
    }
    if !idle {
        tracing::warn!(
            pending = tsm_storage::compensation::pending(),
            timeout_ms = ms(timeout),
            "clean-up still running at close; `tsm ls --orphans` shows anything left"
        );
    }
    stopped && idle
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
