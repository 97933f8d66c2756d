//! [`FaultInjectingBackend`]: a [`StorageBackend`] wrapper for tests that makes chosen calls
//! fail or cuts their byte streams, in front of a real backend (never instead of one).
//!
//! Rules say which call of which operation (1-based, counted per operation since the
//! wrapper was built, or every call) gets which fault: an error before the inner backend
//! is called ([`Fault::Error`]), or a stream cut after N bytes ([`Fault::CutAfter`]: for
//! `fetch` the returned stream ends with an error after N bytes; for `upload` the body the
//! inner backend sees fails after N bytes, so the inner backend's abort path runs).
//! Injected errors are [`BackendError::Transient`] with detail `injected fault ...`. A
//! [`Fault::Stall`] delays the call instead of failing it; [`Fault::LateWrite`] never
//! answers an upload but lets it land later, as a store that commits a write after its
//! client's deadline.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;

use super::{BackendError, ByteRange, ByteStream, ListStream, ObjectKey, StorageBackend};

/// The operation a rule applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// [`StorageBackend::upload`]
    Upload,
    /// [`StorageBackend::fetch`]
    Fetch,
    /// [`StorageBackend::delete`]
    Delete,
    /// [`StorageBackend::list`]
    List,
}

impl Op {
    fn index(self) -> usize {
        self as usize
    }
}

/// What goes wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The call fails without reaching the inner backend.
    Error,
    /// The byte stream (fetch: the result; upload: the body) fails after this many bytes.
    /// For delete and list it acts as [`Fault::Error`].
    CutAfter(u64),
    /// The call waits this long, then proceeds normally (a store that hangs; tests of the
    /// `fetch.*.get.timeout.ms` bounds). The wait is a tokio sleep: dropping the call ends it.
    Stall(std::time::Duration),
    /// An upload the store commits after its client gave up: the call never answers (the
    /// caller's deadline ends it), and the upload reaches the inner backend on its own
    /// after this delay, whether or not the call was dropped (a PUT that lands after the
    /// client's timeout). For the other operations it acts as [`Fault::Stall`].
    LateWrite(std::time::Duration),
}

#[derive(Clone, Copy, Debug)]
struct Rule {
    op: Op,
    /// 1-based call number; `None` = every call.
    nth: Option<u64>,
    fault: Fault,
}

/// Wraps a backend and injects faults by rule; forwards everything else unchanged.
#[derive(Debug)]
pub struct FaultInjectingBackend {
    inner: Arc<dyn StorageBackend>,
    calls: [AtomicU64; 4],
    rules: Mutex<Vec<Rule>>,
}

impl FaultInjectingBackend {
    /// No rules yet: behaves exactly like `inner`.
    pub fn new(inner: Arc<dyn StorageBackend>) -> Self {
        Self {
            inner,
            calls: Default::default(),
            rules: Mutex::new(Vec::new()),
        }
    }

    /// The `nth` call (1-based, counting all calls of `op` since construction) gets `fault`.
    pub fn on_nth(&self, op: Op, nth: u64, fault: Fault) -> &Self {
        self.rules_mut().push(Rule {
            op,
            nth: Some(nth),
            fault,
        });
        self
    }

    /// Every call of `op` from now on gets `fault` (until [`Self::clear`]).
    pub fn on_every(&self, op: Op, fault: Fault) -> &Self {
        self.rules_mut().push(Rule {
            op,
            nth: None,
            fault,
        });
        self
    }

    /// Removes every rule.
    pub fn clear(&self) {
        self.rules_mut().clear();
    }

    /// Calls of `op` so far (faulted ones included).
    pub fn calls(&self, op: Op) -> u64 {
        self.calls[op.index()].load(Ordering::SeqCst)
    }

    fn rules_mut(&self) -> std::sync::MutexGuard<'_, Vec<Rule>> {
        self.rules.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts the call and returns its fault, if any.
    fn begin(&self, op: Op) -> (u64, Option<Fault>) {
        let n = self.calls[op.index()].fetch_add(1, Ordering::SeqCst) + 1;
        let fault = self
            .rules_mut()
            .iter()
            .find(|r| r.op == op && r.nth.is_none_or(|k| k == n))
            .map(|r| match (op, r.fault) {
                (Op::Upload, f) => f,
                (_, Fault::LateWrite(d)) => Fault::Stall(d),
                (_, f) => f,
            });
        (n, fault)
    }
}

