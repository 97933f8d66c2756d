//! [`ChunkCache`]: detransformed (original) chunk bytes of `.log` objects, in memory or on
//! disk (`fetch.chunk.cache.class` = `memory` | `disk`), bounded in bytes
//! (`fetch.chunk.cache.size`) with a time-to-live (`fetch.chunk.cache.retention.ms`).
//!
//! Data comes from the engine's loader (ranged GET of the chunk, decrypt, decompress) or
//! from prefetch ([`ChunkCache::insert`]), and goes to `fetch_log_segment` streams. Loads
//! are single-flight (8 concurrent readers of one chunk: one download) and failed or
//! cancelled loads are never cached; see [`AsyncCache`].
//!
//! # Memory
//! Memory kind: at most `fetch.chunk.cache.size` bytes of chunks (plus moka's batching
//! slack). Disk kind: an in-memory index only; each hit reads one chunk file (at most
//! `chunk.size` bytes) into memory.
//!
//! # Disk layout
//! The disk cache lives in `<fetch.chunk.cache.path>/tsm-chunk-cache/`, marked by the file
//! `.tsm-chunk-cache` it writes there. It only ever creates and deletes files named
//! `*.chunk` / `*.chunk.tmp` in that directory. At start it removes its own leftover
//! `*.chunk` / `*.chunk.tmp` files (their index died with the last process: they are
//! discarded, never reused) and nothing else; if the directory exists without the marker
//! it refuses to start rather than touch files it did not create.
//!
//! The files hold **decrypted, decompressed** segment bytes: the directory is created
//! `0700` (and set to it when it exists), every chunk file `0600`. Each live cache holds an
//! exclusive lock on `.lock` in its directory; a second instance with the same path (two
//! class loaders in one broker, two brokers sharing a volume) takes the next free
//! `tsm-chunk-cache-<n>` (n = 2..16) instead, so no instance ever wipes another's files.
//! A deleted segment's chunks are purged when its manifest is still cached (otherwise
//! they age out with `fetch.chunk.cache.retention.ms`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use super::{AsyncCache, Bound, SharedError};
use crate::config::{ChunkCacheConfig, ChunkCacheKind};
use crate::metrics::MetricsRegistry;

/// Name of the disk cache's own subdirectory under `fetch.chunk.cache.path`.
pub const DISK_CACHE_DIR: &str = "tsm-chunk-cache";
/// RAM one disk cache may hold for chunks whose file could not be written (disk full, the
/// directory gone): beyond it such a chunk is not cached at all, so a failing disk never
/// turns the disk-sized bound into RAM.
pub const DISK_FALLBACK_BYTES: u64 = 32 * 1024 * 1024;

/// Marker file proving the directory is a tsm chunk cache.
pub const DISK_CACHE_MARKER: &str = ".tsm-chunk-cache";
const MARKER_CONTENT: &[u8] =
    b"tsm chunk cache v1: files *.chunk here are created and deleted by tsm\n";

/// Identifies one chunk: the `.log` object's full key, the generation of the segment it
/// was read under (the engine's, bumped when the segment is deleted or overwritten, so a
/// chunk of an older version is never looked up again) and the chunk's index in it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ChunkKey {
    /// The `.log` object key (`ObjectKey::as_str`), unique per segment.
    pub object: Arc<str>,
    /// The segment's generation (0 from [`ChunkKey::new`]).
    pub generation: u64,
    /// 0-based chunk index.
    pub chunk: u64,
}

impl ChunkKey {
    /// Chunk `chunk` of object `object`, generation 0.
    pub fn new(object: impl Into<Arc<str>>, chunk: u64) -> Self {
        Self::of_generation(object, 0, chunk)
    }

    /// Chunk `chunk` of object `object` read under `generation`.
    pub fn of_generation(object: impl Into<Arc<str>>, generation: u64, chunk: u64) -> Self {
        Self {
            object: object.into(),
            generation,
            chunk,
        }
    }
}

