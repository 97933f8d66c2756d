//! [`KeyRing`]: RSA key pairs (KEKs) by id, wrapping and unwrapping per-segment DEKs
//! (docs/object-format.md "Encryption (envelope)": a DEK is wrapped with RSA-OAEP, SHA3-512
//! being both the OAEP hash and the MGF1 hash, with an empty label, under the active key
//! pair; the key-pair id before the `:` of `dataKey` picks the private key that unwraps it).
//!
//! Keys come from PEM files named by the `encryption.key.pairs.*` configuration: public
//! keys as X.509 SubjectPublicKeyInfo (`PUBLIC KEY`, also PKCS#1 `RSA PUBLIC KEY`), private
//! keys as PKCS#8 (`PRIVATE KEY`, also PKCS#1 `RSA PRIVATE KEY`). Encrypted PKCS#8 is not
//! supported. The PEM text is zeroized after parsing; private keys are zeroized on drop
//! (by the `rsa` crate) and never appear in `Debug` output or errors.

use std::collections::BTreeMap;
use std::path::Path;

use rsa::pkcs1::{DecodeRsaPrivateKey, DecodeRsaPublicKey};
use rsa::pkcs8::der::pem;
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey};
use rsa::traits::PublicKeyParts;
use rsa::{PrivateKey, PublicKey};
use sha3::Sha3_512;
use zeroize::Zeroizing;

use crate::data_key_string::{format_data_key, parse_data_key, validate_key_pair_id};
use crate::segment_secrets::DATA_KEY_LEN;
use crate::{CryptoError, DataKey};

/// Smallest accepted RSA modulus in bits. (RSA-OAEP with SHA3-512 cannot even carry a
/// 32-byte key below 1296 bits; 2048 is the practical minimum, docs/object-format.md
/// "Encryption (envelope)".)
pub const MIN_MODULUS_BITS: usize = 2048;

/// One RSA key pair (KEK) with its id.
pub struct KeyPair {
    id: String,
    public: PublicKey,
    private: PrivateKey,
}

impl KeyPair {
    /// A key pair from PEM text (see the module doc for accepted PEM types).
    ///
    /// # Errors
    /// [`CryptoError::InvalidKeyPairId`] for an empty id or one containing `:`;
    /// [`CryptoError::InvalidKey`] if a key does not parse, the modulus is below
    /// [`MIN_MODULUS_BITS`], or the public key does not belong to the private key.
    pub fn from_pem(id: &str, public_pem: &str, private_pem: &str) -> Result<Self, CryptoError> {
        Self::parse(id, public_pem, "PEM string", private_pem, "PEM string")
    }

    /// A key pair from PEM files.
    ///
    /// # Errors
    /// [`CryptoError::KeyFileRead`] naming the file if it cannot be read, otherwise as
    /// [`KeyPair::from_pem`] (errors name the file).
    pub fn from_files(
        id: &str,
        public_key_file: impl AsRef<Path>,
        private_key_file: impl AsRef<Path>,
    ) -> Result<Self, CryptoError> {
        validate_key_pair_id(id)?;
        let (public_path, private_path) = (public_key_file.as_ref(), private_key_file.as_ref());
        let read = |path: &Path, kind| {
            read_pem_file(path).map_err(|source| CryptoError::KeyFileRead {
                id: id.to_owned(),
                kind,
                path: path.to_owned(),
                source,
            })
        };
        let public_pem = read(public_path, "public")?;
        let private_pem = read(private_path, "private")?;
        Self::parse(
            id,
            &public_pem,
            &public_path.display().to_string(),
            &private_pem,
            &private_path.display().to_string(),
        )
    }

