//! Exit codes of usage and configuration errors (2) and of `--help` (0).

use crate::util::{World, tsm};

#[test]
fn usage_and_configuration_errors_exit_2() {
    let r = tsm(&["nonsense"]).expect_code(2);
    assert!(r.stderr.contains("nonsense"), "{}", r.stderr);
    tsm(&["--help"]).expect_code(0);
    let r = tsm(&["--config", "/nonexistent/tsm.properties", "ls"]).expect_code(2);
    assert!(
        r.stderr.contains("/nonexistent/tsm.properties"),
        "{}",
        r.stderr
    );
    let w = World::new(false);
    let r = w
        .tsm(&["--set", "storage.backend.class=nope", "ls"])
        .expect_code(2);
    assert!(r.stderr.contains("storage.backend.class"), "{}", r.stderr);
    let r = w.tsm(&["--set", "chunk.size=abc", "ls"]).expect_code(2);
    assert!(r.stderr.contains("chunk.size"), "{}", r.stderr);
    w.tsm(&["--set", "novalue", "ls"]).expect_code(2);
    w.tsm(&["fetch", "not-a-segment", "-o", "/dev/null"])
        .expect_code(2);
    w.tsm(&["rekey", "--to", "k1"]).expect_code(2);
}

#[test]
fn rekey_to_a_key_pair_not_on_the_ring_exits_2() {
    let w = World::new(true);
    let r = w.tsm(&["rekey", "--to", "k9"]).expect_code(2);
    assert!(r.stderr.contains("k9"), "{}", r.stderr);
}

/// A mistyped `storage.root` is refused by every command that reads the store (exit 2,
/// naming the key and the path) and the directory is not created; `tsm copy` creates it
/// (uploading into a new bucket directory, as the broker does).
#[test]
fn a_missing_storage_root_is_refused_and_not_created() {
    let w = World::new(false);
    let typo = w.path("buckt");
    let typo_s = typo.to_str().expect("utf-8").to_string();
    let root = format!("storage.root={typo_s}");
    let seg = "t-EjRWeAAAAAAAAAAAAAAAKg/0/00000000000000000000-AAAAAAAAAAEAAAAAAAAABw";
    let commands: Vec<Vec<&str>> = vec![
        vec!["ls"],
        vec!["ls", "--orphans"],
        vec!["inspect", seg],
        vec!["fetch", seg, "-o", "/dev/null"],
        vec!["verify"],
        vec!["delete", seg],
        vec!["delete", seg, "--dry-run"],
        vec!["gc", "--older-than", "0s"],
    ];
    for args in &commands {
        let mut all = vec!["--set", root.as_str()];
        all.extend_from_slice(args);
        let r = w.tsm(&all).expect_code(2);
        assert!(
            r.stderr.contains("storage.root") && r.stderr.contains(&typo_s),
            "{args:?}: {}",
            r.stderr
        );
        assert!(r.stdout.is_empty(), "{args:?}: {}", r.stdout);
        assert!(!typo.exists(), "{args:?} created {}", typo.display());
    }
    // A root that exists but is a file: refused too (by the backend), nothing created.
    let file = w.path("a-file");
    std::fs::write(&file, b"x").expect("write");
    let r = w
        .tsm(&["--set", &format!("storage.root={}", file.display()), "ls"])
        .expect_code(2);
    assert!(r.stderr.contains("storage.root"), "{}", r.stderr);

    // copy creates the bucket directory; ls then reads it.
    let local = w.path("local");
    std::fs::create_dir_all(&local).expect("mkdir");
    let log = local.join(format!("{:020}.log", 0));
    std::fs::write(&log, crate::util::batches(3, 0, 50)).expect("write");
    w.tsm(&[
        "--set",
        &root,
        "copy",
        log.to_str().expect("utf-8"),
        "-t",
        "t",
        "-p",
        "0",
    ])
    .expect_code(0);
    assert!(typo.is_dir());
    let ls = w
        .tsm(&["--set", &root, "--json", "ls"])
        .expect_code(0)
        .json();
    assert_eq!(ls["segments"].as_array().map(Vec::len), Some(1), "{ls}");
}

/// No `--config`, no `TSM_CONFIG`: the error says how to give the configuration (and
/// still names the key).
#[test]
fn no_configuration_says_how_to_give_one() {
    for args in [&["ls"][..], &["verify"], &["--set", "chunk.size=100", "ls"]] {
        let r = tsm(args).expect_code(2);
        for want in [
            "storage.backend.class",
            "--config FILE",
            "TSM_CONFIG",
            "server.properties",
            "rsm.config.",
        ] {
            assert!(
                r.stderr.contains(want),
                "{args:?}: no {want:?} in {}",
                r.stderr
            );
        }
    }
    // A file without the key (e.g. keys written without the rsm.config. prefix) names
    // the file and the prefix.
    let w = World::new(false);
    let f = w.path("plain.properties");
    std::fs::write(&f, "storage.backend.class=filesystem\nchunk.size=100\n").expect("write");
    let r = tsm(&["--config", f.to_str().expect("utf-8"), "ls"]).expect_code(2);
    assert!(
        r.stderr.contains("rsm.config.storage.backend.class")
            && r.stderr.contains(f.to_str().expect("utf-8")),
        "{}",
        r.stderr
    );
}

