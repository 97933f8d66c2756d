//! The chunk-size codec round-trips any list of sizes and never panics on any input.

use base64::Engine as _;
use proptest::prelude::*;
use tsm_codec::sizes_codec::{decode, decode_manifest_string, encode, encode_manifest_string};

fn sizes() -> impl Strategy<Value = Vec<u32>> {
    let value = prop_oneof![0u32..=300, 1_000_000u32..=1_100_000, 0u32..=i32::MAX as u32];
    prop::collection::vec(value, 0..300)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    #[test]
    fn codec_round_trips(sizes in sizes()) {
        let bytes = encode(&sizes).expect("encode");
        prop_assert_eq!(decode(&bytes).expect("decode"), sizes.clone());
        let s = encode_manifest_string(&sizes, 3).expect("manifest string");
        prop_assert_eq!(decode_manifest_string(&s).expect("decode string"), sizes);
    }

    #[test]
    fn decode_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = decode(&bytes);
        let _ = decode_manifest_string(&base64::engine::general_purpose::STANDARD.encode(&bytes));
    }

    #[test]
    fn decode_string_never_panics(s in ".{0,80}") {
        let _ = decode_manifest_string(&s);
    }

    #[test]
    fn too_large_values_are_rejected(mut sizes in sizes(), big in (i32::MAX as u32 + 1)..=u32::MAX, at in any::<prop::sample::Index>()) {
        sizes.push(0);
        let at = at.index(sizes.len());
        sizes[at] = big;
        prop_assert!(encode(&sizes).is_err());
    }
}
