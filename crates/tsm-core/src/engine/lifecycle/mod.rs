//! The lifecycle every RSM call (copy, fetch stream, fetchIndex, delete) runs inside: how
//! long it may wait, how much memory all calls may hold, and what is undone when a call
//! dies. One place for each policy:
//!
//! | policy | module | keys |
//! |---|---|---|
//! | every remote wait bounded | [`deadline`]: the engine wraps its backend in [`DeadlineBackend`] | `tsm.storage.get.first.byte.timeout.ms`, `tsm.storage.get.idle.timeout.ms`, `tsm.storage.get.timeout.ms`, `tsm.storage.upload.timeout.ms`, `tsm.storage.delete.timeout.ms`; cache waits `fetch.*.cache.get.timeout.ms` |
//! | one memory budget, a pool per call class | [`budget`]: a call reserves its working set first, from its class's pool (reads never wait behind copies); configure refuses pools that cannot hold one call | `tsm.memory.budget.bytes`, `tsm.memory.copy.bytes`, `tsm.max.in.flight` |
//! | nothing left behind | [`cleanup`]: the copy guard; `tsm_storage::compensation` counts what runs after a call is gone | `tsm.close.timeout.ms` |
//!
//! Shutdown (`RemoteStorageManager::shutdown`): new calls fail with `RsmError::Closed`,
//! copies and read-ahead loads in flight are cancelled, then the engine waits at most
//! `tsm.close.timeout.ms` in all for them to end and for compensations in flight (deletes
//! of cancelled copies, multipart aborts) before its owner stops the runtime (`close.rs`).

pub mod budget;
pub mod cleanup;
pub(crate) mod close;
pub mod deadline;

use std::time::Duration;

pub use budget::{MemoryBudget, Pools, Reservation};
pub use cleanup::{CopyGuard, LATE_WRITE_GRACE};
pub use deadline::{DeadlineBackend, Deadlines};

/// Default `tsm.close.timeout.ms`.
pub const DEFAULT_CLOSE_TIMEOUT: Duration = Duration::from_secs(30);

/// Default `tsm.fetch.stream.idle.timeout.ms`: 5 min, far above any store deadline a read
/// waits for, so only a stream nobody reads any more is released.
pub const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// The lifecycle state of one engine.
#[derive(Debug)]
pub(crate) struct Lifecycle {
    pub(crate) deadlines: Deadlines,
    pub(crate) pools: Pools,
    pub(crate) close_timeout: Duration,
    pub(crate) stream_idle_timeout: Duration,
}
