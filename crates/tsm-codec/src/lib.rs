//! tsm-codec: the transform layer of the tsm object format v1 that does not involve keys.
//!
//! # Brief overview
//! A segment is cut into chunks of `chunk.size` original bytes ([`chunking`]), each chunk is
//! optionally zstd-compressed ([`compression`], decided per segment by [`heuristic`]) and then
//! optionally encrypted (by `tsm-crypto`, outside this crate), the stored chunks are
//! concatenated into the `.log` object, and the [`ChunkIndex`] recording where each chunk
//! landed goes into the manifest (its `variable` form through [`sizes_codec`]). Reads go the
//! other way: the index maps an original byte range to stored chunks. [`pipeline`] runs the
//! per-chunk transforms of either direction on all cores, in order, with bounded memory.
//!
//! # Format sections implemented
//! All references are to sections of `docs/object-format.md`:
//!
//! | module | section |
//! |---|---|
//! | [`chunking`] | "`.log`": chunking on the original side, every chunk `chunk.size` bytes except the last |
//! | [`index`] | "Manifest": `chunkIndex` types `fixed` and `variable` and their fields |
//! | [`sizes_codec`] | "`transformedChunks`: chunk-size codec", including the test vector and the 10 MiB cap |
//! | [`compression`] | "Compression": one zstd frame per chunk, content size recorded, level 3 default |
//! | [`heuristic`] | "Compression": `compression.heuristic.enabled` (tsm walks all batches, not just the first) |
//! | [`digest`] | "tsm's integrity fields": the digest of each stored chunk and index, which the Java plugin ignores |
//! | [`pipeline`] | "`.log`": transform order (compress then encrypt; reverse on read) is the caller's function; the pipeline keeps chunk order |
//!
//! This crate depends on no other tsm crate.
//!
//! # Example
//! ```
//! use tsm_codec::{compression, ChunkIndexBuilder, chunking};
//!
//! let segment = vec![7u8; 2500];
//! let mut builder = ChunkIndexBuilder::new(1000).unwrap();
//! let mut stored = Vec::new();
//! for chunk in segment.chunks(1000) {
//!     let frame = compression::compress_chunk(chunk, compression::DEFAULT_LEVEL).unwrap();
//!     builder.push(chunk.len() as u64, frame.len() as u32).unwrap();
//!     stored.extend_from_slice(&frame);
//! }
//! let index = builder.build_variable().unwrap();
//! assert_eq!(index.chunk_count(), chunking::chunk_count(2500, 1000));
//! // The manifest string round-trips to the same index.
//! let s = index.transformed_chunks_manifest_string(3).unwrap();
//! let again = tsm_codec::ChunkIndex::variable_from_manifest_string(1000, 2500, &s).unwrap();
//! assert_eq!(again, index);
//! // Read original bytes 1500..=2100: chunks 1 and 2.
//! let chunks = index.chunks_for_range(1500, 2100).unwrap();
//! assert_eq!(chunks, 1..3);
//! let span = index.chunk(2).unwrap();
//! let frame = &stored[span.transformed_start as usize..][..span.transformed_len as usize];
//! let original = compression::decompress_chunk(frame, span.original_len as usize).unwrap();
//! assert_eq!(original, &segment[2000..]);
//! ```
#![deny(rustdoc::broken_intra_doc_links)]

pub mod chunking;
pub mod compression;
pub mod digest;
mod error;
pub mod heuristic;
pub mod index;
pub mod pipeline;
pub mod sizes_codec;

pub use error::CodecError;
pub use heuristic::{HeuristicDecision, analyze};
pub use index::{ChunkIndex, ChunkIndexBuilder, ChunkSpan, FixedSizes};
pub use pipeline::{PipelineError, ordered_transform, ordered_transform_ramped};
