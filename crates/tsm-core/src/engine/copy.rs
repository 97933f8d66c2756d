//! `copyLogSegmentData`: the broker's files -> `.log`, `.indexes`, `.rsm-manifest`
//! (docs/object-format.md "Objects per segment", "`.log`", "`.indexes`", "Manifest").
//!
//! `.log` is streamed: tsm-codec's `ordered_transform` runs up to `max_in_flight` chunk jobs
//! in parallel on the blocking pool, each reading its `chunk.size` range of the segment file
//! (a positional read into the buffer that is compressed, or encrypted in place) and
//! compressing / encrypting it, and the stored chunks go straight into the backend's upload
//! stream; chunk sizes and digests are recorded (12 bytes per chunk) for the manifest.
//! Indexes are read, encrypted and uploaded one at a time. The manifest goes last, with
//! the segment's integrity data (`manifest/integrity.rs`: identity, digests of the stored
//! chunks and indexes, the MAC when encrypted). Any failure deletes
//! the three keys and returns the first error; a copy whose future is dropped deletes them
//! through its guard (`engine/lifecycle/cleanup.rs`).
//!
//! Peak memory: `max_in_flight x (chunk + stored chunk)` in the pipeline (reads included) +
//! the stored chunks the backend holds (the filesystem: two) + the idle buffers kept for
//! reuse (`engine/chunk_buffers.rs`, at most the window's worth) + the largest index (twice when encrypted) + what the backend buffers for its
//! multipart upload; independent of the segment size. Reserved from the engine's memory
//! budget before the first byte is read (`engine/lifecycle/budget.rs`).

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use futures::stream;
use futures::{StreamExt, TryStreamExt};
use tsm_codec::{ChunkIndex, ChunkIndexBuilder, chunking, ordered_transform};

use super::chunk_buffers::BufferPool;
use super::lifecycle::{CopyGuard, budget};
use super::{CopyOutcome, EngineShared, ObjectType, segment_name};
use crate::config::names;
use crate::custom_metadata::{CustomMetadata, encoded_len_upper_bound};
use crate::engine::options::CompressionMode;
use crate::manifest::integrity::{
    MAX_INTEGRITY_CHUNKS, SegmentIdentity, SegmentIntegrity, Unit, unit_digest,
};
use crate::manifest::{
    ChunkIndexJson, EncryptionJson, MANIFEST_VERSION, SegmentIndexJson, SegmentIndexes,
    SegmentManifest, metadata_json,
};
use crate::object_keys::SegmentKeys;
use crate::transform::{SegmentTransform, TransformError, new_segment_encryption};
use crate::{IndexType, LogSegmentData, RemoteLogSegmentMetadata, RsmError};
use tsm_crypto::{IV_LEN, TAG_LEN};
use tsm_storage::{BackendError, ObjectKey};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> RsmError + Clone + use<> {
    let path = path.display().to_string();
    move |source| RsmError::Io {
        path: path.clone(),
        source,
    }
}

/// A transform failure on the write path (never "corrupt": nothing was read back).
fn write_error(what: &str, e: TransformError) -> RsmError {
    match e {
        TransformError::Crypto(c) => RsmError::Crypto(format!("{what}: {c}")),
        other => RsmError::Internal(format!("{what}: {other}")),
    }
}

/// Holds the first error of a body stream, so the caller gets the real error rather than
/// the backend's wrapping of it.
#[derive(Clone, Default)]
struct Failure(Arc<Mutex<Option<RsmError>>>);

impl Failure {
    fn set(&self, e: RsmError, key: &ObjectKey) -> BackendError {
        let detail = format!("upload body failed: {e}");
        let mut slot = lock(&self.0);
        if slot.is_none() {
            *slot = Some(e);
        }
        BackendError::Other {
            key: key.clone(),
            detail,
            source: None,
        }
    }

    fn take_or(&self, e: BackendError) -> RsmError {
        lock(&self.0).take().unwrap_or(RsmError::Backend(e))
    }
}

