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

/// Every `tsm.jni.*` / `tsm.log.*` key the plugin's sources name (Java and Rust under
/// crates/tsm-jni/src) is in the reference: the plugin reads keys outside tsm-core's
/// parser, so this is what keeps the table complete.
#[test]
fn every_plugin_key_in_the_sources_is_documented() {
    let reference = std::fs::read_to_string(repo_file("docs/configuration.md")).unwrap_or_default();
    let re = quoted_keys();
    let mut found = std::collections::BTreeSet::new();
    let mut dirs = vec![repo_file("crates/tsm-jni/src")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            panic!("cannot list {}", dir.display());
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "rs" || x == "java") {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                for key in re(&text) {
                    found.insert((key, path.display().to_string()));
                }
            }
        }
    }
    assert!(
        found.iter().any(|(k, _)| k == "tsm.jni.native.dir"),
        "the scan found no tsm.jni.native.dir (NativeLoader.java): {found:?}"
    );
    for (key, file) in &found {
        assert!(
            reference.contains(&format!("| `{key}` |")),
            "{key} (named in {file}) is not in docs/configuration.md: declare it in \
             tsm_core::config::names (JNI_KEYS or CONFIG_KEYS) and regenerate"
        );
    }
}

/// The quoted `"tsm.jni.<name>"` and `"tsm.log.<name>"` literals of `text`.
fn quoted_keys() -> impl Fn(&str) -> Vec<String> {
    |text: &str| {
        let mut out = Vec::new();
        for prefix in ["\"tsm.jni.", "\"tsm.log."] {
            let mut rest = text;
            while let Some(i) = rest.find(prefix) {
                let tail = &rest[i + 1..];
                let end = tail
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
                    .unwrap_or(tail.len());
                let key = tail[..end].trim_end_matches('.');
                // A prefix constant ("tsm.jni.") names no key.
                if key.matches('.').count() >= 2 && tail[end..].starts_with('"') {
                    out.push(key.to_string());
                }
                rest = &tail[end..];
            }
        }
        out
    }
}
