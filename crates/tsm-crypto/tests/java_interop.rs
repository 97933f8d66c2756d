//! Interoperability with Java, proven rather than assumed: runs the Maven project in
//! `interop/` (BouncyCastle `RSA/NONE/OAEPWithSHA3-512AndMGF1Padding`, JCE
//! `AES/GCM/NoPadding`, as Aiven's Java plugin uses them) against vectors written here:
//!
//! - a DEK wrapped in Rust is unwrapped by BouncyCastle, and one wrapped by BouncyCastle is
//!   unwrapped in Rust;
//! - a key pair generated and PEM-encoded by Java loads in Rust and unwraps a DEK;
//! - chunks encrypted in Rust are decrypted by the JCE, and chunks encrypted by the JCE are
//!   decrypted in Rust.
//!
//! Needs `mvn` (Maven 3.8+) and Java 17 on PATH and Maven Central (or a populated
//! `~/.m2`). Fails loudly when they are missing.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{pem_pair, write_pair};
use tsm_crypto::{Aad, ChunkCipher, DataKey, ENCRYPTION_OVERHEAD, KeyRing};

const KEY_ID: &str = "interop-key";
/// Plaintext sizes: empty, tiny, around the AES block size, and several blocks + a tail.
const SIZES: &[usize] = &[0, 1, 15, 16, 17, 4096, 100_003];

fn interop_pom() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("interop/pom.xml")
}

fn random_bytes(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    getrandom::fill(&mut v).expect("OS RNG");
    v
}

fn run_java(dir: &Path) {
    let output = Command::new("mvn")
        .args(["-q", "-B", "-f"])
        .arg(interop_pom())
        .args(["compile", "exec:java"])
        .arg(format!(
            "-Dinterop.buildDir={}",
            Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join("interop-maven")
                .display()
        ))
        .arg(format!("-Dexec.args={}", dir.display()))
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run `mvn` ({e}): the Java interop test needs Maven and Java 17 on PATH")
        });
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "Java interop side failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
    assert!(
        stdout.contains("java interop: ok"),
        "Java side did not report success:\n{stdout}\n{stderr}"
    );
}

#[test]
fn rust_and_java_interoperate() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path();
    let (public, private) = write_pair(dir, "k", pem_pair(0), false);
    std::fs::rename(&public, dir.join("public.pem")).unwrap();
    std::fs::rename(&private, dir.join("private.pem")).unwrap();
    std::fs::write(dir.join("key-id.txt"), KEY_ID).unwrap();

    let ring = KeyRing::from_files(
        [(KEY_ID, dir.join("public.pem"), dir.join("private.pem"))],
        KEY_ID,
    )
    .expect("key ring from PEM files");
    let dek = DataKey::generate().unwrap();
    let aad = Aad::generate().unwrap();
    std::fs::write(dir.join("dek.bin"), dek.expose_secret()).unwrap();
    std::fs::write(dir.join("aad.bin"), aad.as_bytes()).unwrap();
    std::fs::write(dir.join("rust-wrapped.txt"), ring.wrap(&dek).unwrap()).unwrap();

    let cipher = ChunkCipher::new(&dek, &aad);
    let mut plains = Vec::new();
    for (i, &n) in SIZES.iter().enumerate() {
        let plain = random_bytes(n);
        let stored = cipher.encrypt(&plain).unwrap();
        assert_eq!(stored.len(), n + ENCRYPTION_OVERHEAD);
        std::fs::write(dir.join(format!("plain-{i}.bin")), &plain).unwrap();
        std::fs::write(dir.join(format!("rust-chunk-{i}.bin")), &stored).unwrap();
        plains.push(plain);
    }

    run_java(dir);

    // BouncyCastle-wrapped DEK -> Rust unwrap.
    let java_wrapped = std::fs::read_to_string(dir.join("java-wrapped.txt")).unwrap();
    let java_dek = std::fs::read(dir.join("java-dek.bin")).unwrap();
    let unwrapped = ring
        .unwrap(&java_wrapped)
        .expect("Rust unwraps the BouncyCastle-wrapped DEK");
    assert_eq!(&unwrapped.expose_secret()[..], &java_dek[..]);

    // A key pair generated and PEM-encoded by Java loads in Rust and unwraps Java's DEK.
    let java_ring = KeyRing::from_files(
        [(
            "java-key",
            dir.join("java-public.pem"),
            dir.join("java-private.pem"),
        )],
        "java-key",
    )
    .expect("Rust loads the Java-generated PEM key pair");
    let own = std::fs::read_to_string(dir.join("java-own-wrapped.txt")).unwrap();
    let unwrapped = java_ring
        .unwrap(&own)
        .expect("Rust unwraps a DEK wrapped under the Java key pair");
    assert_eq!(&unwrapped.expose_secret()[..], &java_dek[..]);

    // JCE-encrypted chunks -> Rust decrypt.
    for (i, plain) in plains.iter().enumerate() {
        let stored = std::fs::read(dir.join(format!("java-chunk-{i}.bin"))).unwrap();
        let got = cipher
            .decrypt(i as u64, &stored)
            .unwrap_or_else(|e| panic!("Rust decrypts the JCE chunk {i}: {e}"));
        assert_eq!(&got, plain, "chunk {i}");
    }
}
