//! KeyRing: PEM loading (SPKI, PKCS#8, PKCS#1), wrap/unwrap round trips, rotation, errors.

mod common;

use common::{pem_pair, write_pair};
use tsm_crypto::{CryptoError, DataKey, KeyPair, KeyRing};

fn ring_of(ids: &[(&str, usize)], active: &str) -> KeyRing {
    let pairs = ids.iter().map(|(id, n)| {
        let p = pem_pair(*n);
        KeyPair::from_pem(id, &p.public_spki, &p.private_pkcs8).unwrap()
    });
    KeyRing::new(pairs, active).unwrap()
}

#[test]
fn wrap_unwrap_round_trip() {
    let ring = ring_of(&[("k1", 0)], "k1");
    let dek = DataKey::generate().unwrap();
    let data_key = ring.wrap(&dek).unwrap();
    let (id, b64) = data_key.split_once(':').unwrap();
    assert_eq!(id, "k1");
    assert_eq!(b64.len(), 344, "256 bytes of base64 with padding");
    let back = ring.unwrap(&data_key).unwrap();
    assert_eq!(back.expose_secret(), dek.expose_secret());
    // OAEP is randomized: wrapping twice differs, both unwrap.
    assert_ne!(ring.wrap(&dek).unwrap(), data_key);
}
