//! The per-segment transform: tsm-codec's zstd and tsm-crypto's AES-256-GCM composed in the
//! order of docs/object-format.md "`.log`" (write: compress, then encrypt; read: decrypt, then
//! decompress) and "`.indexes`" (each index one chunk, encrypted only, never compressed;
//! an empty index stays 0 bytes).
//!
//! Input comes from the engine (original chunks on copy, stored chunks fetched from the
//! backend on reads); output goes back to it. Memory: each call holds its input and output
//! chunk only. Errors are [`TransformError`]s naming the chunk (or index) number; the engine
//! adds the object key and byte range.

use bytes::Bytes;
use tsm_codec::{CodecError, compression};
use tsm_crypto::{
    Aad, ChunkCipher, CryptoError, DataKey, ENCRYPTION_OVERHEAD, IV_LEN, KeyRing, SegmentMac,
    TAG_LEN,
};

use crate::IndexType;
use crate::manifest::EncryptionJson;

/// Why a chunk or index could not be transformed or restored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransformError {
    /// zstd failed (corrupt frame, wrong content size).
    #[error("chunk {chunk}: {source}")]
    Codec {
        /// Chunk number (0-based) in `.log`, or the index's position in `.indexes`.
        chunk: u64,
        /// The codec error.
        #[source]
        source: CodecError,
    },
    /// AES-GCM failed (authentication, truncation) or a key could not be made.
    #[error(transparent)]
    Crypto(#[from] CryptoError),
    /// A restored chunk does not have the length the manifest says.
    #[error("chunk {chunk}: restored {actual} bytes, the manifest says {expected}")]
    Length {
        /// Chunk number (0-based).
        chunk: u64,
        /// Original length from the chunk index (bytes).
        expected: u64,
        /// Restored length (bytes).
        actual: u64,
    },
}

/// Where [`SegmentTransform::encode_chunk_with`] gets its buffers and how a stored chunk
/// becomes [`Bytes`] (so a copy can reuse its buffers from chunk to chunk).
pub trait ChunkBuffers {
    /// A buffer of exactly `len` bytes (contents unspecified: the caller overwrites them)
    /// with room for at least [`TAG_LEN`] more, or for a zstd frame of a chunk after `len`
    /// bytes of room when `len` is at most [`IV_LEN`].
    fn take(&self, len: usize) -> Vec<u8>;
    /// A buffer the transform is done with.
    fn give_back(&self, buf: Vec<u8>);
    /// A stored chunk, handed to the backend.
    fn stored_bytes(&self, buf: Vec<u8>) -> Bytes;
}

/// [`ChunkBuffers`] that allocate every buffer afresh, sized for chunks of up to
/// `chunk_size` bytes.
#[derive(Debug, Clone, Copy)]
pub struct FreshBuffers {
    /// The largest original chunk (bytes).
    pub chunk_size: usize,
}

impl ChunkBuffers for FreshBuffers {
    fn take(&self, len: usize) -> Vec<u8> {
        let capacity = if len <= IV_LEN {
            len + compression::compress_bound(self.chunk_size) + TAG_LEN
        } else {
            len + TAG_LEN
        };
        // Zeroed allocation (fresh pages need no memset), the extra room kept.
        let mut buf = vec![0u8; capacity];
        buf.truncate(len);
        buf
    }

    fn give_back(&self, _buf: Vec<u8>) {}

    fn stored_bytes(&self, buf: Vec<u8>) -> Bytes {
        Bytes::from(buf)
    }
}

/// What an encrypted segment's data key gives: the chunk cipher and the integrity MAC key
/// (`manifest::integrity`).
#[derive(Debug, Clone)]
pub struct SegmentCrypto {
    /// AES-256-GCM of the chunks and indexes.
    pub cipher: ChunkCipher,
    /// The key of the segment's integrity MAC.
    pub mac: SegmentMac,
}

