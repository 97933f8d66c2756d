//! The filesystem backend's upload writer: the body's items -> the temporary file, then
//! `fsync` (the rename and the directory `fsync`s stay in [`super`]).
//!
//! Each item is written by a blocking-pool task straight from its [`bytes::Bytes`] (no copy
//! into an intermediate buffer, one pool trip per item), and the body is polled for the
//! next item while that write runs, so the producer (the engine's chunk pipeline: reads,
//! compression, encryption) keeps working during the write instead of waiting for it.
//!
//! Writeback starts early: after each write the whole pages written since the last start
//! are handed to the kernel's writeback (`sync_file_range(SYNC_FILE_RANGE_WRITE)` on Linux:
//! it starts writing, does not wait and does not make anything durable), so the disk works
//! while the rest of the body is produced and the final `fsync` waits only for the tail.
//! Durability is unchanged: the `fsync` at the end is what makes the object durable, as
//! before.
//!
//! Memory: the item being written and the next one (two body items at most).

use std::fs::File;
use std::io::{self, Write};

use futures::StreamExt;

use super::io_error;
use crate::{BackendError, ByteStream, ObjectKey};

/// Granularity of the early writeback (bytes): ranges are started in whole pages, at least
/// this many at a time, so a partly written last page is not written twice.
const WRITEBACK_STEP: u64 = 1024 * 1024;

/// Page size assumed for aligning writeback ranges (bytes); a larger real page only makes
/// a range's tail page be written again at `fsync` time.
const PAGE: u64 = 4096;

/// Where the file stands: bytes written and the end of the range handed to writeback.
struct Progress {
    file: File,
    written: u64,
    writeback_to: u64,
}

impl Progress {
    /// Writes `bytes` at the end of the file, then starts writeback of the whole pages
    /// written since the last start once they reach [`WRITEBACK_STEP`].
    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all(bytes)?;
        self.written += bytes.len() as u64;
        let to = self.written / PAGE * PAGE;
        if to.saturating_sub(self.writeback_to) >= WRITEBACK_STEP {
            start_writeback(&self.file, self.writeback_to, to - self.writeback_to);
            self.writeback_to = to;
        }
        Ok(())
    }
}

/// Starts writeback of `len` bytes at `offset` and returns without waiting. Best effort:
/// an error here (a filesystem without support) only means the final `fsync` does all the
/// work, as it would without this call; real write errors surface there.
#[cfg(target_os = "linux")]
fn start_writeback(file: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (
        libc::off64_t::try_from(offset),
        libc::off64_t::try_from(len),
    ) else {
        return;
    };
    // SAFETY: the descriptor belongs to `file`, which is borrowed (open) for the whole
    // call; sync_file_range reads no memory of this process.
    let _ = unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE)
    };
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_file: &File, _offset: u64, _len: u64) {}

/// Runs `f` on the blocking pool with the progress moved in and back out.
async fn blocking<T: Send + 'static>(
    key: &ObjectKey,
    mut progress: Progress,
    f: impl FnOnce(&mut Progress) -> io::Result<T> + Send + 'static,
    what: &'static str,
) -> Result<(Progress, T), BackendError> {
    let (progress, result) = tokio::task::spawn_blocking(move || {
        let r = f(&mut progress);
        (progress, r)
    })
    .await
    .map_err(|e| BackendError::other(key, format!("{what}: the write task failed"), e))?;
    let value = result.map_err(|e| io_error(key, what, e))?;
    Ok((progress, value))
}

/// Writes every item of `body` to `file` (a new, empty temporary file); returns the file
/// and the bytes written. The first error of the body or of a write is returned (the caller
/// removes the temporary file).
pub(super) async fn write_body(
    key: &ObjectKey,
    file: File,
    mut body: ByteStream,
) -> Result<(File, u64), BackendError> {
    let mut progress = Progress {
        file,
        written: 0,
        writeback_to: 0,
    };
    let mut next = body.next().await;
    while let Some(item) = next {
        let bytes = item?;
        let write = blocking(
            key,
            progress,
            move |p| p.write(&bytes),
            "cannot write the temporary file",
        );
        // The next item is produced while this one is written.
        let (written, following) = tokio::join!(write, body.next());
        progress = written?.0;
        next = following;
    }
    Ok((progress.file, progress.written))
}

/// `fsync`s `file` on the blocking pool: its data and size are durable when this returns.
pub(super) async fn sync(key: &ObjectKey, file: File) -> Result<(), BackendError> {
    let progress = Progress {
        file,
        written: 0,
        writeback_to: 0,
    };
    blocking(
        key,
        progress,
        |p| p.file.flush().and_then(|()| p.file.sync_all()),
        "cannot fsync the temporary file",
    )
    .await
    .map(drop)
}
