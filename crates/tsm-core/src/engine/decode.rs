//! The bottom of the read path: stored chunks -> original chunks. [`restore`] checks each
//! against its digest when the segment has integrity data (`manifest/integrity.rs`), then
//! decrypts and decompresses them in tsm-codec's ordered bounded pipeline
//! (docs/object-format.md "`.log`");
//! [`read_error`] names the object, chunk and byte ranges of a restore failure. Used by
//! the read path that restores chunks, `engine/cached.rs` (one chunk per load; every
//! transformed segment is read through it). Calls nothing else of the engine.

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use tsm_codec::{ChunkIndex, ordered_transform, ordered_transform_ramped};

use crate::RsmError;
use crate::manifest::integrity::{SegmentIntegrity, Unit};
use crate::metrics::Counter;
use crate::transform::{SegmentTransform, TransformError};
use tsm_storage::ObjectKey;

/// How [`restore`] turns stored chunks back into original ones.
pub(super) struct Restore {
    pub(super) key: ObjectKey,
    pub(super) index: Arc<ChunkIndex>,
    pub(super) transform: Arc<SegmentTransform>,
    /// The segment's chunk digests, checked before a chunk is restored.
    pub(super) digests: Option<Arc<SegmentIntegrity>>,
    /// Counts digest mismatches (`integrity.failures`).
    pub(super) failures: Arc<Counter>,
    /// Chunk number of the stream's first item.
    pub(super) first: u64,
    pub(super) max_in_flight: usize,
    /// Start one chunk ahead and double (a reader that stops early restores little), or
    /// run `max_in_flight` at once from the start (a load of known extent).
    pub(super) ramped: bool,
}

/// Stored chunks, in order, from chunk `r.first` on -> original chunks: decrypt and
/// decompress in tsm-codec's ordered bounded pipeline (identity segments pass through).
/// The one restore step of the read path (`cached.rs`).
pub(super) fn restore(
    stored: BoxStream<'static, Result<Bytes, RsmError>>,
    r: Restore,
) -> BoxStream<'static, Result<Bytes, RsmError>> {
    if r.transform.is_identity() && r.digests.is_none() {
        return stored;
    }
    let Restore {
        key,
        index,
        transform,
        digests,
        failures,
        first,
        max_in_flight,
        ramped,
    } = r;
    let decode = move |i: u64, b: Bytes| {
        let n = first + i;
        if let Some(d) = &digests {
            let checked = match d.chunk_digest(n) {
                Some(expected) => d.check_unit(
                    Unit::Chunk,
                    transform.is_compressed(),
                    transform.is_encrypted(),
                    expected,
                    &b,
                ),
                None => Err("no digest recorded for it".to_string()),
            };
            if let Err(why) = checked {
                failures.inc();
                return Err(RsmError::Corrupt {
                    object: key.to_string(),
                    detail: format!("{}: {why}", place(&index, n)),
                });
            }
        }
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
    RsmError::Corrupt {
        object: key.to_string(),
        detail: format!("{}: {e}", place(index, n)),
    }
}

/// `chunk N (original bytes a-b, stored bytes c-d)`, for errors.
fn place(index: &ChunkIndex, n: u64) -> String {
    match index.chunk(n) {
        Some(s) => format!(
            "chunk {n} (original bytes {}-{}, stored bytes {}-{})",
            s.original_start,
            s.original_start + s.original_len.saturating_sub(1),
            s.transformed_start,
            s.transformed_start + s.transformed_len.saturating_sub(1)
        ),
        None => format!("chunk {n}"),
    }
}
