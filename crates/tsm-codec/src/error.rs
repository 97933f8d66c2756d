//! The crate's one public error type, [`CodecError`].
//!
//! Every variant names what went wrong in bytes or chunk numbers so that an operator can tell
//! which chunk of which segment is broken; callers that know the object key add it around this
//! error (tsm-codec never sees keys). Messages never contain payload bytes.

/// Errors of chunking, the chunk index, the chunk-size codec, zstd and the pipeline.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// A chunk size of 0 was given; `chunk.size` must be at least 1 byte.
    #[error("invalid chunk size 0: the original chunk size must be at least 1 byte")]
    ZeroChunkSize,

    /// The number of transformed chunk sizes does not match `ceil(original_file_size /
    /// original_chunk_size)` (docs/object-format.md "Manifest", "`chunkIndex`").
    #[error(
        "chunk index has {actual} transformed chunk sizes, but an original file of {original_file_size} bytes in chunks of {original_chunk_size} bytes has {expected} chunks"
    )]
    ChunkCountMismatch {
        /// Number of chunks implied by the original file size and chunk size.
        expected: u64,
        /// Number of transformed sizes given.
        actual: u64,
        /// Original file size in bytes.
        original_file_size: u64,
        /// Original chunk size in bytes.
        original_chunk_size: u32,
    },

    /// The chunk index describes more bytes than fit in a `u64`, or more chunks than can be
    /// held in memory on this platform.
    #[error("chunk index too large: {0}")]
    IndexTooLarge(String),

    /// An original chunk handed to [`crate::ChunkIndexBuilder`] does not have the length the
    /// chunking rule requires (every chunk `chunk.size` bytes except the last, none empty).
    /// `expected` 0 means no chunk may follow the short last chunk.
    #[error("chunk {index}: original length {actual} bytes, expected {expected} bytes")]
    ChunkLength {
        /// Zero-based chunk number.
        index: u64,
        /// Required original length in bytes.
        expected: u64,
        /// Length that was given, in bytes.
        actual: u64,
    },

    /// A fixed chunk index was requested but the transformed chunk sizes differ.
    #[error(
        "chunk {index}: transformed size {actual} bytes differs from the expected {expected} bytes, so a fixed chunk index cannot describe this segment"
    )]
    NotFixedSize {
        /// Zero-based chunk number of the first chunk that differs.
        index: u64,
        /// Expected stored size of a full chunk in bytes.
        expected: u32,
        /// Transformed size of chunk `index` in bytes.
        actual: u32,
    },

    /// A chunk size is larger than `i32::MAX`, which the format's chunk-size codec (Java
    /// `int`) cannot store.
    #[error("chunk size {value} at position {position} exceeds i32::MAX and cannot be encoded")]
    SizeTooLarge {
        /// Zero-based position in the list of sizes.
        position: usize,
        /// The offending size in bytes.
        value: u64,
    },

    /// The chunk-size codec bytes (docs/object-format.md "`transformedChunks`: chunk-size
    /// codec") are malformed.
    #[error("malformed chunk-size codec bytes: {0}")]
    MalformedSizes(String),

    /// The manifest's `transformedChunks` string is not valid base64 or not an acceptable
    /// zstd frame.
    #[error("malformed transformedChunks manifest string: {0}")]
    MalformedManifestString(String),

    /// The zstd compression level is outside the range the linked zstd library supports.
    #[error("zstd compression level {level} is outside the supported range {min}..={max}")]
    InvalidLevel {
        /// The level given.
        level: i32,
        /// Lowest supported level.
        min: i32,
        /// Highest supported level.
        max: i32,
    },

    /// zstd compression failed (this is not expected with valid parameters).
    #[error("zstd compression of {len} bytes failed: {source}")]
    Compress {
        /// Input length in bytes.
        len: usize,
        /// The zstd error.
        #[source]
        source: std::io::Error,
    },

    /// A stored chunk is not the zstd frame it must be: bad frame, missing or wrong content
    /// size, trailing bytes, or decompressed length different from the expected one.
    #[error(
        "zstd chunk of {stored_len} stored bytes (expected {expected_len} original bytes): {reason}"
    )]
    Decompress {
        /// Length of the stored (compressed) chunk in bytes.
        stored_len: usize,
        /// Original length the chunk index promises, in bytes.
        expected_len: usize,
        /// What is wrong with the frame.
        reason: String,
    },

    /// Another error, attributed to one chunk of a segment.
    #[error("chunk {index}: {source}")]
    Chunk {
        /// Zero-based chunk number.
        index: u64,
        /// What went wrong with it.
        #[source]
        source: Box<CodecError>,
    },

    /// A transform task of the pipeline panicked or was cancelled by runtime shutdown.
    #[error(transparent)]
    Pipeline(#[from] crate::pipeline::PipelineError),
}

impl CodecError {
    /// Wraps this error as [`CodecError::Chunk`] naming chunk `index` (zero-based), unless
    /// it already names a chunk.
    pub fn in_chunk(self, index: u64) -> CodecError {
        match self {
            CodecError::Chunk { .. } | CodecError::ChunkLength { .. } => self,
            other => CodecError::Chunk {
                index,
                source: Box::new(other),
            },
        }
    }
}
