//! The filesystem backend (`storage.backend.class=filesystem`, `storage.root`): the
//! embedded default, for single-node setups, tests and the CLI.
//!
//! Data comes from the engine as a [`ByteStream`] and goes to `<storage.root>/<key>`;
//! reads stream back out of those files. Object key `/` separators become directories.
//!
//! # Atomic uploads
//! An upload streams into a temporary file `<name>.tsm-tmp-<pid>-<n>` in the target's
//! directory, `fsync`s it, renames it over the target and `fsync`s the directory (and,
//! when it had to create directories, every ancestor up to the root). A crash
//! leaves at worst a temporary file (never listed, never fetched), never a partial object.
//! Readers that opened the old file keep reading the old bytes.
//!
//! Body items are written from the blocking pool while the next item is produced, and
//! writeback of what was written starts before the final `fsync` (`filesystem/writer.rs`).
//! (The Java plugin's `FileSystemStorage` writes the target in place with `Files.copy`: no
//! temporary file, no `fsync`; tsm keeps both, so a committed object survives a crash.)
//!
//! # Memory
//! Uploads hold two body items at a time (the one being written, the next); a fetch
//! holds one piece of at most 1 MiB ([`READ_BUFFER_SIZE`]), read straight into the buffer
//! it is handed out in; listings go through a channel of 256 entries. No call holds an
//! object in memory.
//!
//! # Paths
//! Keys that are empty, absolute, end in `/`, contain empty, `.` or `..` components, NUL
//! bytes or the temporary-file marker are rejected with [`BackendError::Other`], so no key
//! can address a file outside `storage.root`. Symbolic links under the root are not
//! followed by listings; uploads, fetches and deletes follow one only when it resolves
//! beneath the root (checked before each call touches the file: an object whose path
//! leads out of the root is an error naming the key, and nothing outside changes).
//!
//! # Overwrites
//! `storage.overwrite.enabled=true` (default): an upload replaces an existing object by
//! rename. `false`: the temporary file is hard-linked to the target, which fails when the
//! target exists; the upload then fails naming the key and the existing file is unchanged.
//!
//! # Deletes
//! Deleting an object removes its now-empty parent directories up to, never including,
//! the root.

use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;

use super::{
    BackendError, ByteRange, ByteStream, ListStream, ObjectKey, ObjectMeta, StorageBackend,
};
use crate::config::{BackendKind, ConfigError, ConfigKeyDoc, StorageConfig};
use crate::metrics::{Counter, MetricsRegistry};

mod writer;

/// Read buffer of fetch streams (bytes): the largest item a fetch stream yields. Each read
/// is one trip through tokio's blocking pool: 64 KiB reads made a 4 MiB chunk 64 trips and
/// capped a fetch stream at about 1 GB/s; 1 MiB reads reach about 4 GB/s (bench/). A
/// fetch's open, size check, seek and first read are one trip too: a broker's 1 MiB read,
/// cut into four sub-range GETs by the engine, was 16 trips through tokio's `File` (open,
/// stat, seek, read: each its own trip, each read copied once more out of tokio's buffer).
pub const READ_BUFFER_SIZE: usize = 1024 * 1024;

/// Marker in the names of temporary upload files; keys containing it are rejected.
const TEMP_MARKER: &str = ".tsm-tmp-";

/// How often an upload re-creates its directory after a concurrent delete pruned it
/// (each race needs a delete of the last object in that directory in between).
const MAX_DIR_RACES: u32 = 50;

/// `storage.root`
const ROOT_KEY: &str = "root";

/// The filesystem backend kind: `storage.backend.class=filesystem` or the Java plugin's
/// `io.aiven.kafka.tieredstorage.storage.filesystem.FileSystemStorage`.
pub static KIND: BackendKind = BackendKind {
    name: "filesystem",
    aliases: &["io.aiven.kafka.tieredstorage.storage.filesystem.FileSystemStorage"],
    keys: &[
        ConfigKeyDoc {
            name: "storage.root",
            default: "",
            doc: "Required. Directory holding the objects (created if missing; must be \
                  writable by the broker). Object keys become paths under it.",
            secret: false,
        },
        ConfigKeyDoc {
            name: "storage.overwrite.enabled",
            default: "true",
            doc: "Whether an upload may replace an existing object (atomically, by rename). \
                  `false` (the Java plugin's default for its filesystem storage): an upload \
                  to a key that exists fails with an error naming it and the file is left \
                  as it was; a broker copies each attempt under a new segment id, so copies \
                  never need to overwrite, but `tsm rekey` rewrites manifests and needs \
                  `true`. `true` or `false`.",
            secret: false,
        },
    ],
    build: |config| Box::pin(async move { build(config) }),
    validate,
    // Uploads write each item as it arrives (`upload_buffer_bytes` below).
    upload_buffer_bytes: |_| Ok(0),
};

