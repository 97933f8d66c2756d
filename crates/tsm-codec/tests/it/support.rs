//! The four transforms of the format (none, zstd, AES, zstd+AES) applied chunk by chunk, the
//! way the engine composes tsm-codec and tsm-crypto, plus ranged reads through the index.

use tsm_codec::{ChunkIndex, ChunkIndexBuilder, CodecError, compression};
use tsm_crypto::{Aad, ChunkCipher, DataKey, ENCRYPTION_OVERHEAD};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    None,
    Zstd,
    Aes,
    ZstdAes,
}

pub(crate) const MODES: [Mode; 4] = [Mode::None, Mode::Zstd, Mode::Aes, Mode::ZstdAes];

impl Mode {
    pub(crate) fn compress(self) -> bool {
        matches!(self, Mode::Zstd | Mode::ZstdAes)
    }
    pub(crate) fn encrypt(self) -> bool {
        matches!(self, Mode::Aes | Mode::ZstdAes)
    }
}

/// Per-segment transform state: mode, zstd level, and a fresh DEK + AAD.
#[derive(Clone)]
pub(crate) struct Transform {
    pub mode: Mode,
    pub level: i32,
    cipher: ChunkCipher,
}

/// Test error; its fields are read through `Debug` in assertion messages.
#[derive(Debug)]
#[allow(dead_code)]
pub(crate) enum Error {
    Codec(CodecError),
    Crypto(String),
}

impl From<CodecError> for Error {
    fn from(e: CodecError) -> Self {
        Error::Codec(e)
    }
}

impl From<tsm_codec::PipelineError> for Error {
    fn from(e: tsm_codec::PipelineError) -> Self {
        Error::Codec(e.into())
    }
}

impl Transform {
    pub(crate) fn new(mode: Mode) -> Self {
        let key = DataKey::generate().expect("OS RNG");
        let aad = Aad::generate().expect("OS RNG");
        Transform {
            mode,
            level: 3,
            cipher: ChunkCipher::new(&key, &aad),
        }
    }

    /// Write direction: compress (optional) then encrypt (optional).
    pub(crate) fn forward(&self, chunk: &[u8]) -> Result<Vec<u8>, Error> {
        let mut data = if self.mode.compress() {
            compression::compress_chunk(chunk, self.level)?
        } else {
            chunk.to_vec()
        };
        if self.mode.encrypt() {
            data = self
                .cipher
                .encrypt(&data)
                .map_err(|e| Error::Crypto(e.to_string()))?;
        }
        Ok(data)
    }

    /// Read direction: decrypt (optional) then decompress (optional) to `original_len`.
    pub(crate) fn reverse(
        &self,
        index: u64,
        stored: &[u8],
        original_len: usize,
    ) -> Result<Vec<u8>, Error> {
        let data = if self.mode.encrypt() {
            self.cipher
                .decrypt(index, stored)
                .map_err(|e| Error::Crypto(e.to_string()))?
        } else {
            stored.to_vec()
        };
        if self.mode.compress() {
            Ok(
                compression::decompress_chunk(&data, original_len)
                    .map_err(|e| e.in_chunk(index))?,
            )
        } else {
            Ok(data)
        }
    }

    /// The index type the format prescribes for this mode, from the builder.
    pub(crate) fn build_index(&self, builder: ChunkIndexBuilder, chunk_size: u32) -> ChunkIndex {
        match self.mode {
            Mode::None => builder
                .build_fixed(chunk_size)
                .expect("fixed, no transform"),
            Mode::Aes => builder
                .build_fixed(chunk_size + ENCRYPTION_OVERHEAD as u32)
                .expect("fixed, encryption only"),
            Mode::Zstd | Mode::ZstdAes => builder.build_variable().expect("variable"),
        }
    }
}

/// Transforms `data` in chunks of `chunk_size`; returns the stored object and its index,
/// after a trip through the manifest representation (fixed fields or transformedChunks).
pub(crate) fn write(t: &Transform, data: &[u8], chunk_size: u32) -> (Vec<u8>, ChunkIndex) {
    let mut builder = ChunkIndexBuilder::new(chunk_size).expect("chunk size >= 1");
    let mut stored = Vec::new();
    for chunk in data.chunks(chunk_size as usize) {
        let out = t.forward(chunk).expect("forward transform");
        builder
            .push(chunk.len() as u64, out.len() as u32)
            .expect("chunking rule");
        stored.extend_from_slice(&out);
    }
    let index = t.build_index(builder, chunk_size);
    (stored, manifest_trip(&index))
}

/// Rebuilds `index` from what a manifest stores, and checks it is the same.
pub(crate) fn manifest_trip(index: &ChunkIndex) -> ChunkIndex {
    let again = match index.fixed_sizes() {
        Some(f) => ChunkIndex::fixed(
            index.original_chunk_size(),
            index.original_file_size(),
            f.transformed_chunk_size,
            f.final_transformed_chunk_size,
        ),
        None => {
            let s = index
                .transformed_chunks_manifest_string(3)
                .expect("encode sizes");
            ChunkIndex::variable_from_manifest_string(
                index.original_chunk_size(),
                index.original_file_size(),
                &s,
            )
        }
    }
    .expect("index from manifest fields");
    assert_eq!(&again, index);
    again
}

/// Reads original bytes `start..=end` back from the stored object, as the engine does:
/// one contiguous stored range for the covering chunks, then chunk by chunk.
pub(crate) fn read_range(
    t: &Transform,
    stored: &[u8],
    index: &ChunkIndex,
    start: u64,
    end: u64,
) -> Vec<u8> {
    let chunks = index
        .chunks_for_range(start, end)
        .expect("range inside the segment");
    let stored_range = index
        .transformed_range(chunks.clone())
        .expect("chunks exist");
    let fetched = &stored[stored_range.start as usize..stored_range.end as usize];
    let mut out = Vec::new();
    let mut first_original = None;
    for span in index.spans(chunks) {
        first_original.get_or_insert(span.original_start);
        let rel = (span.transformed_start - stored_range.start) as usize;
        let piece = &fetched[rel..rel + span.transformed_len as usize];
        let original = t
            .reverse(span.index, piece, span.original_len as usize)
            .expect("reverse transform");
        assert_eq!(
            original.len() as u64,
            span.original_len,
            "chunk {}",
            span.index
        );
        out.extend_from_slice(&original);
    }
    let first = first_original.expect("at least one chunk");
    out[(start - first) as usize..=(end - first) as usize].to_vec()
}
