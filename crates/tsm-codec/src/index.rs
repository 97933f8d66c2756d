//! The chunk index: where each original chunk lives in the stored `.log` object
//! (docs/object-format.md "Manifest", "`chunkIndex`": types `fixed` and `variable`).
//!
//! Input: the manifest's `chunkIndex` fields (read path), or the transformed length of each
//! chunk as the write pipeline produces them ([`ChunkIndexBuilder`]). Output: for an original
//! byte offset or inclusive byte range, the chunks that cover it and each chunk's byte range
//! in the stored object, which the engine turns into ranged GETs.
//!
//! # Memory
//! A fixed index is a few words regardless of the segment size. A variable index keeps one
//! `u64` prefix sum (the stored end offset) per chunk, 8 bytes per chunk, and no per-chunk
//! structs; [`ChunkSpan`]s are computed on demand. The builder keeps one `u32` per chunk.
//!
//! # Lookups
//! Chunking is on the original side, so original offset -> chunk is a division, O(1), for
//! both types. Chunk -> stored range is O(1) for both (a multiplication for fixed, two prefix
//! sums for variable). Stored offset -> chunk is O(1) for fixed and O(log n) for variable
//! (binary search over the prefix sums).

use std::ops::Range;

use crate::chunking;
use crate::error::CodecError;
use crate::sizes_codec;

/// One chunk's position on both sides: original (segment bytes) and transformed (bytes of
/// the stored `.log` object). All offsets and lengths are in bytes; ranges are half-open
/// (`start .. start + len`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChunkSpan {
    /// Zero-based chunk number.
    pub index: u64,
    /// Offset of the chunk's first byte in the original segment.
    pub original_start: u64,
    /// Original length: `chunk.size`, or less for the last chunk. Never 0.
    pub original_len: u64,
    /// Offset of the chunk's first byte in the stored object.
    pub transformed_start: u64,
    /// Stored (transformed) length.
    pub transformed_len: u64,
}

impl ChunkSpan {
    /// Original byte range `original_start .. original_start + original_len`.
    pub fn original_range(&self) -> Range<u64> {
        self.original_start..self.original_start + self.original_len
    }

    /// Stored byte range `transformed_start .. transformed_start + transformed_len`.
    pub fn transformed_range(&self) -> Range<u64> {
        self.transformed_start..self.transformed_start + self.transformed_len
    }
}

/// The transformed sizes of a `fixed` chunk index, as the manifest stores them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedSizes {
    /// `transformedChunkSize`: stored length of every chunk but the last, in bytes.
    pub transformed_chunk_size: u32,
    /// `finalTransformedChunkSize`: stored length of the last chunk, in bytes.
    pub final_transformed_chunk_size: u32,
}

#[derive(Clone, PartialEq, Eq)]
enum Layout {
    Fixed(FixedSizes),
    /// `ends[i]` = stored end offset (exclusive) of chunk `i`; `ends.len() == chunk_count`.
    Variable {
        ends: Box<[u64]>,
    },
}

/// The chunk index of one segment, `fixed` or `variable` (docs/object-format.md "Manifest").
///
/// Constructed validated: the number of chunks always equals
/// `ceil(original_file_size / original_chunk_size)` and all stored offsets fit in a `u64`.
#[derive(Clone, PartialEq, Eq)]
pub struct ChunkIndex {
    original_chunk_size: u32,
    original_file_size: u64,
    count: u64,
    transformed_file_size: u64,
    layout: Layout,
}

impl std::fmt::Debug for ChunkIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never dump a million prefix sums into a log line.
        let mut d = f.debug_struct("ChunkIndex");
        d.field("type", &if self.is_fixed() { "fixed" } else { "variable" })
            .field("original_chunk_size", &self.original_chunk_size)
            .field("original_file_size", &self.original_file_size)
            .field("chunk_count", &self.count)
            .field("transformed_file_size", &self.transformed_file_size);
        if let Layout::Fixed(sizes) = &self.layout {
            d.field("transformed_chunk_size", &sizes.transformed_chunk_size)
                .field(
                    "final_transformed_chunk_size",
                    &sizes.final_transformed_chunk_size,
                );
        }
        d.finish()
    }
}

