//! What a copy undoes when it does not finish: [`CopyGuard`].
//!
//! A copy creates the guard before its first upload. On success it is disarmed. On an
//! error the copy awaits [`CopyGuard::undo`] (the delete runs before the error returns).
//! When the copy's future is dropped instead — the broker's thread was interrupted on
//! shutdown or a leadership change, a caller's timeout fired — the guard's `Drop` spawns
//! the same delete as a compensation (`tsm_storage::compensation`), which
//! `RemoteStorageManager::shutdown` waits for. The delete is the segment's three keys in
//! one idempotent batch, bounded by `tsm.storage.delete.timeout.ms` (the engine's backend
//! is the deadline wrapper). A multipart upload in progress is aborted by the backend's
//! own guard, also as a compensation.
//!
//! A manifest write the copy stopped waiting for (its deadline passed, or the copy was
//! dropped) may still be committed by the store after the delete: a manifest whose data
//! was removed, which readers would take for a committed segment. Once the manifest's
//! upload has started ([`CopyGuard::manifest_started`]), the clean-up deletes the
//! manifest once more [`LATE_WRITE_GRACE`] after the first delete, as a compensation.
//!
//! What is left only when even the delete fails (store down for longer than the
//! deadline): objects without a manifest, which `tsm ls --orphans` lists and `tsm gc`
//! removes; never a manifest pointing at missing data (the manifest is written last).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::StorageBackend;
use crate::object_keys::SegmentKeys;
use tsm_storage::compensation;

/// Deletes a copy's objects unless disarmed (see the module docs).
pub struct CopyGuard {
    backend: Arc<dyn StorageBackend>,
    keys: SegmentKeys,
    /// False once disarmed or undone: `Drop` has nothing left to do.
    armed: bool,
    limit: Duration,
    manifest_sent: AtomicBool,
}

/// How long after a failed or cancelled copy's delete its manifest is deleted once more,
/// when the manifest's upload had started: time for a write the store received before
/// the client gave up to be committed (a request the store has whole is committed in
/// well under a second; 5 s is a margin, and only delays the compensation, never a call).
pub const LATE_WRITE_GRACE: Duration = Duration::from_secs(5);

impl CopyGuard {
    /// Armed for `keys`; the spawned delete gives up after `limit`.
    pub fn new(backend: Arc<dyn StorageBackend>, keys: SegmentKeys, limit: Duration) -> Self {
        Self {
            backend,
            keys,
            armed: true,
            limit,
            manifest_sent: AtomicBool::new(false),
        }
    }

    /// The manifest's upload starts now: from here on a clean-up deletes the manifest once
    /// more after [`LATE_WRITE_GRACE`] (see the module docs).
    pub fn manifest_started(&self) {
        self.manifest_sent.store(true, Ordering::SeqCst);
    }

    /// The copy committed: nothing to undo.
    pub fn disarm(mut self) {
        self.armed = false;
    }

    /// The keys of the copy's objects.
    pub fn keys(&self) -> &SegmentKeys {
        &self.keys
    }

    /// Deletes what the copy wrote, now (the copy failed); logs a delete that fails.
    pub async fn undo(mut self) {
        self.armed = false;
        delete(&*self.backend, &self.keys).await;
        if self.manifest_sent.load(Ordering::SeqCst) {
            let (backend, keys) = (self.backend.clone(), self.keys.clone());
            let what = format!("second delete of the manifest {}", keys.manifest);
            spawn_late(what, self.limit, async move {
                delete_late_manifest(&*backend, &keys).await;
            });
        }
    }
}

/// Spawns `work`, which first waits [`LATE_WRITE_GRACE`], as a compensation bounded by
/// the grace plus `limit`; logs what it could not run.
fn spawn_late<F>(what: String, limit: Duration, work: F)
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    if !compensation::spawn(what, LATE_WRITE_GRACE.saturating_add(limit), work) {
        tracing::warn!("copy clean-up outside a runtime: a late manifest stays until `tsm gc`");
    }
}

/// After [`LATE_WRITE_GRACE`], deletes the manifest of `keys` again (a write the store
/// committed after the first delete).
async fn delete_late_manifest(backend: &dyn StorageBackend, keys: &SegmentKeys) {
    tokio::time::sleep(LATE_WRITE_GRACE).await;
    match backend.delete(std::slice::from_ref(&keys.manifest)).await {
        Ok(()) => tracing::debug!(key = %keys.manifest, "deleted the manifest again (late writes)"),
        Err(e) => tracing::warn!(
            error = %e,
            key = %keys.manifest,
            "could not delete the manifest of an unfinished copy again: if the store \
             committed it late, it names objects that were deleted"
        ),
    }
}

async fn delete(backend: &dyn StorageBackend, keys: &SegmentKeys) {
    match backend.delete(&keys.all()).await {
        Ok(()) => {
            tracing::debug!(key = %keys.manifest, "deleted the objects of an unfinished copy")
        }
        Err(e) => tracing::warn!(
            error = %e,
            key = %keys.manifest,
            "could not delete the objects of an unfinished copy; `tsm ls --orphans` lists them"
        ),
    }
}

impl Drop for CopyGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let keys = self.keys.clone();
        tracing::info!(key = %keys.manifest, "copy cancelled; deleting what it wrote");
        let backend = self.backend.clone();
        let what = format!("delete of cancelled copy {}", keys.manifest);
        let late = self.manifest_sent.load(Ordering::SeqCst);
        let limit = if late {
            self.limit
                .saturating_mul(2)
                .saturating_add(LATE_WRITE_GRACE)
        } else {
            self.limit
        };
        if !compensation::spawn(what, limit, async move {
            delete(&*backend, &keys).await;
            if late {
                delete_late_manifest(&*backend, &keys).await;
            }
        }) {
            tracing::warn!(
                key = %self.backend,
                "copy cancelled outside a runtime: its objects stay until `tsm gc`"
            );
        }
    }
}