    fn parse(
        id: &str,
        public_pem: &str,
        public_src: &str,
        private_pem: &str,
        private_src: &str,
    ) -> Result<Self, CryptoError> {
        validate_key_pair_id(id)?;
        let invalid = |kind: &'static str, src: &str, reason: String| CryptoError::InvalidKey {
            id: id.to_owned(),
            kind,
            source_name: src.to_owned(),
            reason,
        };
        let public = parse_public(public_pem).map_err(|r| invalid("public", public_src, r))?;
        let private = parse_private(private_pem).map_err(|r| invalid("private", private_src, r))?;
        let bits = public.size() * 8;
        if bits < MIN_MODULUS_BITS {
            return Err(invalid(
                "public",
                public_src,
                format!("RSA modulus is {bits} bits, at least {MIN_MODULUS_BITS} required"),
            ));
        }
        if private.to_public_key() != public {
            return Err(invalid(
                "private",
                private_src,
                format!("does not match the public key {public_src}"),
            ));
        }
        Ok(KeyPair {
            id: id.to_owned(),
            public,
            private,
        })
    }

    /// The key-pair id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// RSA modulus size in bits (e.g. 2048).
    pub fn modulus_bits(&self) -> usize {
        self.public.size() * 8
    }

    /// RSA-OAEP (SHA3-512 hash and MGF1, empty label) encryption of the 32 DEK bytes.
    /// The result is `modulus_bits / 8` bytes.
    ///
    /// # Errors
    /// [`CryptoError::Wrap`] naming the key pair (e.g. the OS RNG failed).
    pub fn wrap_raw(&self, key: &DataKey) -> Result<Vec<u8>, CryptoError> {
        self.public
            .oaep_encrypt::<Sha3_512>(key.expose_secret())
            .map_err(|e| CryptoError::Wrap {
                id: self.id.clone(),
                reason: e.to_string(),
            })
    }

    /// Reverses [`KeyPair::wrap_raw`] (with RSA blinding from the OS RNG).
    ///
    /// # Errors
    /// [`CryptoError::Unwrap`] naming the key pair if decryption fails (not encrypted with
    /// this key pair, or corrupted) or does not yield exactly 32 bytes.
    pub fn unwrap_raw(&self, wrapped: &[u8]) -> Result<DataKey, CryptoError> {
        let unwrap_err = |reason: String| CryptoError::Unwrap {
            id: self.id.clone(),
            reason,
        };
        if wrapped.len() != self.public.size() {
            return Err(unwrap_err(format!(
                "wrapped key is {} bytes, expected {} for a {}-bit key (wrapped with another key pair?)",
                wrapped.len(),
                self.public.size(),
                self.modulus_bits()
            )));
        }
        let raw = Zeroizing::new(self.private.oaep_decrypt::<Sha3_512>(wrapped).map_err(|e| {
            unwrap_err(format!(
                "RSA-OAEP decryption failed ({e}): the data key was not wrapped with this key pair, or is corrupted"
            ))
        })?);
        if raw.len() != DATA_KEY_LEN {
            return Err(unwrap_err(format!(
                "unwrapped key is {} bytes, expected {DATA_KEY_LEN}",
                raw.len()
            )));
        }
        DataKey::from_bytes(&raw)
    }
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyPair")
            .field("id", &self.id)
            .field("modulus_bits", &self.modulus_bits())
            .field("private", &"<redacted>")
            .finish()
    }
}

/// Largest key file read, in bytes (a PEM RSA key is a few KiB; this guards against
/// pointing the configuration at a huge or endless file).
const MAX_PEM_FILE_BYTES: u64 = 1 << 20;

fn read_pem_file(path: &Path) -> std::io::Result<Zeroizing<String>> {
    use std::io::Read as _;
    use zeroize::Zeroize as _;
    // The buffer is allocated once at the largest size read, so it never regrows: a
    // regrowth would free the old allocation, with key text in it, without zeroing it.
    let mut buf = Zeroizing::new(Vec::with_capacity(MAX_PEM_FILE_BYTES as usize + 1));
    std::fs::File::open(path)?
        .take(MAX_PEM_FILE_BYTES + 1)
        .read_to_end(&mut buf)?;
    if buf.len() as u64 > MAX_PEM_FILE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {MAX_PEM_FILE_BYTES} bytes; not a PEM key file"),
        ));
    }
    match String::from_utf8(std::mem::take(&mut *buf)) {
        Ok(text) => Ok(Zeroizing::new(text)),
        Err(e) => {
            e.into_bytes().zeroize();
            Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "not UTF-8 text; not a PEM key file",
            ))
        }
    }
}

fn pem_label(pem_text: &str) -> Result<&str, String> {
    pem::decode_label(pem_text.as_bytes()).map_err(|e| format!("not a PEM document: {e}"))
}

/// The PEM document inside a key file: from the first `-----BEGIN ` line to the end of
/// its matching `-----END <label>-----` line. Like BouncyCastle's `PemReader` (used by the
/// Java plugin) this skips explanatory text around the block, e.g. the `Bag Attributes`
/// that `openssl pkcs12 -nodes` writes; the strict PEM decoder then checks the block.
fn pem_block(text: &str) -> &str {
    let Some(begin) = text.find("-----BEGIN ") else {
        return text;
    };
    let block = &text[begin..];
    let label_end = block["-----BEGIN ".len()..]
        .find("-----")
        .map(|i| i + "-----BEGIN ".len());
    let Some(label_end) = label_end else {
        return block;
    };
    let end_marker = format!("-----END {}-----", &block["-----BEGIN ".len()..label_end]);
    match block.find(&end_marker) {
        Some(i) => &block[..i + end_marker.len()],
        None => block,
    }
}

fn parse_public(pem_text: &str) -> Result<PublicKey, String> {
    let pem_text = pem_block(pem_text);
    match pem_label(pem_text)? {
        "PUBLIC KEY" => PublicKey::from_public_key_pem(pem_text)
            .map_err(|e| format!("X.509 SubjectPublicKeyInfo (PUBLIC KEY) is not an RSA key: {e}")),
        "RSA PUBLIC KEY" => PublicKey::from_pkcs1_pem(pem_text)
            .map_err(|e| format!("PKCS#1 RSA PUBLIC KEY does not parse: {e}")),
        other => Err(format!(
            "PEM type {other:?} is not a public key (expected \"PUBLIC KEY\", X.509 SubjectPublicKeyInfo)"
        )),
    }
}

