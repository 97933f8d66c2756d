//! [`Window`]: the ranged GETs of one plan (a sequence of [`Part`]s, built by
//! `engine/ranges.rs`) on one object, several in flight, their bytes handed out in plan
//! order as one contiguous stream (to `engine/fetch.rs`, `engine/cached.rs`, or
//! `engine/decode.rs`'s chunk cutter). Calls only the lifecycle below it.
//!
//! The head GET's body items are handed through as they arrive (the first byte is one
//! round trip away); the GETs behind it are polled in the same task and their items kept
//! until they become the head. Issue policy: the plan's eager parts at once (at most
//! `max` GETs); the other parts only once every eager part has been handed out (the reader
//! wants more than its first read), then 1, 2, 4, ... up to `max` GETs in flight, growing
//! each time the head GET is used up. So a reader that stops after its first read (the
//! broker reads about 1 MiB and closes) has asked the store for the eager parts only.
//!
//! Memory: each GET reserves its length from the engine's budget before it is issued
//! (waiting at most `tsm.storage.get.first.byte.timeout.ms`) and gives it back when its
//! last byte was handed out; so a window holds at most `max` GETs' bytes, all of them
//! reserved. Every GET goes through the engine's `DeadlineBackend` (first byte, idle,
//! whole GET). Dropping the stream drops every GET in flight and their reservations; no
//! GET is issued after that. A GET whose body ends short of its range, or a store that
//! says the range is past the object, is [`RsmError::Corrupt`] naming the object and range.
//! Downloaded bytes are counted (`bytes.downloaded`) as body items arrive.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, Stream, StreamExt};

use super::EngineShared;
use super::lifecycle::Reservation;
use crate::RsmError;
use crate::config::names as config_names;
use tsm_storage::{BackendError, ByteRange, ByteStream, ObjectKey};

/// One GET of a plan (`engine/ranges.rs` builds plans). `eager` parts are issued together
/// when the stream opens; the others as the reader reaches them (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    /// The stored bytes this GET asks for (inclusive).
    pub range: ByteRange,
    /// Issued with the stream's first GETs (the bytes the reader certainly needs first).
    pub eager: bool,
}

type Opening = BoxFuture<'static, Result<(Option<Reservation>, ByteStream), RsmError>>;

enum State {
    Opening(Opening),
    Body(ByteStream),
    Failed(Option<RsmError>),
    Ended,
}

/// One GET in flight: its range, what arrived and was not handed out yet.
struct Get {
    part: Part,
    state: State,
    held: Option<Reservation>,
    buffered: VecDeque<Bytes>,
    received: u64,
}

/// The contiguous bytes of a plan's GETs (see the module docs).
pub(crate) struct Window {
    inner: Arc<EngineShared>,
    key: ObjectKey,
    plan: Box<dyn Iterator<Item = Part> + Send>,
    peeked: Option<Part>,
    gets: VecDeque<Get>,
    max: usize,
    ramp: usize,
    reserve: bool,
    done: bool,
}

impl Window {
    /// The GETs of `plan` on `key`, at most `max` in flight (>= 1).
    pub(crate) fn new(
        inner: Arc<EngineShared>,
        key: ObjectKey,
        plan: impl Iterator<Item = Part> + Send + 'static,
        max: usize,
    ) -> Self {
        Self {
            inner,
            key,
            plan: Box::new(plan),
            peeked: None,
            gets: VecDeque::new(),
            max: max.max(1),
            ramp: 1,
            reserve: true,
            done: false,
        }
    }

    /// `false`: the GETs take no budget of their own (the caller reserved for them).
    pub(crate) fn reserving(mut self, reserve: bool) -> Self {
        self.reserve = reserve;
        self
    }

    /// Issues the plan's next GETs the policy allows (see the module docs).
    fn issue(&mut self) {
        loop {
            if self.peeked.is_none() {
                self.peeked = self.plan.next();
            }
            let Some(part) = self.peeked else { return };
            let allowed = if part.eager {
                self.gets.len() < self.max
            } else {
                !self.gets.iter().any(|g| g.part.eager) && self.gets.len() < self.ramp
            };
            if !allowed {
                return;
            }
            self.peeked = None;
            self.gets.push_back(Get {
                part,
                state: State::Opening(open(
                    self.inner.clone(),
                    self.key.clone(),
                    part.range,
                    self.reserve,
                )),
                held: None,
                buffered: VecDeque::new(),
                received: 0,
            });
        }
    }
}

