//! One memory budget for all calls of an engine (`tsm.memory.budget.bytes`, default
//! 256 MiB): each call reserves its bounded working set before it allocates any of it, and
//! gives it back when it ends (returns, fails, or its future / stream is dropped: the
//! [`Reservation`] is an RAII permit). When the budget is exhausted a call waits, at most
//! its deadline (copy: `tsm.storage.upload.timeout.ms`; fetch and fetchIndex:
//! `tsm.storage.get.first.byte.timeout.ms`), then fails with a retriable
//! [`RsmError::Timeout`]. A call that needs more than the whole budget takes all of it
//! (it runs alone rather than never).
//!
//! The working sets (bytes; `C` = `chunk.size`, `S(C)` = its stored bound, `F` =
//! `tsm.max.in.flight`, `P` = the backend's upload buffers from
//! [`StorageBackend::upload_buffer_bytes`](crate::StorageBackend::upload_buffer_bytes)):
//! - copy: `(F + 2) x (C + S(C)) + 2 x largest index + P` — the transform pipeline, the
//!   chunk being read and the one being cut, one index (plain and encrypted), part buffers;
//! - transformed fetch stream without a chunk store (lives until the stream is dropped):
//!   `(F + 2) x (C + S(C)) + W x max(S(C), 1 MiB)` — the restore pipeline plus its
//!   `W = min(G, F)` GETs in flight (`G` = `tsm.fetch.gets.in.flight`), reserved at open;
//! - plain fetch stream: each GET in flight reserves its own length when it is issued and
//!   returns it once its last byte was handed out (at most `G` GETs of at most 1 MiB, see
//!   `engine/window.rs`);
//! - a stream through a chunk store (`engine/cached.rs`): the wanted chunk's GETs and its
//!   restored bytes while it loads; each read-ahead load its chunk (`C + S(C)`), taken only
//!   when free (read-ahead never waits for budget);
//! - fetchIndex: `2 x` the index's stored size.
//!
//! Not counted: manifests (a few KiB each, at most 32 MiB by the reader's own check), the
//! caches (bounded by their own `fetch.*.cache.size` keys), and the SDKs' socket buffers.
//! The default read-ahead store (`tsm.fetch.read.ahead.store.bytes`, used when no chunk
//! cache is configured) is carved out of the budget when the engine is built: the calls
//! share `tsm.memory.budget.bytes` minus the store's bound (at most half the budget).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::RsmError;

/// Default `tsm.memory.budget.bytes`.
pub const DEFAULT_MEMORY_BUDGET: u64 = 256 * 1024 * 1024;

/// Permits are counted in KiB so one reservation (a `u32` of permits) can cover 4 TiB.
const UNIT: u64 = 1024;

/// Stored bytes of one chunk of `chunk` original bytes, at most: zstd's worst-case
/// expansion (under 1/128 + 64 bytes) plus the AES-GCM IV and tag.
pub fn stored_chunk_bound(chunk: u64) -> u64 {
    chunk + chunk / 128 + 1024
}

/// A copy's working set (see the module docs).
pub fn copy_bytes(
    chunk: u64,
    max_in_flight: usize,
    largest_index: u64,
    upload_buffers: u64,
) -> u64 {
    (max_in_flight as u64 + 2)
        .saturating_mul(chunk + stored_chunk_bound(chunk))
        .saturating_add(largest_index.saturating_mul(2))
        .saturating_add(upload_buffers)
}

/// A transformed fetch stream's working set (see the module docs): the restore pipeline
/// plus `window_gets` GETs of at most `window_get_bytes` stored bytes each.
pub fn fetch_bytes(
    chunk: u64,
    max_in_flight: usize,
    window_gets: usize,
    window_get_bytes: u64,
) -> u64 {
    (max_in_flight as u64 + 2)
        .saturating_mul(chunk + stored_chunk_bound(chunk))
        .saturating_add((window_gets as u64).saturating_mul(window_get_bytes))
}

