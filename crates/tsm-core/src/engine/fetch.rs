//! `fetchLogSegment` after its entry in `mod.rs`: the manifest (`engine/manifests.rs`), then
//! the bytes of the requested range, downloaded lazily (object-format-v1 "`.log`",
//! "Manifest"). It calls only files below it (the list in `engine/mod.rs`). Three paths,
//! picked per stream:
//!
//! - through a chunk store (`engine/cached.rs`): when a chunk cache is configured; else,
//!   when the default read-ahead store exists, for every transformed segment and for a
//!   plain one when the open is the second or later in a row to continue the previous
//!   stream of the segment (`engine/sequential.rs`: a lagging consumer) and plain
//!   segments are read ahead (`tsm.fetch.read.ahead.plain`: by default not on a backend
//!   whose reads are local, `StorageBackend::reads_are_local`). Read-ahead runs
//!   there. Such a plain open without a chunk cache reads the exact bytes up to the next
//!   chunk boundary first (unless the chunk holding its start is stored or loading), then
//!   the chunks from there: the exact reads before it handed out that chunk's start, so
//!   read-ahead never downloads again bytes the reader already had.
//! - plain segments (no compression, no encryption), otherwise: the exact requested range
//!   (clamped to the segment), no chunk alignment: [`plain_plan`] (the first
//!   `first_read_bytes` split into up to `tsm.fetch.gets.in.flight` parallel sub-range
//!   GETs, then GETs of `get_part_bytes` as the reader gets there) issued by
//!   [`Window`], whose head GET's body is handed through as it arrives. The first byte is
//!   one round trip away; a reader that stops after its first read asked for that read.
//! - transformed segments, otherwise: the stored span of the chunks holding the range:
//!   [`chunk_plan`] (the first chunk split into parallel sub-range GETs, then GETs of
//!   whole chunks) through [`Window`], cut back into stored chunks in order, restored
//!   (decrypt, decompress) in tsm-codec's ramped ordered pipeline (no chunk ahead of the
//!   consumer for the first two, then doubling up to `max_in_flight`) and trimmed to the
//!   range (`engine/decode.rs` cuts and restores). The first bytes leave as soon as the
//!   chunk holding them is restored.
//!
//! Dropping the stream drops its GETs in progress and issues no further GET.
//!
//! Memory (plain and transformed paths): each GET in flight reserves its bytes from the
//! engine's budget when issued and returns them when its last byte was handed out
//! (`engine/window.rs`: at most `tsm.fetch.gets.in.flight` GETs of at most
//! max(`first_read_bytes` / split, `get_part_bytes`, one stored chunk) each); transformed
//! streams also hold the restore pipeline's `(max_in_flight + 2) x (chunk + stored chunk)`
//! from open to drop (`engine/lifecycle/budget.rs`). Every GET is bounded by the engine's
//! deadlines (`engine/lifecycle/deadline.rs`): a silent store ends the stream with a
//! retriable error.

use std::ops::Range;
use std::sync::Arc;

use futures::stream;
use futures::{StreamExt, TryStreamExt};
use tsm_codec::ChunkIndex;

use super::cached::{Read, cached_stream, plain_then_chunks, stored_or_loading};
use super::decode::{Group, Restore, cut_chunks, restore};
use super::lifecycle::budget;
use super::manifests::load_segment;
use super::ranges::{PlanSizes, chunk_plan, plain_plan};
use super::sequential::Opened;
use super::window::Window;
use super::{EngineShared, SegmentStream};
use crate::RsmError;
use crate::backend::{ByteRange, ObjectKey};
use crate::cache::ChunkKey;
use crate::config::names as config_names;
use crate::object_keys::SegmentKeys;
use crate::segment::RemoteLogSegmentMetadata;
use crate::transform::SegmentTransform;