/// Reserves the GET's bytes, then issues it.
fn open(inner: Arc<EngineShared>, key: ObjectKey, range: ByteRange, reserve: bool) -> Opening {
    async move {
        let held = if reserve {
            Some(
                inner
                    .lifecycle
                    .pools
                    .reads
                    .reserve(
                        range.len(),
                        inner.lifecycle.deadlines.first_byte,
                        config_names::STORAGE_GET_FIRST_BYTE_TIMEOUT_MS,
                        || format!("a GET of {range} of {key}"),
                    )
                    .await?,
            )
        } else {
            None
        };
        match inner.backend.fetch(&key, Some(range)).await {
            Ok(body) => Ok((held, body)),
            Err(BackendError::InvalidRange { size, .. }) => {
                Err(short(&key, range, range.start, size))
            }
            Err(e) => Err(e.into()),
        }
    }
    .boxed()
}

fn short(key: &ObjectKey, range: ByteRange, at: u64, size: Option<u64>) -> RsmError {
    RsmError::Corrupt {
        object: key.to_string(),
        detail: format!(
            "truncated object: it ends at stored byte {at}{} but the read needs {range}",
            size.map_or(String::new(), |s| format!(" (object size {s})")),
        ),
    }
}

impl Get {
    /// The next body item of this GET: `Ready(None)` once all of its range arrived.
    fn poll_item(
        &mut self,
        cx: &mut Context<'_>,
        inner: &EngineShared,
        key: &ObjectKey,
    ) -> Poll<Option<Result<Bytes, RsmError>>> {
        loop {
            match &mut self.state {
                State::Opening(f) => match f.poll_unpin(cx) {
                    Poll::Ready(Ok((held, body))) => {
                        self.held = held;
                        self.state = State::Body(body);
                    }
                    Poll::Ready(Err(e)) => {
                        self.state = State::Ended;
                        return Poll::Ready(Some(Err(e)));
                    }
                    Poll::Pending => return Poll::Pending,
                },
                State::Body(body) => {
                    return match body.poll_next_unpin(cx) {
                        Poll::Ready(Some(Ok(b))) => {
                            let range = self.part.range;
                            let left = range.len() - self.received;
                            // A store that sends more than asked: keep the range's bytes.
                            let b = if b.len() as u64 > left {
                                b.slice(..left as usize)
                            } else {
                                b
                            };
                            self.received += b.len() as u64;
                            inner.stats.bytes_downloaded.add(b.len() as u64);
                            if self.received == range.len() {
                                self.state = State::Ended;
                            }
                            Poll::Ready(Some(Ok(b)))
                        }
                        Poll::Ready(Some(Err(e))) => {
                            self.state = State::Ended;
                            Poll::Ready(Some(Err(e.into())))
                        }
                        Poll::Ready(None) => {
                            self.state = State::Ended;
                            let range = self.part.range;
                            if self.received < range.len() {
                                Poll::Ready(Some(Err(short(
                                    key,
                                    range,
                                    range.start + self.received,
                                    None,
                                ))))
                            } else {
                                Poll::Ready(None)
                            }
                        }
                        Poll::Pending => Poll::Pending,
                    };
                }
                State::Failed(e) => {
                    let e = e.take();
                    self.state = State::Ended;
                    return Poll::Ready(e.map(Err));
                }
                State::Ended => return Poll::Ready(None),
            }
        }
    }

    /// Moves what arrived into `buffered` (a GET behind the head); an error is kept for
    /// when this GET becomes the head.
    fn pump(&mut self, cx: &mut Context<'_>, inner: &EngineShared, key: &ObjectKey) {
        loop {
            match self.poll_item(cx, inner, key) {
                Poll::Ready(Some(Ok(b))) => self.buffered.push_back(b),
                Poll::Ready(Some(Err(e))) => {
                    self.state = State::Failed(Some(e));
                    return;
                }
                Poll::Ready(None) | Poll::Pending => return,
            }
        }
    }
}

impl Stream for Window {
    type Item = Result<Bytes, RsmError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        loop {
            this.issue();
            let (inner, key) = (&this.inner, &this.key);
            for g in this.gets.iter_mut().skip(1) {
                g.pump(cx, inner, key);
            }
            let Some(head) = this.gets.front_mut() else {
                this.done = true;
                return Poll::Ready(None);
            };
            if let Some(b) = head.buffered.pop_front() {
                return Poll::Ready(Some(Ok(b)));
            }
            match head.poll_item(cx, inner, key) {
                Poll::Ready(Some(Ok(b))) => return Poll::Ready(Some(Ok(b))),
                Poll::Ready(Some(Err(e))) => {
                    this.done = true;
                    this.gets.clear();
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(None) => {
                    let used = this.gets.pop_front();
                    if used.is_some_and(|g| !g.part.eager) {
                        this.ramp = (this.ramp * 2).min(this.max);
                    }
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
