//! Deadlines on every remote wait: [`Deadlines`] (the `tsm.storage.*.timeout.ms` keys) and
//! [`DeadlineBackend`], the wrapper the engine puts around whatever backend it is given, so
//! every backend gets the same bounds at the one place the engine calls a store.
//!
//! - `fetch`: the call plus its first body item within `first_byte`; each later item
//!   within `idle`; and the whole GET within `get` — all counted only while the reader is
//!   waiting (a consumer that pauses between polls is not a stalled store). The last bound
//!   catches a store that trickles bytes (a few KB/s keeps every gap under `idle`).
//! - `upload`: the store must keep taking bytes: the call fails when for more than `idle`
//!   the store has neither pulled a body item, nor read a request body frame, nor finished
//!   a part or block ([`tsm_storage::progress`]: the S3 backend reports each body frame of
//!   a part as the HTTP client sends it, the multipart writer each finished part), or when
//!   it has not completed the upload `idle` after the body ended. So a slow link (a 25 MiB
//!   part taking minutes) is not a stall, a store that takes nothing is. Time spent waiting
//!   on our side (the body's producer: compression, encryption; the upload rate limiter's
//!   sleeps, reported as local waits) is neither idleness nor counted against `upload`,
//!   the bound of the whole call.
//! - `delete`: the whole call within `delete`.
//! - `list`: each page item within `idle`.
//!
//! A deadline hit is [`BackendError::Transient`] (a retriable error for the broker) naming
//! the object, the byte range and the key of the deadline that fired. The timed-out future
//! is dropped, which drops the SDK request; the upload's own guard aborts its multipart
//! upload, the engine's copy guard deletes what the copy wrote ([`super::cleanup`]).
//!
//! The cache-load bounds `fetch.*.cache.get.timeout.ms` (the Java plugin's keys) keep their
//! meaning on top: how long a caller waits for a load through a cache (`bounded`, below).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

use async_trait::async_trait;
use futures::Stream;
use tokio::time::Sleep;

use tsm_storage::progress::UploadProgress;

use crate::RsmError;
use crate::config::names::{
    STORAGE_DELETE_TIMEOUT_MS, STORAGE_GET_FIRST_BYTE_TIMEOUT_MS, STORAGE_GET_IDLE_TIMEOUT_MS,
    STORAGE_GET_TIMEOUT_MS, STORAGE_UPLOAD_TIMEOUT_MS,
};
use tsm_storage::{BackendError, ByteRange, ByteStream, ListStream, ObjectKey, StorageBackend};

/// The bounds of store calls (see the module docs). Defaults: 30 s each, upload 10 min.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadlines {
    /// `tsm.storage.get.first.byte.timeout.ms`: GET issued -> first body byte.
    pub first_byte: Duration,
    /// `tsm.storage.get.idle.timeout.ms`: longest gap between GET body items, and the
    /// longest the store may go without pulling an upload's body.
    pub idle: Duration,
    /// `tsm.storage.get.timeout.ms`: longest a GET may keep its reader waiting in all
    /// (first byte, every gap, the body's transfer).
    pub get: Duration,
    /// `tsm.storage.upload.timeout.ms`: one whole object upload.
    pub upload: Duration,
    /// `tsm.storage.delete.timeout.ms`: one (batched) delete.
    pub delete: Duration,
}

/// Default `first_byte`, `idle` and `delete` bound.
pub const DEFAULT_STORE_TIMEOUT: Duration = Duration::from_secs(30);
/// Default whole-GET bound: a GET is at most `max_get_bytes` (8 MiB) or one chunk, so at
/// 2 minutes a store below ~70 KB/s is given up on.
pub const DEFAULT_GET_TIMEOUT: Duration = Duration::from_secs(120);
/// Default whole-upload bound: a 1 GiB segment at under 2 MB/s still fits.
pub const DEFAULT_UPLOAD_TIMEOUT: Duration = Duration::from_secs(600);