/// A chunk file, deleted when its entry leaves the cache (see `on_remove` in
/// [`ChunkCache::disk`]). A reader that already opened it keeps reading (POSIX semantics);
/// one that had not yet opened it sees it missing and reloads.
#[derive(Debug)]
struct ChunkFile {
    path: PathBuf,
}

/// A disk cache entry: normally a file; the bytes themselves when the file could not be
/// written (disk full), within [`DISK_FALLBACK_BYTES`] for the whole cache.
#[derive(Clone, Debug)]
enum DiskEntry {
    File { file: Arc<ChunkFile>, len: u64 },
    Memory(Bytes),
}

impl DiskEntry {
    fn len(&self) -> u64 {
        match self {
            Self::File { len, .. } => *len,
            Self::Memory(b) => b.len() as u64,
        }
    }

    async fn read(&self) -> std::io::Result<Bytes> {
        match self {
            Self::File { file, .. } => tokio::fs::read(&file.path).await.map(Bytes::from),
            Self::Memory(b) => Ok(b.clone()),
        }
    }
}

#[derive(Clone, Debug)]
enum Store {
    Memory(AsyncCache<ChunkKey, Bytes>),
    Disk {
        index: AsyncCache<ChunkKey, DiskEntry>,
        dir: Arc<PathBuf>,
        seq: Arc<AtomicU64>,
        /// Bytes held by [`DiskEntry::Memory`] entries now.
        fallback: Arc<AtomicU64>,
        run: u128,
        /// Holds the directory's `.lock` for the cache's lifetime.
        _lock: Arc<std::fs::File>,
    },
}

/// The chunk cache (memory or disk). Cheap to clone (shared).
#[derive(Clone, Debug)]
pub struct ChunkCache {
    store: Store,
    /// Its bound in bytes (`None`: unbounded).
    capacity: Option<u64>,
}

/// Why the disk chunk cache cannot start.
#[derive(Debug, thiserror::Error)]
#[error("chunk cache directory {path}: {detail}")]
pub struct ChunkCacheError {
    /// The directory concerned.
    pub path: PathBuf,
    /// What is wrong.
    pub detail: String,
}

/// The bytes of a [`Bound::Bytes`] bound (`None` for the other bounds).
fn bound_bytes(bound: Bound) -> Option<u64> {
    match bound {
        Bound::Bytes(n) => Some(n),
        _ => None,
    }
}

impl ChunkCache {
    /// The cache `config` describes, or `None` when `fetch.chunk.cache.class` is unset.
    ///
    /// # Errors
    /// Disk kind only: the cache directory cannot be created or cleaned, or exists without
    /// the marker (see the module docs).
    pub fn from_config(
        config: &ChunkCacheConfig,
        registry: &MetricsRegistry,
    ) -> Result<Option<Self>, ChunkCacheError> {
        let bound = config.size_bytes.map_or(Bound::Unbounded, Bound::Bytes);
        Ok(match &config.kind {
            None => None,
            Some(ChunkCacheKind::Memory) => Some(Self::memory(bound, config.retention, registry)),
            Some(ChunkCacheKind::Disk { path }) => {
                Some(Self::disk(path, bound, config.retention, registry)?)
            }
        })
    }

    /// An in-memory cache bounded by `bound` (bytes of chunk data), metrics
    /// `cache.chunk.*`.
    pub fn memory(
        bound: Bound,
        ttl: Option<std::time::Duration>,
        registry: &MetricsRegistry,
    ) -> Self {
        Self::memory_named("chunk", bound, ttl, registry)
    }

    /// As [`ChunkCache::memory`], with metrics `cache.<name>.*` (the engine's default
    /// read-ahead store is `readahead`).
    pub fn memory_named(
        name: &str,
        bound: Bound,
        ttl: Option<std::time::Duration>,
        registry: &MetricsRegistry,
    ) -> Self {
        let cache = AsyncCache::builder(name)
            .bound(bound)
            .ttl(ttl)
            .weigher(|_k: &ChunkKey, v: &Bytes| v.len() as u64)
            .lru()
            .metrics(registry)
            .build();
        Self {
            store: Store::Memory(cache),
            capacity: bound_bytes(bound),
        }
    }

