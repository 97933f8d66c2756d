//! What a copy undoes when it does not finish: [`CopyGuard`].
//!
//! A copy creates the guard before its first upload. On success it is disarmed. On an
//! error the copy awaits [`CopyGuard::undo`] (the delete runs before the error returns).
//! When the copy's future is dropped instead — the broker's thread was interrupted on
//! shutdown or a leadership change, a caller's timeout fired — the guard's `Drop` spawns
//! the same delete as a compensation (`crate::backend::compensation`), which
//! `RemoteStorageManager::shutdown` waits for. The delete is the segment's three keys in
//! one idempotent batch, bounded by `tsm.storage.delete.timeout.ms` (the engine's backend
//! is the deadline wrapper). A multipart upload in progress is aborted by the backend's
//! own guard, also as a compensation.
//!
//! What is left only when even the delete fails (store down for longer than the
//! deadline): objects without a manifest, which `tsm ls --orphans` lists and `tsm gc`
//! removes; never a manifest pointing at missing data (the manifest is written last).

use std::sync::Arc;
use std::time::Duration;

use crate::StorageBackend;
use crate::backend::compensation;
use crate::object_keys::SegmentKeys;

/// Deletes a copy's objects unless disarmed (see the module docs).
pub struct CopyGuard {
    backend: Arc<dyn StorageBackend>,
    keys: Option<SegmentKeys>,
    limit: Duration,
}

impl CopyGuard {
    /// Armed for `keys`; the spawned delete gives up after `limit`.
    pub fn new(backend: Arc<dyn StorageBackend>, keys: SegmentKeys, limit: Duration) -> Self {
        Self {
            backend,
            keys: Some(keys),
            limit,
        }
    }

    /// The copy committed: nothing to undo.
    pub fn disarm(mut self) {
        self.keys = None;
    }

    /// Deletes what the copy wrote, now (the copy failed); logs a delete that fails.
    pub async fn undo(mut self) {
        if let Some(keys) = self.keys.take() {
            delete(&*self.backend, &keys).await;
        }
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
        let Some(keys) = self.keys.take() else {
            return;
        };
        tracing::info!(key = %keys.manifest, "copy cancelled; deleting what it wrote");
        let backend = self.backend.clone();
        let what = format!("delete of cancelled copy {}", keys.manifest);
        if !compensation::spawn(what, self.limit, async move {
            delete(&*backend, &keys).await;
        }) {
            tracing::warn!(
                key = %self.backend,
                "copy cancelled outside a runtime: its objects stay until `tsm gc`"
            );
        }
    }
}
