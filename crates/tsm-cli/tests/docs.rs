//! docs/configuration.md must be what `tsm config docs` renders.

use crate::util::{repo_file, tsm};

#[test]
fn configuration_md_is_current() {
    let run = tsm(&["config", "docs"]).expect_code(0);
    let path = repo_file("docs/configuration.md");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == run.stdout,
        "docs/configuration.md is not current (or missing). Regenerate it with:\n  \
         cargo run -p tsm-cli -- config docs > docs/configuration.md"
    );
}