impl SegmentCrypto {
    /// Both, from the segment's data key and AAD.
    pub fn new(key: &DataKey, aad: &Aad) -> Self {
        Self {
            cipher: ChunkCipher::new(key, aad),
            mac: SegmentMac::new(key),
        }
    }
}

/// How one segment's chunks are transformed: optional zstd (level), optional AES cipher
/// (with the segment's MAC key).
#[derive(Debug)]
pub struct SegmentTransform {
    compression_level: Option<i32>,
    cipher: Option<ChunkCipher>,
    mac: Option<SegmentMac>,
}

impl SegmentTransform {
    /// `compression_level`: `Some(level)` compresses every `.log` chunk with zstd at that
    /// level (3 in the Java plugin); `crypto`: `Some` encrypts every chunk and index.
    pub fn new(compression_level: Option<i32>, crypto: Option<SegmentCrypto>) -> Self {
        let (cipher, mac) = match crypto {
            Some(c) => (Some(c.cipher), Some(c.mac)),
            None => (None, None),
        };
        Self {
            compression_level,
            cipher,
            mac,
        }
    }

    /// The segment's integrity MAC key when it is encrypted.
    pub fn mac(&self) -> Option<&SegmentMac> {
        self.mac.as_ref()
    }

    /// No transform at all: stored bytes equal original bytes.
    pub fn is_identity(&self) -> bool {
        self.compression_level.is_none() && self.cipher.is_none()
    }

    /// True when `.log` chunks are zstd frames (manifest `compression`).
    pub fn is_compressed(&self) -> bool {
        self.compression_level.is_some()
    }

    /// True when chunks and indexes are encrypted.
    pub fn is_encrypted(&self) -> bool {
        self.cipher.is_some()
    }

    /// Stored size of a chunk of `original_len` bytes when it is predictable (no
    /// compression): `original_len`, plus [`ENCRYPTION_OVERHEAD`] when encrypted.
    pub fn fixed_stored_len(&self, original_len: u64) -> Option<u64> {
        if self.is_compressed() {
            None
        } else if self.is_encrypted() {
            Some(original_len + ENCRYPTION_OVERHEAD as u64)
        } else {
            Some(original_len)
        }
    }

    /// Stored size in `.indexes` of an index of `original_len` bytes: unchanged, or plus
    /// [`ENCRYPTION_OVERHEAD`] when encrypted; an empty index stays empty.
    pub fn index_stored_len(&self, original_len: u64) -> u64 {
        if self.is_encrypted() && original_len > 0 {
            original_len + ENCRYPTION_OVERHEAD as u64
        } else {
            original_len
        }
    }

    /// Original `.log` chunk number `chunk` -> stored chunk (compress, then encrypt).
    pub fn encode_chunk(&self, chunk: u64, original: Bytes) -> Result<Bytes, TransformError> {
        let compressed = match self.compression_level {
            Some(level) => Bytes::from(
                compression::compress_chunk(&original, level)
                    .map_err(|source| TransformError::Codec { chunk, source })?,
            ),
            None => original,
        };
        match &self.cipher {
            Some(c) => Ok(Bytes::from(c.encrypt(&compressed)?)),
            None => Ok(compressed),
        }
    }