fn validate(config: &StorageConfig) -> Result<(), ConfigError> {
    config.get_bool("overwrite.enabled", true)?;
    config.require(ROOT_KEY).map(drop)
}

fn build(config: StorageConfig) -> Result<Arc<dyn StorageBackend>, ConfigError> {
    let overwrite = config.get_bool("overwrite.enabled", true)?;
    let root = config.require(ROOT_KEY)?;
    let backend = FilesystemBackend::new(root)?
        .with_overwrite(overwrite)
        .with_metrics(config.metrics());
    Ok(Arc::new(backend))
}

/// Objects as files under a root directory. See the [module docs](self) for atomicity,
/// memory bounds and path rules.
#[derive(Clone)]
pub struct FilesystemBackend {
    root: Arc<PathBuf>,
    /// `root` with every symbolic link resolved: no resolved object path may leave it.
    real_root: Arc<PathBuf>,
    /// `storage.overwrite.enabled`.
    overwrite: bool,
    temp_counter: Arc<AtomicU64>,
    /// `client.get.requests`: one per fetch (file opened for reading).
    gets: Arc<Counter>,
    /// `client.put.requests`: one per upload (file written).
    puts: Arc<Counter>,
}

impl fmt::Debug for FilesystemBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilesystemBackend")
            .field("root", &self.root)
            .finish()
    }
}

impl fmt::Display for FilesystemBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Filesystem({})", self.root.display())
    }
}

impl FilesystemBackend {
    /// Counts fetches and uploads as `client.get.requests` / `client.put.requests` in
    /// `registry` (the totals every backend reports; see [`crate::metrics`]).
    pub fn with_metrics(mut self, registry: &MetricsRegistry) -> Self {
        self.gets = registry.counter("client.get.requests");
        self.puts = registry.counter("client.put.requests");
        self
    }

    /// A backend rooted at `root`, created if missing.
    ///
    /// # Errors
    /// A [`ConfigError`] on `storage.root` when the directory cannot be created or a file
    /// cannot be created in it (checked by writing and removing a probe file).
    pub fn new(root: impl Into<PathBuf>) -> Result<Self, ConfigError> {
        let root: PathBuf = root.into();
        let fail = |what: &str, e: io::Error| {
            ConfigError::new(
                "storage.root",
                root.display().to_string(),
                format!("a directory the broker can write ({what}: {e})"),
            )
        };
        std::fs::create_dir_all(&root).map_err(|e| fail("cannot create it", e))?;
        if !root.is_dir() {
            return Err(ConfigError::new(
                "storage.root",
                root.display().to_string(),
                "a directory (this is not one)",
            ));
        }
        let probe = root.join(format!("{TEMP_MARKER}probe-{}", std::process::id()));
        std::fs::write(&probe, b"").map_err(|e| fail("cannot create a file in it", e))?;
        std::fs::remove_file(&probe).map_err(|e| fail("cannot remove a file in it", e))?;
        let real_root = std::fs::canonicalize(&root).map_err(|e| fail("cannot resolve it", e))?;
        Ok(Self {
            root: Arc::new(root),
            real_root: Arc::new(real_root),
            overwrite: true,
            temp_counter: Arc::new(AtomicU64::new(0)),
            gets: Arc::default(),
            puts: Arc::default(),
        })
    }

    /// `storage.overwrite.enabled` (default true): when false, an upload to a key that
    /// exists fails and leaves the existing file untouched.
    pub fn with_overwrite(mut self, overwrite: bool) -> Self {
        self.overwrite = overwrite;
        self
    }