impl Default for Deadlines {
    fn default() -> Self {
        Self {
            first_byte: DEFAULT_STORE_TIMEOUT,
            idle: DEFAULT_STORE_TIMEOUT,
            get: DEFAULT_GET_TIMEOUT,
            upload: DEFAULT_UPLOAD_TIMEOUT,
            delete: DEFAULT_STORE_TIMEOUT,
        }
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The transient error of a deadline hit.
fn expired(key: &ObjectKey, what: String, limit: Duration, config_key: &str) -> BackendError {
    BackendError::Transient {
        key: key.clone(),
        detail: format!(
            "deadline: {what} took longer than {} ms ({config_key}); the request was abandoned",
            ms(limit)
        ),
        source: None,
    }
}

fn range_text(range: Option<ByteRange>) -> String {
    range.map_or_else(|| "the whole object".to_string(), |r| r.to_string())
}

/// `fut`, or [`RsmError::Timeout`] naming `what()` and `key` once `limit` has passed: the
/// wait for one load through a cache (`fetch.*.cache.get.timeout.ms`). The timed-out load
/// is dropped; a caller waiting on the same single-flight load then runs its own
/// (crate::cache::AsyncCache), and nothing half-loaded is cached.
pub(crate) async fn bounded<T>(
    limit: Duration,
    key: &'static str,
    what: impl FnOnce() -> String,
    fut: impl Future<Output = Result<T, RsmError>>,
) -> Result<T, RsmError> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r,
        Err(_) => Err(RsmError::Timeout {
            what: what(),
            after_ms: ms(limit),
            key,
        }),
    }
}

/// A [`StorageBackend`] whose every call is bounded by [`Deadlines`].
pub struct DeadlineBackend {
    inner: Arc<dyn StorageBackend>,
    deadlines: Deadlines,
}

impl DeadlineBackend {
    /// Bounds `inner`'s calls by `deadlines`.
    pub fn new(inner: Arc<dyn StorageBackend>, deadlines: Deadlines) -> Self {
        Self { inner, deadlines }
    }
}

impl fmt::Debug for DeadlineBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeadlineBackend")
            .field("inner", &self.inner)
            .field("deadlines", &self.deadlines)
            .finish()
    }
}

impl fmt::Display for DeadlineBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}

#[async_trait]
impl StorageBackend for DeadlineBackend {
    async fn upload(
        &self,
        key: &ObjectKey,
        body: ByteStream,
        size: Option<u64>,
    ) -> Result<u64, BackendError> {
        let progress = Arc::new(Mutex::new(Progress::new()));
        let store = Arc::new(UploadProgress::new());
        let body: ByteStream = Box::pin(WatchedBody {
            inner: body,
            progress: progress.clone(),
        });
        let (idle, whole) = (self.deadlines.idle, self.deadlines.upload);
        let started = Instant::now();
        let upload =
            tsm_storage::progress::scope(store.clone(), self.inner.upload(key, body, size));
        let watchdog = async {
            let tick = (idle / 4).min(whole / 4) + Duration::from_millis(1);
            loop {
                tokio::time::sleep(tick).await;
                let ours = store.local_waited();
                if started.elapsed().saturating_sub(ours) > whole {
                    return expired(
                        key,
                        format!(
                            "the whole upload (not counting {} ms of local waits)",
                            ms(ours)
                        ),
                        whole,
                        STORAGE_UPLOAD_TIMEOUT_MS,
                    );
                }
                let stalled = progress
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .stalled_for(idle, store.idle_for());
                if let Some(what) = stalled {
                    return expired(
                        key,
                        format!("upload ({what})"),
                        idle,
                        STORAGE_GET_IDLE_TIMEOUT_MS,
                    );
                }
            }
        };
        tokio::select! {
            r = upload => r,
            e = watchdog => Err(e),
        }
    }

    async fn fetch(
        &self,
        key: &ObjectKey,
        range: Option<ByteRange>,
    ) -> Result<ByteStream, BackendError> {
        let first_byte = self.deadlines.first_byte;
        let started = tokio::time::Instant::now();
        let body = match tokio::time::timeout(first_byte, self.inner.fetch(key, range)).await {
            Ok(r) => r?,
            Err(_) => {
                return Err(expired(
                    key,
                    format!("GET of {} (no response)", range_text(range)),
                    first_byte,
                    STORAGE_GET_FIRST_BYTE_TIMEOUT_MS,
                ));
            }
        };
        Ok(Box::pin(Bounded {
            inner: body,
            key: key.clone(),
            what: range_text(range),
            first: Some(started + first_byte),
            first_byte,
            idle: self.deadlines.idle,
            total: self.deadlines.get,
            waited: Duration::ZERO,
            waiting_since: Some(started),
            timer: None,
            received: 0,
            done: false,
        }))
    }

