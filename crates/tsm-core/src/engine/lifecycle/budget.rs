//! Admission: the memory every call may hold, in two pools carved out of one budget
//! (`tsm.memory.budget.bytes`, default 512 MiB), so reads never queue behind copies.
//!
//! | pool | who reserves from it | size | a call waits at most |
//! |---|---|---|---|
//! | read-ahead store | the default read-ahead store's chunks (no chunk cache) | `tsm.fetch.read.ahead.store.bytes`, at most half the budget | never waits (evicts) |
//! | copies | `copyLogSegmentData` | `tsm.memory.copy.bytes`; unset: the larger of half of what is left and one copy's working set | `tsm.storage.upload.timeout.ms` |
//! | reads | fetch streams, `fetchIndex`, read-ahead (only what is free) | the rest | `tsm.storage.get.first.byte.timeout.ms` |
//!
//! Each call reserves before it allocates and gives back when it ends (returns, fails, or
//! its future / stream is dropped: the [`Reservation`] is an RAII permit). A pool is a
//! first-come-first-served semaphore of KiB permits: a copy waiting for the copies' pool
//! holds up other copies only. A call never takes more than its pool: [`plan`] refuses at
//! `configure` a configuration whose pools cannot hold one call of their class (naming the
//! keys), and a call that would need more than its whole pool at run time (an index file
//! larger than the configure-time assumption, [`NOMINAL_INDEX_BYTES`]) fails with
//! [`RsmError::InvalidArgument`] naming the pool's key instead of being clamped.
//!
//! The working sets (bytes; `C` = `chunk.size`, `S(C)` = [`stored_chunk_bound`], `F` =
//! `tsm.max.in.flight`, `P` = the backend's upload buffers from
//! [`StorageBackend::upload_buffer_bytes`](crate::StorageBackend::upload_buffer_bytes),
//! `G` = `tsm.fetch.gets.in.flight`):
//! - copy: `(F + 2) x (C + S(C)) + 2 x largest index + P` ([`copy_bytes`]) — the transform
//!   pipeline, the chunk being read and the one being cut, one index (plain and
//!   encrypted), part buffers; reserved once, before the first byte is read;
//! - a chunk load (a stream through a chunk store, `engine/cached.rs`): the restored
//!   chunk (`C`) while it loads, plus its sub-range GETs (`S(C)` in all, each reserved as
//!   it is issued); each read-ahead load its chunk (`C + S(C)`), taken only when free;
//! - a plain GET (`engine/window.rs`): its own length, from issue until its last byte was
//!   handed out; a stream has at most `G` of them;
//! - fetchIndex: `2 x` the index's stored size.
//!
//! One read's largest reservation ([`read_floor`]) must fit the reads' pool. Not counted:
//! manifests (bounded by `fetch.manifest.cache.*`, each at most 32 MiB by the reader's
//! own check), the other caches (their `fetch.*.cache.size` keys), the SDKs' socket
//! buffers.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::names;
use crate::{ConfigError, RsmError};

/// Default `tsm.memory.budget.bytes`: one S3 copy with its defaults (25 MiB parts, 4 in
/// flight: about 180 MiB at 2 cores, 290 MiB at 16), the default read-ahead store
/// (80 MiB) and the reads' pool fit.
pub const DEFAULT_MEMORY_BUDGET: u64 = 512 * 1024 * 1024;

/// The largest index the configure-time check assumes a copy or `fetchIndex` holds:
/// Kafka's `log.index.size.max.bytes` default (10 MiB), which bounds the offset and time
/// indexes.
pub const NOMINAL_INDEX_BYTES: u64 = 10 * 1024 * 1024;

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

/// The largest single reservation of a read (see the module docs): a chunk load, one
/// plain GET of at most `largest_get` bytes, or a `fetchIndex` of a nominal index.
pub fn read_floor(chunk: u64, largest_get: u64) -> u64 {
    (chunk + stored_chunk_bound(chunk))
        .max(largest_get)
        .max(2 * NOMINAL_INDEX_BYTES)
}

/// What `configure` derives the pools from (all bytes).
#[derive(Clone, Copy, Debug)]
pub struct PoolInputs {
    /// `tsm.memory.budget.bytes`.
    pub budget: u64,
    /// `tsm.memory.copy.bytes`, when set.
    pub copies: Option<u64>,
    /// The default read-ahead store's bound (0 without it), carved out first.
    pub store: u64,
    /// One copy's working set at [`NOMINAL_INDEX_BYTES`] ([`copy_bytes`]).
    pub one_copy: u64,
    /// One read's largest reservation ([`read_floor`]).
    pub one_read: u64,
}

/// The sizes of the two pools (bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolSizes {
    /// The copies' pool.
    pub copies: u64,
    /// The reads' pool.
    pub reads: u64,
}

