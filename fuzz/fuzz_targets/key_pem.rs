//! Key-ring PEM text (`encryption.key.pairs.<id>.*.key.file`): the input split at its first
//! NUL into the public and the private key file's text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (public, private) = text.split_once('\0').unwrap_or((text, text));
    let _ = tsm_crypto::KeyPair::from_pem("fuzz", public, private);
});
