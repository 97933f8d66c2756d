//! verify finds damaged segments and says what and where: a flipped byte in a chunk, a
//! truncated object, a missing index, a manifest naming the wrong key pair, a record
//! batch with a bad CRC in an untransformed segment, each integrity case (another
//! segment's objects, a shrunk size, a removed MAC, no integrity data at all).

use crate::util::World;

fn problems_of<'a>(v: &'a serde_json::Value, main_path_tail: &str) -> Vec<&'a str> {
    let seg = v["segments"]
        .as_array()
        .expect("segments")
        .iter()
        .find(|s| {
            s["manifestKey"]
                .as_str()
                .is_some_and(|k| k.contains(main_path_tail))
        })
        .unwrap_or_else(|| panic!("no segment {main_path_tail} in {v}"));
    seg["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter_map(|p| p.as_str())
        .collect()
}

#[test]
fn verify_reports_each_kind_of_damage() {
    let w = World::new(true);
    let flipped = w.write_segment("t", 0, 0, 30);
    let truncated = w.write_segment("t", 0, 100, 30);
    let no_index = w.write_segment("t", 0, 200, 30);
    let wrong_key = w.write_segment("t", 0, 300, 30);
    let good = w.write_segment("t", 0, 400, 30);
    w.tsm(&["verify"]).expect_code(0);

    // A flipped byte inside chunk 1 of the .log.
    let log = w.object(&format!("tiered/{}.log", flipped.main_path));
    let mut bytes = std::fs::read(&log).expect("read log object");
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    std::fs::write(&log, &bytes).expect("write");
    // A truncated .log.
    let log = w.object(&format!("tiered/{}.log", truncated.main_path));
    let bytes = std::fs::read(&log).expect("read log object");
    std::fs::write(&log, &bytes[..bytes.len() - 10]).expect("truncate");
    // A missing .indexes.
    std::fs::remove_file(w.object(&format!("tiered/{}.indexes", no_index.main_path)))
        .expect("remove indexes");
    // A manifest naming key pair k2 for a DEK wrapped under k1.
    let m = w.object(&format!("tiered/{}.rsm-manifest", wrong_key.main_path));
    let text = std::fs::read_to_string(&m).expect("read manifest");
    assert!(text.contains("\"dataKey\":\"k1:"), "{text}");
    std::fs::write(&m, text.replace("\"dataKey\":\"k1:", "\"dataKey\":\"k2:")).expect("write");

    let r = w.tsm(&["--json", "verify"]).expect_code(1);
    let v = r.json();
    assert_eq!(v["checked"], 5);
    assert_eq!(v["bad"], 4, "{v}");
    assert!(r.stderr.contains("4 of 5"), "{}", r.stderr);

    let p = problems_of(&v, &flipped.main_path);
    assert!(p.iter().any(|p| p.contains("chunk")), "flipped: {p:?}");
    let p = problems_of(&v, &truncated.main_path);
    assert!(
        p.iter()
            .any(|p| p.contains("truncated") && p.contains(".log")),
        "truncated: {p:?}"
    );
    let p = problems_of(&v, &no_index.main_path);
    assert!(
        p.iter().any(|p| p.contains(".indexes: object missing")),
        "missing index: {p:?}"
    );
    let p = problems_of(&v, &wrong_key.main_path);
    assert!(p.iter().any(|p| p.contains("\"k2\"")), "wrong key: {p:?}");
    assert!(problems_of(&v, &good.main_path).is_empty());

    // The text report names the bad segments too.
    let text = w.tsm(&["verify"]).expect_code(1).stdout;
    assert!(text.contains("BAD ") && text.contains("OK "), "{text}");
    assert!(text.contains("5 segment(s) checked, 4 bad"), "{text}");
}

#[test]
fn verify_checks_record_batch_crcs_and_index_sizes() {
    let mut w = World::new(false);
    w.props.insert("compression.enabled".into(), "false".into());
    w.write_properties();
    let crc = w.write_segment("plain", 0, 0, 20);
    let idx = w.write_segment("plain", 0, 100, 20);
    let digested = w.write_segment("plain", 0, 200, 20);
    // Stored bytes are the original bytes: flip a payload byte of batch 3, in a segment
    // without integrity data (as the Java plugin writes them: only the batch CRC tells)
    // and in one with (its chunk digest tells first).
    strip_integrity(&w, &crc.main_path);
    for seg in [&crc, &digested] {
        let log = w.object(&format!("tiered/{}.log", seg.main_path));
        let mut bytes = std::fs::read(&log).expect("read");
        bytes[3 * (61 + 150) + 100] ^= 1;
        std::fs::write(&log, &bytes).expect("write");
    }
    // A .indexes object 3 bytes short of what segmentIndexes say.
    let indexes = w.object(&format!("tiered/{}.indexes", idx.main_path));
    let bytes = std::fs::read(&indexes).expect("read");
    std::fs::write(&indexes, &bytes[..bytes.len() - 3]).expect("write");
    let v = w.tsm(&["--json", "verify"]).expect_code(1).json();
    let p = problems_of(&v, &crc.main_path);
    assert!(p.iter().any(|p| p.contains("CRC32C")), "crc: {p:?}");
    let p = problems_of(&v, &digested.main_path);
    assert!(
        p.iter().any(|p| p.contains("do not match the digest")),
        "digested: {p:?}"
    );
    let p = problems_of(&v, &idx.main_path);
    assert!(
        p.iter().any(|p| p.contains(".indexes: stored size")),
        "indexes: {p:?}"
    );
}