/// The pools of a configuration, or [`RsmError::Config`] naming the keys when one pool
/// cannot hold one call of its class.
pub fn plan(i: PoolInputs) -> Result<PoolSizes, RsmError> {
    let calls = i.budget.saturating_sub(i.store);
    let copies = i.copies.unwrap_or_else(|| (calls / 2).max(i.one_copy));
    let mib = |b: u64| b.div_ceil(1 << 20);
    if copies < i.one_copy {
        return Err(ConfigError::new(
            names::MEMORY_COPY_BYTES,
            copies.to_string(),
            format!(
                "the copies' pool cannot hold one copy: a copy needs {} MiB ((tsm.max.in.flight \
                 + 2) x 2 x chunk.size + 2 x {} MiB of index + the backend's part buffers); \
                 raise {} or lower tsm.max.in.flight, chunk.size or the backend's part size / \
                 parts in flight",
                mib(i.one_copy),
                mib(NOMINAL_INDEX_BYTES),
                names::MEMORY_COPY_BYTES,
            ),
        )
        .into());
    }
    let reads = calls.saturating_sub(copies);
    if reads < i.one_read {
        return Err(ConfigError::new(
            names::MEMORY_BUDGET_BYTES,
            i.budget.to_string(),
            format!(
                "leaves {} MiB for reads after the copies' pool ({} MiB, {}) and the \
                 read-ahead store ({} MiB, {}); one read needs {} MiB (a chunk load: 2 x \
                 chunk.size; or a fetchIndex of a {} MiB index: 2 x); raise {} or lower {}",
                mib(reads),
                mib(copies),
                names::MEMORY_COPY_BYTES,
                mib(i.store),
                names::FETCH_READ_AHEAD_STORE_BYTES,
                mib(i.one_read),
                mib(NOMINAL_INDEX_BYTES),
                names::MEMORY_BUDGET_BYTES,
                names::MEMORY_COPY_BYTES,
            ),
        )
        .into());
    }
    Ok(PoolSizes { copies, reads })
}

/// One pool: a semaphore of KiB permits. `key` names the setting that sizes it.
#[derive(Clone, Debug)]
pub struct MemoryBudget {
    permits: Arc<Semaphore>,
    total_units: u32,
    key: &'static str,
}

/// Memory held by one call; returned when dropped.
#[derive(Debug)]
pub struct Reservation {
    _permit: OwnedSemaphorePermit,
}

impl MemoryBudget {
    /// A pool of `bytes` (whole KiB, at least 1), sized by the setting `key`.
    pub fn new(bytes: u64, key: &'static str) -> Self {
        let units = (bytes / UNIT).clamp(1, u64::from(u32::MAX)) as u32;
        Self {
            permits: Arc::new(Semaphore::new(units as usize)),
            total_units: units,
            key,
        }
    }

    /// The whole pool, bytes.
    pub fn total(&self) -> u64 {
        u64::from(self.total_units) * UNIT
    }

    /// The setting that sizes this pool.
    pub fn key(&self) -> &'static str {
        self.key
    }

    /// Bytes reserved by calls in flight.
    pub fn in_use(&self) -> u64 {
        let free = self.permits.available_permits() as u64;
        (u64::from(self.total_units).saturating_sub(free)) * UNIT
    }

    /// The permits for `bytes`, or `Err(units)` when that is more than the whole pool.
    fn units(&self, bytes: u64) -> Result<u32, u64> {
        let units = bytes.div_ceil(UNIT).max(1);
        u32::try_from(units)
            .ok()
            .filter(|&u| u <= self.total_units)
            .ok_or(units)
    }

    /// Reserves `bytes` now, or `None` when they are not free (read-ahead, which never
    /// waits for memory).
    pub fn try_reserve(&self, bytes: u64) -> Option<Reservation> {
        let units = self.units(bytes).ok()?;
        self.permits
            .clone()
            .try_acquire_many_owned(units)
            .ok()
            .map(|permit| Reservation { _permit: permit })
    }

    /// Reserves `bytes` for `what()`, waiting at most `limit` (the deadline `key`, named in
    /// the error) while other calls of the pool hold it. More than the whole pool:
    /// [`RsmError::InvalidArgument`] at once.
    pub async fn reserve(
        &self,
        bytes: u64,
        limit: Duration,
        key: &'static str,
        what: impl FnOnce() -> String,
    ) -> Result<Reservation, RsmError> {
        let units = match self.units(bytes) {
            Ok(u) => u,
            Err(units) => {
                return Err(RsmError::InvalidArgument(format!(
                    "{} needs {} KiB, more than the whole pool of {} KiB ({}); raise {}",
                    what(),
                    units,
                    self.total_units,
                    self.key,
                    self.key
                )));
            }
        };
        let acquire = self.permits.clone().acquire_many_owned(units);
        match tokio::time::timeout(limit, acquire).await {
            Ok(Ok(permit)) => Ok(Reservation { _permit: permit }),
            // The semaphore is never closed; treat it as exhausted anyway.
            Ok(Err(_)) | Err(_) => Err(RsmError::MemoryWait {
                what: format!("{} KiB of {} KiB for {}", units, self.total_units, what()),
                after_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                deadline_key: key,
                pool_key: self.key,
            }),
        }
    }
}

