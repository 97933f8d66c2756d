//! A reader that goes away (`tsm fetch -o - | head -c 0`) ends tsm quietly with exit 0.

use std::process::{Command, Stdio};

use crate::util::World;

#[test]
fn closed_stdout_pipe_exits_0_quietly() {
    let w = World::new(false);
    let a = w.write_segment("pipe", 0, 0, 800);
    assert!(a.log.len() > 128 * 1024, "larger than a pipe buffer");
    let cfg = w.path("tsm.properties");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tsm"))
        .args(["--config", cfg.to_str().expect("utf-8"), "--quiet"])
        .args(["fetch", &a.main_path, "-o", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tsm");
    // Close the read end without reading.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