fn injected(key: &ObjectKey, op: Op, n: u64, what: &str) -> BackendError {
    BackendError::Transient {
        key: key.clone(),
        detail: format!("injected fault: {what} ({op:?} call {n})"),
        source: None,
    }
}

/// `stream` passing through `limit` bytes, then one error.
fn cut(stream: ByteStream, limit: u64, err: BackendError) -> ByteStream {
    let state = (stream, limit, Some(err));
    futures::stream::unfold(state, |(mut stream, left, mut err)| async move {
        let e = err.take()?;
        if left == 0 {
            return Some((Err(e), (stream, 0, None)));
        }
        match stream.next().await {
            None => Some((Err(e), (stream, 0, None))),
            Some(Err(inner)) => Some((Err(inner), (stream, 0, None))),
            Some(Ok(b)) => {
                let len = b.len() as u64;
                if len <= left {
                    Some((Ok(b), (stream, left - len, Some(e))))
                } else {
                    let head: Bytes = b.slice(..left as usize);
                    Some((Ok(head), (stream, 0, Some(e))))
                }
            }
        }
    })
    .boxed()
}

impl fmt::Display for FaultInjectingBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultInjecting({})", self.inner)
    }
}

#[async_trait]
impl StorageBackend for FaultInjectingBackend {
    async fn upload(
        &self,
        key: &ObjectKey,
        body: ByteStream,
        size: Option<u64>,
    ) -> Result<u64, BackendError> {
        match self.begin(Op::Upload) {
            (n, Some(Fault::Error)) => Err(injected(key, Op::Upload, n, "upload refused")),
            (n, Some(Fault::CutAfter(limit))) => {
                let err = injected(key, Op::Upload, n, &format!("body cut after {limit} bytes"));
                self.inner.upload(key, cut(body, limit, err), size).await
            }
            (_, Some(Fault::Stall(d))) => {
                tokio::time::sleep(d).await;
                self.inner.upload(key, body, size).await
            }
            (_, Some(Fault::LateWrite(d))) => {
                let (inner, key) = (self.inner.clone(), key.clone());
                tokio::spawn(async move {
                    tokio::time::sleep(d).await;
                    let _ = inner.upload(&key, body, size).await;
                });
                std::future::pending().await
            }
            (_, None) => self.inner.upload(key, body, size).await,
        }
    }

    async fn fetch(
        &self,
        key: &ObjectKey,
        range: Option<ByteRange>,
    ) -> Result<ByteStream, BackendError> {
        match self.begin(Op::Fetch) {
            (n, Some(Fault::Error)) => Err(injected(key, Op::Fetch, n, "fetch refused")),
            (n, Some(Fault::CutAfter(limit))) => {
                let stream = self.inner.fetch(key, range).await?;
                let err = injected(
                    key,
                    Op::Fetch,
                    n,
                    &format!("stream cut after {limit} bytes"),
                );
                Ok(cut(stream, limit, err))
            }
            (_, Some(Fault::Stall(d) | Fault::LateWrite(d))) => {
                tokio::time::sleep(d).await;
                self.inner.fetch(key, range).await
            }
            (_, None) => self.inner.fetch(key, range).await,
        }
    }

    async fn delete(&self, keys: &[ObjectKey]) -> Result<(), BackendError> {
        match self.begin(Op::Delete) {
            (_, Some(Fault::Stall(d) | Fault::LateWrite(d))) => {
                tokio::time::sleep(d).await;
                self.inner.delete(keys).await
            }
            (n, Some(_)) => {
                let key = keys
                    .first()
                    .cloned()
                    .unwrap_or_else(|| ObjectKey::plain(""));
                Err(injected(&key, Op::Delete, n, "delete refused"))
            }
            (_, None) => self.inner.delete(keys).await,
        }
    }

    fn upload_buffer_bytes(&self) -> u64 {
        self.inner.upload_buffer_bytes()
    }

    fn reads_are_local(&self) -> bool {
        self.inner.reads_are_local()
    }

    fn list(&self, prefix: &ObjectKey) -> ListStream {
        match self.begin(Op::List) {
            (_, Some(Fault::Stall(d) | Fault::LateWrite(d))) => {
                let inner = self.inner.list(prefix);
                futures::stream::once(async move {
                    tokio::time::sleep(d).await;
                    inner
                })
                .flatten()
                .boxed()
            }
            (n, Some(_)) => {
                let err = injected(prefix, Op::List, n, "list refused");
                futures::stream::once(async move { Err(err) }).boxed()
            }
            (_, None) => self.inner.list(prefix),
        }
    }
}