/// The two pools of one engine.
#[derive(Clone, Debug)]
pub struct Pools {
    /// Copies reserve here.
    pub copies: MemoryBudget,
    /// Fetch streams, fetchIndex and read-ahead reserve here.
    pub reads: MemoryBudget,
}

impl Pools {
    /// The pools of `sizes`.
    pub fn new(sizes: PoolSizes) -> Self {
        Self {
            copies: MemoryBudget::new(sizes.copies, names::MEMORY_COPY_BYTES),
            reads: MemoryBudget::new(sizes.reads, names::MEMORY_BUDGET_BYTES),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn waits_then_fails_with_a_retriable_error_and_returns_permits_on_drop() {
        let b = MemoryBudget::new(4 << 20, "tsm.memory.copy.bytes");
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
        assert!(matches!(e, RsmError::MemoryWait { .. }), "{e}");
        assert!(e.to_string().contains("copy of x"), "{e}");
        assert!(e.to_string().contains("tsm.memory.copy.bytes"), "{e}");
        drop(held);
        assert_eq!(b.in_use(), 0);
        // Larger than the whole pool: refused at once, nothing taken.
        let e = b
            .reserve(64 << 20, Duration::from_secs(1), "k", || "big".into())
            .await
            .expect_err("more than the pool");
        assert!(!e.is_transient(), "{e}");
        assert!(e.to_string().contains("big needs 65536 KiB"), "{e}");
        assert!(b.try_reserve(64 << 20).is_none());
        assert_eq!(b.in_use(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_copies_pool_does_not_hold_up_reads() {
        let pools = Pools::new(PoolSizes {
            copies: 8 << 20,
            reads: 8 << 20,
        });
        let _copy = pools
            .copies
            .reserve(8 << 20, Duration::from_secs(1), "k", || "copy".into())
            .await
            .expect("copy");
        let waiting = pools
            .copies
            .reserve(1 << 20, Duration::from_secs(60), "k", || "copy 2".into());
        tokio::pin!(waiting);
        assert!(futures::poll!(&mut waiting).is_pending());
        let read = pools
            .reads
            .reserve(8 << 20, Duration::ZERO, "k", || "read".into())
            .await;
        assert!(read.is_ok(), "a read waited behind a copy");
    }

    #[test]
    fn formulas() {
        let c = 4 << 20;
        assert!(stored_chunk_bound(c) > c);
        assert_eq!(
            copy_bytes(c, 2, 10, 100),
            4 * (c + stored_chunk_bound(c)) + 20 + 100
        );
        assert_eq!(read_floor(c, 1), 2 * NOMINAL_INDEX_BYTES);
        assert_eq!(
            read_floor(16 << 20, 1),
            (16 << 20) + stored_chunk_bound(16 << 20)
        );
    }

    fn inputs(budget: u64, copies: Option<u64>) -> PoolInputs {
        PoolInputs {
            budget,
            copies,
            store: 80 << 20,
            one_copy: 180 << 20,
            one_read: 20 << 20,
        }
    }

    #[test]
    fn plan_defaults_explicit_and_refusals() {
        // Default: half of what is left after the store, at least one copy.
        assert_eq!(
            plan(inputs(DEFAULT_MEMORY_BUDGET, None)).expect("default"),
            PoolSizes {
                copies: 216 << 20,
                reads: 216 << 20
            }
        );
        assert_eq!(
            plan(inputs(400 << 20, None)).expect("one copy"),
            PoolSizes {
                copies: 180 << 20,
                reads: 140 << 20
            }
        );
        let e = plan(inputs(DEFAULT_MEMORY_BUDGET, Some(100 << 20))).expect_err("small");
        assert!(
            e.to_string().contains("tsm.memory.copy.bytes=104857600"),
            "{e}"
        );
        assert!(e.to_string().contains("180 MiB"), "{e}");
        let e = plan(inputs(256 << 20, None)).expect_err("no room for reads");
        let text = e.to_string();
        assert!(text.contains("tsm.memory.budget.bytes=268435456"), "{text}");
        assert!(text.contains("tsm.fetch.read.ahead.store.bytes"), "{text}");
        let e = plan(inputs(1 << 20, None)).expect_err("1 MiB");
        assert!(e.to_string().contains("tsm.memory"), "{e}");
    }
}
