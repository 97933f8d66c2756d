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

#[test]
fn loads_pem_files_pkcs8_and_pkcs1() {
    let dir = tempfile::tempdir().unwrap();
    let (pub8, priv8) = write_pair(dir.path(), "a", pem_pair(0), false);
    let (pub1, priv1) = write_pair(dir.path(), "b", pem_pair(1), true);
    let ring = KeyRing::from_files([("a", &pub8, &priv8), ("b", &pub1, &priv1)], "b").unwrap();
    assert_eq!(ring.active_id(), "b");
    assert_eq!(ring.ids().collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(ring.pair("a").unwrap().modulus_bits(), 2048);
    let dek = DataKey::generate().unwrap();
    for id in ["a", "b"] {
        let s = ring.wrap_with(id, &dek).unwrap();
        assert!(s.starts_with(&format!("{id}:")));
        assert_eq!(
            ring.unwrap(&s).unwrap().expose_secret(),
            dek.expose_secret()
        );
    }
}

#[test]
fn rotation_keeps_old_pairs_for_unwrapping() {
    let old = ring_of(&[("old", 0)], "old");
    let dek = DataKey::generate().unwrap();
    let old_data_key = old.wrap(&dek).unwrap();

    let rotated = ring_of(&[("old", 0), ("new", 1)], "new");
    assert!(rotated.wrap(&dek).unwrap().starts_with("new:"));
    let back = rotated.unwrap(&old_data_key).unwrap();
    // Re-keying: unwrap with the old pair, wrap with the new one.
    let rekeyed = rotated.wrap_with("new", &back).unwrap();
    assert_eq!(
        rotated.unwrap(&rekeyed).unwrap().expose_secret(),
        dek.expose_secret()
    );
}

#[test]
fn unknown_id_is_named() {
    let ring = ring_of(&[("k1", 0)], "k1");
    let data_key = ring_of(&[("k2", 1)], "k2")
        .wrap(&DataKey::generate().unwrap())
        .unwrap();
    let err = ring.unwrap(&data_key).unwrap_err();
    assert!(
        matches!(&err, CryptoError::UnknownKeyPairId { id, .. } if id == "k2"),
        "{err:?}"
    );
    assert!(err.to_string().contains("\"k2\""), "{err}");
    assert!(
        ring.wrap_with("nope", &DataKey::generate().unwrap())
            .is_err()
    );

    let p = pem_pair(0);
    let pair = KeyPair::from_pem("k1", &p.public_spki, &p.private_pkcs8).unwrap();
    let err = KeyRing::new([pair], "missing").unwrap_err();
    assert!(err.to_string().contains("\"missing\""), "{err}");
}

#[test]
fn wrong_private_key_fails_cleanly() {
    // Same id, different key material: the unwrap must fail, not return a wrong key.
    let dek = DataKey::generate().unwrap();
    let data_key = ring_of(&[("k", 0)], "k").wrap(&dek).unwrap();
    let err = ring_of(&[("k", 1)], "k").unwrap(&data_key).unwrap_err();
    assert!(
        matches!(&err, CryptoError::Unwrap { id, .. } if id == "k"),
        "{err:?}"
    );
}

#[test]
fn malformed_and_tampered_data_keys() {
    let ring = ring_of(&[("k", 0)], "k");
    let good = ring.wrap(&DataKey::generate().unwrap()).unwrap();
    for bad in ["", "k", "k:", ":AAAA", "k:AA:AA", "k:!!!!", "k:AAAA"] {
        assert!(ring.unwrap(bad).is_err(), "{bad:?}");
    }
    // Flip one character of the base64 body.
    let (id, b64) = good.split_once(':').unwrap();
    let mut chars: Vec<char> = b64.chars().collect();
    chars[10] = if chars[10] == 'A' { 'B' } else { 'A' };
    let tampered = format!("{id}:{}", chars.into_iter().collect::<String>());
    assert!(matches!(
        ring.unwrap(&tampered),
        Err(CryptoError::Unwrap { .. })
    ));
}

#[test]
fn rejects_bad_ids_and_keys() {
    let p = pem_pair(0);
    let q = pem_pair(1);
    let err = KeyPair::from_pem("a:b", &p.public_spki, &p.private_pkcs8).unwrap_err();
    assert!(matches!(err, CryptoError::InvalidKeyPairId { .. }));
    assert!(KeyPair::from_pem("", &p.public_spki, &p.private_pkcs8).is_err());

    // Mismatched public/private.
    let err = KeyPair::from_pem("m", &p.public_spki, &q.private_pkcs8).unwrap_err();
    assert!(err.to_string().contains("does not match"), "{err}");
    // Public and private swapped.
    let err = KeyPair::from_pem("s", &p.private_pkcs8, &p.public_spki).unwrap_err();
    assert!(
        matches!(err, CryptoError::InvalidKey { kind: "public", .. }),
        "{err:?}"
    );
    // Not PEM at all.
    assert!(KeyPair::from_pem("x", "hello", &p.private_pkcs8).is_err());
    // Encrypted PKCS#8 is refused with a clear reason.
    let enc = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n";
    let err = KeyPair::from_pem("e", &p.public_spki, enc).unwrap_err();
    assert!(err.to_string().contains("encrypted PKCS#8"), "{err}");

    // Duplicate ids.
    let a = KeyPair::from_pem("d", &p.public_spki, &p.private_pkcs8).unwrap();
    let b = KeyPair::from_pem("d", &q.public_spki, &q.private_pkcs8).unwrap();
    assert!(matches!(
        KeyRing::new([a, b], "d"),
        Err(CryptoError::DuplicateKeyPairId { .. })
    ));
}

#[test]
fn small_modulus_rejected() {
    use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
    let key = rsa::PrivateKey::new(&mut getrandom::SysRng, 1024).unwrap();
    let public = key
        .to_public_key()
        .to_public_key_pem(LineEnding::LF)
        .unwrap();
    let private = key.to_pkcs8_pem(LineEnding::LF).unwrap();
    let err = KeyPair::from_pem("small", &public, &private).unwrap_err();
    assert!(err.to_string().contains("1024 bits"), "{err}");
}

#[test]
fn missing_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let (public, _) = write_pair(dir.path(), "a", pem_pair(0), false);
    let missing = dir.path().join("nope.pem");
    let err = KeyPair::from_files("a", &public, &missing).unwrap_err();
    assert!(matches!(
        err,
        CryptoError::KeyFileRead {
            kind: "private",
            ..
        }
    ));
    assert!(err.to_string().contains("nope.pem"), "{err}");
}

