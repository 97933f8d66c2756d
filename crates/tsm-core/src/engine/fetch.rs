//! `fetchLogSegment` after its entry in `mod.rs`: the manifest (`engine/manifests.rs`), then
//! the bytes of the requested range, downloaded lazily (docs/object-format.md "`.log`",
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
//! - plain segments (no compression, no encryption) without chunk digests (written by the
//!   Java plugin or an older tsm), otherwise: the exact requested range
//!   (clamped to the segment), no chunk alignment: [`plain_plan`] (the first
//!   `first_read_bytes` split into up to `tsm.fetch.gets.in.flight` parallel sub-range
//!   GETs, then GETs of `get_part_bytes` as the reader gets there) issued by
//!   [`Window`], whose head GET's body is handed through as it arrives. The first byte is
//!   one round trip away; a reader that stops after its first read asked for that read.
//! - transformed segments, and plain ones with chunk digests, without any store (no chunk
//!   cache, read-ahead off): the chunk path all the same, through a store that keeps
//!   nothing (`ReadAhead::unstored`): one chunk load at a time, its sub-range GETs in
//!   parallel, reserved while it runs.
//!
//! A plain segment with chunk digests (`manifest/integrity.rs`) is read like a transformed
//! one, in whole chunks: each stored chunk is checked against its digest before any of its
//! bytes is handed out, so a reader that asks for part of a chunk downloads all of it
//! (kept in the store for the next read). The segment's recorded identity is checked
//! against the one asked for before anything is read.
//!
//! Dropping the stream drops its GETs in progress and issues no further GET.
//!
//! Memory, from the reads' pool (`engine/lifecycle/budget.rs`): each plain GET in flight
//! reserves its bytes when issued and returns them when its last byte was handed out
//! (`engine/window.rs`: at most `tsm.fetch.gets.in.flight` GETs of at most
//! max(`first_read_bytes` / split, `get_part_bytes`) each); a chunk load its chunk while
//! it runs (`engine/cached.rs`). No stream holds memory between its reads beyond the GETs
//! it has in flight. Every GET is bounded by the engine's
//! deadlines (`engine/lifecycle/deadline.rs`): a silent store ends the stream with a
//! retriable error.

use std::sync::Arc;

use futures::StreamExt;
use futures::stream;

use super::cached::{Read, cached_stream, plain_then_chunks, stored_or_loading};
use super::manifests::load_segment;
use super::ranges::{PlanSizes, plain_plan};
use super::sequential::Opened;
use super::window::Window;
use super::{EngineShared, SegmentStream};
use crate::RsmError;
use crate::cache::ChunkKey;
use crate::object_keys::SegmentKeys;
use crate::segment::RemoteLogSegmentMetadata;

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
    segment
        .check_identity(&keys, metadata)
        .inspect_err(|_| inner.stats.integrity_failures.inc())?;
    let index = segment.index.clone();
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
    let transform = segment.transform.clone();
    let digests = segment.integrity.clone();
    // Read in whole chunks: a transformed segment, and a plain one with chunk digests (a
    // chunk is checked against its digest before any of its bytes is served).
    let chunked = !transform.is_identity() || digests.is_some();
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
        (None, Some(store)) if ahead > 0 || chunked => Some((store.clone(), ahead)),
        // No store at all: a transformed (or digested) segment is still read chunk by
        // chunk, each load reserved while it runs; nothing is kept.
        (None, None) if chunked => Some((inner.reads.unstored.clone(), 0)),
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
            && !chunked
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
            digests: digests.clone(),
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
    } else {
        // Plain without digests: the exact range, the store's bytes handed through as
        // they arrive. (A transformed or digested segment always goes through a store,
        // above.)
        Window::new(
            inner.clone(),
            keys.log,
            plain_plan(start, last, sizes),
            inner.opts.gets_in_flight,
        )
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
