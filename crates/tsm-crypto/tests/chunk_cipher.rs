//! ChunkCipher: layout, round trips (proptest), and that every kind of damage is caught
//! and names the chunk (docs/object-format.md "Encryption (envelope)").

use proptest::prelude::*;
use tsm_crypto::{Aad, ChunkCipher, CryptoError, DataKey, ENCRYPTION_OVERHEAD, IV_LEN, TAG_LEN};

fn cipher() -> ChunkCipher {
    ChunkCipher::new(&DataKey::generate().unwrap(), &Aad::generate().unwrap())
}

#[test]
fn layout_and_overhead() {
    assert_eq!(ENCRYPTION_OVERHEAD, 28);
    assert_eq!((IV_LEN, TAG_LEN), (12, 16));
    let c = cipher();
    for n in [0usize, 1, 16, 1000] {
        let stored = c.encrypt(&vec![7u8; n]).unwrap();
        assert_eq!(stored.len(), n + 28);
        assert_eq!(c.decrypt(0, &stored).unwrap(), vec![7u8; n]);
    }
}

#[test]
fn encrypt_in_place_same_layout_same_allocation() {
    let c = cipher();
    for n in [0usize, 1, 16, 1000] {
        let plain = vec![9u8; n];
        let mut buf = Vec::with_capacity(IV_LEN + n + TAG_LEN);
        buf.resize(IV_LEN, 0xee);
        buf.extend_from_slice(&plain);
        let before = buf.as_ptr();
        let stored = c.encrypt_in_place(buf).unwrap();
        assert_eq!(stored.len(), n + ENCRYPTION_OVERHEAD);
        assert_eq!(stored.as_ptr(), before, "no reallocation when the tag fits");
        assert_ne!(
            stored[..IV_LEN],
            [0xee; IV_LEN],
            "the IV was written into the room"
        );
        assert_eq!(c.decrypt(0, &stored).unwrap(), plain);
    }
    // No room for the IV: an error, not a panic.
    for n in 0..IV_LEN {
        let err = c.encrypt_in_place(vec![1u8; n]).unwrap_err();
        assert!(
            matches!(err, CryptoError::NoIvRoom { len } if len == n),
            "{err}"
        );
    }
}

#[test]
fn fresh_iv_per_chunk() {
    let c = cipher();
    let a = c.encrypt(b"same plaintext").unwrap();
    let b = c.encrypt(b"same plaintext").unwrap();
    assert_ne!(a[..IV_LEN], b[..IV_LEN], "IVs must differ");
    assert_ne!(a, b);
}