    /// Blocking: checks that `path` (or, when it does not exist, its deepest existing
    /// ancestor) resolves beneath the root once symbolic links are followed. A link that
    /// stays inside the root is fine; one that leads out of it is an error naming `key`.
    /// (A writer of the root who swaps a directory for a link between this check and the
    /// open can still race it; Linux's `openat2(RESOLVE_BENEATH)` would close that window.)
    fn check_beneath(&self, key: &ObjectKey, path: &Path) -> Result<(), BackendError> {
        let mut cur = path;
        loop {
            match std::fs::canonicalize(cur) {
                Ok(real) if real.starts_with(self.real_root.as_path()) => return Ok(()),
                Ok(real) => {
                    return Err(BackendError::Other {
                        key: key.clone(),
                        detail: format!(
                            "the object's path leaves storage.root through a symbolic link \
                             (it resolves to {})",
                            real.display()
                        ),
                        source: None,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => match cur.parent() {
                    Some(p) if p.starts_with(self.root.as_path()) && p != cur => cur = p,
                    _ => return Ok(()),
                },
                Err(e) => return Err(io_error(key, "cannot resolve the object's path", e)),
            }
        }
    }

    /// [`Self::check_beneath`] from the blocking pool.
    async fn check_beneath_async(&self, key: &ObjectKey, path: &Path) -> Result<(), BackendError> {
        let this = self.clone();
        let (k, p) = (key.clone(), path.to_path_buf());
        blocking(key, move || this.check_beneath(&k, &p)).await
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file of `key`, after checking the key cannot leave the root.
    fn path_of(&self, key: &ObjectKey) -> Result<PathBuf, BackendError> {
        let raw = key.as_str();
        let invalid = |why: &str| BackendError::Other {
            key: key.clone(),
            detail: format!("invalid key for the filesystem backend: {why}"),
            source: None,
        };
        if raw.is_empty() {
            return Err(invalid("empty"));
        }
        if raw.starts_with('/') || raw.starts_with('\\') || Path::new(raw).is_absolute() {
            return Err(invalid("absolute path"));
        }
        if raw.ends_with('/') {
            return Err(invalid("ends with '/'"));
        }
        if raw.contains('\0') {
            return Err(invalid("contains NUL"));
        }
        if raw.contains(TEMP_MARKER) {
            return Err(invalid("contains the temporary-file marker"));
        }
        for part in raw.split('/') {
            if part.is_empty() || part == "." || part == ".." {
                return Err(invalid("empty, '.' or '..' path component"));
            }
        }
        let rel = Path::new(raw);
        if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(invalid("not a plain relative path"));
        }
        Ok(self.root.join(rel))
    }

    fn temp_path(&self, target: &Path) -> PathBuf {
        let n = self.temp_counter.fetch_add(1, Ordering::Relaxed);
        let name = target
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        target.with_file_name(format!("{name}{TEMP_MARKER}{}-{n}", std::process::id()))
    }

    /// Creates the temp file, re-creating the parent directory if a concurrent delete
    /// removed it between `create_dir_all` and the open. Also returns whether directories
    /// had to be created (their entries then need an `fsync` of their parents too).
    async fn create_temp(
        &self,
        key: &ObjectKey,
        temp: &Path,
    ) -> Result<(tokio::fs::File, bool), BackendError> {
        let parent = temp.parent().unwrap_or(&self.root);
        let mut attempts = 0;
        let mut created_dirs = false;
        loop {
            if !tokio::fs::try_exists(parent).await.unwrap_or(false) {
                created_dirs = true;
            }
            // `create_dir_all` itself fails when a concurrent delete prunes a directory
            // between its steps: NotFound (an ancestor vanished), or AlreadyExists (the
            // directory existed at `mkdir` but was gone when it checked `is_dir`). Retry
            // both like a failed open.
            match tokio::fs::create_dir_all(parent).await {
                Ok(()) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::NotFound | io::ErrorKind::AlreadyExists
                    ) && attempts < MAX_DIR_RACES =>
                {
                    attempts += 1;
                    tokio::task::yield_now().await;
                    continue;
                }
                Err(e) => return Err(io_error(key, "cannot create the object's directory", e)),
            }
            match tokio::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(temp)
                .await
            {
                Ok(f) => return Ok((f, created_dirs)),
                Err(e) if e.kind() == io::ErrorKind::NotFound && attempts < MAX_DIR_RACES => {
                    attempts += 1;
                    tokio::task::yield_now().await;
                }
                Err(e) => return Err(io_error(key, "cannot create the temporary file", e)),
            }
        }
    }
}

/// Removes the temporary file unless disarmed (upload failed or was cancelled).
struct TempGuard(Option<PathBuf>);

impl Drop for TempGuard {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Maps an I/O error on `key`: `ENOENT` is not found, interruptions and timeouts are
/// transient, the rest is other.
fn io_error(key: &ObjectKey, what: &str, e: io::Error) -> BackendError {
    match e.kind() {
        io::ErrorKind::NotFound => BackendError::NotFound {
            key: key.clone(),
            detail: what.to_string(),
        },
        io::ErrorKind::Interrupted | io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
            BackendError::transient(key, what, e)
        }
        _ => BackendError::other(key, what, e),
    }
}

/// Runs `f` in tokio's blocking pool; a pool that is shutting down (or a panic in `f`)
/// is an error naming `key`.
async fn blocking<T: Send + 'static>(
    key: &ObjectKey,
    f: impl FnOnce() -> Result<T, BackendError> + Send + 'static,
) -> Result<T, BackendError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| BackendError::other(key, "read task failed", e))?
}

