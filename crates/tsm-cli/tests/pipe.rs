//! A reader that goes away ends the output, not the command's verdict: `tsm fetch -o - |
//! head -c 0` and `tsm ls | head` exit 0 quietly, `tsm verify | head -1` still exits 1
//! when a segment is bad (and never panics).

use std::io::BufRead;
use std::process::{Command, Stdio};

use crate::util::World;

/// Starts `tsm --config <w> --quiet <args>` with stdout and stderr piped.
fn spawn(w: &World, args: &[&str]) -> std::process::Child {
    let cfg = w.path("tsm.properties");
    Command::new(env!("CARGO_BIN_EXE_tsm"))
        .args(["--config", cfg.to_str().expect("utf-8"), "--quiet"])
        .args(args)
        .env_remove("TSM_CONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tsm")
}

/// Reads `lines` lines of stdout (0: none), closes the pipe, waits: (exit code, stderr).
fn run_and_close(w: &World, args: &[&str], lines: usize) -> (Option<i32>, String) {
    let mut child = spawn(w, args);
    let stdout = child.stdout.take().expect("stdout");
    if lines > 0 {
        let mut reader = std::io::BufReader::new(stdout);
        for _ in 0..lines {
            let mut line = String::new();
            reader.read_line(&mut line).expect("read a line");
            assert!(!line.is_empty(), "tsm printed fewer than {lines} line(s)");
        }
        drop(reader);
    } else {
        drop(stdout);
    }
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (out.status.code(), stderr)
}

#[test]
fn closed_stdout_pipe_exits_0_quietly() {
    let w = World::new(false);
    let a = w.write_segment("pipe", 0, 0, 800);
    assert!(a.log.len() > 128 * 1024, "larger than a pipe buffer");
    let (code, stderr) = run_and_close(&w, &["fetch", &a.main_path, "-o", "-"], 0);
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    for args in [&["ls"][..], &["--json", "ls"], &["verify"]] {
        let (code, stderr) = run_and_close(&w, args, 0);
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}

/// `tsm verify | head -1` on a bucket with a corrupted segment: exit 1, whether the
/// reader closes before the first line or after it.
#[test]
fn verify_exit_code_survives_a_closed_stdout() {
    let w = World::new(true);
    w.write_segment("pipe", 0, 0, 30);
    w.write_segment("pipe", 0, 100, 30);
    let bad = w.write_segment("pipe", 0, 200, 30);
    w.write_segment("pipe", 0, 300, 30);
    let log = w.object(&format!("tiered/{}.log", bad.main_path));
    let mut bytes = std::fs::read(&log).expect("read log object");
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    std::fs::write(&log, &bytes).expect("write");
    for (args, lines) in [
        (&["verify"][..], 0),
        (&["verify"], 1),
        (&["--json", "verify"], 0),
    ] {
        let (code, stderr) = run_and_close(&w, args, lines);
        assert_eq!(code, Some(1), "{args:?} after {lines} line(s): {stderr}");
        assert!(stderr.contains("1 of 4"), "{args:?}: {stderr}");
    }
}
