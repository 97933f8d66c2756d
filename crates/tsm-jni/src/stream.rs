//! Open `fetchLogSegment` streams. Java's `InputStream.read(byte[], off, len)` calls
//! [`read`] with a bounded wait; the segment's bytes come lazily from the engine's
//! [`SegmentStream`] (polled on the calling thread inside the instance's runtime), so
//! memory per stream is one chunk being handed out plus what the engine prefetches.
//!
//! **Forgotten streams.** The broker leaves some streams unclosed (KAFKA-18923, on error
//! paths); each would keep its current chunk, its GETs in flight and their memory
//! reservations until the Java object is collected (a `Cleaner` then closes it). So a
//! sweeper task per instance ([`spawn_sweeper`]) releases every stream not read for
//! `tsm.fetch.stream.idle.timeout.ms`: the engine's stream and the buffered bytes are
//! dropped (downloads cancelled, reservations given back) and a later read fails with a
//! retriable error naming the key. A stream being read (its lock held) is never released.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, TryLockError, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{FutureExt, StreamExt};
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
    /// When Java last called [`read`] (or the stream was opened).
    last_read: Instant,
}

impl OpenStreamState {
    /// True while the stream holds anything: an engine stream or unread bytes.
    fn holds(&self) -> bool {
        self.stream.is_some() || !self.current.is_empty()
    }
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
            last_read: Instant::now(),
        }),
    }))
}

/// Releases every open stream of `rt` not read for `idle` (see the module docs); returns
/// how many it released. Streams whose lock is held (a read in progress) are skipped.
pub fn release_idle(rt: &Arc<InstanceRuntime>, idle: Duration) -> usize {
    let now = Instant::now();
    let mut released = 0;
    for s in STREAMS.values() {
        if !Arc::ptr_eq(&s.rt, rt) {
            continue;
        }
        let mut guard = match s.inner.try_lock() {
            Ok(g) => g,
            Err(TryLockError::WouldBlock) => continue,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
        };
        if !guard.holds() || now.saturating_duration_since(guard.last_read) < idle {
            continue;
        }
        // Dropping the engine's stream cancels its downloads: in the runtime's context.
        let _rt = rt.handle().enter();
        guard.stream = None;
        guard.current = Bytes::new();
        guard.error = Some(OpError {
            status: status::TRANSIENT,
            message: format!(
                "fetch stream released after {} ms without a read ({}): fetch the range again",
                idle.as_millis(),
                tsm_core::config::names::FETCH_STREAM_IDLE_TIMEOUT_MS
            ),
        });
        released += 1;
    }
    if released > 0 {
        RELEASED.fetch_add(released as u64, Ordering::Relaxed);
    }
    released
}

/// Streams released by [`release_idle`] since the library was loaded (all instances).
static RELEASED: AtomicU64 = AtomicU64::new(0);

/// The open streams' gauges of `rt`'s instance: `fetch.streams.open` (registered, not yet
/// closed) and `fetch.streams.held` (of those, the ones still holding a stream or bytes),
/// plus `fetch.streams.idle.released` (streams released for idleness, all instances of
/// this library copy).
pub fn gauges(rt: &Arc<InstanceRuntime>) -> Vec<(String, u64)> {
    let (mut open, mut held) = (0u64, 0u64);
    for s in STREAMS.values() {
        if Arc::ptr_eq(&s.rt, rt) {
            open += 1;
            // A stream whose lock is taken is being read: it holds what it reads.
            let holds = match s.inner.try_lock() {
                Ok(g) => g.holds(),
                Err(TryLockError::WouldBlock) => true,
                Err(TryLockError::Poisoned(p)) => p.into_inner().holds(),
            };
            held += u64::from(holds);
        }
    }
    vec![
        ("fetch.streams.open".into(), open),
        ("fetch.streams.held".into(), held),
        (
            "fetch.streams.idle.released".into(),
            RELEASED.load(Ordering::Relaxed),
        ),
    ]
}