/// The open file of one fetch and the bytes of its range not read yet. Each piece is one
/// trip through tokio's blocking pool that reads straight into the piece's buffer (no
/// intermediate copy); opening, the size check, the seek and the first piece are one trip.
struct RangeReader {
    file: std::fs::File,
    key: ObjectKey,
    remaining: u64,
}

impl RangeReader {
    /// Blocking: opens `path`, checks `range` against the file's size, seeks to its start
    /// and reads the first piece (at most [`READ_BUFFER_SIZE`] bytes).
    fn open(
        path: &Path,
        key: ObjectKey,
        range: Option<ByteRange>,
    ) -> Result<(Self, Bytes), BackendError> {
        use std::io::Seek;
        let mut file = std::fs::File::open(path).map_err(|e| io_error(&key, "cannot open", e))?;
        let meta = file
            .metadata()
            .map_err(|e| io_error(&key, "cannot stat", e))?;
        if !meta.is_file() {
            return Err(BackendError::NotFound {
                key,
                detail: "not a regular file".into(),
            });
        }
        let size = meta.len();
        let (start, len) = match range {
            None => (0, size),
            Some(r) => match r.clamp_to(size) {
                Some(c) => (c.start, c.len()),
                None => {
                    return Err(BackendError::InvalidRange {
                        key,
                        range: r,
                        size: Some(size),
                    });
                }
            },
        };
        if start > 0 {
            file.seek(io::SeekFrom::Start(start))
                .map_err(|e| io_error(&key, "cannot seek", e))?;
        }
        let mut reader = Self {
            file,
            key,
            remaining: len,
        };
        let first = reader.read_piece()?;
        Ok((reader, first))
    }

    /// Blocking: the next piece, at most [`READ_BUFFER_SIZE`] bytes; shorter only at the
    /// file's end (a file cut short under the reader: empty, then the stream ends and the
    /// caller sees fewer bytes than it asked for).
    fn read_piece(&mut self) -> Result<Bytes, BackendError> {
        use std::io::Read;
        let want = self.remaining.min(READ_BUFFER_SIZE as u64);
        let mut buf = Vec::with_capacity(want as usize);
        // `read_to_end` reads into the spare capacity without zeroing it first.
        (&mut self.file)
            .take(want)
            .read_to_end(&mut buf)
            .map_err(|e| io_error(&self.key, "cannot read", e))?;
        if (buf.len() as u64) < want {
            self.remaining = 0;
        } else {
            self.remaining -= want;
        }
        Ok(Bytes::from(buf))
    }
}

#[cfg(unix)]
async fn sync_dir(dir: &Path) -> io::Result<()> {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || std::fs::File::open(dir)?.sync_all())
        .await
        .map_err(io::Error::other)?
}

#[cfg(not(unix))]
async fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