#[test]
fn no_key_material_in_debug_or_errors() {
    let p = pem_pair(0);
    let ring = ring_of(&[("k1", 0)], "k1");
    let dbg = format!("{ring:?}");
    assert!(dbg.contains("k1") && dbg.contains("redacted"), "{dbg}");
    // No line of the PEM body may show up anywhere.
    let body_lines: Vec<&str> = p
        .private_pkcs8
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let q = pem_pair(1);
    let errors = [
        KeyPair::from_pem("m", &p.public_spki, &q.private_pkcs8)
            .unwrap_err()
            .to_string(),
        KeyPair::from_pem("s", &p.private_pkcs8, &p.public_spki)
            .unwrap_err()
            .to_string(),
    ];
    for text in errors.iter().chain([&dbg]) {
        for line in &body_lines {
            assert!(!text.contains(line), "key material leaked: {text}");
        }
    }
}

#[test]
fn oversized_or_binary_key_file_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let (public, _) = write_pair(dir.path(), "a", pem_pair(0), false);
    let big = dir.path().join("big.pem");
    std::fs::write(&big, vec![b'A'; (1 << 20) + 10]).unwrap();
    let err = KeyPair::from_files("a", &public, &big).unwrap_err();
    assert!(err.to_string().contains("big.pem"), "{err}");
    let bin = dir.path().join("bin.pem");
    std::fs::write(&bin, [0xffu8, 0xfe, 0x00, 0x80]).unwrap();
    let err = KeyPair::from_files("a", &public, &bin).unwrap_err();
    assert!(err.to_string().contains("bin.pem"), "{err}");
}

#[test]
fn tolerates_text_around_pem_and_crlf() {
    // `openssl pkcs12 -nodes` writes "Bag Attributes" before each block; Windows tools
    // write CRLF. BouncyCastle's PemReader (Java plugin) accepts both.
    let p = pem_pair(0);
    let private = format!(
        "Bag Attributes\n    localKeyID: 01 00 00 00\nKey Attributes: <No Attributes>\n{}\ntrailing note\n",
        p.private_pkcs8
    );
    let public = p.public_spki.replace('\n', "\r\n");
    let pair = KeyPair::from_pem("k", &public, &private).unwrap();
    let ring = KeyRing::new([pair], "k").unwrap();
    let dek = DataKey::generate().unwrap();
    assert_eq!(
        ring.unwrap(&ring.wrap(&dek).unwrap())
            .unwrap()
            .expose_secret(),
        dek.expose_secret()
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// Garbage key files give errors, never panics.
    #[test]
    fn garbage_pem_never_panics(
        prefix in "(-----BEGIN |-----END |PRIVATE KEY-----|\\PC){0,8}",
        body in "[A-Za-z0-9+/=\\r\\n-]{0,200}",
        label in "(PRIVATE KEY|RSA PRIVATE KEY|PUBLIC KEY|RSA PUBLIC KEY|X)",
    ) {
        let text = format!("{prefix}-----BEGIN {label}-----\n{body}\n-----END {label}-----\n");
        proptest::prop_assert!(KeyPair::from_pem("g", &text, &text).is_err());
        proptest::prop_assert!(KeyPair::from_pem("g", &prefix, &body).is_err());
    }
}