/// A segment id may start with `-` (base64url: 1 in 64): taken as the segment, not as an
/// option (CI's operator-tool check once failed on `tsm fetch -BBocc_WiBPElXxEq4eXdw`).
#[test]
fn a_segment_id_starting_with_a_dash_is_a_segment() {
    let w = World::new(false);
    let id = "-BBocc_WiBPElXxEq4eXdw";
    for args in [
        &["fetch", id, "-o", "/dev/null"][..],
        &["inspect", id],
        &["delete", id, "--dry-run"],
    ] {
        let r = w.tsm(args);
        assert!(
            !r.stderr.contains("unexpected argument"),
            "{args:?}: {}",
            r.stderr
        );
        assert!(r.stderr.contains(id), "{args:?}: {}", r.stderr);
    }
}

/// Logs on a stderr that is not a terminal are plain text (no ANSI colours), and an
/// unknown key is warned about once (tsm parses the configuration twice: to check it, then
/// to build the engine).
#[test]
fn logs_are_plain_text_and_an_unknown_key_is_warned_about_once() {
    let w = World::new(false);
    let cfg = w.path("tsm.properties");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tsm"))
        .args([
            "--config",
            cfg.to_str().expect("utf-8"),
            "--set",
            "compresion.enabled=true",
            "ls",
        ])
        .env_remove("TSM_CONFIG")
        .env_remove("NO_COLOR")
        .env("RUST_LOG", "warn")
        .output()
        .expect("run tsm");
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains('\u{1b}'), "ANSI escapes in {stderr:?}");
    assert_eq!(
        stderr.matches("compresion.enabled").count(),
        1,
        "one warning: {stderr}"
    );
    assert!(stderr.contains("compression.enabled"), "{stderr}");
}

/// A mistyped segment (id, main path, key) is a usage error that says what was looked for
/// and where, with the closest segment; a main path whose manifest is missing says so.
#[test]
fn a_mistyped_segment_gets_a_specific_error_with_the_closest_one() {
    let w = World::new(false);
    let a = w.write_segment("typo", 0, 0, 5);
    let id = a.meta.segment_id.to_string();
    let swap = |s: &str, at: usize| {
        let mut c: Vec<char> = s.chars().collect();
        c[at] = if c[at] == 'Q' { 'R' } else { 'Q' };
        c.into_iter().collect::<String>()
    };
    let path_typo = a.main_path.replace("typo-", "typp-");
    for (arg, says) in [
        (swap(&id, 3), "no .rsm-manifest with this id"),
        (
            id[..21].to_string(),
            "not a segment id (22 base64url characters; this is 21)",
        ),
        (format!("{id}x"), "this is 23"),
        (
            path_typo.clone(),
            "no .rsm-manifest under key.prefix \"tiered/\"",
        ),
    ] {
        for cmd in [&["inspect"][..], &["fetch", "-o", "/dev/null"]] {
            let mut args: Vec<&str> = cmd.to_vec();
            args.insert(1, &arg);
            let r = w.tsm(&args).expect_code(2);
            let want = if arg.contains('/') {
                a.main_path.clone()
            } else {
                id.clone()
            };
            assert!(
                r.stderr.contains(says) && r.stderr.contains(&format!("did you mean {want}?")),
                "{args:?}: {}",
                r.stderr
            );
        }
    }
    // Nothing close: no suggestion, still what a segment argument looks like.
    let r = w.tsm(&["inspect", "abc"]).expect_code(2);
    assert!(
        r.stderr.contains("segment key") && !r.stderr.contains("did you mean"),
        "{}",
        r.stderr
    );
    // A segment whose manifest is gone: an orphan, said as such (exit 2, nothing written).
    std::fs::remove_file(w.object(&format!("tiered/{}.rsm-manifest", a.main_path)))
        .expect("rm manifest");
    let r = w.tsm(&["inspect", &a.main_path]).expect_code(2);
    assert!(
        r.stderr.contains("no .rsm-manifest")
            && r.stderr.contains(".log and .indexes")
            && r.stderr.contains("tsm ls --orphans"),
        "{}",
        r.stderr
    );
    // delete still removes an orphan's objects by main path (idempotent).
    w.tsm(&["delete", &a.main_path]).expect_code(0);
    assert!(!w.object(&format!("tiered/{}.log", a.main_path)).exists());
}
