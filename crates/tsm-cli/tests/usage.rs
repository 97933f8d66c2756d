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