    /// As [`encode_chunk`](Self::encode_chunk) for a chunk of `len` original bytes that
    /// `read` puts into the slice it is given (exactly `len` bytes, e.g. a positional read
    /// of the segment file), with as few copies as the transform allows and every buffer
    /// from `buffers`: encrypted without compression, the chunk is read into the stored
    /// buffer after the IV's room and encrypted in place; compressed, the frame is written
    /// into a second buffer (after the IV's room when encrypted, then encrypted in place);
    /// plain, the read buffer is stored as is. Same output as `encode_chunk` (the format
    /// does not change).
    ///
    /// # Errors
    /// `read`'s error as is; the transform's as `E::from(TransformError)`.
    pub fn encode_chunk_with<E>(
        &self,
        chunk: u64,
        len: usize,
        buffers: &impl ChunkBuffers,
        read: impl FnOnce(&mut [u8]) -> Result<(), E>,
    ) -> Result<Bytes, E>
    where
        E: From<TransformError>,
    {
        let seal = |c: &ChunkCipher, buf: Vec<u8>| {
            c.encrypt_in_place(buf)
                .map_err(|e| E::from(TransformError::from(e)))
        };
        let Some(level) = self.compression_level else {
            return match &self.cipher {
                Some(c) => {
                    let mut buf = buffers.take(IV_LEN + len);
                    read(&mut buf[IV_LEN..])?;
                    Ok(buffers.stored_bytes(seal(c, buf)?))
                }
                None => {
                    let mut buf = buffers.take(len);
                    read(&mut buf)?;
                    Ok(buffers.stored_bytes(buf))
                }
            };
        };
        let mut original = buffers.take(len);
        read(&mut original)?;
        let room = if self.cipher.is_some() { IV_LEN } else { 0 };
        let mut out = buffers.take(room);
        compression::compress_chunk_into(&original, level, &mut out)
            .map_err(|source| E::from(TransformError::Codec { chunk, source }))?;
        buffers.give_back(original);
        match &self.cipher {
            Some(c) => Ok(buffers.stored_bytes(seal(c, out)?)),
            None => Ok(buffers.stored_bytes(out)),
        }
    }

    /// Stored `.log` chunk number `chunk` -> original bytes (decrypt, then decompress),
    /// checked to be exactly `original_len` bytes.
    pub fn decode_chunk(
        &self,
        chunk: u64,
        stored: Bytes,
        original_len: u64,
    ) -> Result<Bytes, TransformError> {
        let plain = match &self.cipher {
            // A chunk the read path assembled is this call's alone: decrypted where it
            // lies (a 4 MiB copy and allocation less per chunk); a shared one is copied.
            Some(c) => match stored.try_into_mut() {
                Ok(mut own) => {
                    let plain = c.decrypt_in_place(chunk, &mut own)?;
                    own.freeze().slice(plain)
                }
                Err(shared) => Bytes::from(c.decrypt(chunk, &shared)?),
            },
            None => stored,
        };
        let out = if self.is_compressed() {
            let len = usize::try_from(original_len).map_err(|_| TransformError::Length {
                chunk,
                expected: original_len,
                actual: 0,
            })?;
            Bytes::from(
                compression::decompress_chunk(&plain, len)
                    .map_err(|source| TransformError::Codec { chunk, source })?,
            )
        } else {
            plain
        };
        if out.len() as u64 != original_len {
            return Err(TransformError::Length {
                chunk,
                expected: original_len,
                actual: out.len() as u64,
            });
        }
        Ok(out)
    }

    /// One index's bytes -> stored bytes in `.indexes` (encrypt only; empty stays empty).
    pub fn encode_index(&self, original: Bytes) -> Result<Bytes, TransformError> {
        match &self.cipher {
            Some(c) if !original.is_empty() => Ok(Bytes::from(c.encrypt(&original)?)),
            _ => Ok(original),
        }
    }

    /// Stored bytes of `index` -> the index bytes given at copy time.
    pub fn decode_index(&self, index: IndexType, stored: Bytes) -> Result<Bytes, TransformError> {
        match &self.cipher {
            Some(c) if !stored.is_empty() => {
                Ok(Bytes::from(c.decrypt(index_ordinal(index), &stored)?))
            }
            _ => Ok(stored),
        }
    }
}

/// The position of `index` in `.indexes` (0 = OFFSET ... 4 = TRANSACTION), used as the
/// "chunk" number in errors.
pub fn index_ordinal(index: IndexType) -> u64 {
    IndexType::ALL
        .iter()
        .position(|t| *t == index)
        .unwrap_or_default() as u64
}

