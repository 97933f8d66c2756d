//! # tsm-crypto: envelope encryption for tiered-storage objects
//!
//! Implements `docs/object-format.md` section **"Encryption (envelope)"**
//! and the `encryption` object of section **"Manifest"**, byte-compatible with Aiven's Java
//! tiered-storage plugin:
//!
//! - per segment, a fresh 256-bit AES data key ([`DataKey`]) and a 32-byte AAD ([`Aad`])
//!   from the OS RNG;
//! - every `.log` chunk and every index in `.indexes` encrypted with AES-256-GCM by
//!   [`ChunkCipher`], stored as `IV(12) || ciphertext(n) || tag(16)` with a fresh random IV
//!   ([`ENCRYPTION_OVERHEAD`] = 28 bytes per chunk); decryption returns bytes only after
//!   the tag verifies and errors name the chunk;
//! - the DEK wrapped by RSA-OAEP with SHA3-512 as both OAEP and MGF1 hash, empty label
//!   (Java/BouncyCastle: `RSA/NONE/OAEPWithSHA3-512AndMGF1Padding`), under the active key
//!   pair of a [`KeyRing`], stored as the manifest `encryption.dataKey`
//!   `"<keyPairId>:<base64>"` (standard alphabet, padded);
//! - [`SegmentMac`]: tsm's integrity MAC of an encrypted segment (HMAC-SHA256 under a key
//!   derived from the DEK with HKDF), which binds its chunks and indexes to the segment
//!   (tsm only: the Java plugin ignores the manifest field that holds it);
//! - key pairs loaded from PEM files (X.509 SubjectPublicKeyInfo public keys, PKCS#8 or
//!   PKCS#1 private keys); key-pair ids containing `:` are rejected.
//!
//! Secrets (DEK, private keys, PEM text) are zeroized on drop and never appear in
//! `Debug`, `Display` or errors. This crate does no I/O except reading key files in
//! [`KeyRing::from_files`], and holds at most one chunk per call in memory.
//!
//! ```
//! use tsm_crypto::{Aad, ChunkCipher, DataKey, ENCRYPTION_OVERHEAD};
//!
//! # fn main() -> Result<(), tsm_crypto::CryptoError> {
//! let (key, aad) = (DataKey::generate()?, Aad::generate()?); // one pair per segment
//! let cipher = ChunkCipher::new(&key, &aad);
//! let stored = cipher.encrypt(b"chunk bytes")?; // IV(12) || ciphertext || tag(16)
//! assert_eq!(stored.len(), 11 + ENCRYPTION_OVERHEAD);
//! assert_eq!(cipher.decrypt(0, &stored)?, b"chunk bytes");
//! // The manifest stores `aad.to_base64()` and `key_ring.wrap(&key)?`.
//! # Ok(())
//! # }
//! ```
//!
//! Interoperability with the JCE (`AES/GCM/NoPadding`) and BouncyCastle is checked by
//! `tests/java_interop.rs`, which runs a small Maven project in `interop/`, and with
//! OpenSSL by `tests/openssl_keys.rs`.

mod chunk;
mod data_key_string;
mod error;
mod keyring;
mod mac;
mod segment_secrets;

pub use chunk::{ChunkCipher, ENCRYPTION_OVERHEAD, IV_LEN, TAG_LEN};
pub use data_key_string::{format_data_key, parse_data_key, validate_key_pair_id};
pub use error::CryptoError;
pub use keyring::{KeyPair, KeyRing, MIN_MODULUS_BITS};
pub use mac::{MAC_LEN, MacInput, SegmentMac};
pub use segment_secrets::{AAD_LEN, Aad, DATA_KEY_LEN, DataKey};
