//! rekey: interrupted halfway (`--limit`), resumed, idempotent; `.log`/`.indexes`
//! untouched; afterwards verify passes with the old key pair removed from the ring.

use crate::util::World;

fn objects(w: &World, paths: &[String], suffix: &str) -> Vec<Vec<u8>> {
    paths
        .iter()
        .map(|p| std::fs::read(w.object(&format!("tiered/{p}{suffix}"))).expect("read object"))
        .collect()
}

#[test]
fn rekey_interrupted_then_resumed_then_verify_without_the_old_key() {
    let mut w = World::new(true);
    let segs: Vec<String> = (0..4)
        .map(|i| {
            w.write_segment("r", i % 2, i64::from(i) * 100, 15)
                .main_path
        })
        .collect();
    let logs = objects(&w, &segs, ".log");
    let indexes = objects(&w, &segs, ".indexes");

    // Dry run: nothing written.
    let before = objects(&w, &segs, ".rsm-manifest");
    let d = w
        .tsm(&["--json", "rekey", "--to", "k2", "--dry-run"])
        .expect_code(0)
        .json();
    assert_eq!(d["rewritten"], 4, "{d}");
    assert_eq!(objects(&w, &segs, ".rsm-manifest"), before);

    // Interrupted after two manifests.
    let r = w
        .tsm(&["--json", "rekey", "--to", "k2", "--limit", "2"])
        .expect_code(0)
        .json();
    assert_eq!(r["rewritten"], 2, "{r}");
    assert_eq!(r["stoppedAtLimit"], true);
    let ls = w.tsm(&["--json", "ls"]).expect_code(0).json();
    let ids: Vec<&str> = ls["segments"]
        .as_array()
        .expect("segments")
        .iter()
        .filter_map(|s| s["keyPairId"].as_str())
        .collect();
    assert_eq!(ids.iter().filter(|i| **i == "k2").count(), 2, "{ids:?}");
    // Mixed state reads fine with both pairs on the ring.
    w.tsm(&["verify"]).expect_code(0);

    // Resumed: the other two; the first two are skipped.
    let r = w
        .tsm(&["--json", "rekey", "--to", "k2"])
        .expect_code(0)
        .json();
    assert_eq!(r["rewritten"], 2, "{r}");
    let skipped = r["segments"]
        .as_array()
        .expect("segments")
        .iter()
        .filter(|s| s["action"] == "skipped")
        .count();
    assert_eq!(skipped, 2);
    // Idempotent: nothing left to do.
    let r = w
        .tsm(&["--json", "rekey", "--to", "k2"])
        .expect_code(0)
        .json();
    assert_eq!(r["rewritten"], 0, "{r}");

    // Only manifests changed; only dataKey in them.
    assert!(objects(&w, &segs, ".log") == logs, ".log objects changed");
    assert!(
        objects(&w, &segs, ".indexes") == indexes,
        ".indexes objects changed"
    );
    let after = objects(&w, &segs, ".rsm-manifest");
    for (b, a) in before.iter().zip(&after) {
        let mut b: serde_json::Value = serde_json::from_slice(b).expect("json");
        let mut a: serde_json::Value = serde_json::from_slice(a).expect("json");
        assert!(
            a["encryption"]["dataKey"]
                .as_str()
                .is_some_and(|k| k.starts_with("k2:"))
        );
        assert_eq!(a["encryption"]["aad"], b["encryption"]["aad"]);
        a["encryption"]["dataKey"] = serde_json::Value::Null;
        b["encryption"]["dataKey"] = serde_json::Value::Null;
        assert_eq!(a, b);
    }

    // The old key pair removed from the ring: everything still verifies.
    for k in [
        "encryption.key.pairs.k1.public.key.file",
        "encryption.key.pairs.k1.private.key.file",
    ] {
        w.props.remove(k);
    }
    w.props.insert("encryption.key.pairs".into(), "k2".into());
    w.props.insert("encryption.key.pair.id".into(), "k2".into());
    w.write_properties();
    w.tsm(&["verify"]).expect_code(0);
}

#[test]
fn rekey_fails_loudly_when_the_old_key_pair_is_gone() {
    let mut w = World::new(true);
    w.write_segment("r", 0, 0, 5);
    // Ring holds only k2: the segment's DEK (under k1) cannot be unwrapped.
    for k in [
        "encryption.key.pairs.k1.public.key.file",
        "encryption.key.pairs.k1.private.key.file",
    ] {
        w.props.remove(k);
    }
    w.props.insert("encryption.key.pairs".into(), "k2".into());
    w.props.insert("encryption.key.pair.id".into(), "k2".into());
    w.write_properties();
    let r = w.tsm(&["rekey", "--to", "k2"]).expect_code(1);
    assert!(r.stdout.contains("failed"), "{}", r.stdout);
    // verify names the missing key pair.
    let v = w.tsm(&["--json", "verify"]).expect_code(1).json();
    assert!(v.to_string().contains("k1"), "{v}");
}

#[test]
fn rekey_leaves_a_segment_alone_when_its_log_is_gone() {
    let w = World::new(true);
    let a = w.write_segment("g", 0, 0, 5);
    std::fs::remove_file(w.object(&format!("tiered/{}.log", a.main_path))).expect("rm");
    let manifest = w.object(&format!("tiered/{}.rsm-manifest", a.main_path));
    let before = std::fs::read(&manifest).expect("read");
    let r = w
        .tsm(&["--json", "rekey", "--to", "k2"])
        .expect_code(0)
        .json();
    assert_eq!(r["segments"][0]["action"], "skipped", "{r}");
    assert_eq!(std::fs::read(&manifest).expect("read"), before);
}