/// Removes a segment's integrity data from its manifest (as if the Java plugin wrote it).
fn strip_integrity(w: &World, main_path: &str) {
    edit_manifest(w, main_path, |m| {
        m["remoteLogSegmentMetadata"]
            .as_object_mut()
            .expect("metadata")
            .remove("tsmIntegrity");
    });
}

fn edit_manifest(w: &World, main_path: &str, f: impl FnOnce(&mut serde_json::Value)) {
    let path = w.object(&format!("tiered/{main_path}.rsm-manifest"));
    let mut m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read manifest")).expect("json");
    f(&mut m);
    std::fs::write(&path, serde_json::to_vec(&m).expect("json")).expect("write manifest");
}

/// Each case of a writer of the bucket tampering with an encrypted segment is a bad
/// segment with what and where: another segment's objects at its keys, a size shrunk in
/// the manifest, a MAC removed. A segment without integrity data is reported as such, and
/// is bad only under `tsm.integrity.required=true`.
#[test]
fn verify_reports_each_integrity_case() {
    let mut w = World::new(true);
    let substituted = w.write_segment("i", 0, 0, 30);
    let other = w.write_segment("i", 1, 0, 30);
    let shrunk = w.write_segment("i", 0, 100, 30);
    let stripped_mac = w.write_segment("i", 0, 200, 30);
    let legacy = w.write_segment("i", 0, 300, 30);
    let good = w.write_segment("i", 0, 400, 30);
    let v = w.tsm(&["--json", "verify"]).expect_code(0).json();
    assert_eq!(v["withoutIntegrity"], 0, "{v}");
    for s in v["segments"].as_array().expect("segments") {
        assert_eq!(s["integrity"], "mac", "{s}");
    }

    for ext in ["log", "indexes", "rsm-manifest"] {
        let from = w.object(&format!("tiered/{}.{ext}", other.main_path));
        let to = w.object(&format!("tiered/{}.{ext}", substituted.main_path));
        std::fs::copy(from, to).expect("copy object");
    }
    edit_manifest(&w, &shrunk.main_path, |m| {
        let size = m["chunkIndex"]["originalFileSize"].as_u64().expect("size");
        m["chunkIndex"]["originalFileSize"] = (size - 1).into();
    });
    edit_manifest(&w, &stripped_mac.main_path, |m| {
        m["remoteLogSegmentMetadata"]["tsmIntegrity"]
            .as_object_mut()
            .expect("integrity")
            .remove("mac");
    });
    strip_integrity(&w, &legacy.main_path);

    let r = w.tsm(&["--json", "verify"]).expect_code(1);
    let v = r.json();
    assert_eq!(v["bad"], 3, "{v}");
    assert_eq!(v["withoutIntegrity"], 1, "{v}");
    let has = |seg: &str, words: &str| {
        let p = problems_of(&v, seg);
        assert!(p.iter().any(|p| p.contains(words)), "{seg}: {p:?}");
    };
    has(&substituted.main_path, "not for the segment asked for");
    has(&shrunk.main_path, "MAC does not match");
    has(&stripped_mac.main_path, "no MAC on an encrypted segment");
    assert!(problems_of(&v, &legacy.main_path).is_empty());
    assert!(problems_of(&v, &good.main_path).is_empty());
    let text = w.tsm(&["verify"]).expect_code(1).stdout;
    assert!(text.contains("integrity: none"), "{text}");
    assert!(
        text.contains("6 segment(s) checked, 3 bad, 1 without integrity data"),
        "{text}"
    );

    w.props
        .insert("tsm.integrity.required".into(), "true".into());
    w.write_properties();
    let v = w.tsm(&["--json", "verify"]).expect_code(1).json();
    assert_eq!(v["bad"], 4, "{v}");
    let p = problems_of(&v, &legacy.main_path);
    assert!(
        p.iter().any(|p| p.contains("tsm.integrity.required=true")),
        "{p:?}"
    );
}

#[test]
fn verify_reports_unparsable_manifests_and_unknown_key_pairs() {
    let w = World::new(true);
    let garbage = w.write_segment("m", 0, 0, 5);
    let unknown = w.write_segment("m", 0, 100, 5);
    let m = w.object(&format!("tiered/{}.rsm-manifest", garbage.main_path));
    std::fs::write(&m, b"{\"version\":\"1\",").expect("write");
    let m = w.object(&format!("tiered/{}.rsm-manifest", unknown.main_path));
    let text = std::fs::read_to_string(&m).expect("read manifest");
    std::fs::write(&m, text.replace("\"dataKey\":\"k1:", "\"dataKey\":\"k9:")).expect("write");
    let v = w.tsm(&["--json", "verify"]).expect_code(1).json();
    assert_eq!(v["bad"], 2, "{v}");
    let p = problems_of(&v, &garbage.main_path);
    assert!(
        p.iter().any(|p| p.contains("not a valid v1 manifest")),
        "{p:?}"
    );
    let p = problems_of(&v, &unknown.main_path);
    assert!(p.iter().any(|p| p.contains("k9")), "{p:?}");
    // ls still lists both, with the manifest error on the unparsable one.
    let ls = w.tsm(&["--json", "ls"]).expect_code(0).json();
    assert!(ls["segments"][0]["error"].as_str().is_some(), "{ls}");
}
