//! `ls --orphans` and `gc`: the `.log` / `.indexes` objects a crashed copy leaves without
//! their `.rsm-manifest` are listed and deleted, and nothing else: not a committed
//! segment, not a segment whose manifest exists but whose `.log` is gone, not keys that
//! are no segment keys.

use std::collections::BTreeSet;

use tsm_core::KafkaUuid;

use crate::util::World;

/// The `key` of every item of `v[field]` (with `action` when given).
fn keys(v: &serde_json::Value, field: &str, action: Option<&str>) -> BTreeSet<String> {
    v[field]
        .as_array()
        .unwrap_or_else(|| panic!("no {field} in {v}"))
        .iter()
        .filter(|i| action.is_none_or(|a| i["action"] == a))
        .map(|i| i["key"].as_str().expect("key").to_string())
        .collect()
}

#[test]
fn gc_deletes_exactly_the_orphans() {
    let w = World::new(true);
    let committed = w.write_segment("t", 0, 0, 30);
    // A copy killed after both uploads: .log and .indexes, no manifest.
    let pair = w.write_segment("t", 0, 100, 30);
    std::fs::remove_file(w.object(&format!("tiered/{}.rsm-manifest", pair.main_path)))
        .expect("remove manifest");
    // A copy killed after the .log.
    let lone_log = w.write_segment("t", 1, 0, 30);
    for suffix in ["rsm-manifest", "indexes"] {
        std::fs::remove_file(w.object(&format!("tiered/{}.{suffix}", lone_log.main_path)))
            .expect("remove");
    }
    // A lone .indexes under a segment id nothing committed (the committed one's bytes).
    let stray_id = KafkaUuid { msb: 77, lsb: 99 };
    let stray_main = format!(
        "t-{}/0/{:020}-{stray_id}",
        committed.meta.topic_id, committed.meta.start_offset
    );
    let stray = w.object(&format!("tiered/{stray_main}.indexes"));
    std::fs::copy(
        w.object(&format!("tiered/{}.indexes", committed.main_path)),
        &stray,
    )
    .expect("copy indexes");
    // A segment whose manifest exists but whose .log is gone: broken, not an orphan.
    let broken = w.write_segment("broken", 0, 0, 30);
    std::fs::remove_file(w.object(&format!("tiered/{}.log", broken.main_path)))
        .expect("remove log");
    // Objects that are no segment keys, and one outside key.prefix.
    std::fs::write(w.object("tiered/notes.log"), b"not a segment").expect("write");
    let outside = w.object(&format!("other/{}.log", pair.main_path));
    std::fs::create_dir_all(outside.parent().expect("parent")).expect("mkdir");
    std::fs::write(&outside, b"another prefix").expect("write");

    let orphans: BTreeSet<String> = [
        format!("tiered/{}.log", pair.main_path),
        format!("tiered/{}.indexes", pair.main_path),
        format!("tiered/{}.log", lone_log.main_path),
        format!("tiered/{stray_main}.indexes"),
    ]
    .into_iter()
    .collect();
    let kept_files: Vec<String> = ["log", "indexes", "rsm-manifest"]
        .iter()
        .map(|s| format!("tiered/{}.{s}", committed.main_path))
        .chain(["indexes", "rsm-manifest"].map(|s| format!("tiered/{}.{s}", broken.main_path)))
        .chain(["tiered/notes.log".to_string()])
        .collect();
    let all_kept_exist = || {
        for k in &kept_files {
            assert!(w.object(k).exists(), "{k} was deleted");
        }
        assert!(outside.exists());
    };

    // Plain `ls` still lists committed segments only.
    let ls = w.tsm(&["--json", "ls"]).expect_code(0).json();
    assert_eq!(ls["segments"].as_array().map(Vec::len), Some(2), "{ls}");

    // Fresh orphans are younger than the default 1h: `ls --orphans` lists none of them
    // (a copy could still be in flight).
    let v = w.tsm(&["--json", "ls", "--orphans"]).expect_code(0).json();
    assert_eq!(v["orphans"].as_array().map(Vec::len), Some(0), "{v}");
    assert_eq!(
        (v["objects"].as_u64(), v["segments"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(v["olderThanSeconds"], 3600);
    let text = w.tsm(&["ls", "--orphans"]).expect_code(0).stdout;
    assert!(text.contains("0 orphan object(s)"), "{text}");
    assert!(text.contains("older than 1h"), "{text}");
    assert_eq!(text.lines().count(), 1 + 1, "{text}");

    // ls --orphans --older-than 0s lists exactly the orphans, with their ages (file mtime).
    let v = w
        .tsm(&["--json", "ls", "--orphans", "--older-than", "0s"])
        .expect_code(0)
        .json();
    assert_eq!(keys(&v, "orphans", None), orphans, "{v}");
    assert_eq!(v["objects"], 4);
    assert_eq!(v["segments"], 3);
    assert_eq!(v["unknownAge"], 0, "{v}");
    for o in v["orphans"].as_array().expect("orphans") {
        for field in ["ageSeconds", "segmentAgeSeconds"] {
            let age = o[field].as_u64().unwrap_or_else(|| panic!("{field}: {o}"));
            assert!(age < 3600, "fresh orphan {field} {age}: {o}");
        }
        assert!(
            o["segmentAgeSeconds"].as_u64() <= o["ageSeconds"].as_u64(),
            "{o}"
        );
    }
    let text = w
        .tsm(&["ls", "--orphans", "--older-than", "0s"])
        .expect_code(0)
        .stdout;
    for k in &orphans {
        let line = text
            .lines()
            .find(|l| l.ends_with(k.as_str()))
            .unwrap_or_else(|| panic!("{k} not listed:\n{text}"));
        // SIZE AGE KEY: a fresh object's age is seconds or minutes (`3s`, `1m05s`), not `?`.
        let age = line.split_whitespace().rev().nth(1).expect("age column");
        assert!(
            age.ends_with('s') && age.starts_with(|c: char| c.is_ascii_digit()),
            "age: {line}"
        );
    }
    assert!(
        text.contains("4 orphan object(s)") && text.contains("in 3 segment(s)"),
        "{text}"
    );
    assert!(!text.contains("unknown age"), "{text}");
    assert_eq!(text.lines().count(), 1 + 4 + 1, "{text}");
    // Filters and key.prefix.mask.
    let v = w
        .tsm(&[
            "--json",
            "ls",
            "--orphans",
            "--older-than",
            "0s",
            "-t",
            "t",
            "-p",
            "1",
        ])
        .expect_code(0)
        .json();
    let lone: BTreeSet<String> = [format!("tiered/{}.log", lone_log.main_path)].into();
    assert_eq!(keys(&v, "orphans", None), lone, "{v}");
    let masked = w
        .tsm(&[
            "--set",
            "key.prefix.mask=true",
            "ls",
            "--orphans",
            "--older-than",
            "0s",
        ])
        .expect_code(0)
        .stdout;
    assert!(
        masked.contains("<prefix>/") && !masked.contains("tiered/"),
        "{masked}"
    );

    // gc needs an explicit age.
    let r = w.tsm(&["gc"]).expect_code(2);
    assert!(r.stderr.contains("--older-than"), "{}", r.stderr);
    assert!(r.stderr.contains("in flight"), "{}", r.stderr);
    let r = w.tsm(&["gc", "--older-than", "5x"]).expect_code(2);
    assert!(r.stderr.contains("5x"), "{}", r.stderr);
    w.tsm(&["ls", "--older-than", "1h"]).expect_code(2);

    // Too young for 1h: gc deletes nothing, --include-unknown-age or not (it only concerns
    // orphans whose age the store does not report; these have one).
    for extra in [None, Some("--include-unknown-age")] {
        let mut args = vec!["--json", "gc", "--older-than", "1h"];
        args.extend(extra);
        let v = w.tsm(&args).expect_code(0).json();
        assert_eq!(v["objects"].as_array().map(Vec::len), Some(0), "{v}");
        assert_eq!(
            (v["deleted"].as_u64(), v["keptUnknownAge"].as_u64()),
            (Some(0), Some(0))
        );
    }
    let text = w.tsm(&["gc", "--older-than", "1h"]).expect_code(0).stdout;
    assert!(text.contains("deleted 0 orphan object(s)"), "{text}");
    for k in &orphans {
        assert!(w.object(k).exists(), "young {k} deleted");
    }

    // --dry-run deletes nothing.
    let v = w
        .tsm(&["--json", "gc", "--older-than", "0s", "--dry-run"])
        .expect_code(0)
        .json();
    assert_eq!(keys(&v, "objects", Some("would-delete")), orphans, "{v}");
    assert_eq!(keys(&v, "objects", None), orphans, "{v}");
    assert_eq!(
        (v["deleted"].as_u64(), v["wouldDelete"].as_u64()),
        (Some(0), Some(4))
    );
    assert_eq!(v["keptUnknownAge"], 0);
    let text = w
        .tsm(&["gc", "--older-than", "0s", "--dry-run"])
        .expect_code(0)
        .stdout;
    assert!(text.contains("would delete 4 orphan object(s)"), "{text}");
    for k in &orphans {
        assert!(w.object(k).exists(), "dry run deleted {k}");
    }

    // The real run deletes exactly the orphans; their ages are known, so no
    // --include-unknown-age is needed.
    let v = w
        .tsm(&["--json", "gc", "--older-than", "0s"])
        .expect_code(0)
        .json();
    assert_eq!(keys(&v, "objects", Some("deleted")), orphans, "{v}");
    assert_eq!(keys(&v, "objects", None), orphans, "{v}");
    assert_eq!(
        (v["deleted"].as_u64(), v["segments"].as_u64()),
        (Some(4), Some(3))
    );
    assert_eq!(
        (v["keptUnknownAge"].as_u64(), v["failed"].as_u64()),
        (Some(0), Some(0))
    );
    for k in &orphans {
        assert!(!w.object(k).exists(), "{k} still there");
    }
    all_kept_exist();
    w.tsm(&["verify", "-t", "t"]).expect_code(0);
    let ls = w.tsm(&["--json", "ls"]).expect_code(0).json();
    assert_eq!(ls["segments"].as_array().map(Vec::len), Some(2), "{ls}");

    // Nothing left: a second run deletes nothing.
    let v = w
        .tsm(&["--json", "gc", "--older-than", "0s"])
        .expect_code(0)
        .json();
    assert_eq!(v["objects"].as_array().map(Vec::len), Some(0), "{v}");
    assert_eq!(v["deleted"], 0);
    let text = w.tsm(&["gc", "--older-than", "0s"]).expect_code(0).stdout;
    assert!(text.contains("deleted 0 orphan object(s)"), "{text}");
    let text = w
        .tsm(&["ls", "--orphans", "--older-than", "0s"])
        .expect_code(0)
        .stdout;
    assert!(text.contains("0 orphan object(s)"), "{text}");
    all_kept_exist();
}