    /// A disk cache in `<base>/tsm-chunk-cache/`, bounded by `bound` (bytes of chunk
    /// files). `base` must exist.
    ///
    /// # Errors
    /// See [`ChunkCache::from_config`].
    pub fn disk(
        base: &Path,
        bound: Bound,
        ttl: Option<std::time::Duration>,
        registry: &MetricsRegistry,
    ) -> Result<Self, ChunkCacheError> {
        let (dir, lock) = claim_disk_dir(base)?;
        let capacity = bound_bytes(bound);
        let fallback = Arc::new(AtomicU64::new(0));
        let held = fallback.clone();
        let index = AsyncCache::builder("chunk")
            .bound(bound)
            .ttl(ttl)
            .weigher(|_k: &ChunkKey, e: &DiskEntry| e.len())
            .lru()
            .on_remove(move |_k, e: DiskEntry| match e {
                DiskEntry::File { file, .. } => {
                    let _ = std::fs::remove_file(&file.path);
                }
                DiskEntry::Memory(b) => {
                    held.fetch_sub(b.len() as u64, Ordering::Relaxed);
                }
            })
            .metrics(registry)
            .build();
        let run = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        Ok(Self {
            store: Store::Disk {
                index,
                dir: Arc::new(dir),
                seq: Arc::new(AtomicU64::new(0)),
                fallback,
                run,
                _lock: Arc::new(lock),
            },
            capacity,
        })
    }

