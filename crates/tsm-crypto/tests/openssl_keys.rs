//! Key files as operators make them with the `openssl` CLI (the usual way to create the
//! `encryption.key.pairs.*` PEM files): `genpkey` (PKCS#8), `pkey -pubout` (SPKI) and
//! `rsa -traditional` (PKCS#1) load into the key ring, and a DEK wrapped in Rust is
//! unwrapped by `openssl pkeyutl` with OAEP SHA3-512 / MGF1 SHA3-512 (a third, independent
//! implementation next to BouncyCastle).
//!
//! Needs the `openssl` binary (OpenSSL 3); fails loudly without it.

use std::path::Path;
use std::process::Command;

use tsm_crypto::{DataKey, KeyRing, parse_data_key};

fn openssl(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run `openssl` ({e}); install OpenSSL 3"));
    assert!(
        out.status.success(),
        "openssl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn openssl_generated_keys_and_oaep_sha3() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    openssl(
        dir,
        &[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            "private.pem",
        ],
    );
    openssl(
        dir,
        &[
            "pkey",
            "-in",
            "private.pem",
            "-pubout",
            "-out",
            "public.pem",
        ],
    );
    openssl(
        dir,
        &[
            "rsa",
            "-in",
            "private.pem",
            "-traditional",
            "-out",
            "private-pkcs1.pem",
        ],
    );
    let pkcs1 = std::fs::read_to_string(dir.join("private-pkcs1.pem")).unwrap();
    assert!(
        pkcs1.starts_with("-----BEGIN RSA PRIVATE KEY-----"),
        "{}",
        &pkcs1[..40]
    );

    let ring = KeyRing::from_files(
        [
            ("p8", dir.join("public.pem"), dir.join("private.pem")),
            ("p1", dir.join("public.pem"), dir.join("private-pkcs1.pem")),
        ],
        "p8",
    )
    .expect("openssl-made PEM files load");

    let dek = DataKey::generate().unwrap();
    let data_key = ring.wrap(&dek).unwrap();
    // Both entries hold the same key: the PKCS#1 one unwraps the PKCS#8 one's output.
    let (_, wrapped) = parse_data_key(&data_key).unwrap();
    let via_p1 = ring
        .unwrap(&tsm_crypto::format_data_key("p1", &wrapped).unwrap())
        .unwrap();
    assert_eq!(via_p1.expose_secret(), dek.expose_secret());

    std::fs::write(dir.join("wrapped.bin"), &wrapped).unwrap();
    let oaep = [
        "-pkeyopt",
        "rsa_padding_mode:oaep",
        "-pkeyopt",
        "rsa_oaep_md:sha3-512",
        "-pkeyopt",
        "rsa_mgf1_md:sha3-512",
    ];
    let mut args = vec![
        "pkeyutl",
        "-decrypt",
        "-inkey",
        "private.pem",
        "-in",
        "wrapped.bin",
    ];
    args.extend(oaep);
    let unwrapped = openssl(dir, &args);
    assert_eq!(
        &unwrapped[..],
        &dek.expose_secret()[..],
        "openssl unwraps Rust's DEK"
    );

    // And the reverse: openssl wraps, Rust unwraps.
    std::fs::write(dir.join("dek.bin"), dek.expose_secret()).unwrap();
    let mut args = vec![
        "pkeyutl",
        "-encrypt",
        "-pubin",
        "-inkey",
        "public.pem",
        "-in",
        "dek.bin",
    ];
    args.extend(oaep);
    let wrapped_by_openssl = openssl(dir, &args);
    let back = ring
        .unwrap(&tsm_crypto::format_data_key("p8", &wrapped_by_openssl).unwrap())
        .expect("Rust unwraps openssl's OAEP SHA3-512 output");
    assert_eq!(back.expose_secret(), dek.expose_secret());
}
