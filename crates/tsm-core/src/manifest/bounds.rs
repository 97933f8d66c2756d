//! Bounds on what a manifest read from the bucket may claim, checked before any loop or
//! allocation is sized from it.
//!
//! Whoever can write the bucket can write any manifest. The engine and the operator tool
//! size buffers (one stored chunk, one decompressed chunk) and, in the tool, iterate over
//! chunks from the manifest's chunk index, so [`check_chunk_index`] refuses, with an error
//! naming the manifest and the field:
//! - an original chunk size above [`MAX_CHUNK_SIZE`] (the largest `chunk.size` a writer,
//!   the Java plugin or tsm, accepts);
//! - an original file size above [`MAX_ORIGINAL_FILE_SIZE`] or more chunks than
//!   [`MAX_CHUNK_COUNT`] (a `fixed` index is only two numbers: chunk size 1 and a file
//!   size of 2^62 would otherwise describe 2^62 chunks);
//! - a stored chunk larger than a writer can produce from one original chunk (zstd's
//!   compress bound plus the AES-GCM overhead), or an empty stored chunk;
//! - a `fixed` index whose stored sizes disagree with the manifest's own flags (plain:
//!   stored = original; encryption only: stored = original + 28).
//!
//! Index entries are checked by [`check_index_entries`]: every `position + size` fits a
//! `u64` and no index is larger than [`MAX_INDEX_SIZE`].
//!
//! Source: docs/object-format.md "Manifest" (chunk index types, what each mode stores).

use tsm_codec::{ChunkIndex, chunking, compression};
use tsm_crypto::ENCRYPTION_OVERHEAD;

use super::SegmentManifest;
use crate::{IndexType, ObjectKey, RsmError};

/// Largest original chunk size (bytes) a manifest may name: `chunk.size`'s own maximum,
/// Java's `Integer.MAX_VALUE / 2`.
pub const MAX_CHUNK_SIZE: u32 = crate::config::names::MAX_CHUNK_SIZE as u32;

/// Largest original `.log` size (bytes) a manifest may name: 1 TiB, far above Kafka's
/// `segment.bytes` (an `int`) and what a long-position broker writes.
pub const MAX_ORIGINAL_FILE_SIZE: u64 = 1 << 40;

/// Most chunks a manifest may describe: 2^24, a 2 GiB segment in chunks of 128 bytes. (The
/// Java reader caps a `variable` index at 10 MiB of decoded sizes, a few million chunks.)
pub const MAX_CHUNK_COUNT: u64 = 1 << 24;

/// Largest stored size (bytes) of one index in `.indexes`: 2 GiB, the largest file Kafka's
/// `int`-positioned index and snapshot readers accept, plus the AES-GCM overhead.
pub const MAX_INDEX_SIZE: u64 = i32::MAX as u64 + ENCRYPTION_OVERHEAD as u64;

fn corrupt(key: &ObjectKey, field: &str, detail: String) -> RsmError {
    RsmError::Corrupt {
        object: key.to_string(),
        detail: format!("{field}: {detail}"),
    }
}

/// The largest stored chunk a writer produces from an original chunk of `chunk_size` bytes.
pub fn max_stored_chunk_len(chunk_size: u32) -> u64 {
    compression::compress_bound(chunk_size as usize) as u64 + ENCRYPTION_OVERHEAD as u64
}

/// Checks the scalar fields of `chunkIndex` before the index is built (no allocation or
/// loop is sized from them before this passes).
///
/// # Errors
/// [`RsmError::Corrupt`] naming `key` and the field.
pub fn check_chunk_index_fields(
    key: &ObjectKey,
    original_chunk_size: u32,
    original_file_size: u64,
) -> Result<(), RsmError> {
    if original_chunk_size == 0 || original_chunk_size > MAX_CHUNK_SIZE {
        return Err(corrupt(
            key,
            "chunkIndex.originalChunkSize",
            format!("{original_chunk_size} is outside 1..={MAX_CHUNK_SIZE}"),
        ));
    }
    if original_file_size > MAX_ORIGINAL_FILE_SIZE {
        return Err(corrupt(
            key,
            "chunkIndex.originalFileSize",
            format!("{original_file_size} exceeds {MAX_ORIGINAL_FILE_SIZE} bytes"),
        ));
    }
    let count = chunking::chunk_count(original_file_size, original_chunk_size);
    if count > MAX_CHUNK_COUNT {
        return Err(corrupt(
            key,
            "chunkIndex",
            format!(
                "{original_file_size} bytes in chunks of {original_chunk_size} are {count} \
                 chunks, more than {MAX_CHUNK_COUNT}"
            ),
        ));
    }
    Ok(())
}

/// Checks a built chunk index against what its manifest's flags allow (see the module doc).
///
/// # Errors
/// [`RsmError::Corrupt`] naming `key`, the field and the chunk.
pub fn check_chunk_index(
    key: &ObjectKey,
    manifest: &SegmentManifest,
    index: &ChunkIndex,
) -> Result<(), RsmError> {
    let chunk_size = index.original_chunk_size();
    let file_size = index.original_file_size();
    let max_stored = max_stored_chunk_len(chunk_size);
    let overhead = if manifest.encryption.is_some() {
        ENCRYPTION_OVERHEAD as u64
    } else {
        0
    };
    for n in 0..index.chunk_count() {
        let stored = index.transformed_len(n).unwrap_or(0);
        let original = chunking::chunk_len(file_size, chunk_size, n).unwrap_or(0);
        let fixed_mismatch =
            index.is_fixed() && !manifest.compression && stored != original + overhead;
        if stored == 0 || stored > max_stored || fixed_mismatch {
            return Err(corrupt(
                key,
                "chunkIndex",
                format!(
                    "chunk {n} of {} is {stored} stored bytes for {original} original bytes \
                     (compression {}, encryption {})",
                    index.chunk_count(),
                    manifest.compression,
                    manifest.encryption.is_some()
                ),
            ));
        }
        // A fixed index has two distinct sizes: the first and the last chunk say it all.
        if index.is_fixed() && n == 0 && index.chunk_count() > 2 {
            let last = index.chunk_count() - 1;
            let stored = index.transformed_len(last).unwrap_or(0);
            let original = chunking::chunk_len(file_size, chunk_size, last).unwrap_or(0);
            let mismatch = !manifest.compression && stored != original + overhead;
            if stored == 0 || stored > max_stored || mismatch {
                return Err(corrupt(
                    key,
                    "chunkIndex.finalTransformedChunkSize",
                    format!("{stored} stored bytes for a last chunk of {original} bytes"),
                ));
            }
            break;
        }
    }
    Ok(())
}

/// Checks every `segmentIndexes` entry: `position + size` fits a `u64` and `size` is at
/// most [`MAX_INDEX_SIZE`].
///
/// # Errors
/// [`RsmError::Corrupt`] naming `key` and the index.
pub fn check_index_entries(key: &ObjectKey, manifest: &SegmentManifest) -> Result<(), RsmError> {
    for t in IndexType::ALL {
        let Some(e) = manifest.segment_indexes.get(t) else {
            continue;
        };
        if e.size > MAX_INDEX_SIZE || e.position.checked_add(e.size).is_none() {
            return Err(corrupt(
                key,
                &format!("segmentIndexes.{}", t.java_name()),
                format!("position {} size {} is out of bounds", e.position, e.size),
            ));
        }
    }
    Ok(())
}
