//! Test helpers: RSA key pairs generated at test time (never committed) and written as PEM.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rsa::PrivateKey;
use rsa::pkcs1::EncodeRsaPrivateKey;
use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};

/// PEM texts of one generated key pair.
pub(crate) struct PemPair {
    /// X.509 SubjectPublicKeyInfo (`PUBLIC KEY`).
    pub public_spki: String,
    /// PKCS#8 (`PRIVATE KEY`).
    pub private_pkcs8: String,
    /// PKCS#1 (`RSA PRIVATE KEY`).
    pub private_pkcs1: String,
}

fn generate(bits: usize) -> PemPair {
    let key = PrivateKey::new(&mut getrandom::SysRng, bits).expect("RSA key generation");
    PemPair {
        public_spki: key
            .to_public_key()
            .to_public_key_pem(LineEnding::LF)
            .expect("encode SPKI"),
        private_pkcs8: key
            .to_pkcs8_pem(LineEnding::LF)
            .expect("encode PKCS#8")
            .to_string(),
        private_pkcs1: key
            .to_pkcs1_pem(LineEnding::LF)
            .expect("encode PKCS#1")
            .to_string(),
    }
}

/// Generated 2048-bit key pairs, the same within one test binary (key generation is slow).
pub(crate) fn pem_pair(n: usize) -> &'static PemPair {
    static PAIRS: [OnceLock<PemPair>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    PAIRS[n].get_or_init(|| generate(2048))
}

/// Writes a key pair's PEM files into `dir` as `<name>-public.pem` / `<name>-private.pem`.
pub(crate) fn write_pair(
    dir: &Path,
    name: &str,
    pair: &PemPair,
    pkcs1: bool,
) -> (PathBuf, PathBuf) {
    let public = dir.join(format!("{name}-public.pem"));
    let private = dir.join(format!("{name}-private.pem"));
    std::fs::write(&public, &pair.public_spki).expect("write public PEM");
    let private_pem = if pkcs1 {
        &pair.private_pkcs1
    } else {
        &pair.private_pkcs8
    };
    std::fs::write(&private, private_pem).expect("write private PEM");
    (public, private)
}
