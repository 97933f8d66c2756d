//! [`GatedBackend`]: a [`StorageBackend`] wrapper for tests that holds chosen `fetch` calls
//! until the test releases them, in front of a real backend (never instead of one). It
//! makes races deterministic: a GET is provably in flight while the test deletes or
//! overwrites the object, and its bytes arrive exactly when the test says so.
//!
//! A held call has already been answered by the inner backend: its whole body was read
//! into memory when it arrived (so it holds the object's bytes as they were then, as a GET
//! served by the store before a delete does). [`GatedBackend::next_held`] hands the test
//! each held call, in arrival order, as a [`HeldCall`]; [`HeldCall::release`] lets the
//! bytes through and returns a [`Finished`] that resolves once the caller dropped the
//! body stream (the GET is over on the caller's side); [`HeldCall::gone`] resolves when
//! the call was dropped while held (its caller was cancelled);
//! [`GatedBackend::try_next_held`] tells, without waiting, whether another call is held
//! (none beyond those expected arrived). Dropping a `HeldCall`
//! releases it. Calls the predicate does not match pass straight through; other operations
//! are forwarded unchanged.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use tokio::sync::{Mutex, mpsc, oneshot};

use super::{BackendError, ByteRange, ByteStream, ListStream, ObjectKey, StorageBackend};

/// Which fetch calls are held: `(key, range)` -> hold?
type Matcher = Box<dyn Fn(&ObjectKey, Option<ByteRange>) -> bool + Send + Sync>;

/// Wraps a backend and holds the `fetch` calls `matches` selects (see the module docs).
pub struct GatedBackend {
    inner: Arc<dyn StorageBackend>,
    matches: Matcher,
    arrived: mpsc::UnboundedSender<HeldCall>,
    arrivals: Mutex<mpsc::UnboundedReceiver<HeldCall>>,
}

/// One fetch call held at the gate.
#[derive(Debug)]
pub struct HeldCall {
    /// The object asked for.
    pub key: ObjectKey,
    /// The range asked for (`None`: the whole object).
    pub range: Option<ByteRange>,
    release: Option<oneshot::Sender<()>>,
    gone: Option<oneshot::Receiver<()>>,
    finished: Option<oneshot::Receiver<()>>,
}

/// Resolves once the caller of a released call dropped (or finished) its body stream.
#[derive(Debug)]
pub struct Finished(Option<oneshot::Receiver<()>>);

impl Finished {
    /// Waits until the body stream of the released call is dropped.
    pub async fn wait(mut self) {
        if let Some(rx) = self.0.take() {
            // Nothing is ever sent: the sender is dropped with the stream.
            let _ = rx.await;
        }
    }
}

impl HeldCall {
    /// Lets the call's bytes through; the returned [`Finished`] resolves when the caller
    /// dropped the body stream.
    pub fn release(mut self) -> Finished {
        if let Some(tx) = self.release.take() {
            let _ = tx.send(());
        }
        Finished(self.finished.take())
    }

    /// Waits until the held call is dropped by its caller (cancelled) without having been
    /// released. Never resolves for a call that was released.
    pub async fn gone(&mut self) {
        if let Some(rx) = self.gone.take() {
            let _ = rx.await;
        }
    }
}

impl Drop for HeldCall {
    fn drop(&mut self) {
        if let Some(tx) = self.release.take() {
            let _ = tx.send(());
        }
    }
}

impl GatedBackend {
    /// Holds every `fetch` call for which `matches(key, range)` is true.
    pub fn new(
        inner: Arc<dyn StorageBackend>,
        matches: impl Fn(&ObjectKey, Option<ByteRange>) -> bool + Send + Sync + 'static,
    ) -> Self {
        let (arrived, arrivals) = mpsc::unbounded_channel();
        Self {
            inner,
            matches: Box::new(matches),
            arrived,
            arrivals: Mutex::new(arrivals),
        }
    }

    /// The next held call, in arrival order (waits until one arrives).
    pub async fn next_held(&self) -> HeldCall {
        let mut rx = self.arrivals.lock().await;
        match rx.recv().await {
            Some(call) => call,
            // The sender lives in `self`: the channel cannot close while we are borrowed.
            None => unreachable!("the gate's own sender is alive"),
        }
    }

    /// The next held call if one has already arrived, without waiting (`None` also while a
    /// [`Self::next_held`] is waiting).
    pub fn try_next_held(&self) -> Option<HeldCall> {
        self.arrivals.try_lock().ok()?.try_recv().ok()
    }
}

