//! [`ChunkCipher`]: AES-256-GCM encryption of one chunk (docs/object-format.md "Encryption
//! (envelope)": a new random 12-byte IV for every chunk, a 128-bit tag, the segment's AAD;
//! stored as `IV(12) || ciphertext(n) || tag(16)`).
//!
//! Input comes from the transform pipeline (an original or zstd-compressed chunk of a
//! `.log` segment, or one whole index of `.indexes`); output goes to the object store.
//! Memory: one output buffer of `n + 28` bytes per call; nothing is kept between calls.
//!
//! AES-256-GCM is AWS-LC's (aws-lc-rs, already linked by the cloud SDKs' TLS): its
//! AES-NI/VAES + (V)PCLMULQDQ assembly runs at several GB/s per core, against about
//! 0.4 GB/s for the pure-Rust `aes-gcm` 0.10 on the same CPU (docs/benchmarks.md), which
//! capped every encrypted copy and fetch.

use std::sync::Arc;

use aws_lc_rs::aead::{self, AES_256_GCM, LessSafeKey, Nonce, UnboundKey};
use zeroize::Zeroize;

use crate::{Aad, CryptoError, DataKey};

/// IV (nonce) length in bytes, stored first in every encrypted chunk.
pub const IV_LEN: usize = 12;
/// GCM tag length in bytes, stored last in every encrypted chunk.
pub const TAG_LEN: usize = 16;
/// Bytes added to each chunk by encryption: IV (12) + tag (16) = 28.
pub const ENCRYPTION_OVERHEAD: usize = IV_LEN + TAG_LEN;

/// Encrypts and decrypts chunks of one segment with its [`DataKey`] and [`Aad`].
///
/// Cheap to clone and `Send + Sync`, so a pipeline can share it across worker threads.
/// The AES key schedule lives in AWS-LC, which wipes it when the last clone is dropped
/// (`EVP_AEAD_CTX_cleanup`); `Debug` shows no key bytes.
#[derive(Clone)]
pub struct ChunkCipher {
    aead: Arc<LessSafeKey>,
    aad: Aad,
}

impl ChunkCipher {
    /// A cipher for one segment.
    pub fn new(key: &DataKey, aad: &Aad) -> Self {
        // A DataKey is always 32 bytes, the AES-256 key length: this cannot fail.
        let unbound = match UnboundKey::new(&AES_256_GCM, key.expose_secret()) {
            Ok(k) => k,
            Err(_) => unreachable!("a DataKey is 32 bytes, the AES-256-GCM key length"),
        };
        ChunkCipher {
            aead: Arc::new(LessSafeKey::new(unbound)),
            aad: *aad,
        }
    }

    /// Encrypts one chunk: returns `IV(12) || ciphertext || tag(16)`, exactly
    /// `plain.len() + 28` bytes, with a fresh IV from the OS RNG.
    ///
    /// # Errors
    /// [`CryptoError::Rng`] if the OS RNG fails; [`CryptoError::Encrypt`] if `plain` is
    /// larger than AES-GCM allows (about 64 GiB).
    pub fn encrypt(&self, plain: &[u8]) -> Result<Vec<u8>, CryptoError> {
        let mut buf = Vec::with_capacity(plain.len() + ENCRYPTION_OVERHEAD);
        buf.resize(IV_LEN, 0);
        buf.extend_from_slice(plain);
        self.encrypt_in_place(buf)
    }

    /// As [`encrypt`](Self::encrypt) without copying the plaintext: `buf` is
    /// `[IV_LEN bytes of room] || plain`; the IV is written into the room, `plain` is
    /// encrypted where it is and the tag appended, giving `IV(12) || ciphertext || tag(16)`
    /// in the same allocation (it grows only if its capacity is under
    /// `buf.len() + TAG_LEN`). Lets a producer read or compress a chunk straight into the
    /// buffer that is stored.
    ///
    /// # Errors
    /// [`CryptoError::NoIvRoom`] if `buf` is shorter than [`IV_LEN`];
    /// [`CryptoError::Encrypt`] if the plaintext is larger than AES-GCM allows; [`CryptoError::Rng`] if the OS RNG fails. On error the
    /// buffer is dropped zeroized (it may hold plaintext).
    pub fn encrypt_in_place(&self, mut buf: Vec<u8>) -> Result<Vec<u8>, CryptoError> {
        let len = buf.len().saturating_sub(IV_LEN);
        let fail = |mut buf: Vec<u8>, e: CryptoError| {
            buf.zeroize();
            Err(e)
        };
        if buf.len() < IV_LEN {
            let len = buf.len();
            return fail(buf, CryptoError::NoIvRoom { len });
        }
        let (iv, body) = buf.split_at_mut(IV_LEN);
        if let Err(source) = getrandom::fill(iv) {
            return fail(
                buf,
                CryptoError::Rng {
                    what: "chunk IV",
                    source,
                },
            );
        }
        let sealed = Nonce::try_assume_unique_for_key(iv).and_then(|nonce| {
            self.aead
                .seal_in_place_separate_tag(nonce, aead::Aad::from(self.aad.as_bytes()), body)
        });
        match sealed {
            Ok(tag) => {
                buf.extend_from_slice(tag.as_ref());
                Ok(buf)
            }
            Err(_) => fail(buf, CryptoError::Encrypt { len }),
        }
    }

