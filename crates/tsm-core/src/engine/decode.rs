//! The bottom of the read path: stored bytes -> original bytes. [`cut_chunks`] cuts the
//! contiguous stored bytes of a run of chunks (a `Window`'s stream, `engine/window.rs`)
//! into its stored chunks; [`restore`] decrypts and decompresses them in tsm-codec's
//! ordered bounded pipeline (object-format-v1 "`.log`"); [`read_error`] names the object,
//! chunk and byte ranges of a restore failure. Used by both read paths that restore
//! chunks: `engine/fetch.rs` (transformed segments without a chunk store) and
//! `engine/cached.rs` (one chunk per load). Calls nothing else of the engine.

use std::ops::Range;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use futures::stream::{self, BoxStream};
use tsm_codec::{ChunkIndex, ordered_transform, ordered_transform_ramped};

use crate::RsmError;
use crate::backend::{ByteRange, ObjectKey};
use crate::transform::{SegmentTransform, TransformError};

/// How [`restore`] turns stored chunks back into original ones.
pub(super) struct Restore {
    pub(super) key: ObjectKey,
    pub(super) index: Arc<ChunkIndex>,
    pub(super) transform: Arc<SegmentTransform>,
    /// Chunk number of the stream's first item.
    pub(super) first: u64,
    pub(super) max_in_flight: usize,
    /// Start one chunk ahead and double (a reader that stops early restores little), or
    /// run `max_in_flight` at once from the start (a load of known extent).
    pub(super) ramped: bool,
}

/// Stored chunks, in order, from chunk `r.first` on -> original chunks: decrypt and
/// decompress in tsm-codec's ordered bounded pipeline (identity segments pass through).
/// The one restore step of both read paths (`fetch.rs` and `cached.rs`).
pub(super) fn restore(
    stored: BoxStream<'static, Result<Bytes, RsmError>>,
    r: Restore,
) -> BoxStream<'static, Result<Bytes, RsmError>> {
    if r.transform.is_identity() {
        return stored;
    }
    let Restore {
        key,
        index,
        transform,
        first,
        max_in_flight,
        ramped,
    } = r;
    let decode = move |i: u64, b: Bytes| {
        let n = first + i;
        let original_len = index.chunk(n).map_or(0, |s| s.original_len);
        transform
            .decode_chunk(n, b, original_len)
            .map_err(|e| read_error(&key, &index, n, e))
    };
    if ramped {
        ordered_transform_ramped(stored, max_in_flight, decode).boxed()
    } else {
        ordered_transform(stored, max_in_flight, decode).boxed()
    }
}

/// A restore failure: corrupt data, naming the object, chunk and byte ranges.
pub(super) fn read_error(
    key: &ObjectKey,
    index: &ChunkIndex,
    n: u64,
    e: TransformError,
) -> RsmError {
    let place = match index.chunk(n) {
        Some(s) => format!(
            "chunk {n} (original bytes {}-{}, stored bytes {}-{})",
            s.original_start,
            s.original_start + s.original_len.saturating_sub(1),
            s.transformed_start,
            s.transformed_start + s.transformed_len.saturating_sub(1)
        ),
        None => format!("chunk {n}"),
    };
    RsmError::Corrupt {
        object: key.to_string(),
        detail: format!("{place}: {e}"),
    }
}

/// A run of adjacent chunks fetched by one GET.
pub(super) struct Group {
    pub(super) chunks: Range<u64>,
    pub(super) range: ByteRange,
}

/// Cuts the contiguous stored bytes of `group` (from a [`Window`](super::window::Window)) into its stored
/// chunks, in order.
pub(super) fn cut_chunks(
    body: BoxStream<'static, Result<Bytes, RsmError>>,
    group: Group,
    key: ObjectKey,
    index: Arc<ChunkIndex>,
) -> BoxStream<'static, Result<Bytes, RsmError>> {
    let state = GetBodyChunks {
        body,
        next: group.chunks.start,
        received: 0,
        pending: Bytes::new(),
        acc: BytesMut::new(),
        group,
        key,
        index,
    };
    stream::try_unfold(state, GetBodyChunks::next_chunk).boxed()
}

fn truncated(key: &ObjectKey, group: &Group, at: u64, size: Option<u64>) -> RsmError {
    RsmError::Corrupt {
        object: key.to_string(),
        detail: format!(
            "truncated object: it ends at stored byte {}{} but chunks {}..{} need {}",
            at,
            size.map_or(String::new(), |s| format!(" (object size {s})")),
            group.chunks.start,
            group.chunks.end,
            group.range
        ),
    }
}

/// A stored byte stream being cut into the stored chunks of its group: `pending` holds
/// received bytes not yet handed out, `acc` a chunk split across body items; `next` is the
/// chunk number handed out next, `received` the body bytes so far (for the truncation
/// error).
struct GetBodyChunks {
    body: BoxStream<'static, Result<Bytes, RsmError>>,
    next: u64,
    received: u64,
    pending: Bytes,
    acc: BytesMut,
    group: Group,
    key: ObjectKey,
    index: Arc<ChunkIndex>,
}

impl GetBodyChunks {
    async fn next_chunk(mut self) -> Result<Option<(Bytes, Self)>, RsmError> {
        if self.next >= self.group.chunks.end {
            return Ok(None);
        }
        let need = self.index.chunk(self.next).map_or(0, |s| s.transformed_len) as usize;
        loop {
            if self.acc.is_empty() && self.pending.len() >= need {
                let out = self.pending.split_to(need);
                self.next += 1;
                return Ok(Some((out, self)));
            }
            if !self.pending.is_empty() {
                let take = (need - self.acc.len()).min(self.pending.len());
                let part = self.pending.split_to(take);
                // The whole chunk's buffer at once (no regrowth copies), handed out as its
                // only owner: decryption then works in place (`SegmentTransform::decode_chunk`).
                self.acc.reserve(need - self.acc.len());
                self.acc.extend_from_slice(&part);
                if self.acc.len() == need {
                    let out = std::mem::take(&mut self.acc).freeze();
                    self.next += 1;
                    return Ok(Some((out, self)));
                }
            }
            match self.body.next().await {
                Some(Ok(b)) => {
                    self.received += b.len() as u64;
                    self.pending = b;
                }
                Some(Err(e)) => return Err(e),
                None => {
                    let at = self.group.range.start + self.received;
                    return Err(truncated(&self.key, &self.group, at, None));
                }
            }
        }
    }
}
