//! The chunk-size codec (`transformedChunks`): raw codec bytes, and the manifest's base64 of
//! a zstd frame of them (decoded size capped at 10 MiB).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tsm_codec::sizes_codec;

fuzz_target!(|data: &[u8]| {
    if let Ok(sizes) = sizes_codec::decode(data) {
        let again = sizes_codec::encode(&sizes).expect("decoded sizes encode");
        assert_eq!(sizes_codec::decode(&again).expect("re-decodes"), sizes);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = sizes_codec::decode_manifest_string(text);
    }
});