#[async_trait]
impl StorageBackend for FilesystemBackend {
    async fn upload(
        &self,
        key: &ObjectKey,
        body: ByteStream,
        size: Option<u64>,
    ) -> Result<u64, BackendError> {
        self.puts.inc();
        let path = self.path_of(key)?;
        let parent = path.parent().unwrap_or(self.root.as_path()).to_path_buf();
        self.check_beneath_async(key, &parent).await?;
        let temp = self.temp_path(&path);
        let (file, created_dirs) = self.create_temp(key, &temp).await?;
        let mut guard = TempGuard(Some(temp.clone()));
        self.check_beneath_async(key, &parent).await?;
        let file = file.into_std().await;
        let (file, written) = writer::write_body(key, file, body).await?;
        if let Some(expected) = size {
            if expected != written {
                return Err(BackendError::Other {
                    key: key.clone(),
                    detail: format!(
                        "upload body was {written} bytes but its size was given as {expected}"
                    ),
                    source: None,
                });
            }
        }
        writer::sync(key, file).await?;
        if self.overwrite {
            tokio::fs::rename(&temp, &path).await.map_err(|e| {
                BackendError::other(key, "cannot rename the temporary file over the object", e)
            })?;
        } else {
            // A hard link fails when the target exists: no window in which another
            // upload's file could be replaced. The guard removes the temporary name.
            match tokio::fs::hard_link(&temp, &path).await {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    return Err(BackendError::Other {
                        key: key.clone(),
                        detail: "the object exists and storage.overwrite.enabled=false".into(),
                        source: None,
                    });
                }
                Err(e) => {
                    return Err(BackendError::other(
                        key,
                        "cannot link the temporary file to the object",
                        e,
                    ));
                }
            }
            let _ = tokio::fs::remove_file(&temp).await;
        }
        guard.0 = None;
        // Make the rename durable; when directories were created, their entries too
        // (every ancestor up to the root).
        let mut dir = path.parent();
        while let Some(d) = dir {
            sync_dir(d)
                .await
                .map_err(|e| io_error(key, "cannot fsync the object's directory", e))?;
            if !created_dirs || d == self.root.as_path() || !d.starts_with(self.root.as_path()) {
                break;
            }
            dir = d.parent();
        }
        Ok(written)
    }

    async fn fetch(
        &self,
        key: &ObjectKey,
        range: Option<ByteRange>,
    ) -> Result<ByteStream, BackendError> {
        self.gets.inc();
        let path = self.path_of(key)?;
        let k = key.clone();
        let this = self.clone();
        let (reader, first) = blocking(key, move || {
            this.check_beneath(&k, &path)?;
            RangeReader::open(&path, k, range)
        })
        .await?;
        let rest = futures::stream::try_unfold(reader, |mut reader| async move {
            if reader.remaining == 0 {
                return Ok(None);
            }
            let key = reader.key.clone();
            let (piece, reader) = blocking(&key, move || {
                let piece = reader.read_piece()?;
                Ok((piece, reader))
            })
            .await?;
            Ok((!piece.is_empty()).then_some((piece, reader)))
        });
        Ok(
            futures::stream::iter((!first.is_empty()).then(|| Ok(first)))
                .chain(rest)
                .boxed(),
        )
    }

    async fn delete(&self, keys: &[ObjectKey]) -> Result<(), BackendError> {
        for key in keys {
            let path = self.path_of(key)?;
            let parent = path.parent().unwrap_or(self.root.as_path()).to_path_buf();
            self.check_beneath_async(key, &parent).await?;
            match tokio::fs::remove_file(&path).await {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io_error(key, "cannot delete", e)),
            }
            // Remove now-empty parents, never the root. Any failure (not empty, already
            // gone, a concurrent upload) ends the walk: leftover empty dirs are harmless.
            let mut dir = path.parent();
            while let Some(d) = dir {
                if d == self.root.as_path() || !d.starts_with(self.root.as_path()) {
                    break;
                }
                if tokio::fs::remove_dir(d).await.is_err() {
                    break;
                }
                dir = d.parent();
            }
        }
        Ok(())
    }

    fn list(&self, prefix: &ObjectKey) -> ListStream {
        let root = self.root.as_ref().clone();
        let prefix_key = prefix.clone();
        let prefix = prefix.as_str().to_string();
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<ObjectMeta, BackendError>>(256);
        // Walk from the deepest directory the prefix fully names.
        let start_rel = match prefix.rfind('/') {
            Some(i) => prefix[..i].to_string(),
            None => String::new(),
        };
        tokio::task::spawn_blocking(move || {
            walk(&root, &start_rel, &prefix, &prefix_key, &tx);
        });
        futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        })
        .boxed()
    }

    /// A local directory: see [`StorageBackend::reads_are_local`]. A directory on a network
    /// or FUSE mount (NFS, EFS, an object store mounted as files) is not local in this sense:
    /// set `tsm.fetch.read.ahead.plain=true` there.
    fn reads_are_local(&self) -> bool {
        true
    }

    /// Each upload item is written to the temporary file as it arrives: nothing buffered.
    fn upload_buffer_bytes(&self) -> u64 {
        0
    }
}