/// Opens the stream of original bytes `start..=end` (see the module docs) of the segment
/// `metadata` at `keys`; `name` names it in errors (`<topic>-<partition> segment ...`).
pub(super) async fn fetch(
    inner: &Arc<EngineShared>,
    metadata: &RemoteLogSegmentMetadata,
    keys: SegmentKeys,
    name: &str,
    start: u64,
    end: Option<u64>,
) -> Result<SegmentStream, RsmError> {
    // Before any lookup: what this call caches goes under this generation
    // (`engine/generations.rs`).
    let generation = inner.generations.current(keys.log.as_str());
    let segment = load_segment(inner, &keys, generation).await?;
    let index = segment.manifest.chunk_index(&keys.manifest)?;
    let size = index.original_file_size();
    let asked = match end {
        Some(e) => format!("{start}..={e}"),
        None => format!("{start}.."),
    };
    if size == 0 && start == 0 {
        return Ok(stream::empty().boxed());
    }
    if start >= size {
        return Err(RsmError::InvalidArgument(format!(
            "{name}: start position {start} is past the end of the segment ({size} bytes); \
             requested range {asked}"
        )));
    }
    let last = end.map_or(size - 1, |e| e.min(size - 1));
    if last < start {
        return Err(RsmError::InvalidArgument(format!(
            "{name}: end position is before start position; requested range {asked}"
        )));
    }
    let chunks = index
        .chunks_for_range(start, last)
        .ok_or_else(|| RsmError::Corrupt {
            object: keys.manifest.to_string(),
            detail: format!("chunk index has no chunks for bytes {start}-{last} of {size}"),
        })?;
    tracing::debug!(start, last, chunks = ?chunks, key = %keys.log, "fetching chunks");
    let chunk_size = u64::from(index.original_chunk_size());
    let opened = Opened {
        object: keys.log.as_str(),
        partition: (
            metadata.topic_id.msb,
            metadata.topic_id.lsb,
            metadata.partition,
        ),
        start_offset: metadata.start_offset,
        end_offset: metadata.end_offset,
        size,
    };
    let (read_ahead, mut cursor) = inner.positions.open(&opened, start).await;
    let index = Arc::new(index);
    let transform = segment.transform.clone();
    // A plain segment on a local store is read at exact ranges, never ahead
    // (`tsm.fetch.read.ahead.plain`).
    let ahead =
        if read_ahead && (inner.opts.read_ahead_plain != Some(false) || !transform.is_identity()) {
            inner.opts.read_ahead_bytes
        } else {
            0
        };
    // The configured chunk cache serves every read (with the Java plugin's prefetch); the
    // default read-ahead store sequential reads and every read of a transformed segment
    // (whose chunks the next fetch would otherwise download again).
    let store = match (&inner.chunks, &inner.reads.store) {
        (Some(cache), _) => Some((cache.clone(), ahead.max(inner.opts.prefetch_max_size))),
        (None, Some(store)) if ahead > 0 || !transform.is_identity() => {
            Some((store.clone(), ahead))
        }
        _ => None,
    };
    let sizes = PlanSizes {
        first_read: inner.opts.first_read_bytes,
        part_bytes: inner.opts.get_part_bytes,
        max_parts: inner.opts.gets_in_flight,
        min_part: inner.opts.min_sub_range_bytes,
    };
    let stream = if let Some((store, ahead)) = store {
        let until = if end.is_some() {
            chunks.end
        } else {
            let first_read_last =
                last.min(start.saturating_add(inner.opts.first_read_bytes.max(1)) - 1);
            first_read_last / chunk_size + 1
        };
        // A plain segment read ahead into the default store: the exact bytes up to the
        // next chunk boundary first (the exact reads before this one handed out the
        // chunk's start), unless the chunk holding `start` is stored or loading already.
        let boundary = chunks.start + 1;
        let head = inner.chunks.is_none()
            && transform.is_identity()
            && !start.is_multiple_of(chunk_size)
            && !stored_or_loading(
                inner,
                &store,
                &ChunkKey::of_generation(keys.log.as_str(), generation, chunks.start),
            );
        let head_last = last.min((boundary * chunk_size).saturating_sub(1));
        let read = |chunks| Read {
            key: keys.log.clone(),
            index: index.clone(),
            transform: transform.clone(),
            generation,
            chunks,
            start,
            last,
            until,
            ahead,
        };
        if head {
            let head = Window::new(
                inner.clone(),
                keys.log.clone(),
                plain_plan(start, head_last, sizes),
                inner.opts.gets_in_flight,
            )
            .boxed();
            plain_then_chunks(
                inner.clone(),
                store,
                read(boundary.min(chunks.end)..chunks.end),
                head,
            )
        } else {
            cached_stream(inner.clone(), store, read(chunks))
        }
    } else if transform.is_identity() {
        // Plain: the exact range, the store's bytes handed through as they arrive.
        Window::new(
            inner.clone(),
            keys.log,
            plain_plan(start, last, sizes),
            inner.opts.gets_in_flight,
        )
        .boxed()
    } else {
        // The restore pipeline's and its GETs' working set, held until the stream is
        // dropped.
        let window_gets = inner
            .opts
            .gets_in_flight
            .min(inner.opts.max_in_flight)
            .max(1);
        let memory = inner
            .lifecycle
            .budget
            .reserve(
                budget::fetch_bytes(
                    chunk_size,
                    inner.opts.max_in_flight,
                    window_gets,
                    budget::stored_chunk_bound(chunk_size).max(inner.opts.get_part_bytes),
                ),
                inner.lifecycle.deadlines.first_byte,
                config_names::STORAGE_GET_FIRST_BYTE_TIMEOUT_MS,
                || format!("fetch of {name}"),
            )
            .await?;
        chunk_stream(
            inner.clone(),
            keys.log,
            index,
            transform,
            chunks,
            start,
            last,
            sizes,
            window_gets,
        )
        .inspect(move |_| {
            let _held = &memory;
        })
        .boxed()
    };
    Ok(stream
        .inspect(move |item| {
            if let Ok(b) = item {
                cursor.advance(b.len() as u64);
            }
        })
        .boxed())
}