impl ChunkIndex {
    /// A `fixed` index: every stored chunk is `transformed_chunk_size` bytes except the last,
    /// which is `final_transformed_chunk_size` bytes. Used when no transform is applied
    /// (transformed = original) or with encryption only (transformed = 12 + n + 16).
    ///
    /// For a one-chunk segment only `final_transformed_chunk_size` is used; for a 0-byte
    /// segment neither is, and the stored size is 0.
    ///
    /// # Errors
    /// [`CodecError::ZeroChunkSize`] if `original_chunk_size` is 0;
    /// [`CodecError::IndexTooLarge`] if the stored size overflows a `u64`.
    pub fn fixed(
        original_chunk_size: u32,
        original_file_size: u64,
        transformed_chunk_size: u32,
        final_transformed_chunk_size: u32,
    ) -> Result<ChunkIndex, CodecError> {
        if original_chunk_size == 0 {
            return Err(CodecError::ZeroChunkSize);
        }
        let count = chunking::chunk_count(original_file_size, original_chunk_size);
        let transformed_file_size = match count {
            0 => 0,
            n => (n - 1)
                .checked_mul(u64::from(transformed_chunk_size))
                .and_then(|v| v.checked_add(u64::from(final_transformed_chunk_size)))
                .ok_or_else(|| {
                    CodecError::IndexTooLarge(format!(
                        "{n} chunks of {transformed_chunk_size} stored bytes overflow u64"
                    ))
                })?,
        };
        Ok(ChunkIndex {
            original_chunk_size,
            original_file_size,
            count,
            transformed_file_size,
            layout: Layout::Fixed(FixedSizes {
                transformed_chunk_size,
                final_transformed_chunk_size,
            }),
        })
    }

    /// A `variable` index from the stored size of every chunk, the last one included. Used
    /// whenever compression is on.
    ///
    /// # Errors
    /// [`CodecError::ZeroChunkSize`] if `original_chunk_size` is 0;
    /// [`CodecError::ChunkCountMismatch`] if `transformed_sizes.len()` is not
    /// `ceil(original_file_size / original_chunk_size)`.
    pub fn variable(
        original_chunk_size: u32,
        original_file_size: u64,
        transformed_sizes: Vec<u32>,
    ) -> Result<ChunkIndex, CodecError> {
        Self::variable_from_slice(original_chunk_size, original_file_size, &transformed_sizes)
    }

    fn variable_from_slice(
        original_chunk_size: u32,
        original_file_size: u64,
        transformed_sizes: &[u32],
    ) -> Result<ChunkIndex, CodecError> {
        if original_chunk_size == 0 {
            return Err(CodecError::ZeroChunkSize);
        }
        let count = chunking::chunk_count(original_file_size, original_chunk_size);
        if count != transformed_sizes.len() as u64 {
            return Err(CodecError::ChunkCountMismatch {
                expected: count,
                actual: transformed_sizes.len() as u64,
                original_file_size,
                original_chunk_size,
            });
        }
        let mut total: u64 = 0;
        let ends = transformed_sizes
            .iter()
            .map(|&s| {
                // A sum of at most usize::MAX u32s fits in u64 on 64-bit targets; saturate
                // elsewhere rather than panic (such an index cannot be in memory anyway).
                total = total.saturating_add(u64::from(s));
                total
            })
            .collect();
        Ok(ChunkIndex {
            original_chunk_size,
            original_file_size,
            count,
            transformed_file_size: total,
            layout: Layout::Variable { ends },
        })
    }

    /// A `variable` index from the manifest's `transformedChunks` string (base64 of a zstd
    /// frame of the chunk-size codec, see [`sizes_codec::decode_manifest_string`]).
    ///
    /// # Errors
    /// Everything [`sizes_codec::decode_manifest_string`] rejects, and
    /// [`CodecError::ChunkCountMismatch`] when the decoded count disagrees with the file size
    /// and chunk size.
    pub fn variable_from_manifest_string(
        original_chunk_size: u32,
        original_file_size: u64,
        transformed_chunks: &str,
    ) -> Result<ChunkIndex, CodecError> {
        let sizes = sizes_codec::decode_manifest_string(transformed_chunks)?;
        Self::variable(original_chunk_size, original_file_size, sizes)
    }

    /// The manifest's `transformedChunks` string for this index (zstd `level`, 3 in the Java
    /// plugin). Works for both types; only `variable` manifests store it.
    ///
    /// # Errors
    /// As [`sizes_codec::encode_manifest_string`].
    pub fn transformed_chunks_manifest_string(&self, level: i32) -> Result<String, CodecError> {
        let sizes: Vec<u32> = self.transformed_sizes().collect();
        sizes_codec::encode_manifest_string(&sizes, level)
    }

    /// Heap bytes held by this index (8 per chunk for `variable`, 0 for `fixed`), for
    /// weighing it in a size-bounded cache; add `size_of::<ChunkIndex>()` for the inline part.
    pub fn heap_bytes(&self) -> usize {
        match &self.layout {
            Layout::Fixed(_) => 0,
            Layout::Variable { ends } => std::mem::size_of_val(&**ends),
        }
    }