    async fn delete(&self, keys: &[ObjectKey]) -> Result<(), BackendError> {
        match tokio::time::timeout(self.deadlines.delete, self.inner.delete(keys)).await {
            Ok(r) => r,
            Err(_) => {
                let key = keys
                    .first()
                    .cloned()
                    .unwrap_or_else(|| ObjectKey::plain(""));
                Err(expired(
                    &key,
                    format!("delete of {} object(s)", keys.len()),
                    self.deadlines.delete,
                    STORAGE_DELETE_TIMEOUT_MS,
                ))
            }
        }
    }

    fn list(&self, prefix: &ObjectKey) -> ListStream {
        Box::pin(Bounded {
            inner: self.inner.list(prefix),
            key: prefix.clone(),
            what: "listing".to_string(),
            first: None,
            first_byte: self.deadlines.idle,
            idle: self.deadlines.idle,
            // A listing pages on: only its gaps are bounded.
            total: Duration::MAX,
            waited: Duration::ZERO,
            waiting_since: None,
            timer: None,
            received: 0,
            done: false,
        })
    }

    fn upload_buffer_bytes(&self) -> u64 {
        self.inner.upload_buffer_bytes()
    }

    fn reads_are_local(&self) -> bool {
        self.inner.reads_are_local()
    }
}

/// How far the store got in pulling an upload's body.
struct Progress {
    /// When the last item was handed over (or the upload started).
    last_item: Instant,
    /// The store is waiting for the next item (our side is slow, not the store).
    in_poll: bool,
    /// When the body ended, if it has.
    ended: Option<Instant>,
    items: u64,
}

impl Progress {
    fn new() -> Self {
        Self {
            last_item: Instant::now(),
            in_poll: false,
            ended: None,
            items: 0,
        }
    }

    /// What the store is stuck on, when it has been stuck for `idle`; `store_idle` is how
    /// long it has taken no bytes by the backend's own reports (zero during a local wait).
    fn stalled_for(&self, idle: Duration, store_idle: Duration) -> Option<String> {
        if store_idle <= idle {
            return None;
        }
        if let Some(end) = self.ended {
            return (end.elapsed() > idle)
                .then(|| format!("completing after all {} body items were sent", self.items));
        }
        (!self.in_poll && self.last_item.elapsed() > idle).then(|| {
            format!(
                "the store stopped taking body bytes after {} items",
                self.items
            )
        })
    }
}

/// An upload body that records the store's pulls into [`Progress`].
struct WatchedBody {
    inner: ByteStream,
    progress: Arc<Mutex<Progress>>,
}

impl Stream for WatchedBody {
    type Item = Result<bytes::Bytes, BackendError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let r = self.inner.as_mut().poll_next(cx);
        let mut p = self.progress.lock().unwrap_or_else(|p| p.into_inner());
        match &r {
            Poll::Pending => p.in_poll = true,
            Poll::Ready(Some(_)) => {
                p.in_poll = false;
                p.items += 1;
                p.last_item = Instant::now();
            }
            Poll::Ready(None) => {
                p.in_poll = false;
                p.ended.get_or_insert_with(Instant::now);
            }
        }
        r
    }
}

/// A download (or listing) whose first item must come by `first` and each next one within
/// `idle` of the reader starting to wait for it.
struct Bounded<T> {
    inner: futures::stream::BoxStream<'static, Result<T, BackendError>>,
    key: ObjectKey,
    what: String,
    /// The first item's deadline (from the request), until it arrived.
    first: Option<tokio::time::Instant>,
    first_byte: Duration,
    idle: Duration,
    /// Bound of all waiting together ([`Deadlines::get`]).
    total: Duration,
    /// Waiting time before the current wait.
    waited: Duration,
    /// The reader has been waiting since then (`None`: not waiting).
    waiting_since: Option<tokio::time::Instant>,
    timer: Option<Pin<Box<Sleep>>>,
    received: u64,
    done: bool,
}

