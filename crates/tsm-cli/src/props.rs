//! The broker's properties as `tsm` reads them: a `server.properties` file (only keys
//! starting with `rsm.config.` are used, the prefix stripped, as Kafka does before calling
//! `configure`) or a file of plain `rsm.config.*` lines, then `--set key=value` overrides
//! (with or without the `rsm.config.` prefix). Parsed with the `java-properties` crate
//! (Java `Properties.load` syntax: `=`/`:`/space separators, `#`/`!` comments, `\`
//! continuations and escapes).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::error::{CliError, CliResult};

/// The prefix Kafka strips from broker properties before handing them to the plugin.
pub(crate) const RSM_PREFIX: &str = "rsm.config.";

/// The key every command needs (it selects the backend); checked here so that its absence
/// is explained in terms of where tsm reads its configuration from.
const BACKEND_CLASS: &str = "storage.backend.class";

/// Every key of the properties file `path`, as written. Errors (exit 2) name the file.
pub(crate) fn read_file(path: &Path) -> CliResult<HashMap<String, String>> {
    let f = std::fs::File::open(path).map_err(|e| {
        CliError::Usage(format!(
            "cannot read properties file {}: {e}",
            path.display()
        ))
    })?;
    java_properties::read(std::io::BufReader::new(f))
        .map_err(|e| CliError::Usage(format!("properties file {}: {e}", path.display())))
}

/// The plugin properties (`rsm.config.` stripped) of `file` (if any) with `sets`
/// (`key=value`) applied on top. Errors (exit 2) name the file or the bad `--set`. Without
/// `storage.backend.class` the error says how to give the configuration (no file given:
/// `--config FILE`; a file without it: the `rsm.config.` prefix), naming the key.
pub(crate) fn load(file: Option<&Path>, sets: &[String]) -> CliResult<BTreeMap<String, String>> {
    let mut props = BTreeMap::new();
    // The file has `storage.backend.class` without the `rsm.config.` prefix.
    let mut unprefixed_class = false;
    if let Some(path) = file {
        for (k, v) in read_file(path)? {
            if let Some(stripped) = k.strip_prefix(RSM_PREFIX) {
                props.insert(stripped.to_string(), v);
            } else if k == BACKEND_CLASS {
                unprefixed_class = true;
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
    let has_class = props
        .get(BACKEND_CLASS)
        .is_some_and(|v| !v.trim().is_empty());
    if !has_class {
        return Err(CliError::Usage(missing_class(file, unprefixed_class)));
    }
    Ok(props)
}

/// The error text for a configuration without `storage.backend.class`.
fn missing_class(file: Option<&Path>, unprefixed: bool) -> String {
    let how = "tsm reads the plugin's properties from --config FILE (or TSM_CONFIG=FILE): \
               the broker's server.properties, or a file of rsm.config.* keys such as \
               rsm.config.storage.backend.class=filesystem and rsm.config.storage.root=DIR; \
               --set KEY=VALUE sets or overrides one key";
    match file {
        None => format!("no configuration given: {BACKEND_CLASS}=<missing> (required). {how}"),
        Some(path) if unprefixed => format!(
            "{}: no {RSM_PREFIX}{BACKEND_CLASS} (the file has {BACKEND_CLASS} without the \
             {RSM_PREFIX} prefix; only {RSM_PREFIX}* keys are read, as the broker hands \
             them to the plugin). {how}",
            path.display()
        ),
        Some(path) => format!(
            "{}: no {RSM_PREFIX}{BACKEND_CLASS}, so {BACKEND_CLASS}=<missing> (required). \
             {how}",
            path.display()
        ),
    }
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
            "broker.id=1\n# comment\nrsm.config.chunk.size = 100\nrsm.config.storage.root: /x\n\
             rsm.config.storage.backend.class=filesystem\n",
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

    #[test]
    fn a_missing_backend_class_says_where_configuration_comes_from() {
        let e = load(None, &[]).expect_err("no configuration").to_string();
        assert!(e.contains("storage.backend.class=<missing>"), "{e}");
        assert!(
            e.contains("--config FILE") && e.contains("server.properties"),
            "{e}"
        );
        // A --set can supply it without a file.
        let p = load(None, &["storage.backend.class=filesystem".into()]).expect("load");
        assert_eq!(p.len(), 1);
        assert!(load(None, &["storage.backend.class= ".into()]).is_err());
    }
}
