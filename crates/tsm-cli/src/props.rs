//! The broker's properties as `tsm` reads them: a `server.properties` file (only keys
//! starting with `rsm.config.` are used, the prefix stripped, as Kafka does before calling
//! `configure`) or a file of plain `rsm.config.*` lines, then `--set key=value` overrides
//! (with or without the `rsm.config.` prefix). Parsed with the `java-properties` crate
//! (Java `Properties.load` syntax: `=`/`:`/space separators, `#`/`!` comments, `\`
//! continuations and escapes).

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{CliError, CliResult};

/// The prefix Kafka strips from broker properties before handing them to the plugin.
pub const RSM_PREFIX: &str = "rsm.config.";

/// The plugin properties (`rsm.config.` stripped) of `file` (if any) with `sets`
/// (`key=value`) applied on top. Errors (exit 2) name the file or the bad `--set`.
pub fn load(file: Option<&Path>, sets: &[String]) -> CliResult<BTreeMap<String, String>> {
    let mut props = BTreeMap::new();
    if let Some(path) = file {
        let f = std::fs::File::open(path).map_err(|e| {
            CliError::Usage(format!(
                "cannot read properties file {}: {e}",
                path.display()
            ))
        })?;
        let all = java_properties::read(std::io::BufReader::new(f))
            .map_err(|e| CliError::Usage(format!("properties file {}: {e}", path.display())))?;
        for (k, v) in all {
            if let Some(stripped) = k.strip_prefix(RSM_PREFIX) {
                props.insert(stripped.to_string(), v);
            }
        }
    }
    for s in sets {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| CliError::Usage(format!("--set {s:?}: expected key=value")))?;
        let k = k.trim();
        let k = k.strip_prefix(RSM_PREFIX).unwrap_or(k);
        if k.is_empty() {
            return Err(CliError::Usage(format!("--set {s:?}: empty key")));
        }
        props.insert(k.to_string(), v.to_string());
    }
    Ok(props)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_the_prefix_ignores_broker_keys_and_applies_sets() {
        let dir = std::env::temp_dir().join(format!("tsm-props-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let f = dir.join("server.properties");
        std::fs::write(
            &f,
            "broker.id=1\n# comment\nrsm.config.chunk.size = 100\nrsm.config.storage.root: /x\n",
        )
        .expect("write");
        let p = load(
            Some(&f),
            &["rsm.config.chunk.size=200".into(), "key.prefix=p/".into()],
        )
        .expect("load");
        assert_eq!(p.get("chunk.size").map(String::as_str), Some("200"));
        assert_eq!(p.get("storage.root").map(String::as_str), Some("/x"));
        assert_eq!(p.get("key.prefix").map(String::as_str), Some("p/"));
        assert!(!p.contains_key("broker.id"));
        assert!(load(None, &["nokey".into()]).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