impl<T> Stream for Bounded<T> {
    type Item = Result<T, BackendError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        match self.inner.as_mut().poll_next(cx) {
            Poll::Ready(item) => {
                if let Some(since) = self.waiting_since.take() {
                    self.waited += since.elapsed();
                }
                self.timer = None;
                self.first = None;
                self.received += 1;
                if item.is_none() {
                    self.done = true;
                }
                return Poll::Ready(item);
            }
            Poll::Pending => {}
        }
        let now = tokio::time::Instant::now();
        let since = *self.waiting_since.get_or_insert(now);
        // Where the whole-GET bound falls for this wait.
        let total_at = since.checked_add(self.total.saturating_sub(self.waited));
        if self.timer.is_none() {
            let gap_at = match self.first {
                Some(first) => first,
                None => now + self.idle,
            };
            let at = total_at.map_or(gap_at, |t| t.min(gap_at));
            self.timer = Some(Box::pin(tokio::time::sleep_until(at)));
        }
        let fired = self
            .timer
            .as_mut()
            .is_some_and(|t| t.as_mut().poll(cx).is_ready());
        if !fired {
            return Poll::Pending;
        }
        self.done = true;
        let whole = total_at.is_some_and(|t| tokio::time::Instant::now() >= t);
        let (limit, config_key, what) = if whole {
            (
                self.total,
                STORAGE_GET_TIMEOUT_MS,
                format!(
                    "a GET of {} (all of it; {} items arrived)",
                    self.what, self.received
                ),
            )
        } else if self.first.is_some() {
            (
                self.first_byte,
                STORAGE_GET_FIRST_BYTE_TIMEOUT_MS,
                format!("the first byte of a GET of {}", self.what),
            )
        } else {
            (
                self.idle,
                STORAGE_GET_IDLE_TIMEOUT_MS,
                format!(
                    "the next body item of a GET of {} after {} items",
                    self.what, self.received
                ),
            )
        };
        Poll::Ready(Some(Err(expired(&self.key, what, limit, config_key))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use futures::{StreamExt, TryStreamExt};
    use tsm_storage::fault::{Fault, FaultInjectingBackend, Op};
    use tsm_storage::memory::MemoryBackend;

    fn short() -> Deadlines {
        Deadlines {
            first_byte: Duration::from_millis(200),
            idle: Duration::from_millis(200),
            get: Duration::from_secs(60),
            upload: Duration::from_secs(5),
            delete: Duration::from_millis(200),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_get_fails_at_first_byte_with_a_transient_error_naming_range_and_key() {
        let mem = Arc::new(MemoryBackend::new());
        let key = ObjectKey::plain("t/0.log");
        mem.upload(
            &key,
            futures::stream::once(async { Ok(Bytes::from_static(b"abcdef")) }).boxed(),
            Some(6),
        )
        .await
        .expect("upload");
        let faulty = Arc::new(FaultInjectingBackend::new(mem));
        faulty.on_every(Op::Fetch, Fault::Stall(Duration::from_secs(3600)));
        let b = DeadlineBackend::new(faulty, short());
        let range = ByteRange::new(1, 3);
        let r = b.fetch(&key, range).await;
        let e = match r {
            Ok(s) => s.try_collect::<Vec<_>>().await.expect_err("deadline"),
            Err(e) => e,
        };
        assert!(e.is_transient(), "{e}");
        let m = e.to_string();
        assert!(m.contains(STORAGE_GET_FIRST_BYTE_TIMEOUT_MS), "{m}");
        assert!(m.contains("t/0.log") && m.contains("1-3"), "{m}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_reader_is_not_a_stalled_store() {
        let mem = Arc::new(MemoryBackend::new());
        let key = ObjectKey::plain("k");
        mem.upload(
            &key,
            futures::stream::iter(vec![Ok(Bytes::from_static(b"ab"))]).boxed(),
            None,
        )
        .await
        .expect("upload");
        let b = DeadlineBackend::new(mem, short());
        let mut s = b.fetch(&key, None).await.expect("fetch");
        tokio::time::sleep(Duration::from_secs(10)).await;
        let got = s.next().await.expect("item").expect("bytes");
        assert_eq!(&got[..], b"ab");
        assert!(s.next().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_stops_fails_at_the_idle_deadline() {
        struct Stopping;
        impl fmt::Debug for Stopping {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("Stopping")
            }
        }
        impl fmt::Display for Stopping {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("Stopping")
            }
        }
        #[async_trait]
        impl StorageBackend for Stopping {
            async fn upload(
                &self,
                _: &ObjectKey,
                mut body: ByteStream,
                _: Option<u64>,
            ) -> Result<u64, BackendError> {
                // Takes one item, then hangs as a store that stopped reading would.
                let _ = body.next().await;
                futures::future::pending().await
            }
            async fn fetch(
                &self,
                _: &ObjectKey,
                _: Option<ByteRange>,
            ) -> Result<ByteStream, BackendError> {
                Ok(
                    futures::stream::once(async { Ok(Bytes::from_static(b"x")) })
                        .chain(futures::stream::pending())
                        .boxed(),
                )
            }
            async fn delete(&self, _: &[ObjectKey]) -> Result<(), BackendError> {
                futures::future::pending().await
            }
            fn list(&self, _: &ObjectKey) -> ListStream {
                futures::stream::pending().boxed()
            }
            fn upload_buffer_bytes(&self) -> u64 {
                0
            }
            fn reads_are_local(&self) -> bool {
                false
            }
        }
        let b = DeadlineBackend::new(Arc::new(Stopping), short());
        let key = ObjectKey::plain("s");
        let e = b
            .fetch(&key, None)
            .await
            .expect("fetch")
            .try_collect::<Vec<_>>()
            .await
            .expect_err("idle");
        assert!(e.to_string().contains(STORAGE_GET_IDLE_TIMEOUT_MS), "{e}");
        assert!(e.to_string().contains("after 1 items"), "{e}");

        let body = futures::stream::iter((0..10).map(|_| Ok(Bytes::from_static(b"x")))).boxed();
        let e = b
            .upload(&key, body, None)
            .await
            .expect_err("stalled upload");
        assert!(
            e.is_transient() && e.to_string().contains(STORAGE_GET_IDLE_TIMEOUT_MS),
            "{e}"
        );

        let e = b
            .delete(std::slice::from_ref(&key))
            .await
            .expect_err("delete");
        assert!(
            e.is_transient() && e.to_string().contains(STORAGE_DELETE_TIMEOUT_MS),
            "{e}"
        );

        let e = b
            .list(&key)
            .try_collect::<Vec<_>>()
            .await
            .expect_err("list");
        assert!(e.is_transient(), "{e}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_trickling_get_fails_at_the_whole_get_deadline() {
        struct Trickle;
        impl fmt::Debug for Trickle {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("Trickle")
            }
        }
        impl fmt::Display for Trickle {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("Trickle")
            }
        }
        #[async_trait]
        impl StorageBackend for Trickle {
            async fn upload(
                &self,
                _: &ObjectKey,
                _: ByteStream,
                _: Option<u64>,
            ) -> Result<u64, BackendError> {
                Ok(0)
            }
            async fn fetch(
                &self,
                _: &ObjectKey,
                _: Option<ByteRange>,
            ) -> Result<ByteStream, BackendError> {
                // One byte every 100 ms, forever: every gap is far below the idle bound.
                Ok(futures::stream::unfold((), |()| async {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    Some((Ok(Bytes::from_static(b"x")), ()))
                })
                .boxed())
            }
            async fn delete(&self, _: &[ObjectKey]) -> Result<(), BackendError> {
                Ok(())
            }
            fn list(&self, _: &ObjectKey) -> ListStream {
                futures::stream::empty().boxed()
            }
            fn upload_buffer_bytes(&self) -> u64 {
                0
            }
            fn reads_are_local(&self) -> bool {
                false
            }
        }
        let mut d = short();
        d.get = Duration::from_secs(2);
        let b = DeadlineBackend::new(Arc::new(Trickle), d);
        let e = b
            .fetch(&ObjectKey::plain("t"), ByteRange::new(0, 1 << 20))
            .await
            .expect("fetch")
            .try_collect::<Vec<_>>()
            .await
            .expect_err("trickle");
        assert!(e.is_transient(), "{e}");
        assert!(e.to_string().contains(STORAGE_GET_TIMEOUT_MS), "{e}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_body_producer_is_not_a_stalled_store() {
        let mem = Arc::new(MemoryBackend::new());
        let b = DeadlineBackend::new(mem.clone(), short());
        // Our side takes 1 s per item (5x the idle bound): the store waits on us.
        let body = futures::stream::iter(0..3)
            .then(|_| async {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Ok(Bytes::from_static(b"ab"))
            })
            .boxed();
        let key = ObjectKey::plain("p");
        assert_eq!(b.upload(&key, body, None).await.expect("upload"), 6);
    }

    /// A store that takes one body item, then sends it slowly for many idle periods while
    /// reporting progress (an UploadPart's frames leaving on a congested link) or not at
    /// all (a store that reads nothing).
    #[derive(Debug)]
    struct SlowSender {
        reports: bool,
    }
    impl fmt::Display for SlowSender {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("SlowSender")
        }
    }
    #[async_trait]
    impl StorageBackend for SlowSender {
        async fn upload(
            &self,
            _: &ObjectKey,
            mut body: ByteStream,
            _: Option<u64>,
        ) -> Result<u64, BackendError> {
            let first = body.next().await.transpose()?.map_or(0, |b| b.len());
            // A part task of its own, as the multipart writer runs it.
            let progress = tsm_storage::progress::current();
            let reports = self.reports;
            let part = tokio::spawn(async move {
                for _ in 0..20 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    if let (true, Some(p)) = (reports, &progress) {
                        p.record();
                    }
                }
            });
            part.await.map_err(|e| BackendError::Other {
                key: ObjectKey::plain("x"),
                detail: e.to_string(),
                source: None,
            })?;
            Ok(first as u64)
        }
        async fn fetch(
            &self,
            _: &ObjectKey,
            _: Option<ByteRange>,
        ) -> Result<ByteStream, BackendError> {
            futures::future::pending().await
        }
        async fn delete(&self, _: &[ObjectKey]) -> Result<(), BackendError> {
            Ok(())
        }
        fn list(&self, _: &ObjectKey) -> ListStream {
            futures::stream::empty().boxed()
        }
        fn upload_buffer_bytes(&self) -> u64 {
            0
        }
        fn reads_are_local(&self) -> bool {
            false
        }
    }

    /// Slow is not stalled: 2 s of sending (10x the idle bound) with progress reported
    /// succeeds; the same without progress fails at the idle bound naming its key.
    #[tokio::test(start_paused = true)]
    async fn a_slow_store_that_takes_bytes_is_not_stalled_one_that_takes_nothing_is() {
        let key = ObjectKey::plain("slow");
        let body = || futures::stream::iter([Ok(Bytes::from_static(b"abc"))]).boxed();
        let b = DeadlineBackend::new(Arc::new(SlowSender { reports: true }), short());
        assert_eq!(b.upload(&key, body(), None).await.expect("slow upload"), 3);
        let b = DeadlineBackend::new(Arc::new(SlowSender { reports: false }), short());
        let started = Instant::now();
        let e = b.upload(&key, body(), None).await.expect_err("deaf store");
        assert!(
            e.is_transient() && e.to_string().contains(STORAGE_GET_IDLE_TIMEOUT_MS),
            "{e}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "failed within the idle bound"
        );
    }

    /// The upload rate limiter's waits are ours: an item that waits 9 s for its tokens
    /// (45x the idle bound, longer than the whole-upload bound of 5 s) still succeeds; behind
    /// the same limiter a store that takes nothing still fails.
    #[tokio::test(start_paused = true)]
    async fn rate_limit_waits_are_neither_idleness_nor_counted_against_the_whole_upload() {
        let mem = Arc::new(MemoryBackend::new());
        let limited = Arc::new(tsm_storage::rate_limit::RateLimitedBackend::new(mem, 100));
        let b = DeadlineBackend::new(limited, short());
        let body = futures::stream::iter([
            Ok(Bytes::from(vec![7u8; 100])),
            Ok(Bytes::from(vec![8u8; 900])),
        ])
        .boxed();
        let key = ObjectKey::plain("limited");
        assert_eq!(b.upload(&key, body, None).await.expect("upload"), 1000);

        let faulty = Arc::new(FaultInjectingBackend::new(Arc::new(MemoryBackend::new())));
        faulty.on_every(Op::Upload, Fault::Stall(Duration::from_secs(3600)));
        let limited = Arc::new(tsm_storage::rate_limit::RateLimitedBackend::new(
            faulty, 100,
        ));
        let b = DeadlineBackend::new(limited, short());
        let body = futures::stream::iter([Ok(Bytes::from(vec![7u8; 1000]))]).boxed();
        let e = b.upload(&key, body, None).await.expect_err("stalled");
        assert!(e.is_transient(), "{e}");
    }
}
