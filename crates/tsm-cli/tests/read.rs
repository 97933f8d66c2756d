//! ls, inspect, fetch (whole, range, index) and a clean verify on engine-written
//! segments (zstd + AES, several chunks each).

use crate::util::World;

#[test]
fn ls_inspect_fetch_and_verify_engine_written_segments() {
    let w = World::new(true);
    let a = w.write_segment("orders", 0, 0, 40);
    let b = w.write_segment("orders", 0, 200, 25);
    let c = w.write_segment("clicks-eu", 3, 1000, 10);

    // ls: all, by topic, by partition; JSON fields.
    let all = w.tsm(&["--json", "ls"]).expect_code(0).json();
    let segs = all["segments"].as_array().expect("segments");
    assert_eq!(segs.len(), 3, "{all}");
    let orders = w
        .tsm(&["--json", "ls", "--topic", "orders"])
        .expect_code(0)
        .json();
    assert_eq!(orders["segments"].as_array().map(Vec::len), Some(2));
    let first = &orders["segments"][0];
    assert_eq!(first["startOffset"], 0);
    assert_eq!(first["originalSize"], a.log.len() as u64);
    assert_eq!(first["compression"], true);
    assert_eq!(first["keyPairId"], "k1");
    assert_eq!(first["endOffset"], a.meta.end_offset);
    let p3 = w
        .tsm(&["--json", "ls", "--partition", "3"])
        .expect_code(0)
        .json();
    assert_eq!(p3["segments"][0]["topic"], "clicks-eu");
    let text = w.tsm(&["ls"]).expect_code(0).stdout;
    assert!(
        text.contains("clicks-eu") && text.contains("3 segment(s)"),
        "{text}"
    );
    // Totals: original bytes (the manifests') and stored bytes (every object).
    let original: u64 = [&a, &b, &c].iter().map(|s| s.log.len() as u64).sum();
    let stored: u64 = segs
        .iter()
        .map(|s| s["storedSize"].as_u64().expect("stored"))
        .sum();
    assert_eq!(all["totals"]["segments"], 3, "{all}");
    assert_eq!(all["totals"]["originalSize"], original, "{all}");
    assert_eq!(all["totals"]["storedSize"], stored, "{all}");
    assert_eq!(all["totals"]["manifestErrors"], 0, "{all}");
    let last = text.lines().last().expect("a summary");
    assert!(
        last.starts_with("3 segment(s), ")
            && last.contains(" original, ")
            && last.contains(" stored ("),
        "{text}"
    );

    // inspect by main path and by segment id.
    let i = w
        .tsm(&["--json", "inspect", &a.main_path])
        .expect_code(0)
        .json();
    assert_eq!(i["manifest"]["chunkIndex"]["type"], "variable");
    assert_eq!(
        i["manifest"]["chunkIndex"]["chunks"],
        (a.log.len() as u64).div_ceil(1000)
    );
    assert_eq!(i["manifest"]["keyPairId"], "k1");
    // No custom.metadata.fields.include configured: the plugin returns no custom metadata.
    assert_eq!(i["customMetadata"], serde_json::json!({}), "{i}");
    let with_fields = w
        .tsm(&[
            "--json",
            "--set",
            "custom.metadata.fields.include=OBJECT_KEY,REMOTE_SIZE",
            "inspect",
            &a.main_path,
        ])
        .expect_code(0)
        .json();
    let custom = &with_fields["customMetadata"];
    assert_eq!(custom["object_key"], a.main_path.as_str(), "{custom}");
    assert!(
        custom["remote_size"].as_u64().is_some_and(|n| n > 0),
        "{custom}"
    );
    assert!(custom.get("object_prefix").is_none(), "{custom}");
    let by_id = w
        .tsm(&["--json", "inspect", &b.meta.segment_id.to_string()])
        .expect_code(0)
        .json();
    assert_eq!(
        by_id["segment"],
        format!("orders-0/{:020}-{}", 200, b.meta.segment_id)
    );
    let text = w
        .tsm(&["inspect", &format!("tiered/{}.log", c.main_path)])
        .expect_code(0)
        .stdout;
    assert!(text.contains("AES-256-GCM, key pair k1"), "{text}");
    assert!(
        text.contains("integrity    digests and MAC (") && !text.contains("chunkDigests"),
        "{text}"
    );
    // The broker's metadata for people: UTC times (the epoch milliseconds after them).
    for want in [
        &format!("  offsets        1000..{}", c.meta.end_offset)[..],
        "  max timestamp  2023-11-14T22:13:20.000Z (1700000000000 ms)",
        "  event time     2023-11-14T22:13:20.000Z (1700000000000 ms)",
        "  broker id      0",
        "  leader epochs  epoch 0 from offset 1000",
    ] {
        assert!(text.contains(want), "no {want:?} in {text}");
    }

    // fetch: whole segment byte-identical, a range, indexes.
    let out = w.path("restored.log");
    let o = out.to_str().expect("utf-8");
    w.tsm(&["fetch", &a.main_path, "-o", o]).expect_code(0);
    assert!(
        std::fs::read(&out).expect("read") == a.log,
        "whole segment differs"
    );
    w.tsm(&["fetch", &a.main_path, "--range", "1500-4321", "-o", o])
        .expect_code(0);
    assert!(
        std::fs::read(&out).expect("read") == a.log[1500..=4321],
        "range differs"
    );
    w.tsm(&["fetch", &a.main_path, "--range", "5000-", "-o", o])
        .expect_code(0);
    assert!(
        std::fs::read(&out).expect("read") == a.log[5000..],
        "open range differs"
    );
    w.tsm(&["fetch", &a.main_path, "--index", "offset", "-o", o])
        .expect_code(0);
    assert_eq!(std::fs::read(&out).expect("read"), a.offset_index);
    w.tsm(&["fetch", &a.main_path, "--index", "timestamp", "-o", o])
        .expect_code(0);
    assert_eq!(std::fs::read(&out).expect("read"), a.time_index);
    w.tsm(&["fetch", &a.main_path, "--index", "transaction", "-o", o])
        .expect_code(0);
    assert_eq!(Some(std::fs::read(&out).expect("read")), a.txn_index);
    // No transaction index on partition 3: an error, not a crash.
    w.tsm(&["fetch", &c.main_path, "--index", "transaction", "-o", o])
        .expect_code(1);
    // To stdout.
    let r = w
        .tsm(&["fetch", &c.main_path, "--range", "0-99", "-o", "-"])
        .expect_code(0);
    assert!(r.raw == c.log[..100], "stdout range differs");

    // verify: all good.
    let v = w.tsm(&["--json", "verify"]).expect_code(0).json();
    assert_eq!(v["checked"], 3);
    assert_eq!(v["bad"], 0);
    assert_eq!(v["segments"][0]["bytes"], c.log.len() as u64, "{v}");
    let text = w
        .tsm(&["verify", "--topic", "orders"])
        .expect_code(0)
        .stdout;
    assert!(text.contains("2 segment(s) checked, 0 bad"), "{text}");
}

#[test]
fn unencrypted_uncompressed_segments_read_back() {
    let mut w = World::new(false);
    w.props.insert("compression.enabled".into(), "false".into());
    w.write_properties();
    let a = w.write_segment("plain", 1, 0, 30);
    let ls = w.tsm(&["--json", "ls"]).expect_code(0).json();
    assert_eq!(ls["segments"][0]["keyPairId"], serde_json::Value::Null);
    let i = w
        .tsm(&["--json", "inspect", &a.main_path])
        .expect_code(0)
        .json();
    assert_eq!(i["manifest"]["chunkIndex"]["type"], "fixed");
    let out = w.path("restored.log");
    w.tsm(&["fetch", &a.main_path, "-o", out.to_str().expect("utf-8")])
        .expect_code(0);
    assert!(std::fs::read(&out).expect("read") == a.log);
    w.tsm(&["verify"]).expect_code(0);
}