pub(super) async fn copy(
    inner: &Arc<EngineShared>,
    metadata: &RemoteLogSegmentMetadata,
    data: &LogSegmentData,
) -> Result<CopyOutcome, RsmError> {
    let opts = &inner.opts;
    let keys = SegmentKeys::for_copy(metadata, &opts.key_prefix, opts.key_prefix_mask);

    let log_size = file_len(&data.log_segment).await?;
    let mut index_total = data.leader_epoch_index.len() as u64;
    let mut largest_index = index_total;
    for p in [
        &data.offset_index,
        &data.time_index,
        &data.producer_snapshot_index,
    ]
    .into_iter()
    .chain(data.transaction_index.as_ref())
    {
        let len = file_len(p).await?;
        index_total += len;
        largest_index = largest_index.max(len);
    }
    check_custom_metadata_early(inner, metadata, &keys, log_size, index_total)?;

    // The working set comes out of the engine's budget before anything is allocated.
    let _memory = inner
        .lifecycle
        .pools
        .copies
        .reserve(
            budget::copy_bytes(
                u64::from(opts.chunk_size),
                opts.max_in_flight,
                largest_index,
                inner.backend.upload_buffer_bytes(),
            ),
            inner.lifecycle.deadlines.upload,
            names::STORAGE_UPLOAD_TIMEOUT_MS,
            || format!("copy of {}", segment_name(metadata)),
        )
        .await?;

    let compress = match opts.compression {
        CompressionMode::Off => false,
        CompressionMode::On => true,
        CompressionMode::Heuristic => heuristic(&data.log_segment, log_size).await?,
    };
    let (cipher, encryption) = match &opts.key_ring {
        None => (None, None),
        Some(ring) => {
            let (c, e) = new_segment_encryption(ring)
                .map_err(|e| write_error(&segment_name(metadata), e))?;
            (Some(c), Some(e))
        }
    };
    let transform = Arc::new(SegmentTransform::new(
        compress.then_some(opts.compression_level),
        cipher,
    ));
    tracing::debug!(
        log_bytes = log_size,
        index_bytes = index_total,
        compress,
        encrypt = transform.is_encrypted(),
        key = %keys.log,
        "copying segment"
    );

    // From here on, whatever is written is deleted unless the copy commits.
    let guard = CopyGuard::new(
        inner.backend.clone(),
        keys.clone(),
        inner.lifecycle.deadlines.delete,
    );
    match upload_all(
        inner, metadata, data, &guard, transform, encryption, log_size,
    )
    .await
    {
        Ok(uploaded) => {
            let remote_size: u64 = uploaded.iter().map(|(_, n)| n).sum();
            inner.invalidate(&keys).await;
            let custom = CustomMetadata::for_fields(
                &opts.custom_metadata_fields,
                i64::try_from(remote_size).unwrap_or(i64::MAX),
                &keys.prefix,
                &keys.main_path,
            );
            if custom.is_empty() {
                guard.disarm();
                return Ok(CopyOutcome {
                    custom_metadata: None,
                    uploaded,
                });
            }
            let bytes = custom.encode();
            if bytes.len() > opts.custom_metadata_max_bytes {
                guard.undo().await;
                return Err(too_big(
                    metadata,
                    bytes.len(),
                    opts.custom_metadata_max_bytes,
                ));
            }
            guard.disarm();
            Ok(CopyOutcome {
                custom_metadata: Some(bytes),
                uploaded,
            })
        }
        Err(e) => {
            tracing::warn!(error = %e, key = %keys.manifest, "copy failed; deleting what was written");
            guard.undo().await;
            Err(e)
        }
    }
}

fn too_big(metadata: &RemoteLogSegmentMetadata, len: usize, max: usize) -> RsmError {
    RsmError::InvalidArgument(format!(
        "{}: custom metadata would be {len} bytes, over the broker's limit of {max} bytes \
         (remote.log.metadata.custom.metadata.max.bytes); shorten key.prefix or the topic name, \
         or remove OBJECT_PREFIX / OBJECT_KEY from custom.metadata.fields.include",
        segment_name(metadata)
    ))
}

