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
