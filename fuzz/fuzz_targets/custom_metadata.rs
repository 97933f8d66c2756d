//! KIP-917 custom metadata as the broker hands it back: decode, and what decodes
//! re-encodes to something that decodes to the same fields.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tsm_core::custom_metadata::CustomMetadata;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = CustomMetadata::decode(data) {
        let again = CustomMetadata::decode(&m.encode()).expect("re-encoded metadata decodes");
        assert_eq!(again, m);
    }
});