/// Refuses, before uploading anything, custom metadata that could exceed the limit: the
/// remote size is bounded by twice the original bytes plus per-chunk overheads.
fn check_custom_metadata_early(
    inner: &EngineShared,
    metadata: &RemoteLogSegmentMetadata,
    keys: &SegmentKeys,
    log_size: u64,
    index_total: u64,
) -> Result<(), RsmError> {
    let opts = &inner.opts;
    if opts.custom_metadata_fields.is_empty() {
        return Ok(());
    }
    let chunks = chunking::chunk_count(log_size, opts.chunk_size);
    let bound = log_size
        .saturating_add(index_total)
        .saturating_mul(2)
        .saturating_add(chunks.saturating_mul(128))
        .saturating_add(1 << 20);
    let len = encoded_len_upper_bound(
        &opts.custom_metadata_fields,
        i64::try_from(bound).unwrap_or(i64::MAX),
        &keys.prefix,
        &keys.main_path,
    );
    if len > opts.custom_metadata_max_bytes {
        return Err(too_big(metadata, len, opts.custom_metadata_max_bytes));
    }
    Ok(())
}

/// Reads exactly `buf.len()` bytes at `offset` (a positional read: no shared file
/// position, so jobs read concurrently). A file shorter than that is the error "the segment
/// file changed while it was copied".
fn read_exact_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_exact_at(buf, offset).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                std::io::Error::new(
                    e.kind(),
                    format!(
                        "the segment file changed while it was copied: it ends before byte {}",
                        offset + buf.len() as u64
                    ),
                )
            } else {
                e
            }
        })
    }
    #[cfg(not(unix))]
    {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = file;
        f.seek(SeekFrom::Start(offset))?;
        f.read_exact(buf)
    }
}

async fn file_len(path: &Path) -> Result<u64, RsmError> {
    Ok(tokio::fs::metadata(path)
        .await
        .map_err(io_error(path))?
        .len())
}

async fn heuristic(path: &Path, size: u64) -> Result<bool, RsmError> {
    let p = path.to_path_buf();
    let err = io_error(path);
    let decision = tokio::task::spawn_blocking(move || {
        std::fs::File::open(&p).map(|f| tsm_codec::analyze(std::io::BufReader::new(f), size))
    })
    .await
    .map_err(|e| RsmError::Internal(format!("compression heuristic on {}: {e}", path.display())))?
    .map_err(err)?;
    tracing::debug!(compress = decision.compress, reason = %decision.reason, "compression heuristic");
    Ok(decision.compress)
}

/// Uploads the three objects; returns the bytes stored of each.
async fn upload_all(
    inner: &Arc<EngineShared>,
    metadata: &RemoteLogSegmentMetadata,
    data: &LogSegmentData,
    guard: &CopyGuard,
    transform: Arc<SegmentTransform>,
    encryption: Option<EncryptionJson>,
    log_size: u64,
) -> Result<Vec<(ObjectType, u64)>, RsmError> {
    let keys = guard.keys();
    let (index, chunk_digests, log_stored) = upload_log(
        inner,
        &keys.log,
        &data.log_segment,
        log_size,
        transform.clone(),
    )
    .await?;
    let (segment_indexes, index_digests, indexes_stored) =
        upload_indexes(inner, &keys.indexes, data, transform.clone()).await?;

    let chunk_index = chunk_index_json(
        &index,
        transform.is_compressed(),
        inner.opts.compression_level,
    )
    .map_err(|e| write_error(&keys.manifest.to_string(), e))?;
    let mut manifest = SegmentManifest {
        version: MANIFEST_VERSION.to_string(),
        chunk_index,
        segment_indexes,
        compression: transform.is_compressed(),
        encryption,
        remote_log_segment_metadata: Some(metadata_json(metadata)),
    };
    if inner.opts.write_integrity {
        attach_integrity(
            metadata,
            &mut manifest,
            &index,
            chunk_digests,
            index_digests,
            &transform,
        );
    }
    let body = Bytes::from(manifest.to_json());
    let len = body.len() as u64;
    guard.manifest_started();
    let manifest_stored = inner
        .backend
        .upload(
            &keys.manifest,
            stream::once(async { Ok(body) }).boxed(),
            Some(len),
        )
        .await?;
    inner.stats.bytes_uploaded.add(manifest_stored);
    Ok(vec![
        (ObjectType::Log, log_stored),
        (ObjectType::Indexes, indexes_stored),
        (ObjectType::Manifest, manifest_stored),
    ])
}