/// The engine's budget: a semaphore of KiB permits.
#[derive(Clone, Debug)]
pub struct MemoryBudget {
    permits: Arc<Semaphore>,
    total_units: u32,
}

/// Budget held by one call; returned when dropped.
#[derive(Debug)]
pub struct Reservation {
    _permit: OwnedSemaphorePermit,
}

impl MemoryBudget {
    /// A budget of `bytes` (at least 1 MiB).
    pub fn new(bytes: u64) -> Self {
        let units = (bytes.max(1 << 20) / UNIT).min(u64::from(u32::MAX)) as u32;
        Self {
            permits: Arc::new(Semaphore::new(units as usize)),
            total_units: units,
        }
    }

    /// The whole budget, bytes.
    pub fn total(&self) -> u64 {
        u64::from(self.total_units) * UNIT
    }

    /// Bytes reserved by calls in flight.
    pub fn in_use(&self) -> u64 {
        let free = self.permits.available_permits() as u64;
        (u64::from(self.total_units).saturating_sub(free)) * UNIT
    }

    /// Reserves `bytes` now, or `None` when they are not free (read-ahead, which never
    /// waits for budget).
    pub fn try_reserve(&self, bytes: u64) -> Option<Reservation> {
        let units = bytes.div_ceil(UNIT).clamp(1, u64::from(self.total_units)) as u32;
        self.permits
            .clone()
            .try_acquire_many_owned(units)
            .ok()
            .map(|permit| Reservation { _permit: permit })
    }

    /// Reserves `bytes` for `what()`, waiting at most `limit` (config key `key` named in
    /// the error) while other calls hold the budget.
    pub async fn reserve(
        &self,
        bytes: u64,
        limit: Duration,
        key: &'static str,
        what: impl FnOnce() -> String,
    ) -> Result<Reservation, RsmError> {
        let units = bytes.div_ceil(UNIT).clamp(1, u64::from(self.total_units)) as u32;
        let acquire = self.permits.clone().acquire_many_owned(units);
        match tokio::time::timeout(limit, acquire).await {
            Ok(Ok(permit)) => Ok(Reservation { _permit: permit }),
            // The semaphore is never closed; treat it as exhausted anyway.
            Ok(Err(_)) | Err(_) => Err(RsmError::Timeout {
                what: format!(
                    "{} KiB of the {} KiB memory budget (tsm.memory.budget.bytes) for {}",
                    units,
                    self.total_units,
                    what()
                ),
                after_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                key,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn waits_then_fails_with_a_retriable_error_and_returns_permits_on_drop() {
        let b = MemoryBudget::new(4 << 20);
        let held = b
            .reserve(3 << 20, Duration::from_secs(1), "k", || "a".into())
            .await
            .expect("fits");
        assert_eq!(b.in_use(), 3 << 20);
        let e = b
            .reserve(2 << 20, Duration::from_secs(1), "k", || "copy of x".into())
            .await
            .expect_err("exhausted");
        assert!(e.is_transient(), "{e}");
        assert!(e.to_string().contains("copy of x"), "{e}");
        drop(held);
        assert_eq!(b.in_use(), 0);
        // Larger than the whole budget: takes all of it.
        let all = b
            .reserve(64 << 20, Duration::from_secs(1), "k", || "big".into())
            .await
            .expect("clamped");
        assert_eq!(b.in_use(), b.total());
        drop(all);
        assert_eq!(b.in_use(), 0);
    }

    #[test]
    fn formulas() {
        let c = 4 << 20;
        assert!(stored_chunk_bound(c) > c);
        assert_eq!(
            copy_bytes(c, 2, 10, 100),
            4 * (c + stored_chunk_bound(c)) + 20 + 100
        );
        assert_eq!(
            fetch_bytes(c, 2, 3, 10),
            4 * (c + stored_chunk_bound(c)) + 30
        );
    }
}
