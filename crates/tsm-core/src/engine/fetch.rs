//! `fetchLogSegment`: the manifest, then the chunks overlapping the requested range,
//! downloaded lazily (object-format-v1 "`.log`", "Manifest").
//!
//! The chunk span of the range is cut into groups of adjacent chunks, each one ranged GET
//! issued only when the stream is polled past the previous group, so the first bytes arrive
//! after the manifest read plus one GET round trip. Reads ramp up: the first two GETs are
//! one chunk each, each next one may hold twice the stored bytes of the one before, up
//! to [`EngineOptions::max_get_bytes`](super::EngineOptions::max_get_bytes) (and at most
//! [`MAX_CHUNKS_PER_GET`] chunks). Stored chunks are cut out of the GET's byte stream as they
//! arrive, restored (decrypt, decompress) in tsm-codec's ramped ordered pipeline (no chunk
//! ahead of the consumer for the first two, then doubling up to `max_in_flight`) and
//! trimmed to the range.
//! So the broker's pattern (open at a position, read ~1 MiB, close) downloads the chunk(s)
//! holding that 1 MiB, not `max_get_bytes`. Dropping the stream drops the GET in progress
//! and issues no further GET.
//!
//! Memory: one partially received chunk + `max_in_flight x (stored + original chunk)`,
//! reserved from the engine's budget when the stream is opened and returned when it is
//! dropped (`engine/lifecycle/budget.rs`). Every GET is bounded by the engine's deadlines
//! (`engine/lifecycle/deadline.rs`): a silent store ends the stream with a retriable error.

use std::ops::Range;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::stream::{self, BoxStream};
use futures::{StreamExt, TryStreamExt};
use tsm_codec::{ChunkIndex, ordered_transform, ordered_transform_ramped};

use super::lifecycle::budget;
use super::lifecycle::deadline::bounded;
use super::{EngineShared, SegmentStream, segment_name};
use crate::backend::{BackendError, ByteRange, ByteStream, ObjectKey};
use crate::config::keys as config_keys;
use crate::keys::SegmentKeys;
use crate::manifest::SegmentManifest;
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
        config_keys::MANIFEST_CACHE_GET_TIMEOUT_MS,
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
    // The stream's working set, held until the stream is dropped.
    let memory = inner
        .lifecycle
        .budget
        .reserve(
            budget::fetch_bytes(
                u64::from(index.original_chunk_size()),
                inner.opts.max_in_flight,
                !segment.transform.is_identity(),
            ),
            inner.lifecycle.deadlines.first_byte,
            config_keys::STORAGE_GET_FIRST_BYTE_TIMEOUT_MS,
            || format!("fetch of {}", segment_name(metadata)),
        )
        .await?;
    let index = Arc::new(index);
    let transform = segment.transform.clone();
    let stream = if let Some(cache) = &inner.chunks {
        super::cached::cached_stream(
            inner.clone(),
            cache.clone(),
            keys.log,
            index,
            transform,
            chunks,
            start,
            last,
            end.is_some(),
        )
    } else {
        chunk_stream(
            inner.clone(),
            keys.log,
            index,
            transform,
            chunks,
            start,
            last,
        )
    };
    Ok(stream
        .inspect(move |_| {
            let _held = &memory;
        })
        .boxed())
}

