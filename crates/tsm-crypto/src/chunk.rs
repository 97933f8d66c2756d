//! [`ChunkCipher`]: AES-256-GCM encryption of one chunk (format spec "Encryption
//! (envelope)": "AES-256-GCM, a fresh random 12-byte IV per chunk, 128-bit tag, the
//! segment's AAD. Stored as `IV(12) || ciphertext(n) || tag(16)`").
//!
//! Input comes from the transform pipeline (an original or zstd-compressed chunk of a
//! `.log` segment, or one whole index of `.indexes`); output goes to the object store.
//! Memory: one output buffer of `n + 28` bytes per call; nothing is kept between calls.

use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes256Gcm, KeyInit, Nonce, Tag};
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
/// The AES key schedule is zeroized on drop; `Debug` shows no key bytes.
#[derive(Clone)]
pub struct ChunkCipher {
    aead: Aes256Gcm,
    aad: Aad,
}

impl ChunkCipher {
    /// A cipher for one segment.
    pub fn new(key: &DataKey, aad: &Aad) -> Self {
        ChunkCipher {
            aead: Aes256Gcm::new(key.expose_secret().into()),
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
        let mut out = Vec::with_capacity(plain.len() + ENCRYPTION_OVERHEAD);
        out.resize(IV_LEN, 0);
        getrandom::fill(&mut out[..IV_LEN]).map_err(|source| CryptoError::Rng {
            what: "chunk IV",
            source,
        })?;
        out.extend_from_slice(plain);
        let (iv, body) = out.split_at_mut(IV_LEN);
        let tag = self
            .aead
            .encrypt_in_place_detached(Nonce::from_slice(iv), self.aad.as_bytes(), body)
            .map_err(|_| CryptoError::Encrypt { len: plain.len() })?;
        out.extend_from_slice(&tag);
        Ok(out)
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
        let (ciphertext, tag) = rest.split_at(rest.len() - TAG_LEN);
        let mut buf = ciphertext.to_vec();
        match self.aead.decrypt_in_place_detached(
            Nonce::from_slice(iv),
            self.aad.as_bytes(),
            &mut buf,
            Tag::from_slice(tag),
        ) {
            Ok(()) => Ok(buf),
            Err(_) => {
                // aes-gcm 0.10 decrypts before comparing tags: wipe the unauthenticated bytes.
                buf.zeroize();
                Err(CryptoError::Authentication {
                    chunk: chunk_index,
                    len: stored.len(),
                })
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
