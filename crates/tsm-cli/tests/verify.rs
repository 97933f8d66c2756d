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

/// The names of the segments a `--json verify` checked, in report order.
fn checked(v: &serde_json::Value) -> Vec<String> {
    v["segments"]
        .as_array()
        .expect("segments")
        .iter()
        .map(|s| s["segment"].as_str().expect("name").to_string())
        .collect()
}

/// `--jobs`, `--sample`/`--seed`, `--segments` and `--since` choose what is checked; reports
/// keep the listing order whatever the jobs; the estimate matches what was downloaded.
#[test]
fn verify_selects_segments_and_runs_them_in_parallel() {
    let w = World::new(false);
    let mut segs = Vec::new();
    for p in 0..3 {
        for start in [0, 100] {
            segs.push(w.write_segment("sel", p, start, 20 + 10 * p as usize));
        }
    }
    // Parallel checks report in listing order, as one job does.
    let one = w
        .tsm(&["--json", "verify", "-j", "1"])
        .expect_code(0)
        .json();
    let many = w
        .tsm(&["--json", "verify", "--jobs", "6"])
        .expect_code(0)
        .json();
    assert_eq!(one["checked"], 6, "{one}");
    assert_eq!(many["jobs"], 6, "{many}");
    assert_eq!(checked(&one), checked(&many));
    let mut sorted = checked(&one);
    sorted.sort();
    assert_eq!(sorted, checked(&one), "listing order");
    // The estimate (from the listing and a probe of the manifests) is what verify took.
    for v in [&one, &many] {
        assert_eq!(v["estimate"]["bytes"], v["downloaded"]["bytes"], "{v}");
        assert_eq!(
            v["estimate"]["getRequests"], v["downloaded"]["getRequests"],
            "{v}"
        );
    }
    // A filesystem bucket: no estimate on stderr (nothing is downloaded).
    let r = w.tsm(&["verify"]).expect_code(0);
    assert!(!r.stderr.contains("to download"), "{}", r.stderr);

    // --sample N --seed S: N of them, the same ones each time.
    let a = w
        .tsm(&["--json", "verify", "--sample", "2", "--seed", "7"])
        .expect_code(0)
        .json();
    assert_eq!(a["checked"], 2, "{a}");
    assert_eq!(a["listed"], 6, "{a}");
    assert_eq!(a["sample"]["seed"], 7, "{a}");
    let b = w
        .tsm(&[
            "--json", "verify", "--sample", "2", "--seed", "7", "-j", "1",
        ])
        .expect_code(0)
        .json();
    assert_eq!(checked(&a), checked(&b));
    // Without --seed: a random one, printed, that picks the same segments again.
    let r = w.tsm(&["--json", "verify", "--sample", "3"]).expect_code(0);
    let c = r.json();
    let seed = c["sample"]["seed"].as_u64().expect("seed printed");
    let again = w
        .tsm(&[
            "--json",
            "verify",
            "--sample",
            "3",
            "--seed",
            &seed.to_string(),
        ])
        .expect_code(0)
        .json();
    assert_eq!(checked(&c), checked(&again));
    let text = w
        .tsm(&["verify", "--sample", "2", "--seed", "7"])
        .expect_code(0)
        .stdout;
    assert!(
        text.contains("2 segment(s) checked, 0 bad")
            && text.contains("a random sample of 2 of 6: --seed 7"),
        "{text}"
    );
    // A sample larger than the selection checks all of it.
    let all = w
        .tsm(&["--json", "verify", "--sample", "50", "--seed", "1"])
        .expect_code(0)
        .json();
    assert_eq!(all["checked"], 6);

    // --segments: ids, main paths and keys, comma-separated or repeated.
    let id = segs[1].meta.segment_id.to_string();
    let key = format!("tiered/{}.log", segs[4].main_path);
    let v = w
        .tsm(&[
            "--json",
            "verify",
            "--segments",
            &format!("{id},{}", segs[2].main_path),
            "--segments",
            &key,
        ])
        .expect_code(0)
        .json();
    let names = checked(&v);
    assert_eq!(names.len(), 3, "{v}");
    for s in [&segs[1], &segs[2], &segs[4]] {
        assert!(
            names
                .iter()
                .any(|n| n.ends_with(&s.meta.segment_id.to_string())),
            "{names:?}"
        );
    }
    // One that names no segment: exit 2, with the closest id.
    let typo = format!("{}Q{}", &id[..3], &id[4..]);
    let r = w
        .tsm(&["verify", "--segments", &format!("{id},{typo}")])
        .expect_code(2);
    assert!(
        r.stderr.contains(&typo) && r.stderr.contains(&format!("did you mean {id}?")),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    // Within -t: a segment of another topic is not there.
    w.tsm(&["verify", "-t", "other", "--segments", &id])
        .expect_code(2);
    w.tsm(&["verify", "--segments", "not-a-segment"])
        .expect_code(2);

    // --since: from the manifests' modification times in the listing (file mtimes here).
    let old = w.object(&format!("tiered/{}.rsm-manifest", segs[0].main_path));
    let day_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(86_400);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .expect("open manifest")
        .set_modified(day_ago)
        .expect("set mtime");
    let v = w
        .tsm(&["--json", "verify", "--since", "1h"])
        .expect_code(0)
        .json();
    assert_eq!(v["checked"], 5, "{v}");
    assert!(!checked(&v).contains(&checked(&one)[0]), "{v}");
    let v = w
        .tsm(&["--json", "verify", "--since", "2020-01-01T00:00:00Z"])
        .expect_code(0)
        .json();
    assert_eq!(v["checked"], 6, "{v}");
    let r = w.tsm(&["verify", "--since", "2999-01-01"]).expect_code(0);
    assert!(
        r.stdout
            .contains("0 segment(s) checked, 0 bad, 0 without integrity data (0 of 6 listed selected by --since)"),
        "{}",
        r.stdout
    );
    // --since and --sample together: the sample is drawn from what --since kept.
    let v = w
        .tsm(&[
            "--json", "verify", "--since", "1d", "--sample", "1", "--seed", "3",
        ])
        .expect_code(0)
        .json();
    assert_eq!(v["checked"], 1, "{v}");

    // Usage errors.
    w.tsm(&["verify", "--since", "last tuesday"]).expect_code(2);
    w.tsm(&["verify", "--jobs", "0"]).expect_code(2);
    w.tsm(&["verify", "--jobs", "65"]).expect_code(2);
    w.tsm(&["verify", "--seed", "1"]).expect_code(2);
}

/// Damage is still found and reported in order when checks run in parallel, and the exit
/// code is the verdict.
#[test]
fn parallel_verify_reports_bad_segments_in_listing_order() {
    let w = World::new(false);
    let a = w.write_segment("par", 0, 0, 40);
    let b = w.write_segment("par", 0, 100, 5);
    let c = w.write_segment("par", 0, 200, 40);
    let log = w.object(&format!("tiered/{}.log", a.main_path));
    let bytes = std::fs::read(&log).expect("read");
    std::fs::write(&log, &bytes[..bytes.len() - 7]).expect("truncate");
    let v = w
        .tsm(&["--json", "verify", "-j", "3"])
        .expect_code(1)
        .json();
    assert_eq!(v["bad"], 1, "{v}");
    let names = checked(&v);
    for (n, s) in names.iter().zip([&a, &b, &c]) {
        assert!(n.ends_with(&s.meta.segment_id.to_string()), "{names:?}");
    }
    assert!(!problems_of(&v, &a.main_path).is_empty());
    assert!(problems_of(&v, &c.main_path).is_empty());
}
