//! `deleteLogSegmentData`: the segment's three objects in one batched, idempotent delete
//! (`.log`, `.indexes`, then `.rsm-manifest`), at the keys reads use (custom-metadata
//! overrides honoured). Needs no manifest, so it also removes half-written segments.

use std::sync::Arc;

use super::EngineShared;
use crate::RsmError;
use crate::object_keys::SegmentKeys;

/// Deletes the objects at `keys` and drops what the engine cached of them.
pub(super) async fn delete(inner: &Arc<EngineShared>, keys: SegmentKeys) -> Result<(), RsmError> {
    tracing::debug!(key = %keys.manifest, "deleting segment objects");
    inner.backend.delete(&keys.all()).await?;
    inner.invalidate(&keys).await;
    Ok(())
}