/// Starts the instance's sweeper: every quarter of `idle` (between 100 ms and 10 s) it
/// calls [`release_idle`], logging one WARN line per sweep that released streams. It
/// holds the runtime weakly and ends with it.
pub fn spawn_sweeper(rt: &Arc<InstanceRuntime>, idle: Duration) {
    let weak: Weak<InstanceRuntime> = Arc::downgrade(rt);
    let period = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(10));
    rt.handle().spawn(async move {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(rt) = weak.upgrade() else {
                return;
            };
            let n = release_idle(&rt, idle);
            if n > 0 {
                tracing::warn!(
                    "released {n} fetch stream(s) not read for {} ms and never closed by the \
                     broker ({})",
                    idle.as_millis(),
                    tsm_core::config::names::FETCH_STREAM_IDLE_TIMEOUT_MS
                );
            }
        }
    });
}

/// Outcome of one [`read`]: bytes to copy out, or one of the `READ_*` codes.
pub enum ReadOutcome {
    /// Up to the requested number of bytes in all (never empty), in order: the engine
    /// items that were ready, so one Java call takes them all.
    Data(Vec<Bytes>),
    /// A `READ_*` code.
    Code(i32),
}

/// Waits at most `timeout_ms` for at least one byte; returns at most `max` bytes: the
/// item waited for, then every further item already there (without waiting), so a store
/// that delivers its body in small items (an S3 body arrives in frames of a few KiB)
/// costs one Java call per read, not one per item. A failure or the end met after some
/// bytes is reported by the next call.
pub fn read(handle: u64, max: usize, timeout_ms: i64) -> ReadOutcome {
    let Some(s) = STREAMS.get(handle) else {
        return ReadOutcome::Code(READ_CLOSED);
    };
    if max == 0 {
        return ReadOutcome::Data(Vec::new());
    }
    let mut guard = s.inner.lock().unwrap_or_else(|p| p.into_inner());
    let inner = &mut *guard;
    inner.last_read = Instant::now();
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
            Err(_elapsed) => {
                inner.last_read = Instant::now();
                return ReadOutcome::Code(READ_PENDING);
            }
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
    let mut out = Vec::new();
    let mut left = max;
    loop {
        let n = left.min(inner.current.len());
        out.push(inner.current.split_to(n));
        left -= n;
        if left == 0 {
            break;
        }
        // The next item only if it is there now (polled once, in the runtime's context).
        let Some(stream) = inner.stream.as_mut() else {
            break;
        };
        let ready = {
            let _rt = s.rt.handle().enter();
            stream.next().now_or_never()
        };
        match ready {
            None => break,
            Some(None) => {
                inner.stream = None;
                break;
            }
            Some(Some(Err(e))) => {
                inner.error = Some(OpError::from(e));
                inner.stream = None;
                break;
            }
            Some(Some(Ok(b))) => inner.current = b,
        }
    }
    inner.last_read = Instant::now();
    ReadOutcome::Data(out)
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

#[cfg(test)]
mod tests {
    use super::*;
    use futures::stream;

    fn rt() -> Arc<InstanceRuntime> {
        Arc::new(InstanceRuntime::new(1).expect("runtime"))
    }

    fn data(o: ReadOutcome) -> Vec<u8> {
        match o {
            ReadOutcome::Data(items) => items.concat(),
            ReadOutcome::Code(c) => panic!("code {c}, not data"),
        }
    }

    fn code(o: ReadOutcome) -> i32 {
        match o {
            ReadOutcome::Data(items) => panic!("{} bytes, not a code", items.concat().len()),
            ReadOutcome::Code(c) => c,
        }
    }

    fn items(parts: &[&'static [u8]]) -> Vec<Result<Bytes, tsm_core::RsmError>> {
        parts.iter().map(|p| Ok(Bytes::from_static(p))).collect()
    }

    /// Items that are ready go out in one call, up to the asked length; the rest of an
    /// item waits for the next call; the end comes after the last byte.
    #[test]
    fn ready_items_go_out_in_one_call() {
        let h = open(
            rt(),
            stream::iter(items(&[b"ab", b"cde", b"f", b"ghij"])).boxed(),
        );
        assert_eq!(data(read(h, 8, 100)), b"abcdefgh");
        assert_eq!(data(read(h, 8, 100)), b"ij");
        assert_eq!(code(read(h, 8, 100)), READ_EOF);
        close(h);
        assert_eq!(code(read(h, 8, 100)), READ_CLOSED);
    }

    /// An item not there yet ends the call with what was ready; a failure met after some
    /// bytes is the next call's answer, and the bytes before it are not lost.
    #[test]
    fn a_pending_item_or_a_failure_ends_the_call() {
        let (tx, rx) = futures::channel::mpsc::unbounded();
        tx.unbounded_send(Ok(Bytes::from_static(b"one"))).unwrap();
        let h = open(rt(), rx.boxed());
        assert_eq!(data(read(h, 100, 100)), b"one");
        assert_eq!(code(read(h, 100, 10)), READ_PENDING);
        tx.unbounded_send(Ok(Bytes::from_static(b"two"))).unwrap();
        tx.unbounded_send(Err(tsm_core::RsmError::Corrupt {
            object: "t/0/x.log".into(),
            detail: "chunk 3".into(),
        }))
        .unwrap();
        assert_eq!(data(read(h, 100, 100)), b"two");
        assert_eq!(code(read(h, 100, 100)), READ_ERROR);
        assert!(error(h).is_some_and(|m| m.contains("chunk 3")));
        close(h);
    }

    /// A stream nobody reads is released after the idle timeout: its engine stream is
    /// dropped (what it held is given back), a later read fails with a transient error
    /// naming the key; a stream read in time, or already at its end, is left alone.
    #[test]
    fn a_forgotten_stream_is_released_after_the_idle_timeout() {
        let rt = rt();
        let other = self::rt();
        let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Bytes, tsm_core::RsmError>>();
        tx.unbounded_send(Ok(Bytes::from_static(b"abc"))).unwrap();
        let forgotten = open(rt.clone(), rx.boxed());
        assert_eq!(data(read(forgotten, 1, 100)), b"a");
        let done = open(rt.clone(), stream::iter(items(&[b"x"])).boxed());
        assert_eq!(data(read(done, 8, 100)), b"x");
        assert_eq!(code(read(done, 8, 100)), READ_EOF);
        let elsewhere = open(other.clone(), stream::iter(items(&[b"y"])).boxed());
        let g = gauges(&rt);
        assert!(g.contains(&("fetch.streams.open".into(), 2)), "{g:?}");
        assert!(g.contains(&("fetch.streams.held".into(), 1)), "{g:?}");

        assert_eq!(
            release_idle(&rt, Duration::from_secs(60)),
            0,
            "not idle yet"
        );
        std::thread::sleep(Duration::from_millis(60));
        let fresh = open(rt.clone(), stream::iter(items(&[b"z"])).boxed());
        assert_eq!(
            release_idle(&rt, Duration::from_millis(50)),
            1,
            "only the forgotten one"
        );
        assert!(tx.is_closed(), "the engine's stream was dropped");
        assert_eq!(code(read(forgotten, 8, 100)), READ_ERROR);
        assert_eq!(error_status(forgotten), status::TRANSIENT);
        let msg = error(forgotten).unwrap_or_default();
        assert!(msg.contains("tsm.fetch.stream.idle.timeout.ms"), "{msg}");
        assert_eq!(
            data(read(fresh, 8, 100)),
            b"z",
            "a fresh stream still reads"
        );
        assert_eq!(
            data(read(elsewhere, 8, 100)),
            b"y",
            "another instance's stream is not touched"
        );
        // The fresh stream met its end within that read: nothing is held any more.
        assert!(gauges(&rt).contains(&("fetch.streams.held".into(), 0)));
        for h in [forgotten, done, elsewhere, fresh] {
            close(h);
        }
    }

    /// The sweeper task does the same on its own, within a few periods.
    #[test]
    fn the_sweeper_releases_forgotten_streams() {
        let rt = rt();
        let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Bytes, tsm_core::RsmError>>();
        let h = open(rt.clone(), rx.boxed());
        spawn_sweeper(&rt, Duration::from_millis(200));
        let deadline = Instant::now() + Duration::from_secs(10);
        while !tx.is_closed() {
            assert!(Instant::now() < deadline, "not released within 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(code(read(h, 8, 100)), READ_ERROR);
        close(h);
    }
}
