//! A failed `tsm fetch -o FILE` leaves neither FILE nor its `FILE.tsm-partial`: a segment
//! whose `.log` is gone (fails before the first byte), a corrupted chunk (fails after
//! some bytes were written), an unknown segment, an index that cannot be read.

use std::path::Path;

use crate::util::World;

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_failed_fetch_leaves_no_partial_file() {
    let w = World::new(true);
    let gone = w.write_segment("f", 0, 0, 30);
    let corrupt = w.write_segment("f", 0, 100, 60);
    let out_dir = w.path("out");
    std::fs::create_dir_all(&out_dir).expect("mkdir");
    let out = out_dir.join("seg.log");
    let out_s = out.to_str().expect("utf-8");

    // The .log object is missing.
    std::fs::remove_file(w.object(&format!("tiered/{}.log", gone.main_path))).expect("rm");
    let r = w
        .tsm(&["fetch", &gone.main_path, "-o", out_s])
        .expect_code(1);
    assert!(r.stderr.contains(".log"), "{}", r.stderr);
    assert_eq!(names(&out_dir), Vec::<String>::new(), "missing .log");

    // A flipped byte in a late chunk: earlier chunks were written when it fails.
    let log = w.object(&format!("tiered/{}.log", corrupt.main_path));
    let mut bytes = std::fs::read(&log).expect("read log object");
    let at = bytes.len() - 500;
    bytes[at] ^= 0x01;
    std::fs::write(&log, &bytes).expect("write");
    let r = w
        .tsm(&["fetch", &corrupt.main_path, "-o", out_s])
        .expect_code(1);
    assert!(r.stderr.contains("chunk"), "{}", r.stderr);
    assert_eq!(names(&out_dir), Vec::<String>::new(), "corrupted chunk");
    // A range that ends before the bad chunk still works (and is renamed into place).
    w.tsm(&["fetch", &corrupt.main_path, "--range", "0-99", "-o", out_s])
        .expect_code(0);
    assert_eq!(names(&out_dir), vec!["seg.log".to_string()]);
    std::fs::remove_file(&out).expect("rm");

    // An index that cannot be restored (its .indexes object is gone).
    std::fs::remove_file(w.object(&format!("tiered/{}.indexes", corrupt.main_path))).expect("rm");
    w.tsm(&[
        "fetch",
        &corrupt.main_path,
        "--index",
        "offset",
        "-o",
        out_s,
    ])
    .expect_code(1);
    assert_eq!(names(&out_dir), Vec::<String>::new(), "missing .indexes");

    // An unknown segment id (a usage error: no such segment).
    w.tsm(&["fetch", "AAAAAAAAAAAAAAAAAAAAAA", "-o", out_s])
        .expect_code(2);
    assert_eq!(names(&out_dir), Vec::<String>::new(), "unknown segment");

    // A failed fetch does not touch an existing FILE (only FILE.tsm-partial is written).
    std::fs::write(&out, b"previous").expect("write");
    w.tsm(&["fetch", &corrupt.main_path, "-o", out_s])
        .expect_code(1);
    assert_eq!(names(&out_dir), vec!["seg.log".to_string()]);
    assert_eq!(std::fs::read(&out).expect("read"), b"previous");
}

/// Ctrl-C (SIGINT) or SIGTERM in the middle of `tsm fetch -o FILE` removes
/// `FILE.tsm-partial` and exits 130 / 143 (the default action killed the process and left
/// the partial file). The fetch is held mid-stream deterministically: the partial file's
/// path is a FIFO the test opens and stops reading, so the fetch blocks on a full pipe
/// until the signal has been sent.
#[test]
fn an_interrupted_fetch_removes_its_partial_file() {
    use std::io::Read;
    let w = World::new(false);
    // ~630 KB of log: far more than the pipe holds.
    let seg = w.write_segment("f", 0, 0, 3000);
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let out_dir = w.path(&format!("out-{signal}"));
        std::fs::create_dir_all(&out_dir).expect("mkdir");
        let out = out_dir.join("seg.log");
        let partial = out_dir.join("seg.log.tsm-partial");
        let status = std::process::Command::new("mkfifo")
            .arg(&partial)
            .status()
            .expect("run mkfifo");
        assert!(status.success(), "mkfifo {}", partial.display());
        let cfg = w.path("tsm.properties");
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tsm"))
            .args(["--config", cfg.to_str().expect("utf-8"), "--quiet", "fetch"])
            .arg(&seg.main_path)
            .arg("-o")
            .arg(&out)
            .env_remove("TSM_CONFIG")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn tsm");
        // Blocks until tsm opens the partial file, then until its first bytes arrive.
        let mut reader = std::fs::File::open(&partial).expect("open the FIFO");
        let mut first = [0u8; 1024];
        reader
            .read_exact(&mut first)
            .expect("first bytes of the fetch");
        // tsm is now writing (and soon blocked on the full pipe): interrupt it.
        let status = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal}");
        // Unblock its pending write; the stream ends when tsm closes the file.
        let mut rest = Vec::new();
        let _ = reader.read_to_end(&mut rest);
        let mut stderr = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut stderr);
        }
        let exit = child.wait().expect("wait for tsm");
        assert_eq!(
            exit.code(),
            Some(code),
            "SIG{signal}: {exit:?}, stderr: {stderr}"
        );
        assert!(
            stderr.contains(&format!("interrupted by SIG{signal}")),
            "{stderr}"
        );
        assert!(
            first.len() + rest.len() < 3000 * 150,
            "the fetch ended before the signal: nothing was interrupted"
        );
        assert_eq!(
            names(&out_dir),
            Vec::<String>::new(),
            "SIG{signal} left files"
        );
    }
}