/// Records the segment's integrity data in `manifest` (`manifest/integrity.rs`): its
/// identity, the digests of its stored chunks and indexes, and its MAC when encrypted. A
/// segment of more than [`MAX_INTEGRITY_CHUNKS`] chunks (a `chunk.size` under 1 KiB) is
/// written without, with a WARN.
fn attach_integrity(
    metadata: &RemoteLogSegmentMetadata,
    manifest: &mut SegmentManifest,
    index: &ChunkIndex,
    chunk_digests: Vec<u64>,
    index_digests: [Option<u64>; 5],
    transform: &SegmentTransform,
) {
    if index.chunk_count() > MAX_INTEGRITY_CHUNKS {
        tracing::warn!(
            chunks = index.chunk_count(),
            segment = %segment_name(metadata),
            "segment written without integrity data: more than {MAX_INTEGRITY_CHUNKS} chunks; \
             raise {}",
            names::CHUNK_SIZE
        );
        return;
    }
    let mut integrity =
        SegmentIntegrity::new(SegmentIdentity::of(metadata), chunk_digests, index_digests);
    if let Some(mac) = transform.mac() {
        integrity.seal(manifest, index, mac);
    }
    if let Some(m) = manifest.remote_log_segment_metadata.as_mut() {
        integrity.attach(m);
    }
}

/// The manifest's `chunkIndex` for what was uploaded.
fn chunk_index_json(
    index: &ChunkIndex,
    compressed: bool,
    level: i32,
) -> Result<ChunkIndexJson, TransformError> {
    if compressed || !index.is_fixed() {
        let transformed_chunks = index
            .transformed_chunks_manifest_string(level)
            .map_err(|source| TransformError::Codec { chunk: 0, source })?;
        return Ok(ChunkIndexJson::Variable {
            original_chunk_size: index.original_chunk_size(),
            original_file_size: index.original_file_size(),
            transformed_chunks,
        });
    }
    let sizes = index.fixed_sizes().unwrap_or(tsm_codec::FixedSizes {
        transformed_chunk_size: index.original_chunk_size(),
        final_transformed_chunk_size: index.original_chunk_size(),
    });
    Ok(ChunkIndexJson::Fixed {
        original_chunk_size: index.original_chunk_size(),
        original_file_size: index.original_file_size(),
        transformed_chunk_size: sizes.transformed_chunk_size,
        final_transformed_chunk_size: sizes.final_transformed_chunk_size,
    })
}

/// Why one chunk job failed: its positional read, or the transform.
enum ChunkFail {
    Read(std::io::Error),
    Transform(TransformError),
}

impl From<TransformError> for ChunkFail {
    fn from(e: TransformError) -> Self {
        ChunkFail::Transform(e)
    }
}

