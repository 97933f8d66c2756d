//! copy a local segment set, read it back, delete it.

use crate::util::{World, batches};

#[test]
fn copy_fetch_delete_round_trip() {
    let w = World::new(true);
    let dir = w.path("local");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let log = batches(33, 500, 200);
    let base = format!("{:020}", 500);
    std::fs::write(dir.join(format!("{base}.log")), &log).expect("write");
    std::fs::write(dir.join(format!("{base}.index")), vec![1u8; 16]).expect("write");
    std::fs::write(dir.join(format!("{base}.timeindex")), vec![2u8; 24]).expect("write");
    let file = dir.join(format!("{base}.log"));
    let c = w
        .tsm(&[
            "--json",
            "copy",
            file.to_str().expect("utf-8"),
            "--topic",
            "backfill",
            "--partition",
            "2",
        ])
        .expect_code(0)
        .json();
    assert_eq!(c["startOffset"], 500);
    assert!(c["endOffset"].as_i64().is_some_and(|e| e > 500), "{c}");
    assert_eq!(c["batches"], 33);
    let seg = c["segmentId"].as_str().expect("segment id").to_string();

    let ls = w
        .tsm(&["--json", "ls", "--topic", "backfill"])
        .expect_code(0)
        .json();
    assert_eq!(ls["segments"][0]["segmentId"], seg.as_str());
    let out = w.path("restored.log");
    w.tsm(&["fetch", &seg, "-o", out.to_str().expect("utf-8")])
        .expect_code(0);
    assert!(std::fs::read(&out).expect("read") == log);
    w.tsm(&[
        "fetch",
        &seg,
        "--index",
        "timeindex",
        "-o",
        out.to_str().expect("utf-8"),
    ])
    .expect_code(0);
    assert_eq!(std::fs::read(&out).expect("read"), vec![2u8; 24]);
    w.tsm(&["verify"]).expect_code(0);

    // A file that is not a Kafka log is refused before anything is uploaded.
    let junk = dir.join(format!("{:020}.log", 9));
    std::fs::write(
        &junk,
        b"not a kafka log at all, no no no no no no no no no no no no no",
    )
    .expect("write");
    w.tsm(&[
        "copy",
        junk.to_str().expect("utf-8"),
        "--topic",
        "junk",
        "--partition",
        "0",
    ])
    .expect_code(1);

    // delete: dry run keeps, real delete removes all three objects; again is fine.
    let d = w.tsm(&["delete", &seg, "--dry-run"]).expect_code(0).stdout;
    assert!(d.contains("would delete"), "{d}");
    assert_eq!(
        w.tsm(&["--json", "ls"]).expect_code(0).json()["segments"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    w.tsm(&["delete", &seg]).expect_code(0);
    let ls = w.tsm(&["--json", "ls"]).expect_code(0).json();
    assert_eq!(ls["segments"].as_array().map(Vec::len), Some(0), "{ls}");
    let main = format!(
        "backfill-{}/2/{base}-{seg}",
        c["topicId"].as_str().expect("topic id")
    );
    w.tsm(&["delete", &main]).expect_code(0);
}
