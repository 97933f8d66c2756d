//! Per-segment secrets: the data key ([`DataKey`], AES-256 DEK) and the AAD ([`Aad`]).
//!
//! Both come from the OS RNG (docs/object-format.md "Encryption (envelope)": each segment
//! gets a new 256-bit AES data key (DEK) and a new 32-byte AAD). The DEK goes to
//! [`crate::ChunkCipher`] and, wrapped by [`crate::KeyRing`], into the manifest's
//! `encryption.dataKey`; the AAD is stored in the clear as `encryption.aad` (base64).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::CryptoError;

/// DEK length in bytes (AES-256).
pub const DATA_KEY_LEN: usize = 32;
/// AAD length in bytes.
pub const AAD_LEN: usize = 32;

/// A 256-bit AES data key (DEK), one per segment.
///
/// Zeroized on drop; `Debug` prints `DataKey(<redacted>)`. Not `Clone` on purpose:
/// pass it by reference.
#[derive(Zeroize, ZeroizeOnDrop)]
pub struct DataKey([u8; DATA_KEY_LEN]);

impl DataKey {
    /// A fresh random key from the OS RNG.
    ///
    /// # Errors
    /// [`CryptoError::Rng`] if the OS RNG fails.
    pub fn generate() -> Result<Self, CryptoError> {
        let mut key = DataKey([0u8; DATA_KEY_LEN]);
        getrandom::fill(&mut key.0).map_err(|source| CryptoError::Rng {
            what: "data key",
            source,
        })?;
        Ok(key)
    }

    /// A key from raw bytes (e.g. an unwrapped DEK). The caller should zeroize its copy.
    ///
    /// # Errors
    /// [`CryptoError::InvalidLength`] unless `bytes` is exactly 32 bytes long.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, CryptoError> {
        let arr: [u8; DATA_KEY_LEN] = bytes.try_into().map_err(|_| CryptoError::InvalidLength {
            what: "data key",
            reason: format!("expected {DATA_KEY_LEN} bytes, got {}", bytes.len()),
        })?;
        Ok(DataKey(arr))
    }

    /// The raw key bytes. Handle with care: never log or persist them unwrapped.
    pub fn expose_secret(&self) -> &[u8; DATA_KEY_LEN] {
        &self.0
    }
}

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DataKey(<redacted>)")
    }
}

/// The 32-byte additional authenticated data of a segment, given to AES-GCM for every
/// chunk of the segment's `.log` and `.indexes` objects.
///
/// Not secret (it is stored in the manifest as base64), so `Debug` shows it as base64.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Aad([u8; AAD_LEN]);

impl Aad {
    /// A fresh random AAD from the OS RNG.
    ///
    /// # Errors
    /// [`CryptoError::Rng`] if the OS RNG fails.
    pub fn generate() -> Result<Self, CryptoError> {
        let mut aad = [0u8; AAD_LEN];
        getrandom::fill(&mut aad).map_err(|source| CryptoError::Rng {
            what: "AAD",
            source,
        })?;
        Ok(Aad(aad))
    }

    /// An AAD from raw bytes.
    ///
    /// # Errors
    /// [`CryptoError::InvalidLength`] unless `bytes` is exactly 32 bytes long.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, CryptoError> {
        let arr: [u8; AAD_LEN] = bytes.try_into().map_err(|_| CryptoError::InvalidLength {
            what: "AAD",
            reason: format!("expected {AAD_LEN} bytes, got {}", bytes.len()),
        })?;
        Ok(Aad(arr))
    }

    /// The 32 AAD bytes.
    pub fn as_bytes(&self) -> &[u8; AAD_LEN] {
        &self.0
    }

    /// The manifest form `encryption.aad`: base64, standard alphabet, with padding.
    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.0)
    }

    /// Parses the manifest form `encryption.aad` (base64 standard alphabet with padding).
    ///
    /// # Errors
    /// [`CryptoError::InvalidLength`] if it is not valid base64 or not 32 bytes.
    pub fn from_base64(s: &str) -> Result<Self, CryptoError> {
        let bytes = STANDARD.decode(s).map_err(|e| CryptoError::InvalidLength {
            what: "AAD",
            reason: format!("encryption.aad is not valid base64: {e}"),
        })?;
        Aad::from_bytes(&bytes)
    }
}

impl std::fmt::Debug for Aad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Aad({})", self.to_base64())
    }
}