/// Streams the segment file through the transform into the `.log` upload: each job of the
/// pipeline reads its own chunk (a positional read of its original byte range, straight
/// into the buffer the transform works in) and transforms it, so reads run in parallel with
/// each other and with the upload.
async fn upload_log(
    inner: &Arc<EngineShared>,
    key: &ObjectKey,
    path: &Path,
    file_size: u64,
    transform: Arc<SegmentTransform>,
) -> Result<(ChunkIndex, Vec<u64>, u64), RsmError> {
    let opts = &inner.opts;
    let chunk_size = opts.chunk_size;
    let file = tokio::fs::File::open(path).await.map_err(io_error(path))?;
    let file = Arc::new(file.into_std().await);
    let builder = Arc::new(Mutex::new(
        ChunkIndexBuilder::new(chunk_size).map_err(|e| RsmError::InvalidArgument(e.to_string()))?,
    ));
    let chunks = chunking::chunk_count(file_size, chunk_size);

    let stored = {
        let what = format!("{key}");
        let read_error = io_error(path);
        let t = transform.clone();
        let integrity = opts.write_integrity;
        let input = stream::iter((0..chunks).map(Ok::<u64, RsmError>));
        // Every buffer fits an original chunk, or a frame of one after the IV, plus the tag.
        let capacity = usize::try_from(chunk_size).unwrap_or(usize::MAX);
        let capacity = IV_LEN + tsm_codec::compression::compress_bound(capacity) + TAG_LEN;
        // The pipeline's window (each job holds up to two), the chunk the pipeline hands over
        // and the two the backend holds.
        let buffers = BufferPool::new(capacity, 2 * opts.max_in_flight.max(1) + 3);
        ordered_transform(input, opts.max_in_flight, move |i, _| {
            let range = chunking::chunk_original_range(file_size, chunk_size, i)
                .ok_or_else(|| RsmError::Internal(format!("{what}: no chunk {i}")))?;
            let len = usize::try_from(range.end - range.start)
                .map_err(|_| RsmError::Internal(format!("{what}: chunk {i} too large")))?;
            let stored = t
                .encode_chunk_with(i, len, &buffers, |buf| {
                    read_exact_at(&file, buf, range.start).map_err(ChunkFail::Read)
                })
                .map_err(|e| match e {
                    ChunkFail::Read(e) => read_error(e),
                    ChunkFail::Transform(e) => write_error(&format!("{what} chunk {i}"), e),
                })?;
            let digest = integrity.then(|| {
                unit_digest(
                    true,
                    Unit::Chunk,
                    t.is_compressed(),
                    t.is_encrypted(),
                    &stored,
                )
            });
            Ok((stored, digest.unwrap_or(0)))
        })
        .boxed()
    };
    let digests: Arc<Mutex<Vec<u64>>> = Arc::default();

    let failure = Failure::default();
    let body = {
        let failure = failure.clone();
        let builder = builder.clone();
        let digests = digests.clone();
        let key = key.clone();
        let mut next_chunk = 0u64;
        stored
            .map(move |r| {
                let pushed = r.and_then(|(out, digest)| {
                    let orig = chunking::chunk_len(file_size, chunk_size, next_chunk).unwrap_or(0);
                    next_chunk += 1;
                    let stored_len = u32::try_from(out.len()).map_err(|_| {
                        RsmError::Internal(format!("{key}: stored chunk over 4 GiB"))
                    })?;
                    lock(&builder)
                        .push(orig, stored_len)
                        .map_err(|e| RsmError::Internal(format!("{key}: {e}")))?;
                    lock(&digests).push(digest);
                    Ok(out)
                });
                pushed.map_err(|e| failure.set(e, &key))
            })
            .boxed()
    };
    let size_hint = transform
        .fixed_stored_len(0)
        .map(|overhead| file_size + chunks * overhead);
    let stored_bytes = inner
        .backend
        .upload(key, body, size_hint)
        .await
        .map_err(|e| failure.take_or(e))?;
    inner.stats.bytes_uploaded.add(stored_bytes);

    let builder = std::mem::replace(
        &mut *lock(&builder),
        ChunkIndexBuilder::new(chunk_size)
            .map_err(|e| RsmError::Internal(format!("{key}: {e}")))?,
    );
    // The reads covered exactly the size found at the start (a shorter file failed its
    // read); a file that grew since is refused too.
    let now = file_len(path).await?;
    if builder.original_file_size() != file_size || now != file_size {
        return Err(RsmError::Io {
            path: path.display().to_string(),
            source: std::io::Error::other(format!(
                "the segment file changed while it was copied: {now} bytes now, {file_size} \
                 when the copy started"
            )),
        });
    }
    let index = if transform.is_compressed() {
        builder.build_variable()
    } else {
        let full = transform
            .fixed_stored_len(u64::from(chunk_size))
            .unwrap_or(0);
        builder.build_fixed(u32::try_from(full).unwrap_or(u32::MAX))
    }
    .map_err(|e| RsmError::Internal(format!("{key}: {e}")))?;
    if index.transformed_file_size() != stored_bytes {
        return Err(RsmError::Corrupt {
            object: key.to_string(),
            detail: format!(
                "the backend stored {stored_bytes} bytes, the chunks add up to {}",
                index.transformed_file_size()
            ),
        });
    }
    let digests = std::mem::take(&mut *lock(&digests));
    Ok((index, digests, stored_bytes))
}

enum IndexSource {
    File(std::path::PathBuf),
    Memory(Bytes),
}