    /// `true` for a `fixed` index, `false` for `variable`.
    pub fn is_fixed(&self) -> bool {
        matches!(self.layout, Layout::Fixed(_))
    }

    /// The `fixed` index's stored sizes; `None` for a `variable` index.
    pub fn fixed_sizes(&self) -> Option<FixedSizes> {
        match &self.layout {
            Layout::Fixed(s) => Some(*s),
            Layout::Variable { .. } => None,
        }
    }

    /// `originalChunkSize`, bytes (>= 1).
    pub fn original_chunk_size(&self) -> u32 {
        self.original_chunk_size
    }

    /// `originalFileSize`, bytes.
    pub fn original_file_size(&self) -> u64 {
        self.original_file_size
    }

    /// Size of the stored `.log` object in bytes (sum of all transformed chunk sizes).
    pub fn transformed_file_size(&self) -> u64 {
        self.transformed_file_size
    }

    /// Number of chunks, `ceil(original_file_size / original_chunk_size)`.
    pub fn chunk_count(&self) -> u64 {
        self.count
    }

    /// Stored end offset (exclusive) of chunk `i`, which must be `< count`.
    fn transformed_end(&self, i: u64) -> u64 {
        match &self.layout {
            Layout::Fixed(s) => {
                if i + 1 == self.count {
                    self.transformed_file_size
                } else {
                    (i + 1) * u64::from(s.transformed_chunk_size)
                }
            }
            Layout::Variable { ends } => ends
                .get(i as usize)
                .copied()
                .unwrap_or(self.transformed_file_size),
        }
    }

    /// Stored start offset of chunk `i`, which must be `< count`.
    fn transformed_start(&self, i: u64) -> u64 {
        match &self.layout {
            Layout::Fixed(s) => i * u64::from(s.transformed_chunk_size),
            Layout::Variable { ends } => match i {
                0 => 0,
                _ => ends
                    .get(i as usize - 1)
                    .copied()
                    .unwrap_or(self.transformed_file_size),
            },
        }
    }

    /// Stored size in bytes of chunk `index`; `None` if there is no such chunk.
    pub fn transformed_len(&self, index: u64) -> Option<u64> {
        (index < self.count).then(|| self.transformed_end(index) - self.transformed_start(index))
    }

    /// Stored size of every chunk in order, the last included (what the chunk-size codec
    /// encodes).
    pub fn transformed_sizes(&self) -> impl ExactSizeIterator<Item = u32> + '_ {
        (0..self.count as usize).map(move |i| {
            let len = self.transformed_len(i as u64).unwrap_or(0);
            // Every stored size came from a u32.
            u32::try_from(len).unwrap_or(u32::MAX)
        })
    }

    /// Chunk containing original byte `offset`; `None` if `offset >= original_file_size`.
    /// O(1).
    pub fn chunk_for_offset(&self, offset: u64) -> Option<u64> {
        chunking::chunk_for_offset(self.original_file_size, self.original_chunk_size, offset)
    }

    /// Chunk containing stored byte `offset`; `None` if `offset >= transformed_file_size`.
    /// O(1) for fixed, O(log n) for variable. Chunks with a stored size of 0 are skipped.
    pub fn chunk_for_transformed_offset(&self, offset: u64) -> Option<u64> {
        if offset >= self.transformed_file_size {
            return None;
        }
        match &self.layout {
            Layout::Fixed(s) => {
                let full = u64::from(s.transformed_chunk_size);
                let last_start = self.transformed_start(self.count - 1);
                if offset >= last_start || full == 0 {
                    Some(self.count - 1)
                } else {
                    Some(offset / full)
                }
            }
            Layout::Variable { ends } => Some(ends.partition_point(|&end| end <= offset) as u64),
        }
    }

    /// The chunks covering the inclusive original byte range `start..=end_inclusive`, as a
    /// half-open range of chunk numbers; `None` if the range is empty (`start >
    /// end_inclusive`) or reaches past the end of the segment.
    pub fn chunks_for_range(&self, start: u64, end_inclusive: u64) -> Option<Range<u64>> {
        if start > end_inclusive {
            return None;
        }
        let first = self.chunk_for_offset(start)?;
        let last = self.chunk_for_offset(end_inclusive)?;
        Some(first..last + 1)
    }

    /// Both positions of chunk `index`; `None` if there is no such chunk.
    pub fn chunk(&self, index: u64) -> Option<ChunkSpan> {
        let original = chunking::chunk_original_range(
            self.original_file_size,
            self.original_chunk_size,
            index,
        )?;
        let transformed_start = self.transformed_start(index);
        Some(ChunkSpan {
            index,
            original_start: original.start,
            original_len: original.end - original.start,
            transformed_start,
            transformed_len: self.transformed_end(index) - transformed_start,
        })
    }

    /// The spans of the chunks in `chunks` (clamped to the existing chunks), in order.
    pub fn spans(&self, chunks: Range<u64>) -> impl Iterator<Item = ChunkSpan> + '_ {
        (chunks.start..chunks.end.min(self.count)).filter_map(move |i| self.chunk(i))
    }

    /// The stored byte range (half-open) holding chunks `chunks`, contiguous in the object;
    /// `None` if `chunks` is empty or names a chunk that does not exist.
    pub fn transformed_range(&self, chunks: Range<u64>) -> Option<Range<u64>> {
        if chunks.is_empty() || chunks.end > self.count {
            return None;
        }
        Some(self.transformed_start(chunks.start)..self.transformed_end(chunks.end - 1))
    }
}