/// The lazy stream of original bytes `start..=last` (see the module docs).
pub(crate) fn chunk_stream(
    inner: Arc<EngineShared>,
    key: ObjectKey,
    index: Arc<ChunkIndex>,
    transform: Arc<SegmentTransform>,
    chunks: Range<u64>,
    start: u64,
    last: u64,
) -> SegmentStream {
    let groups = RampedGroups {
        index: index.clone(),
        next: chunks.start,
        end: chunks.end,
        max_bytes: inner.opts.max_get_bytes,
        cap: 0,
        first_done: false,
    };
    let max_in_flight = inner.opts.max_in_flight;
    let stored = {
        let inner = inner.clone();
        let key = key.clone();
        let index = index.clone();
        stream::iter(groups)
            .then(move |group| fetch_group(inner.clone(), key.clone(), index.clone(), group))
            .try_flatten()
    };
    let first = chunks.start;
    let restored = restore(
        stored.boxed(),
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

/// Cuts `next..end` into [`Group`]s lazily. The first two groups are one chunk each; each
/// next one may hold twice the stored bytes of the one before, up to `max_bytes`: a reader that stops
/// early (the broker reads ~1 MiB and closes) has asked the store for one chunk, a reader
/// that keeps going soon gets `max_bytes` GETs.
struct RampedGroups {
    index: Arc<ChunkIndex>,
    next: u64,
    end: u64,
    max_bytes: u64,
    /// Stored bytes the next group may hold beyond its first chunk's.
    cap: u64,
    /// The first group was handed out.
    first_done: bool,
}

impl Iterator for RampedGroups {
    type Item = Group;

    fn next(&mut self) -> Option<Group> {
        let first = self
            .index
            .chunk(self.next)
            .filter(|_| self.next < self.end)?;
        let mut stop = self.next + 1;
        let mut bytes = first.transformed_len;
        while stop < self.end && stop - self.next < MAX_CHUNKS_PER_GET {
            let Some(s) = self.index.chunk(stop) else {
                break;
            };
            if bytes + s.transformed_len > self.max_bytes.min(self.cap) {
                break;
            }
            bytes += s.transformed_len;
            stop += 1;
        }
        let start = first.transformed_start;
        let group = Group {
            chunks: self.next..stop,
            // A 0-byte stored span cannot happen (chunks are >= 1 original byte); clamp
            // anyway so the range stays valid.
            range: ByteRange {
                start,
                end: start + bytes.max(1) - 1,
            },
        };
        self.next = stop;
        // 1 chunk, 1 chunk, then doubling: a read crossing one chunk boundary asks for 2.
        self.cap = if self.first_done {
            bytes.saturating_mul(2).min(self.max_bytes)
        } else {
            0
        };
        self.first_done = true;
        Some(group)
    }
}

/// One ranged GET, cut into stored chunks as bytes arrive.
pub(super) async fn fetch_group(
    inner: Arc<EngineShared>,
    key: ObjectKey,
    index: Arc<ChunkIndex>,
    group: Group,
) -> Result<BoxStream<'static, Result<Bytes, RsmError>>, RsmError> {
    let body = match inner.backend.fetch(&key, Some(group.range)).await {
        Ok(b) => b,
        Err(BackendError::InvalidRange { size, .. }) => {
            return Err(truncated(&key, &group, group.range.start, size));
        }
        Err(e) => return Err(e.into()),
    };
    let state = GetBodyChunks {
        body,
        next: group.chunks.start,
        received: 0,
        pending: Bytes::new(),
        acc: BytesMut::new(),
        group,
        key,
        index,
        inner,
    };
    Ok(stream::try_unfold(state, GetBodyChunks::next_chunk).boxed())
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

/// One ranged GET's body being cut into the stored chunks of its group: `pending` holds
/// received bytes not yet handed out, `acc` a chunk split across body items; `next` is the
/// chunk number handed out next, `received` the body bytes so far (for the truncation
/// error).
struct GetBodyChunks {
    body: ByteStream,
    next: u64,
    received: u64,
    pending: Bytes,
    acc: BytesMut,
    group: Group,
    key: ObjectKey,
    index: Arc<ChunkIndex>,
    inner: Arc<EngineShared>,
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
                    self.inner.stats.bytes_downloaded.add(b.len() as u64);
                    self.pending = b;
                }
                Some(Err(e)) => return Err(e.into()),
                None => {
                    let at = self.group.range.start + self.received;
                    return Err(truncated(&self.key, &self.group, at, None));
                }
            }
        }
    }
}