    /// The chunk from the cache, or from `loader` (then cached). Concurrent calls for one
    /// key share one load; a failed or cancelled load is not cached.
    ///
    /// # Errors
    /// The loader's error (see [`SharedError`]). Disk kind: a chunk file that cannot be
    /// written is not an error for the caller that loaded it nor for those waiting on that
    /// load (the entry keeps the bytes in memory within [`DISK_FALLBACK_BYTES`], else the
    /// chunk is not cached, with a warning, and every waiter gets the loaded bytes); a cached
    /// file someone else removed is dropped and loaded again; only if that happens to a
    /// file loaded by a concurrent caller is it a [`ChunkCacheError`].
    pub async fn get_or_load<F, E>(&self, key: ChunkKey, loader: F) -> Result<Bytes, E>
    where
        F: std::future::Future<Output = Result<Bytes, E>> + Send,
        E: SharedError + From<ChunkCacheError>,
    {
        match &self.store {
            Store::Memory(cache) => cache.get_or_load(key, loader).await,
            Store::Disk {
                index,
                dir,
                seq,
                fallback,
                run,
                ..
            } => {
                if let Some(entry) = index.lookup(&key).await {
                    match entry.read().await {
                        Ok(bytes) => return Ok(bytes),
                        Err(e) => {
                            // Only possible if someone removed our file: drop and reload.
                            tracing::warn!(error = %e, "chunk cache file unreadable; reloading");
                            index.invalidate(&key).await;
                        }
                    }
                }
                // This call's own loaded bytes, so the file just written is not read back.
                let own: Arc<std::sync::Mutex<Option<Bytes>>> = Arc::default();
                let slot = own.clone();
                let path = dir.join(format!(
                    "{run:x}-{:x}.chunk",
                    seq.fetch_add(1, Ordering::Relaxed)
                ));
                let loaded = index
                    .get_or_load(key, async move {
                        let bytes = loader.await.map_err(|e| Shared::Failed(Arc::new(e)))?;
                        *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(bytes.clone());
                        // Not cached (no file, the in-memory fallback full: `write_entry`
                        // warned): the load's waiters still get its bytes.
                        write_entry(&path, bytes.clone(), fallback)
                            .await
                            .map_err(|_| Shared::NotCached(bytes))
                    })
                    .await;
                // This caller's own bytes, whether or not they could be cached.
                if let Some(bytes) = own.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    return Ok(bytes);
                }
                let entry = match loaded {
                    Ok(entry) => entry,
                    Err(Shared::NotCached(bytes)) => return Ok(bytes),
                    Err(Shared::Failed(e)) => return Err(E::from_shared(e)),
                };
                entry.read().await.map_err(|e| {
                    E::from(ChunkCacheError {
                        path: dir.to_path_buf(),
                        detail: format!("cannot read a cached chunk file: {e}"),
                    })
                })
            }
        }
    }

    /// The cached chunk, without loading it. Disk kind: a file that cannot be read counts
    /// as absent.
    pub async fn get(&self, key: &ChunkKey) -> Option<Bytes> {
        match &self.store {
            Store::Memory(cache) => cache.lookup(key).await,
            Store::Disk { index, .. } => index.lookup(key).await?.read().await.ok(),
        }
    }

    /// Caches `bytes` for `key` (prefetch). Disk kind: a write failure is logged and
    /// ignored.
    pub async fn insert(&self, key: ChunkKey, bytes: Bytes) {
        match &self.store {
            Store::Memory(cache) => cache.insert(key, bytes).await,
            Store::Disk {
                index,
                dir,
                seq,
                fallback,
                run,
                ..
            } => {
                let path = dir.join(format!(
                    "{run:x}-{:x}.chunk",
                    seq.fetch_add(1, Ordering::Relaxed)
                ));
                if let Ok(entry) = write_entry(&path, bytes, fallback).await {
                    index.insert(key, entry).await;
                }
            }
        }
    }

    /// Drops one chunk (disk kind: its file is removed).
    pub async fn invalidate(&self, key: &ChunkKey) {
        match &self.store {
            Store::Memory(c) => c.invalidate(key).await,
            Store::Disk { index, .. } => index.invalidate(key).await,
        }
    }

    /// Drops chunks `0..chunks` of `object` read under `generation` (its segment was
    /// deleted or overwritten); disk kind: their files are removed. `chunks` comes from a
    /// manifest, which the bucket's writer controls: when it exceeds the entries cached,
    /// one pass over the cache replaces the per-chunk loop, so the work is bounded by the
    /// cache, not by the manifest.
    pub async fn invalidate_object(&self, object: &str, generation: u64, chunks: u64) {
        let object: Arc<str> = Arc::from(object);
        if chunks > self.entry_count() {
            let matches = |k: &ChunkKey| k.object == object && k.generation == generation;
            match &self.store {
                Store::Memory(c) => c.invalidate_where(matches).await,
                Store::Disk { index, .. } => index.invalidate_where(matches).await,
            }
            return;
        }
        for n in 0..chunks {
            let key = ChunkKey::of_generation(object.clone(), generation, n);
            match &self.store {
                Store::Memory(c) => c.invalidate(&key).await,
                Store::Disk { index, .. } => index.invalidate(&key).await,
            }
        }
    }

    /// True when `key` is cached (prefetch uses it to skip chunks already present).
    pub fn contains(&self, key: &ChunkKey) -> bool {
        match &self.store {
            Store::Memory(c) => c.contains(key),
            Store::Disk { index, .. } => index.contains(key),
        }
    }

    /// Applies pending evictions now (tests, shutdown).
    pub async fn run_pending_tasks(&self) {
        match &self.store {
            Store::Memory(c) => c.run_pending_tasks().await,
            Store::Disk { index, .. } => index.run_pending_tasks().await,
        }
    }

    /// Chunks cached (approximate until [`Self::run_pending_tasks`]).
    pub fn entry_count(&self) -> u64 {
        match &self.store {
            Store::Memory(c) => c.entry_count(),
            Store::Disk { index, .. } => index.entry_count(),
        }
    }

    /// Bytes cached (approximate until [`Self::run_pending_tasks`]).
    pub fn weighted_size(&self) -> u64 {
        match &self.store {
            Store::Memory(c) => c.weighted_size(),
            Store::Disk { index, .. } => index.weighted_size(),
        }
    }

    /// The most bytes of chunk data the cache holds (`None`: unbounded). Read-ahead stays
    /// well inside it (`engine/cached.rs`), or it evicts its own chunks before they are read.
    pub fn capacity_bytes(&self) -> Option<u64> {
        self.capacity
    }

    /// Bytes of chunks a disk cache keeps in memory because their files could not be
    /// written (at most [`DISK_FALLBACK_BYTES`]; 0 for the memory kind).
    pub fn fallback_bytes(&self) -> u64 {
        match &self.store {
            Store::Memory(_) => 0,
            Store::Disk { fallback, .. } => fallback.load(Ordering::Relaxed),
        }
    }

    /// The disk cache's own directory (`None` for the memory kind).
    pub fn disk_dir(&self) -> Option<&Path> {
        match &self.store {
            Store::Memory(_) => None,
            Store::Disk { dir, .. } => Some(dir),
        }
    }
}