fn parse_private(pem_text: &str) -> Result<PrivateKey, String> {
    // Errors from the decoders describe the ASN.1 structure, never the key bytes.
    let pem_text = pem_block(pem_text);
    match pem_label(pem_text)? {
        "PRIVATE KEY" => PrivateKey::from_pkcs8_pem(pem_text)
            .map_err(|e| format!("PKCS#8 PRIVATE KEY is not a valid RSA key: {e}")),
        "RSA PRIVATE KEY" => PrivateKey::from_pkcs1_pem(pem_text)
            .map_err(|e| format!("PKCS#1 RSA PRIVATE KEY does not parse: {e}")),
        "ENCRYPTED PRIVATE KEY" => {
            Err("encrypted PKCS#8 private keys are not supported; store it unencrypted with restricted file permissions".into())
        }
        other => Err(format!(
            "PEM type {other:?} is not a private key (expected \"PRIVATE KEY\", PKCS#8, or \"RSA PRIVATE KEY\", PKCS#1)"
        )),
    }
}

/// Key pairs by id plus the active id (docs/object-format.md "Encryption (envelope)",
/// "Rotation": add a new pair, switch the active id; old pairs stay on the ring for reading).
pub struct KeyRing {
    pairs: BTreeMap<String, KeyPair>,
    active_id: String,
}

impl KeyRing {
    /// A key ring from loaded key pairs; `active_id` wraps new DEKs.
    ///
    /// # Errors
    /// [`CryptoError::DuplicateKeyPairId`] for a repeated id;
    /// [`CryptoError::UnknownKeyPairId`] if `active_id` is not among the pairs.
    pub fn new(
        pairs: impl IntoIterator<Item = KeyPair>,
        active_id: &str,
    ) -> Result<Self, CryptoError> {
        let mut map = BTreeMap::new();
        for pair in pairs {
            if map.contains_key(&pair.id) {
                return Err(CryptoError::DuplicateKeyPairId {
                    id: pair.id.clone(),
                });
            }
            map.insert(pair.id.clone(), pair);
        }
        let ring = KeyRing {
            pairs: map,
            active_id: active_id.to_owned(),
        };
        ring.pair(active_id)?;
        Ok(ring)
    }

    /// A key ring from `(id, public key PEM file, private key PEM file)` entries, as
    /// configured by `encryption.key.pair.id` and `encryption.key.pairs.<id>.*`.
    ///
    /// # Errors
    /// As [`KeyPair::from_files`] and [`KeyRing::new`].
    pub fn from_files<I, S, P, Q>(entries: I, active_id: &str) -> Result<Self, CryptoError>
    where
        I: IntoIterator<Item = (S, P, Q)>,
        S: AsRef<str>,
        P: AsRef<Path>,
        Q: AsRef<Path>,
    {
        let pairs = entries
            .into_iter()
            .map(|(id, public, private)| KeyPair::from_files(id.as_ref(), public, private))
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(pairs, active_id)
    }

    /// The id of the key pair used by [`KeyRing::wrap`].
    pub fn active_id(&self) -> &str {
        &self.active_id
    }

    /// All key-pair ids on the ring, sorted.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.pairs.keys().map(String::as_str)
    }

    /// The key pair with this id.
    ///
    /// # Errors
    /// [`CryptoError::UnknownKeyPairId`] naming `id` and the known ids.
    pub fn pair(&self, id: &str) -> Result<&KeyPair, CryptoError> {
        self.pairs
            .get(id)
            .ok_or_else(|| CryptoError::UnknownKeyPairId {
                id: id.to_owned(),
                known: self.ids().collect::<Vec<_>>().join(", "),
            })
    }

    /// Wraps a DEK with the active key pair, giving the manifest `encryption.dataKey`
    /// string `"<activeId>:<base64>"`.
    ///
    /// # Errors
    /// [`CryptoError::Wrap`] naming the key pair.
    pub fn wrap(&self, key: &DataKey) -> Result<String, CryptoError> {
        self.wrap_with(&self.active_id, key)
    }

    /// Wraps a DEK with the named key pair (for re-keying manifests).
    ///
    /// # Errors
    /// [`CryptoError::UnknownKeyPairId`]; [`CryptoError::Wrap`].
    pub fn wrap_with(&self, id: &str, key: &DataKey) -> Result<String, CryptoError> {
        let pair = self.pair(id)?;
        format_data_key(&pair.id, &pair.wrap_raw(key)?)
    }

    /// Unwraps a manifest `encryption.dataKey` with the key pair it names (any pair on the
    /// ring, not only the active one).
    ///
    /// # Errors
    /// [`CryptoError::MalformedDataKey`]; [`CryptoError::UnknownKeyPairId`] naming the id;
    /// [`CryptoError::Unwrap`] naming the key pair.
    pub fn unwrap(&self, data_key: &str) -> Result<DataKey, CryptoError> {
        let (id, wrapped) = parse_data_key(data_key)?;
        self.pair(id)?.unwrap_raw(&wrapped)
    }
}

impl std::fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyRing")
            .field("active_id", &self.active_id)
            .field("pairs", &self.pairs.values().collect::<Vec<_>>())
            .finish()
    }
}
