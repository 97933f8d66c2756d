//! `fetchLogSegment`: the manifest, then the bytes of the requested range, downloaded
//! lazily (object-format-v1 "`.log`", "Manifest"). Three paths, picked per stream:
//!
//! - through a chunk store (`engine/cached.rs`): when a chunk cache is configured; else,
//!   when the default read-ahead store exists, for every transformed segment and for a
//!   plain one when the open continues the previous stream of the segment
//!   (`engine/readahead.rs`: a lagging consumer). Read-ahead runs there.
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
//!   range. The first bytes leave as soon as the chunk holding them is restored.
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

use bytes::{Bytes, BytesMut};
use futures::stream::{self, BoxStream};
use futures::{StreamExt, TryStreamExt};
use tsm_codec::{ChunkIndex, ordered_transform, ordered_transform_ramped};

use super::lifecycle::budget;
use super::lifecycle::deadline::bounded;
use super::ranges::{PlanSizes, chunk_plan, plain_plan};
use super::window::Window;
use super::{EngineShared, SegmentStream, segment_name};
use crate::backend::{ByteRange, ByteStream, ObjectKey};
use crate::config::names as config_names;
use crate::manifest::SegmentManifest;
use crate::object_keys::SegmentKeys;
use crate::transform::{SegmentTransform, TransformError, segment_cipher};
use crate::{RemoteLogSegmentMetadata, RsmError};

/// Largest number of chunks fetched by one GET (keeps tiny `chunk.size` values from making
/// huge groups of per-chunk bookkeeping).
pub(super) const MAX_CHUNKS_PER_GET: u64 = 4096;

/// Largest manifest accepted (bytes): the chunk-size codec caps its decoded bytes at
/// 10 MiB; base64 of the zstd frame of that is far below this.
pub(super) const MAX_MANIFEST_BYTES: usize = 32 * 1024 * 1024;

/// A segment's manifest and the transform that restores its chunks.
pub(crate) struct Segment {
    pub(crate) manifest: SegmentManifest,
    pub(crate) transform: Arc<SegmentTransform>,
}

/// The segment's manifest and cipher, through the manifest cache.
pub(crate) async fn load_segment(
    inner: &EngineShared,
    keys: &SegmentKeys,
) -> Result<Arc<Segment>, RsmError> {
    let load = inner
        .manifests
        .get_or_load(keys.manifest.as_str().to_string(), async {
            read_segment(inner, keys).await.map(Arc::new)
        });
    bounded(
        inner.opts.manifest_get_timeout,
        config_names::MANIFEST_CACHE_GET_TIMEOUT_MS,
        || format!("manifest {}", keys.manifest),
        load,
    )
    .await
}

/// Reads and parses the manifest and unwraps the data key.
async fn read_segment(inner: &EngineShared, keys: &SegmentKeys) -> Result<Segment, RsmError> {
    let key = &keys.manifest;
    let body = inner.backend.fetch(key, None).await?;
    let bytes = collect(inner, key, body, MAX_MANIFEST_BYTES).await?;
    let manifest = SegmentManifest::from_json(&bytes).map_err(|e| RsmError::Corrupt {
        object: key.to_string(),
        detail: format!("not a valid v1 manifest: {e}"),
    })?;
    let cipher = match (&manifest.encryption, &inner.opts.key_ring) {
        (None, _) => None,
        (Some(enc), Some(ring)) => {
            Some(segment_cipher(ring, enc).map_err(|e| RsmError::Crypto(format!("{key}: {e}")))?)
        }
        (Some(enc), None) => {
            let id = enc.data_key.split(':').next().unwrap_or("");
            return Err(RsmError::Crypto(format!(
                "{key}: the segment is encrypted with key pair {id:?} but encryption is not \
                 configured (encryption.enabled=false)"
            )));
        }
    };
    // The level only matters for writing; any value restores.
    let level = manifest
        .compression
        .then_some(tsm_codec::compression::DEFAULT_LEVEL);
    Ok(Segment {
        transform: Arc::new(SegmentTransform::new(level, cipher)),
        manifest,
    })
}

/// Collects a whole (small) object, refusing more than `max` bytes.
pub(crate) async fn collect(
    inner: &EngineShared,
    key: &ObjectKey,
    mut body: ByteStream,
    max: usize,
) -> Result<Bytes, RsmError> {
    let mut buf = BytesMut::new();
    while let Some(b) = body.next().await {
        let b = b?;
        inner.stats.bytes_downloaded.add(b.len() as u64);
        if buf.len() + b.len() > max {
            return Err(RsmError::Corrupt {
                object: key.to_string(),
                detail: format!("larger than the {max} bytes expected"),
            });
        }
        buf.extend_from_slice(&b);
    }
    Ok(buf.freeze())
}

pub(super) async fn fetch(
    inner: &Arc<EngineShared>,
    metadata: &RemoteLogSegmentMetadata,
    start: u64,
    end: Option<u64>,
) -> Result<SegmentStream, RsmError> {
    let keys = inner.read_keys(metadata)?;
    let segment = load_segment(inner, &keys).await?;
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
            "{}: start position {start} is past the end of the segment ({size} bytes); \
             requested range {asked}",
            segment_name(metadata)
        )));
    }
    let last = end.map_or(size - 1, |e| e.min(size - 1));
    if last < start {
        return Err(RsmError::InvalidArgument(format!(
            "{}: end position is before start position; requested range {asked}",
            segment_name(metadata)
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
    let (sequential, mut cursor) = inner.reads.open(keys.log.as_str(), start, chunk_size).await;
    let index = Arc::new(index);
    let transform = segment.transform.clone();
    let ahead = if sequential {
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
        super::cached::cached_stream(
            inner.clone(),
            store,
            super::cached::Read {
                key: keys.log,
                index,
                transform,
                chunks,
                start,
                last,
                until,
                ahead,
            },
        )
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
                || format!("fetch of {}", segment_name(metadata)),
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
/// The one restore step of both read paths (this file and `cached.rs`).
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

/// Cuts the contiguous stored bytes of `group` (from a [`Window`]) into its stored
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
                self.acc.extend_from_slice(&part);
                if self.acc.len() == need {
                    let out = self.acc.split().freeze();
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