/// A fresh data key and AAD for one segment, the DEK wrapped under the key ring's active
/// key pair: the cipher and MAC key for the chunks and the manifest's `encryption` object.
pub fn new_segment_encryption(
    ring: &KeyRing,
) -> Result<(SegmentCrypto, EncryptionJson), TransformError> {
    let key = DataKey::generate()?;
    let aad = Aad::generate()?;
    let data_key = ring.wrap(&key)?;
    Ok((
        SegmentCrypto::new(&key, &aad),
        EncryptionJson {
            data_key,
            aad: aad.to_base64(),
        },
    ))
}

/// The cipher and MAC key of a stored segment from its manifest's `encryption` object
/// (unwraps the DEK with the key pair named before `:`; an unknown id is an error naming
/// it).
pub fn segment_crypto(
    ring: &KeyRing,
    enc: &EncryptionJson,
) -> Result<SegmentCrypto, TransformError> {
    let key = ring.unwrap(&enc.data_key)?;
    let aad = Aad::from_base64(&enc.aad)?;
    Ok(SegmentCrypto::new(&key, &aad))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_each_combination() {
        let key = DataKey::generate().expect("dek");
        let aad = Aad::generate().expect("aad");
        let data = Bytes::from(vec![42u8; 1000]);
        for level in [None, Some(3)] {
            for enc in [false, true] {
                let t = SegmentTransform::new(level, enc.then(|| SegmentCrypto::new(&key, &aad)));
                let stored = t.encode_chunk(0, data.clone()).expect("encode");
                if let Some(n) = t.fixed_stored_len(1000) {
                    assert_eq!(stored.len() as u64, n);
                }
                let back = t.decode_chunk(0, stored.clone(), 1000).expect("decode");
                assert_eq!(back, data);
                assert!(t.decode_chunk(0, stored, 999).is_err());
                let idx = t.encode_index(Bytes::new()).expect("empty index");
                assert!(idx.is_empty());
            }
        }
    }

    #[test]
    fn encode_chunk_with_matches_encode_chunk() {
        let key = DataKey::generate().expect("dek");
        let aad = Aad::generate().expect("aad");
        let data: Vec<u8> = (0..50_000u32).map(|i| (i % 97) as u8).collect();
        for level in [None, Some(3)] {
            for enc in [false, true] {
                let t = SegmentTransform::new(level, enc.then(|| SegmentCrypto::new(&key, &aad)));
                let buffers = FreshBuffers { chunk_size: 50_000 };
                let stored = t
                    .encode_chunk_with::<TransformError>(4, data.len(), &buffers, |buf| {
                        buf.copy_from_slice(&data);
                        Ok(())
                    })
                    .expect("encode");
                let reference = t
                    .encode_chunk(4, Bytes::from(data.clone()))
                    .expect("encode");
                // Same length (zstd is deterministic; the IV differs) and same content back.
                assert_eq!(stored.len(), reference.len(), "{level:?} {enc}");
                if !enc {
                    assert_eq!(stored, reference);
                }
                let back = t
                    .decode_chunk(4, stored, data.len() as u64)
                    .expect("decode");
                assert_eq!(back, data);
            }
        }
        // The reader's error comes back as is.
        let t = SegmentTransform::new(Some(3), None);
        let e = t
            .encode_chunk_with(0, 10, &FreshBuffers { chunk_size: 10 }, |_| {
                Err(TransformError::Length {
                    chunk: 9,
                    expected: 1,
                    actual: 2,
                })
            })
            .unwrap_err();
        assert!(matches!(e, TransformError::Length { chunk: 9, .. }), "{e}");
    }

    #[test]
    fn tampered_chunk_names_the_chunk() {
        let key = DataKey::generate().expect("dek");
        let aad = Aad::generate().expect("aad");
        let t = SegmentTransform::new(Some(3), Some(SegmentCrypto::new(&key, &aad)));
        let stored = t
            .encode_chunk(7, Bytes::from_static(b"hello"))
            .expect("encode");
        let mut bad = stored.to_vec();
        bad[14] ^= 1;
        let e = t.decode_chunk(7, Bytes::from(bad), 5).unwrap_err();
        assert!(e.to_string().contains("chunk 7"), "{e}");
    }
}