/// Depth-first walk under `root/start_rel`, sending files whose key starts with `prefix`.
/// Stops when the receiver is dropped.
fn walk(
    root: &Path,
    start_rel: &str,
    prefix: &str,
    prefix_key: &ObjectKey,
    tx: &tokio::sync::mpsc::Sender<Result<ObjectMeta, BackendError>>,
) {
    // Only plain relative directories under the root: a prefix such as `/etc/` or
    // `../x` lists nothing rather than escaping the root.
    if !start_rel.is_empty()
        && (start_rel.starts_with('/')
            || start_rel.starts_with('\\')
            || start_rel
                .split('/')
                .any(|p| p.is_empty() || p == ".." || p == ".")
            || !Path::new(start_rel)
                .components()
                .all(|c| matches!(c, Component::Normal(_))))
    {
        return;
    }
    let mut stack: Vec<String> = vec![start_rel.to_string()];
    while let Some(rel) = stack.pop() {
        let dir = if rel.is_empty() {
            root.to_path_buf()
        } else {
            root.join(&rel)
        };
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => {
                let _ = tx.blocking_send(Err(io_error(prefix_key, "cannot list", e)));
                return;
            }
        };
        for entry in entries {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    let _ = tx.blocking_send(Err(io_error(prefix_key, "cannot list", e)));
                    return;
                }
            };
            let Ok(name) = entry.file_name().into_string() else {
                continue; // Not UTF-8: cannot be one of our keys.
            };
            let key = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            let Ok(ft) = entry.file_type() else { continue };
            if ft.is_dir() {
                let dir_prefix = format!("{key}/");
                if dir_prefix.starts_with(prefix) || prefix.starts_with(&dir_prefix) {
                    stack.push(key);
                }
            } else if ft.is_file() && !name.contains(TEMP_MARKER) && key.starts_with(prefix) {
                let (size, last_modified) = match entry.metadata() {
                    Ok(m) => (m.len(), m.modified().ok()),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => {
                        let _ = tx.blocking_send(Err(io_error(prefix_key, "cannot stat", e)));
                        return;
                    }
                };
                if tx
                    .blocking_send(Ok(ObjectMeta {
                        key,
                        size,
                        last_modified,
                    }))
                    .is_err()
                {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn body(parts: &[&'static [u8]]) -> ByteStream {
        let items: Vec<Result<Bytes, BackendError>> =
            parts.iter().map(|p| Ok(Bytes::from_static(p))).collect();
        futures::stream::iter(items).boxed()
    }

    #[tokio::test]
    async fn rejects_keys_leaving_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let b = FilesystemBackend::new(dir.path()).unwrap();
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a//b",
            "a/./b",
            "a/",
            "x.tsm-tmp-1",
        ] {
            let k = ObjectKey::plain(bad);
            let e = b.upload(&k, body(&[b"x"]), None).await.unwrap_err();
            assert!(e.to_string().contains("invalid key"), "{bad}: {e}");
            assert!(b.fetch(&k, None).await.is_err(), "{bad}");
        }
    }

    async fn read(b: &FilesystemBackend, k: &ObjectKey) -> Result<Vec<u8>, BackendError> {
        let parts: Vec<Bytes> = futures::TryStreamExt::try_collect(b.fetch(k, None).await?).await?;
        Ok(parts.concat())
    }

    /// A symbolic link under the root that leads out of it (a topic directory pointing
    /// elsewhere) is refused for upload, fetch and delete, and nothing outside changes; a
    /// link that stays inside the root is followed.
    #[cfg(unix)]
    #[tokio::test]
    async fn symlinks_out_of_the_root_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(outside.join("0")).unwrap();
        std::fs::write(outside.join("0/a.log"), b"outside").unwrap();
        std::fs::write(outside.join("secret"), b"outside").unwrap();
        let b = FilesystemBackend::new(&root).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("topic")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), root.join("file.log")).unwrap();
        for key in [
            "topic/0/a.log",
            "topic/0/new.log",
            "topic/1/b.log",
            "file.log",
        ] {
            let k = ObjectKey::plain(key);
            let e = read(&b, &k).await.unwrap_err();
            assert!(e.to_string().contains("leaves storage.root"), "{key}: {e}");
        }
        for key in ["topic/0/a.log", "topic/0/new.log", "topic/1/b.log"] {
            let k = ObjectKey::plain(key);
            let e = b.upload(&k, body(&[b"planted"]), None).await.unwrap_err();
            assert!(e.to_string().contains("leaves storage.root"), "{key}: {e}");
        }
        // An upload over a link replaces the link itself (rename does not follow it).
        let k = ObjectKey::plain("file.log");
        b.upload(&k, body(&[b"replaced"]), None).await.unwrap();
        assert_eq!(read(&b, &k).await.unwrap(), b"replaced");
        let e = b
            .delete(&[ObjectKey::plain("topic/0/a.log")])
            .await
            .unwrap_err();
        assert!(e.to_string().contains("leaves storage.root"), "{e}");
        assert_eq!(std::fs::read(outside.join("0/a.log")).unwrap(), b"outside");
        assert_eq!(std::fs::read(outside.join("secret")).unwrap(), b"outside");
        let mut outside_files = walkdir(&outside);
        outside_files.sort();
        assert_eq!(outside_files.len(), 2, "{outside_files:?}");
        // Inside the root, a link is fine.
        std::fs::create_dir_all(root.join("real")).unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("alias")).unwrap();
        let k = ObjectKey::plain("alias/x.log");
        b.upload(&k, body(&[b"inside"]), None).await.unwrap();
        assert_eq!(read(&b, &k).await.unwrap(), b"inside");
        assert_eq!(std::fs::read(root.join("real/x.log")).unwrap(), b"inside");
    }

    /// `storage.overwrite.enabled=false`: an upload to an existing key fails naming it,
    /// the existing bytes stay and no temporary file is left.
    #[tokio::test]
    async fn overwrite_disabled_keeps_the_existing_object() {
        let dir = tempfile::tempdir().unwrap();
        let b = FilesystemBackend::new(dir.path())
            .unwrap()
            .with_overwrite(false);
        let k = ObjectKey::plain("t/0/a.log");
        b.upload(&k, body(&[b"first"]), None).await.unwrap();
        let e = b.upload(&k, body(&[b"second"]), None).await.unwrap_err();
        assert!(
            e.to_string().contains("storage.overwrite.enabled=false"),
            "{e}"
        );
        assert!(e.to_string().contains("t/0/a.log"), "{e}");
        assert_eq!(read(&b, &k).await.unwrap(), b"first");
        assert_eq!(walkdir(dir.path()).len(), 1, "{:?}", walkdir(dir.path()));
        let b = b.with_overwrite(true);
        b.upload(&k, body(&[b"second"]), None).await.unwrap();
        assert_eq!(read(&b, &k).await.unwrap(), b"second");
    }

    #[tokio::test]
    async fn failed_upload_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let b = FilesystemBackend::new(dir.path()).unwrap();
        let k = ObjectKey::plain("t/0/a.log");
        let failing = futures::stream::iter(vec![
            Ok(Bytes::from_static(b"abc")),
            Err(BackendError::Other {
                key: k.clone(),
                detail: "source failed".into(),
                source: None,
            }),
        ])
        .boxed();
        assert!(b.upload(&k, failing, None).await.is_err());
        assert!(matches!(b.fetch(&k, None).await, Err(e) if e.is_not_found()));
        // Only the (now empty) directory may remain, no temp file.
        let leftover: Vec<_> = walkdir(dir.path());
        assert!(leftover.is_empty(), "{leftover:?}");
        // Size mismatch is refused too.
        assert!(b.upload(&k, body(&[b"abc"]), Some(4)).await.is_err());
        assert!(walkdir(dir.path()).is_empty());
    }

    fn walkdir(p: &Path) -> Vec<PathBuf> {
        let mut out = vec![];
        for e in std::fs::read_dir(p).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                out.extend(walkdir(&e.path()));
            } else {
                out.push(e.path());
            }
        }
        out
    }

    #[tokio::test]
    async fn crash_leftovers_are_invisible() {
        use futures::TryStreamExt;
        let dir = tempfile::tempdir().unwrap();
        let b = FilesystemBackend::new(dir.path()).unwrap();
        // What a crash between write and rename leaves behind.
        std::fs::create_dir_all(dir.path().join("t/0")).unwrap();
        std::fs::write(dir.path().join("t/0/a.log.tsm-tmp-99-0"), b"partial").unwrap();
        assert!(
            matches!(b.fetch(&ObjectKey::plain("t/0/a.log"), None).await, Err(e) if e.is_not_found())
        );
        let got: Vec<ObjectMeta> = b.list(&ObjectKey::plain("t/")).try_collect().await.unwrap();
        assert!(got.is_empty(), "{got:?}");
    }

    #[tokio::test]
    async fn cancelled_upload_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let b = FilesystemBackend::new(dir.path()).unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let mut tx = Some(tx);
        // Yields one item, signals, then never ends.
        let body = futures::stream::iter([Ok(Bytes::from_static(b"abc"))])
            .chain(futures::stream::poll_fn(move |_| {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(());
                }
                std::task::Poll::Pending
            }))
            .boxed();
        let b2 = b.clone();
        let task =
            tokio::spawn(async move { b2.upload(&ObjectKey::plain("t/a.log"), body, None).await });
        rx.await.unwrap();
        task.abort();
        assert!(task.await.unwrap_err().is_cancelled());
        assert!(walkdir(dir.path()).is_empty(), "{:?}", walkdir(dir.path()));
    }

    #[tokio::test]
    async fn fetch_items_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let b = FilesystemBackend::new(dir.path()).unwrap();
        let k = ObjectKey::plain("big");
        let data = Bytes::from(vec![7u8; 3 * READ_BUFFER_SIZE + 5]);
        let d2 = data.clone();
        b.upload(
            &k,
            futures::stream::once(async move { Ok(d2) }).boxed(),
            None,
        )
        .await
        .unwrap();
        let mut s = b.fetch(&k, None).await.unwrap();
        let mut total = 0;
        while let Some(item) = s.next().await {
            let item = item.unwrap();
            assert!(item.len() <= READ_BUFFER_SIZE);
            total += item.len();
        }
        assert_eq!(total, data.len());
    }

    /// A file cut short in place under an open fetch (not what an upload does: it renames
    /// a new file over the old one) ends the stream early, without a panic or an endless
    /// loop; the engine's window reports the short body as corrupt, naming the range.
    #[tokio::test]
    async fn fetch_of_a_file_cut_short_ends_early() {
        let dir = tempfile::tempdir().unwrap();
        let b = FilesystemBackend::new(dir.path()).unwrap();
        let k = ObjectKey::plain("cut");
        let len = 2 * READ_BUFFER_SIZE + 10;
        let d = Bytes::from(vec![3u8; len]);
        b.upload(
            &k,
            futures::stream::once(async move { Ok(d) }).boxed(),
            None,
        )
        .await
        .unwrap();
        let range = ByteRange {
            start: 5,
            end: len as u64 - 1,
        };
        let mut s = b.fetch(&k, Some(range)).await.unwrap();
        // The first piece was read at open; cut the file to just past it.
        std::fs::OpenOptions::new()
            .write(true)
            .open(dir.path().join("cut"))
            .unwrap()
            .set_len(READ_BUFFER_SIZE as u64 + 100)
            .unwrap();
        let mut total = 0;
        while let Some(item) = s.next().await {
            total += item.unwrap().len();
        }
        assert_eq!(total, READ_BUFFER_SIZE + 95);
    }

    #[tokio::test]
    async fn list_never_leaves_the_root() {
        use futures::TryStreamExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let b = FilesystemBackend::new(&root).unwrap();
        std::fs::write(dir.path().join("outside.log"), b"x").unwrap();
        b.upload(&ObjectKey::plain("in/a.log"), body(&[b"a"]), None)
            .await
            .unwrap();
        let outside = format!("{}/", dir.path().display());
        for p in [outside.as_str(), "../", "/", "in/../../", "in//", "./in/"] {
            let got: Vec<ObjectMeta> = b.list(&ObjectKey::plain(p)).try_collect().await.unwrap();
            assert!(got.is_empty(), "{p}: {got:?}");
        }
        let got: Vec<ObjectMeta> = b.list(&ObjectKey::plain("")).try_collect().await.unwrap();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!((got[0].key.as_str(), got[0].size), ("in/a.log", 1));
        let age = got[0]
            .last_modified
            .and_then(|t| t.elapsed().ok())
            .expect("file mtime in the listing");
        assert!(age.as_secs() < 600, "{age:?}");
    }

    #[tokio::test]
    async fn delete_removes_empty_parents_but_not_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let b = FilesystemBackend::new(&root).unwrap();
        let a = ObjectKey::plain("t/0/a.log");
        let c = ObjectKey::plain("t/1/c.log");
        b.upload(&a, body(&[b"a"]), Some(1)).await.unwrap();
        b.upload(&c, body(&[b"c"]), Some(1)).await.unwrap();
        b.delete(std::slice::from_ref(&a)).await.unwrap();
        assert!(!root.join("t/0").exists());
        assert!(root.join("t/1").exists());
        b.delete(&[c]).await.unwrap();
        assert!(!root.join("t").exists());
        assert!(root.is_dir());
    }

    #[cfg(unix)]
    #[test]
    fn refuses_unwritable_root() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let ro = dir.path().join("ro");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        // The superuser ignores permissions; check this case only when the probe fails.
        if std::fs::write(ro.join("x"), b"").is_err() {
            let e = FilesystemBackend::new(&ro).unwrap_err();
            assert_eq!(e.key, "storage.root");
            assert!(e.allowed.contains("cannot create a file"), "{e}");
        }
        // A root that cannot be created (its parent is a file): refused for anyone.
        let file = dir.path().join("f");
        std::fs::write(&file, b"").unwrap();
        let e = FilesystemBackend::new(file.join("sub")).unwrap_err();
        assert_eq!(e.key, "storage.root");
        assert!(e.allowed.contains("cannot create it"), "{e}");
        assert!(e.to_string().contains("f/sub"), "{e}");
        let file = dir.path().join("g");
        std::fs::write(&file, b"").unwrap();
        let e = FilesystemBackend::new(&file).unwrap_err();
        assert_eq!(e.key, "storage.root");
    }
}