/// Reads, encrypts (when on) and uploads the indexes in storage order, one at a time;
/// returns their entries, the digest of each one's stored bytes (in [`IndexType::ALL`]
/// order) and the bytes stored.
async fn upload_indexes(
    inner: &Arc<EngineShared>,
    key: &ObjectKey,
    data: &LogSegmentData,
    transform: Arc<SegmentTransform>,
) -> Result<(SegmentIndexes, [Option<u64>; 5], u64), RsmError> {
    let mut sources: Vec<(IndexType, IndexSource)> = vec![
        (
            IndexType::Offset,
            IndexSource::File(data.offset_index.clone()),
        ),
        (
            IndexType::Timestamp,
            IndexSource::File(data.time_index.clone()),
        ),
        (
            IndexType::ProducerSnapshot,
            IndexSource::File(data.producer_snapshot_index.clone()),
        ),
        (
            IndexType::LeaderEpoch,
            IndexSource::Memory(data.leader_epoch_index.clone()),
        ),
    ];
    if let Some(txn) = &data.transaction_index {
        sources.push((IndexType::Transaction, IndexSource::File(txn.clone())));
    }
    // Expected stored size, for the backend's size hint.
    let mut expected = 0u64;
    for (_, src) in &sources {
        let len = match src {
            IndexSource::File(p) => file_len(p).await?,
            IndexSource::Memory(b) => b.len() as u64,
        };
        expected += transform.index_stored_len(len);
    }

    let entries: Arc<Mutex<Vec<(IndexType, u64, u64)>>> = Arc::default();
    let failure = Failure::default();
    let body = {
        let entries = entries.clone();
        let failure = failure.clone();
        let key = key.clone();
        stream::iter(sources)
            .then(move |(kind, src)| {
                let transform = transform.clone();
                let entries = entries.clone();
                async move {
                    let plain = match src {
                        IndexSource::File(p) => {
                            Bytes::from(tokio::fs::read(&p).await.map_err(io_error(&p))?)
                        }
                        IndexSource::Memory(b) => b,
                    };
                    let what = format!("{} index", kind.java_name());
                    let (stored, digest) = tokio::task::spawn_blocking(move || {
                        transform.encode_index(plain).map(|stored| {
                            let digest = unit_digest(
                                true,
                                Unit::Index,
                                transform.is_compressed(),
                                transform.is_encrypted(),
                                &stored,
                            );
                            (stored, digest)
                        })
                    })
                    .await
                    .map_err(|e| RsmError::Internal(format!("{what}: {e}")))?
                    .map_err(|e| write_error(&what, e))?;
                    lock(&entries).push((kind, stored.len() as u64, digest));
                    Ok::<_, RsmError>(stored)
                }
            })
            .map(move |r| r.map_err(|e| failure.set(e, &key)))
            .try_filter(|b| futures::future::ready(!b.is_empty()))
            .boxed()
    };
    let stored_bytes = inner
        .backend
        .upload(key, body, Some(expected))
        .await
        .map_err(|e| failure.take_or(e))?;
    inner.stats.bytes_uploaded.add(stored_bytes);

    let mut position = 0u64;
    let mut get = |t: IndexType| -> Option<SegmentIndexJson> {
        let size = lock(&entries)
            .iter()
            .find(|(k, _, _)| *k == t)
            .map(|(_, s, _)| *s)?;
        let e = SegmentIndexJson { position, size };
        position += size;
        Some(e)
    };
    let missing = |t: IndexType| {
        RsmError::Internal(format!("{key}: {} index was not uploaded", t.java_name()))
    };
    let indexes = SegmentIndexes {
        offset: get(IndexType::Offset).ok_or_else(|| missing(IndexType::Offset))?,
        timestamp: get(IndexType::Timestamp).ok_or_else(|| missing(IndexType::Timestamp))?,
        producer_snapshot: get(IndexType::ProducerSnapshot)
            .ok_or_else(|| missing(IndexType::ProducerSnapshot))?,
        leader_epoch: get(IndexType::LeaderEpoch).ok_or_else(|| missing(IndexType::LeaderEpoch))?,
        transaction: get(IndexType::Transaction),
    };
    if indexes.stored_len() != stored_bytes {
        return Err(RsmError::Corrupt {
            object: key.to_string(),
            detail: format!(
                "the backend stored {stored_bytes} bytes, the indexes add up to {}",
                indexes.stored_len()
            ),
        });
    }
    let mut digests = [None; 5];
    for (slot, t) in digests.iter_mut().zip(IndexType::ALL) {
        *slot = lock(&entries)
            .iter()
            .find(|(k, _, _)| *k == t)
            .map(|(_, _, d)| *d);
    }
    Ok((indexes, digests, stored_bytes))
}
