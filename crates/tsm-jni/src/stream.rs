//! Open `fetchLogSegment` streams. Java's `InputStream.read(byte[], off, len)` calls
//! [`read`] with a bounded wait; the segment's bytes come lazily from the engine's
//! [`SegmentStream`] (polled on the calling thread inside the instance's runtime), so
//! memory per stream is one chunk being handed out plus what the engine prefetches.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use tsm_core::SegmentStream;

use crate::ops::{OpError, status};
use crate::registry::Registry;
use crate::runtime::InstanceRuntime;

/// `read` result: the wait slice ended before any byte arrived (Java waits again).
pub const READ_PENDING: i32 = 0;
/// `read` result: end of the range.
pub const READ_EOF: i32 = -1;
/// `read` result: the stream failed; the message is in [`error`].
pub const READ_ERROR: i32 = -2;
/// `read` result: the stream was closed (or the handle is unknown).
pub const READ_CLOSED: i32 = -3;

/// What an [`OpenStream`] guards with its mutex: the engine's stream (`None` once
/// closed), the bytes of its current item not yet read by Java, and why it failed.
struct OpenStreamState {
    stream: Option<SegmentStream>,
    current: Bytes,
    /// Why the stream failed: one of `ops::status` (so Java maps a transient failure onto
    /// `RetriableRemoteStorageException`, as for the other calls) and the message.
    error: Option<OpError>,
}

/// One open stream.
pub struct OpenStream {
    rt: Arc<InstanceRuntime>,
    inner: Mutex<OpenStreamState>,
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        // Dropping the engine's stream may cancel downloads: give it the runtime context.
        let _guard = self.rt.handle().enter();
        let inner = self.inner.get_mut().unwrap_or_else(|p| p.into_inner());
        inner.stream = None;
    }
}

/// Every open stream of this library copy.
pub static STREAMS: Registry<OpenStream> = Registry::new();

/// Registers `stream`; returns its handle.
pub fn open(rt: Arc<InstanceRuntime>, stream: SegmentStream) -> u64 {
    STREAMS.insert(Arc::new(OpenStream {
        rt,
        inner: Mutex::new(OpenStreamState {
            stream: Some(stream),
            current: Bytes::new(),
            error: None,
        }),
    }))
}

/// Outcome of one [`read`]: bytes to copy out, or one of the `READ_*` codes.
pub enum ReadOutcome {
    /// Up to the requested number of bytes (never empty).
    Data(Bytes),
    /// A `READ_*` code.
    Code(i32),
}

/// Waits at most `timeout_ms` for at least one byte; returns at most `max` bytes.
pub fn read(handle: u64, max: usize, timeout_ms: i64) -> ReadOutcome {
    let Some(s) = STREAMS.get(handle) else {
        return ReadOutcome::Code(READ_CLOSED);
    };
    if max == 0 {
        return ReadOutcome::Data(Bytes::new());
    }
    let mut inner = s.inner.lock().unwrap_or_else(|p| p.into_inner());
    if inner.error.is_some() {
        return ReadOutcome::Code(READ_ERROR);
    }
    let wait = Duration::from_millis(timeout_ms.clamp(1, 60_000) as u64);
    while inner.current.is_empty() {
        let Some(stream) = inner.stream.as_mut() else {
            return ReadOutcome::Code(READ_EOF);
        };
        match s
            .rt
            .block_on(async { tokio::time::timeout(wait, stream.next()).await })
        {
            Err(_elapsed) => return ReadOutcome::Code(READ_PENDING),
            Ok(None) => {
                inner.stream = None;
                return ReadOutcome::Code(READ_EOF);
            }
            Ok(Some(Err(e))) => {
                inner.error = Some(OpError::from(e));
                inner.stream = None;
                return ReadOutcome::Code(READ_ERROR);
            }
            Ok(Some(Ok(b))) => inner.current = b,
        }
    }
    let n = max.min(inner.current.len());
    ReadOutcome::Data(inner.current.split_to(n))
}

/// The error that made [`read`] return [`READ_ERROR`].
pub fn error(handle: u64) -> Option<String> {
    let s = STREAMS.get(handle)?;
    let inner = s.inner.lock().unwrap_or_else(|p| p.into_inner());
    inner.error.as_ref().map(|e| e.message.clone())
}

/// The `ops::status` of the error that made [`read`] return [`READ_ERROR`]
/// (`status::ERROR` when unknown: no error, or the stream is gone).
pub fn error_status(handle: u64) -> i32 {
    let Some(s) = STREAMS.get(handle) else {
        return status::ERROR;
    };
    let inner = s.inner.lock().unwrap_or_else(|p| p.into_inner());
    inner.error.as_ref().map_or(status::ERROR, |e| e.status)
}

/// Unregisters the stream (idempotent, cheap). A read in progress on another thread
/// finishes its current slice; the engine stream is dropped with the last reference.
pub fn close(handle: u64) {
    drop(STREAMS.remove(handle));
}