/// How a disk-cache load that caches nothing ends, for every caller waiting on it (the
/// index's single-flight error type, clonable for [`SharedError`]).
enum Shared<E> {
    /// The loader failed: every waiter gets its error.
    Failed(Arc<E>),
    /// The loader's bytes, which could not be cached (no chunk file and the in-memory
    /// fallback full): every waiter gets them, nothing is kept.
    NotCached(Bytes),
}

impl<E: Send + Sync + 'static> SharedError for Shared<E> {
    fn from_shared(shared: Arc<Self>) -> Self {
        match &*shared {
            Shared::Failed(e) => Shared::Failed(e.clone()),
            Shared::NotCached(bytes) => Shared::NotCached(bytes.clone()),
        }
    }
}

/// Writes `bytes` to a temp file, fsync-free (a cache), renames it to `path`; when the disk
/// refuses, keeps the bytes in memory if `fallback` (bytes so held) stays within
/// [`DISK_FALLBACK_BYTES`], else returns the write's error (nothing is cached).
async fn write_entry(
    path: &Path,
    bytes: Bytes,
    fallback: &AtomicU64,
) -> std::io::Result<DiskEntry> {
    let tmp = path.with_extension("chunk.tmp");
    let len = bytes.len() as u64;
    let result = async {
        let mut f = private_file_options().open(&tmp).await?;
        tokio::io::AsyncWriteExt::write_all(&mut f, &bytes).await?;
        // tokio's File writes in the background: without the flush the rename can overtake
        // the write and a reader sees a short file.
        tokio::io::AsyncWriteExt::flush(&mut f).await?;
        drop(f);
        tokio::fs::rename(&tmp, path).await
    }
    .await;
    match result {
        Ok(()) => Ok(DiskEntry::File {
            file: Arc::new(ChunkFile {
                path: path.to_path_buf(),
            }),
            len,
        }),
        Err(e) => {
            let _ = tokio::fs::remove_file(&tmp).await;
            let before = fallback.fetch_add(len, Ordering::Relaxed);
            if before + len <= DISK_FALLBACK_BYTES {
                tracing::warn!(path = %path.display(), error = %e, "cannot write a chunk cache file; keeping the chunk in memory");
                Ok(DiskEntry::Memory(bytes))
            } else {
                fallback.fetch_sub(len, Ordering::Relaxed);
                tracing::warn!(path = %path.display(), error = %e, "cannot write a chunk cache file; the chunk is not cached (the in-memory fallback is full)");
                Err(e)
            }
        }
    }
}

/// Chunk files: created (truncated) for writing, `0600` (they hold plaintext).
fn private_file_options() -> tokio::fs::OpenOptions {
    let mut o = tokio::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    o.mode(0o600);
    o
}

/// Largest `n` of `tsm-chunk-cache-<n>` tried when the directories before are in use.
const MAX_DISK_DIRS: u32 = 16;

