//! Renders `docs/configuration.md` from [`CONFIG_KEYS`] and each
//! backend's [`BackendKind::keys`]. Output only; a test in the crate that links every
//! backend compares it with the committed file.

use std::fmt::Write as _;

use super::{BackendKind, CONFIG_KEYS, ConfigKeyDoc};

/// The full configuration reference as Markdown: the core keys, then one section per
/// backend in `kinds` order with its `storage.*` keys. Deterministic (same input, same
/// bytes), so a test can compare it with the committed `docs/configuration.md`.
pub fn render_configuration_markdown(kinds: &[&BackendKind]) -> String {
    let mut out = String::new();
    out.push_str("# tsm configuration\n\n");
    out.push_str(
        "<!-- Generated from tsm_core::config::CONFIG_KEYS and each backend's keys by \
         tsm_core::config::render_configuration_markdown. Do not edit by hand. -->\n\n",
    );
    out.push_str(
        "Kafka passes every broker property starting with `rsm.config.` to the plugin with \
         that prefix removed; the keys below are written without it (set \
         `rsm.config.chunk.size`, documented as `chunk.size`). Names and defaults follow \
         Aiven's Java plugin. Unknown keys are logged and ignored; an invalid value stops \
         the plugin with an error naming the key.\n\n",
    );
    out.push_str("## Core\n\n");
    table(&mut out, CONFIG_KEYS);
    for kind in kinds {
        let _ = write!(out, "\n## Backend `{}`\n\n", kind.name);
        let _ = write!(out, "Selected with `storage.backend.class={}`", kind.name);
        if kind.aliases.is_empty() {
            out.push_str(".\n\n");
        } else {
            out.push_str(" or ");
            let aliases: Vec<String> = kind.aliases.iter().map(|a| format!("`{a}`")).collect();
            out.push_str(&aliases.join(", "));
            out.push_str(".\n\n");
        }
        if kind.keys.is_empty() {
            out.push_str("No keys.\n");
        } else {
            table(&mut out, kind.keys);
        }
    }
    out
}

fn table(out: &mut String, keys: &[ConfigKeyDoc]) {
    out.push_str("| Key | Default | Description |\n|---|---|---|\n");
    for k in keys {
        let default = if k.default.is_empty() {
            String::new()
        } else {
            format!("`{}`", cell(k.default))
        };
        let secret = if k.secret {
            " Secret: never logged or shown in errors."
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "| `{}` | {default} | {}{secret} |",
            k.name,
            cell(k.doc)
        );
    }
}

/// Escapes what would break a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    static TEST_KIND: BackendKind = BackendKind {
        name: "demo",
        aliases: &["com.example.DemoStorage"],
        keys: &[
            ConfigKeyDoc {
                name: "storage.demo.bucket",
                default: "",
                doc: "Required. Bucket | name.",
                secret: false,
            },
            ConfigKeyDoc {
                name: "storage.demo.secret",
                default: "",
                doc: "The secret.",
                secret: true,
            },
        ],
        build: |_| Box::pin(async { Err(crate::ConfigError::new("x", "y", "z")) }),
    };

    #[test]
    fn renders_core_and_backend_keys() {
        let md = render_configuration_markdown(&[&TEST_KIND]);
        for k in CONFIG_KEYS {
            assert!(
                md.contains(&format!("| `{}` |", k.name)),
                "{} missing",
                k.name
            );
        }
        assert!(md.contains("## Backend `demo`"));
        assert!(md.contains("`com.example.DemoStorage`"));
        assert!(md.contains("| `storage.demo.bucket` |  | Required. Bucket \\| name. |"));
        assert!(md.contains("Secret: never logged"));
        assert!(md.contains("| `chunk.size` |"));
        assert!(md.contains("| `fetch.manifest.cache.size` | `1000` |"));
        assert_eq!(md, render_configuration_markdown(&[&TEST_KIND]));
    }
}