/// Collects the transformed size of each chunk on the write path and builds the
/// [`ChunkIndex`] once the last chunk is through. Memory: 4 bytes per chunk.
#[derive(Debug, Clone)]
pub struct ChunkIndexBuilder {
    original_chunk_size: u32,
    original_file_size: u64,
    sizes: Vec<u32>,
    /// Set once a short (last) chunk has been pushed: no further chunk is allowed.
    closed: bool,
}

impl ChunkIndexBuilder {
    /// A builder for chunks of `original_chunk_size` bytes.
    ///
    /// # Errors
    /// [`CodecError::ZeroChunkSize`] if `original_chunk_size` is 0.
    pub fn new(original_chunk_size: u32) -> Result<Self, CodecError> {
        if original_chunk_size == 0 {
            return Err(CodecError::ZeroChunkSize);
        }
        Ok(ChunkIndexBuilder {
            original_chunk_size,
            original_file_size: 0,
            sizes: Vec::new(),
            closed: false,
        })
    }

    /// Records the next chunk: `original_len` bytes in the segment, `transformed_len` bytes
    /// stored.
    ///
    /// # Errors
    /// [`CodecError::ChunkLength`] if `original_len` is 0 or more than the chunk size, or if
    /// a previous chunk was already short (only the last chunk may be short).
    pub fn push(&mut self, original_len: u64, transformed_len: u32) -> Result<(), CodecError> {
        let index = self.sizes.len() as u64;
        let cs = u64::from(self.original_chunk_size);
        if self.closed || original_len == 0 || original_len > cs {
            return Err(CodecError::ChunkLength {
                index,
                expected: if self.closed { 0 } else { cs },
                actual: original_len,
            });
        }
        self.closed = original_len < cs;
        self.original_file_size = self.original_file_size.saturating_add(original_len);
        self.sizes.push(transformed_len);
        Ok(())
    }

    /// Number of chunks pushed so far.
    pub fn chunk_count(&self) -> u64 {
        self.sizes.len() as u64
    }

    /// Original bytes pushed so far.
    pub fn original_file_size(&self) -> u64 {
        self.original_file_size
    }

    /// A `variable` index (compression on).
    ///
    /// # Errors
    /// As [`ChunkIndex::variable`] (not expected: the builder enforces the chunking rule).
    pub fn build_variable(self) -> Result<ChunkIndex, CodecError> {
        ChunkIndex::variable(
            self.original_chunk_size,
            self.original_file_size,
            self.sizes,
        )
    }

    /// A `fixed` index whose full chunks are `transformed_chunk_size` stored bytes (the chunk
    /// size without transform, chunk size + 28 with encryption only); the last chunk's stored
    /// size is taken from what was pushed (`transformed_chunk_size` for an empty segment, as
    /// there is no last chunk).
    ///
    /// # Errors
    /// [`CodecError::NotFixedSize`] naming the first non-last chunk whose stored size differs.
    pub fn build_fixed(self, transformed_chunk_size: u32) -> Result<ChunkIndex, CodecError> {
        let n = self.sizes.len();
        if let Some((i, &s)) = self.sizes[..n.saturating_sub(1)]
            .iter()
            .enumerate()
            .find(|&(_, &s)| s != transformed_chunk_size)
        {
            return Err(CodecError::NotFixedSize {
                index: i as u64,
                expected: transformed_chunk_size,
                actual: s,
            });
        }
        let last = self.sizes.last().copied().unwrap_or(transformed_chunk_size);
        ChunkIndex::fixed(
            self.original_chunk_size,
            self.original_file_size,
            transformed_chunk_size,
            last,
        )
    }
}