/// The first of `tsm-chunk-cache`, `tsm-chunk-cache-2`, ... whose `.lock` this process can
/// lock, prepared ([`prepare_disk_dir`]) while holding the lock.
fn claim_disk_dir(base: &Path) -> Result<(PathBuf, std::fs::File), ChunkCacheError> {
    let mut last = None;
    for n in 1..=MAX_DISK_DIRS {
        let name = if n == 1 {
            DISK_CACHE_DIR.to_string()
        } else {
            format!("{DISK_CACHE_DIR}-{n}")
        };
        let dir = base.join(name);
        let lock = match prepare_disk_dir(&dir)? {
            Some(lock) => lock,
            None => {
                last = Some(dir);
                continue;
            }
        };
        return Ok((dir, lock));
    }
    Err(ChunkCacheError {
        path: last.unwrap_or_else(|| base.join(DISK_CACHE_DIR)),
        detail: format!(
            "{MAX_DISK_DIRS} chunk cache directories under this path are in use by other tsm \
             instances; give this one its own fetch.chunk.cache.path"
        ),
    })
}

/// Creates or checks the cache directory `dir` (`0700`), locks its `.lock` and removes
/// this cache's leftover files. `Ok(None)`: another live instance holds the lock.
fn prepare_disk_dir(dir: &Path) -> Result<Option<std::fs::File>, ChunkCacheError> {
    let dir = dir.to_path_buf();
    let fail = |detail: String| ChunkCacheError {
        path: dir.clone(),
        detail,
    };
    let marker = dir.join(DISK_CACHE_MARKER);
    if dir.exists() {
        match std::fs::read(&marker) {
            Ok(content) if content == MARKER_CONTENT => {}
            Ok(_) => {
                return Err(fail(format!(
                    "marker {DISK_CACHE_MARKER} has unexpected content; not touching this directory"
                )));
            }
            Err(e) => {
                return Err(fail(format!(
                    "exists but has no readable marker {DISK_CACHE_MARKER} ({e}); not a tsm chunk cache, not touching it"
                )));
            }
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| fail(format!("cannot make it private (0700): {e}")))?;
        }
        let Some(lock) = lock_dir(&dir).map_err(|e| fail(format!("cannot lock .lock: {e}")))?
        else {
            return Ok(None);
        };
        let entries = std::fs::read_dir(&dir).map_err(|e| fail(format!("cannot list: {e}")))?;
        for entry in entries {
            let entry = entry.map_err(|e| fail(format!("cannot list: {e}")))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let ours = name.ends_with(".chunk") || name.ends_with(".chunk.tmp");
            if ours && entry.file_type().map(|t| t.is_file()).unwrap_or(false) {
                std::fs::remove_file(entry.path())
                    .map_err(|e| fail(format!("cannot remove old cache file {name}: {e}")))?;
            }
        }
        Ok(Some(lock))
    } else {
        let mut b = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(&dir)
            .map_err(|e| fail(format!("cannot create: {e}")))?;
        std::fs::write(&marker, MARKER_CONTENT)
            .map_err(|e| fail(format!("cannot write marker: {e}")))?;
        lock_dir(&dir).map_err(|e| fail(format!("cannot lock .lock: {e}")))
    }
}

/// An exclusive lock on `<dir>/.lock` (released when the file is closed, also when the
/// process dies); `None` when another open file holds it.
// `File::try_lock` is Rust 1.89; the workspace still declares 1.85 although its
// dependencies already need 1.91 (google-cloud-storage): declaring the real MSRV is its own
// change (it turns on newer lints across the tree), noted on the house-keeping issue.
#[allow(clippy::incompatible_msrv)]
fn lock_dir(dir: &Path) -> std::io::Result<Option<std::fs::File>> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    let f = o.open(dir.join(".lock"))?;
    match f.try_lock() {
        Ok(()) => Ok(Some(f)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

impl From<ChunkCacheError> for crate::RsmError {
    fn from(e: ChunkCacheError) -> Self {
        crate::RsmError::Io {
            path: e.path.display().to_string(),
            source: std::io::Error::other(e.detail),
        }
    }
}

impl From<ChunkCacheError> for String {
    fn from(e: ChunkCacheError) -> Self {
        e.to_string()
    }
}
