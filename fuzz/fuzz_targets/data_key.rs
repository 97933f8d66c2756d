//! The manifest's `encryption.dataKey` string: `<keyPairId>:<base64>`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = tsm_crypto::parse_data_key(text);
    }
});