/// The lazy stream of original bytes `start..=last` of a transformed segment without a
/// chunk store (see the module docs).
#[allow(clippy::too_many_arguments)]
pub(crate) fn chunk_stream(
    inner: Arc<EngineShared>,
    key: ObjectKey,
    index: Arc<ChunkIndex>,
    transform: Arc<SegmentTransform>,
    chunks: Range<u64>,
    start: u64,
    last: u64,
    sizes: PlanSizes,
    window_gets: usize,
) -> SegmentStream {
    let max_in_flight = inner.opts.max_in_flight;
    let plan = chunk_plan(index.clone(), chunks.clone(), sizes);
    // The stream reserved for the window's GETs at open.
    let body = Window::new(inner.clone(), key.clone(), plan, window_gets)
        .reserving(false)
        .boxed();
    let span = match (index.chunk(chunks.start), index.chunk(chunks.end - 1)) {
        (Some(a), Some(b)) => ByteRange {
            start: a.transformed_start,
            end: (b.transformed_start + b.transformed_len).max(a.transformed_start + 1) - 1,
        },
        _ => ByteRange { start: 0, end: 0 },
    };
    let stored = cut_chunks(
        body,
        Group {
            chunks: chunks.clone(),
            range: span,
        },
        key.clone(),
        index.clone(),
    );
    let first = chunks.start;
    let restored = restore(
        stored,
        Restore {
            key,
            index: index.clone(),
            transform,
            first,
            max_in_flight,
            ramped: true,
        },
    );
    let chunk_size = u64::from(index.original_chunk_size());
    let mut n = first;
    restored
        .map_ok(move |b| {
            let origin = n * chunk_size;
            n += 1;
            let from = start.saturating_sub(origin).min(b.len() as u64) as usize;
            let to = (last + 1 - origin).min(b.len() as u64) as usize;
            b.slice(from..to.max(from))
        })
        .boxed()
}
