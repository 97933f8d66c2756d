//! [`CryptoError`]: every failure of this crate.
//!
//! Messages name the chunk, key-pair id, or key file involved, and never contain key
//! material (DEK bytes, private-key components, PEM text or decrypted bytes).

use std::path::PathBuf;

/// Errors of envelope encryption (docs/object-format.md "Encryption (envelope)").
///
/// No variant carries secret bytes: the DEK, private keys, PEM contents and any
/// (unauthenticated) plaintext are never part of an error or its `Display`/`Debug`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CryptoError {
    /// The OS random number generator failed (DEK, AAD or IV generation).
    #[error("OS random number generator failed while generating {what}: {source}")]
    Rng {
        /// What was being generated ("data key", "AAD", "chunk IV").
        what: &'static str,
        /// The getrandom error (an OS error code, no random bytes).
        source: getrandom::Error,
    },

    /// AES-GCM encryption failed (the plaintext exceeds the GCM limit of 2^36 - 32 bytes).
    #[error("encrypting chunk of {len} bytes failed: too large for AES-GCM")]
    Encrypt {
        /// Plaintext length in bytes.
        len: usize,
    },

    /// [`crate::ChunkCipher::encrypt_in_place`] was given a buffer without the 12 bytes of
    /// room for the IV in front of the plaintext (a caller's mistake, never the data's).
    #[error(
        "encrypting in place: the buffer has {len} bytes, under the 12 bytes of room for the IV"
    )]
    NoIvRoom {
        /// Buffer length in bytes.
        len: usize,
    },

    /// A stored chunk is shorter than IV(12) + tag(16) and cannot be an encrypted chunk.
    #[error(
        "chunk {chunk}: stored size {len} bytes is below the 28-byte minimum (IV 12 + tag 16); truncated?"
    )]
    ChunkTooShort {
        /// Chunk index (0-based) within the object.
        chunk: u64,
        /// Stored length in bytes.
        len: usize,
    },

    /// AES-GCM authentication failed: the chunk was modified or truncated, or the data
    /// key or AAD is not the one it was encrypted with. No plaintext is returned.
    #[error(
        "chunk {chunk}: AES-GCM authentication failed for {len} stored bytes \
         (corrupted or truncated chunk, or wrong data key / AAD)"
    )]
    Authentication {
        /// Chunk index (0-based) within the object.
        chunk: u64,
        /// Stored length in bytes.
        len: usize,
    },

    /// A key-pair id is empty or contains `:` (the manifest `dataKey` separator).
    #[error("invalid key-pair id {id:?}: {reason}")]
    InvalidKeyPairId {
        /// The offending id.
        id: String,
        /// Why it is invalid.
        reason: &'static str,
    },

    /// The same key-pair id was given twice when building a key ring.
    #[error("duplicate key-pair id {id:?} in key ring")]
    DuplicateKeyPairId {
        /// The repeated id.
        id: String,
    },

    /// A key-pair id is not on the key ring (when wrapping with it, choosing it as the
    /// active id, or unwrapping a manifest `dataKey` that names it).
    #[error("key-pair id {id:?} is not on the key ring (known ids: {known})")]
    UnknownKeyPairId {
        /// The id that was asked for.
        id: String,
        /// Comma-separated ids that are on the ring.
        known: String,
    },

    /// A key file could not be read.
    #[error("key pair {id:?}: cannot read {kind} key file {path}: {source}")]
    KeyFileRead {
        /// Key-pair id.
        id: String,
        /// "public" or "private".
        kind: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },

    /// A key could not be parsed or is unusable (wrong PEM type, encrypted PKCS#8,
    /// not RSA, modulus too small, public and private keys do not match).
    #[error("key pair {id:?}: invalid {kind} key ({source_name}): {reason}")]
    InvalidKey {
        /// Key-pair id.
        id: String,
        /// "public" or "private".
        kind: &'static str,
        /// Where the key came from: a file path, or "PEM string".
        source_name: String,
        /// What is wrong (never the key contents).
        reason: String,
    },

    /// A manifest `dataKey` string is not `<keyPairId>:<base64>`.
    #[error("malformed encryption.dataKey: {reason}")]
    MalformedDataKey {
        /// What is wrong (never the key bytes).
        reason: String,
    },

    /// RSA-OAEP wrapping of a DEK failed.
    #[error("wrapping data key with key pair {id:?} failed: {reason}")]
    Wrap {
        /// Key-pair id.
        id: String,
        /// The RSA error.
        reason: String,
    },

    /// RSA-OAEP unwrapping failed (wrong private key for this `dataKey`, corrupted wrapped
    /// key, or an unwrapped key that is not 32 bytes).
    #[error("unwrapping data key with key pair {id:?} failed: {reason}")]
    Unwrap {
        /// Key-pair id.
        id: String,
        /// What went wrong (never the key bytes).
        reason: String,
    },

    /// Raw bytes given as a DEK or AAD have the wrong length or encoding.
    #[error("invalid {what}: {reason}")]
    InvalidLength {
        /// "data key" or "AAD".
        what: &'static str,
        /// What is wrong (lengths only).
        reason: String,
    },

    /// A segment's integrity MAC does not match what was recorded at copy time: the
    /// manifest's fields, digests or the segment's identity were changed, or the objects
    /// belong to another segment.
    #[error("integrity MAC does not match")]
    MacMismatch,
}