    /// Decrypts one stored chunk `IV(12) || ciphertext || tag(16)` and returns the
    /// plaintext (`stored.len() - 28` bytes) only if the GCM tag verifies.
    ///
    /// `chunk_index` (0-based) is used only to name the chunk in errors.
    ///
    /// # Errors
    /// [`CryptoError::ChunkTooShort`] if `stored` is under 28 bytes;
    /// [`CryptoError::Authentication`] if any byte was changed, the chunk was truncated
    /// or extended, or the key or AAD is wrong. No plaintext is ever returned on error
    /// (the scratch buffer is zeroized).
    pub fn decrypt(&self, chunk_index: u64, stored: &[u8]) -> Result<Vec<u8>, CryptoError> {
        if stored.len() < ENCRYPTION_OVERHEAD {
            return Err(CryptoError::ChunkTooShort {
                chunk: chunk_index,
                len: stored.len(),
            });
        }
        let (iv, rest) = stored.split_at(IV_LEN);
        // ciphertext || tag, opened in place; the plaintext is the first len - 16 bytes.
        let mut buf = rest.to_vec();
        let n = self.open(chunk_index, iv, &mut buf, stored.len())?;
        buf.truncate(n);
        Ok(buf)
    }

    /// As [`ChunkCipher::decrypt`], in place: `stored` is `IV(12) || ciphertext || tag(16)`
    /// on entry; on success it holds the plaintext at the returned range (`12..len - 16`),
    /// with no copy and no allocation. For a stored chunk the caller owns (a buffer the read
    /// path assembled), so decrypting a 4 MiB chunk does not first copy it.
    ///
    /// # Errors
    /// As [`ChunkCipher::decrypt`]; on error `stored` is zeroized (it may hold
    /// unauthenticated plaintext).
    pub fn decrypt_in_place(
        &self,
        chunk_index: u64,
        stored: &mut [u8],
    ) -> Result<std::ops::Range<usize>, CryptoError> {
        let len = stored.len();
        if len < ENCRYPTION_OVERHEAD {
            return Err(CryptoError::ChunkTooShort {
                chunk: chunk_index,
                len,
            });
        }
        let (iv, rest) = stored.split_at_mut(IV_LEN);
        let n = self.open(chunk_index, iv, rest, len)?;
        Ok(IV_LEN..IV_LEN + n)
    }

    /// Opens `in_out` (`ciphertext || tag`) in place with the nonce `iv`; returns the
    /// plaintext length (its first bytes). On failure `in_out` is zeroized: never hand out
    /// (or leave behind) unauthenticated bytes. `stored_len` only names the chunk's size in
    /// the error.
    fn open(
        &self,
        chunk_index: u64,
        iv: &[u8],
        in_out: &mut [u8],
        stored_len: usize,
    ) -> Result<usize, CryptoError> {
        let fail = || CryptoError::Authentication {
            chunk: chunk_index,
            len: stored_len,
        };
        let nonce = Nonce::try_assume_unique_for_key(iv).map_err(|_| fail())?;
        match self
            .aead
            .open_in_place(nonce, aead::Aad::from(self.aad.as_bytes()), in_out)
        {
            Ok(plain) => Ok(plain.len()),
            Err(_) => {
                in_out.zeroize();
                Err(fail())
            }
        }
    }
}

impl std::fmt::Debug for ChunkCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkCipher")
            .field("key", &"<redacted>")
            .field("aad", &self.aad)
            .finish()
    }
}
