//! Caches in front of the backend: segment manifests, segment indexes and chunks.
//!
//! - [`AsyncCache`]: the generic async cache (moka): single-flight loads, bounded by entries
//!   or bytes ([`Bound`]), time-to-live, failed or cancelled loads never cached, metrics
//!   `cache.<name>.*`. The engine builds its manifest cache (`fetch.manifest.cache.*`,
//!   entries) and indexes cache (`fetch.indexes.cache.*`, bytes) from it.
//! - [`ChunkCache`]: original (detransformed) chunk bytes keyed by [`ChunkKey`], in memory
//!   or on disk (`fetch.chunk.cache.*`), filled by fetch loads and prefetch.
//!
//! Data comes from the engine's loader futures (backend downloads plus detransform) and
//! goes back to the engine's fetch paths. Errors of a shared load reach every waiter
//! through [`SharedError`].
//!
//! ```ignore
//! let chunks = ChunkCache::from_config(&cfg.chunk_cache, &registry)?;
//! if let Some(cache) = &chunks {
//!     let bytes = cache
//!         .get_or_load(ChunkKey::new(log_key.as_str(), i), async { download_chunk(i).await })
//!         .await?;
//! }
//! ```

pub mod async_cache;
pub mod chunk;
mod shared_error;

pub use async_cache::{AsyncCache, AsyncCacheBuilder, Bound};
pub use chunk::{
    ChunkCache, ChunkCacheError, ChunkKey, DISK_CACHE_DIR, DISK_CACHE_MARKER, DISK_FALLBACK_BYTES,
};
pub use shared_error::SharedError;