impl fmt::Debug for GatedBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GatedBackend")
            .field("inner", &self.inner.to_string())
            .finish_non_exhaustive()
    }
}

impl fmt::Display for GatedBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gated({})", self.inner)
    }
}

/// The collected body, then end of stream; `done` is dropped with the stream.
fn replay(bytes: Bytes, done: oneshot::Sender<()>) -> ByteStream {
    futures::stream::unfold((Some(bytes), done), |(next, done)| async move {
        next.map(|b| (Ok(b), (None, done)))
    })
    .boxed()
}

#[async_trait]
impl StorageBackend for GatedBackend {
    async fn upload(
        &self,
        key: &ObjectKey,
        body: ByteStream,
        size: Option<u64>,
    ) -> Result<u64, BackendError> {
        self.inner.upload(key, body, size).await
    }

    async fn fetch(
        &self,
        key: &ObjectKey,
        range: Option<ByteRange>,
    ) -> Result<ByteStream, BackendError> {
        if !(self.matches)(key, range) {
            return self.inner.fetch(key, range).await;
        }
        let mut body = self.inner.fetch(key, range).await?;
        let mut bytes = BytesMut::new();
        while let Some(b) = body.next().await {
            bytes.extend_from_slice(&b?);
        }
        let (release, released) = oneshot::channel();
        let (gone_tx, gone) = oneshot::channel::<()>();
        let (finished_tx, finished) = oneshot::channel();
        let call = HeldCall {
            key: key.clone(),
            range,
            release: Some(release),
            gone: Some(gone),
            finished: Some(finished),
        };
        if self.arrived.send(call).is_err() {
            return Err(BackendError::Transient {
                key: key.clone(),
                detail: "gate closed".into(),
                source: None,
            });
        }
        // Dropped with this future: `HeldCall::gone` resolves if we are cancelled here.
        let _gone = gone_tx;
        // A dropped `HeldCall` also releases (the sender's drop ends the wait).
        let _ = released.await;
        Ok(replay(bytes.freeze(), finished_tx))
    }

    async fn delete(&self, keys: &[ObjectKey]) -> Result<(), BackendError> {
        self.inner.delete(keys).await
    }

    fn upload_buffer_bytes(&self) -> u64 {
        self.inner.upload_buffer_bytes()
    }

    fn reads_are_local(&self) -> bool {
        self.inner.reads_are_local()
    }

    fn list(&self, prefix: &ObjectKey) -> ListStream {
        self.inner.list(prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryBackend;

    #[tokio::test]
    async fn a_held_call_returns_the_bytes_it_read_on_arrival_once_released() {
        let mem: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        let key = ObjectKey::plain("a.log");
        let put = |v: &'static [u8]| {
            let (mem, key) = (mem.clone(), key.clone());
            async move {
                let body = futures::stream::once(async move { Ok(Bytes::from_static(v)) });
                mem.upload(&key, body.boxed(), Some(v.len() as u64))
                    .await
                    .expect("upload");
            }
        };
        put(b"old").await;
        let gate = Arc::new(GatedBackend::new(mem.clone(), |k, _| {
            k.as_str().ends_with(".log")
        }));
        let call = {
            let (gate, key) = (gate.clone(), key.clone());
            tokio::spawn(async move {
                let body = gate.fetch(&key, None).await.expect("fetch");
                let parts: Vec<Bytes> = body.map(|b| b.expect("body")).collect().await;
                parts.concat()
            })
        };
        let held = gate.next_held().await;
        assert_eq!(held.key, key);
        assert!(gate.try_next_held().is_none(), "one call held");
        put(b"new").await;
        let finished = held.release();
        assert_eq!(&call.await.expect("join")[..], b"old");
        finished.wait().await;
    }

    #[tokio::test]
    async fn a_cancelled_held_call_is_reported_gone() {
        let mem: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        let key = ObjectKey::plain("a.log");
        let body = futures::stream::once(async { Ok(Bytes::from_static(b"x")) });
        mem.upload(&key, body.boxed(), Some(1))
            .await
            .expect("upload");
        let gate = Arc::new(GatedBackend::new(mem, |_, _| true));
        let call = {
            let gate = gate.clone();
            tokio::spawn(async move { gate.fetch(&key, None).await.map(|_| ()) })
        };
        let mut held = gate.next_held().await;
        call.abort();
        held.gone().await;
    }
}
