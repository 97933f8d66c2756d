//! The manifest `encryption.dataKey` string: `<keyPairId>:<base64 of the RSA-wrapped DEK>`
//! (docs/object-format.md "Manifest", "`encryption`": exactly one `:` in `dataKey`, so a
//! key-pair id cannot contain one; standard base64 alphabet with padding).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::CryptoError;

/// Checks a key-pair id: non-empty and without `:`.
///
/// # Errors
/// [`CryptoError::InvalidKeyPairId`] naming the id.
pub fn validate_key_pair_id(id: &str) -> Result<(), CryptoError> {
    let reason = if id.is_empty() {
        "must not be empty"
    } else if id.contains(':') {
        "must not contain ':' (it separates the id from the key in encryption.dataKey)"
    } else if id.chars().any(char::is_control) {
        "must not contain control characters"
    } else {
        return Ok(());
    };
    Err(CryptoError::InvalidKeyPairId {
        id: id.to_owned(),
        reason,
    })
}

/// Formats `<keyPairId>:<base64(wrapped)>`.
///
/// # Errors
/// [`CryptoError::InvalidKeyPairId`] if the id is empty or contains `:`.
pub fn format_data_key(key_pair_id: &str, wrapped: &[u8]) -> Result<String, CryptoError> {
    validate_key_pair_id(key_pair_id)?;
    Ok(format!("{key_pair_id}:{}", STANDARD.encode(wrapped)))
}

/// Splits a manifest `dataKey` into its key-pair id and the wrapped (RSA-encrypted) DEK.
///
/// # Errors
/// [`CryptoError::MalformedDataKey`] if there is not exactly one `:`, the id is empty,
/// or the rest is not base64 (standard alphabet, with padding).
pub fn parse_data_key(data_key: &str) -> Result<(&str, Vec<u8>), CryptoError> {
    let Some((id, b64)) = data_key.split_once(':') else {
        return Err(CryptoError::MalformedDataKey {
            reason: "expected \"<keyPairId>:<base64>\" but found no ':'".into(),
        });
    };
    if id.is_empty() {
        return Err(CryptoError::MalformedDataKey {
            reason: "empty key-pair id before ':'".into(),
        });
    }
    if b64.contains(':') {
        return Err(CryptoError::MalformedDataKey {
            reason: format!("more than one ':' (key-pair id {id:?})"),
        });
    }
    let wrapped = STANDARD
        .decode(b64)
        .map_err(|e| CryptoError::MalformedDataKey {
            reason: format!("wrapped key for key-pair id {id:?} is not valid base64: {e}"),
        })?;
    if wrapped.is_empty() {
        return Err(CryptoError::MalformedDataKey {
            reason: format!("empty wrapped key for key-pair id {id:?}"),
        });
    }
    Ok((id, wrapped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        assert!(validate_key_pair_id("key-1").is_ok());
        assert!(validate_key_pair_id("").is_err());
        let e = validate_key_pair_id("a:b").unwrap_err().to_string();
        assert!(e.contains("\"a:b\"") && e.contains("':'"), "{e}");
    }

    #[test]
    fn format_and_parse() {
        let s = format_data_key("k1", &[1, 2, 3]).unwrap();
        assert_eq!(s, "k1:AQID");
        let (id, w) = parse_data_key(&s).unwrap();
        assert_eq!((id, w.as_slice()), ("k1", &[1u8, 2, 3][..]));
        assert!(format_data_key("a:b", &[1]).is_err());
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(s in ".{0,64}") {
            let _ = parse_data_key(&s);
            let _ = validate_key_pair_id(&s);
        }

        #[test]
        fn format_parse_round_trip(id in "[^:\\p{Cc}]{1,16}", bytes in proptest::collection::vec(0u8.., 1..300)) {
            let s = format_data_key(&id, &bytes).unwrap();
            let (got_id, got) = parse_data_key(&s).unwrap();
            proptest::prop_assert_eq!(got_id, id.as_str());
            proptest::prop_assert_eq!(got, bytes);
        }
    }

    #[test]
    fn malformed() {
        for bad in [
            "", "nocolon", ":AQID", "k1:", "k1:AQ:ID", "k1:AQI", "k1:A-_D", "k1:AQID ",
        ] {
            assert!(
                matches!(
                    parse_data_key(bad),
                    Err(CryptoError::MalformedDataKey { .. })
                ),
                "{bad:?}"
            );
        }
    }
}