#[test]
fn known_answer_vector() {
    // Independent vector (OpenSSL via Python `cryptography` AESGCM): key = 00..1f,
    // IV = 64..6f, AAD = c8..e7, plaintext "tsm chunk"; stored = IV || C || T.
    let key = DataKey::from_bytes(&(0u8..32).collect::<Vec<_>>()).unwrap();
    let aad = Aad::from_bytes(&(200u8..232).collect::<Vec<_>>()).unwrap();
    let stored = hex("6465666768696a6b6c6d6e6f3c68b3461a8123f0555f902169781a12559a3dc15675456e08");
    let c = ChunkCipher::new(&key, &aad);
    assert_eq!(c.decrypt(0, &stored).unwrap(), b"tsm chunk");
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn too_short_names_chunk() {
    let c = cipher();
    for n in 0..ENCRYPTION_OVERHEAD {
        let err = c.decrypt(41, &vec![0u8; n]).unwrap_err();
        assert!(matches!(err, CryptoError::ChunkTooShort { chunk: 41, len } if len == n));
        assert!(err.to_string().starts_with("chunk 41:"), "{err}");
    }
}

#[test]
fn wrong_key_or_aad_fails() {
    let key = DataKey::generate().unwrap();
    let aad = Aad::generate().unwrap();
    let stored = ChunkCipher::new(&key, &aad)
        .encrypt(b"secret chunk")
        .unwrap();

    let other_key = ChunkCipher::new(&DataKey::generate().unwrap(), &aad);
    let err = other_key.decrypt(7, &stored).unwrap_err();
    assert!(
        matches!(err, CryptoError::Authentication { chunk: 7, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("chunk 7"), "{err}");

    let other_aad = ChunkCipher::new(&key, &Aad::generate().unwrap());
    assert!(matches!(
        other_aad.decrypt(8, &stored),
        Err(CryptoError::Authentication { chunk: 8, .. })
    ));
}

#[test]
fn debug_hides_key() {
    let key = DataKey::from_bytes(&[0xAB; 32]).unwrap();
    let aad = Aad::from_bytes(&[0; 32]).unwrap();
    let c = ChunkCipher::new(&key, &aad);
    for s in [format!("{key:?}"), format!("{c:?}")] {
        assert!(!s.to_lowercase().contains("abab"), "{s}");
        assert!(!s.contains("171"), "{s}");
        assert!(s.contains("redacted"), "{s}");
    }
}

#[test]
fn aad_base64_round_trip() {
    let aad = Aad::generate().unwrap();
    let b64 = aad.to_base64();
    assert_eq!(b64.len(), 44);
    assert_eq!(Aad::from_base64(&b64).unwrap(), aad);
    assert!(Aad::from_base64("AQID").is_err(), "3 bytes");
    assert!(Aad::from_base64("not base64!").is_err());
    assert!(DataKey::from_bytes(&[0; 31]).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn round_trip_any_bytes(plain in prop::collection::vec(any::<u8>(), 0..70_000)) {
        let c = cipher();
        let stored = c.encrypt(&plain).unwrap();
        prop_assert_eq!(stored.len(), plain.len() + ENCRYPTION_OVERHEAD);
        prop_assert_eq!(&c.decrypt(0, &stored).unwrap(), &plain);
        let mut in_place = stored.clone();
        let r = c.decrypt_in_place(0, &mut in_place).unwrap();
        prop_assert_eq!(&in_place[r], &plain[..]);
    }

    #[test]
    fn any_flipped_bit_fails(
        plain in prop::collection::vec(any::<u8>(), 0..2_000),
        pos in any::<prop::sample::Index>(),
        bit in 0u8..8,
        chunk in any::<u64>(),
    ) {
        let c = cipher();
        let mut stored = c.encrypt(&plain).unwrap();
        let i = pos.index(stored.len());
        stored[i] ^= 1 << bit;
        let err = c.decrypt(chunk, &stored).unwrap_err();
        let is_auth_error = matches!(err, CryptoError::Authentication { chunk: c2, .. } if c2 == chunk);
        prop_assert!(is_auth_error);
        let expected = format!("chunk {chunk}:");
        prop_assert!(err.to_string().starts_with(&expected));
        // In place: the same error, and no byte after the IV is left behind (it may have
        // been decrypted before the tag check failed).
        let mut in_place = stored.clone();
        let err = c.decrypt_in_place(chunk, &mut in_place).unwrap_err();
        let is_auth_error = matches!(err, CryptoError::Authentication { chunk: c2, .. } if c2 == chunk);
        prop_assert!(is_auth_error);
        prop_assert!(in_place[IV_LEN..].iter().all(|b| *b == 0));
    }

    #[test]
    fn any_truncation_or_extension_fails(
        plain in prop::collection::vec(any::<u8>(), 0..2_000),
        cut in any::<prop::sample::Index>(),
        extra in prop::collection::vec(any::<u8>(), 1..32),
    ) {
        let c = cipher();
        let stored = c.encrypt(&plain).unwrap();
        let keep = cut.index(stored.len());
        prop_assert!(c.decrypt(5, &stored[..keep]).is_err());
        prop_assert!(c.decrypt_in_place(5, &mut stored.clone()[..keep]).is_err());
        let mut longer = stored.clone();
        longer.extend_from_slice(&extra);
        prop_assert!(c.decrypt(5, &longer).is_err());
        prop_assert!(c.decrypt_in_place(5, &mut longer).is_err());
    }
}
