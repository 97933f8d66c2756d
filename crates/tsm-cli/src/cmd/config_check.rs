//! `tsm config check FILE`: validates a properties file as the plugin would when the
//! broker calls `configure` (tsm-core's parser and checks, [`tsm_core::config::check`],
//! over every backend linked into this build, then the memory pools `configure` plans from
//! the budget keys and the backend's upload buffers), without building a backend or
//! contacting the store. For CI: exit 0 when every key is known and every value valid, exit 2 with
//! one line per problem (naming the key; an unknown key with the closest known one)
//! otherwise.
//!
//! The file holds either bare keys (`chunk.size=...`, as the plugin receives them) or
//! `rsm.config.`-prefixed ones (a broker's server.properties: only those are the plugin's,
//! the rest is the broker's); the report says which it saw and names keys as written.
//! Values are never echoed except inside an error about a non-secret key (secret keys
//! show `<redacted>`) and, with `--json`, in `effective` (every key's effective value,
//! secrets as `****`).

use std::collections::BTreeMap;
use std::path::Path;

use tsm_core::config::effective::effective_settings;
use tsm_core::config::names::{self, is_core_key};
use tsm_core::config::{self, ConfigProblem, KeyFiles, RsmConfig};
use tsm_core::engine::{EngineOptions, plan_pools};
use tsm_core::{ConfigError, RsmError};

use crate::error::{CliError, CliResult};
use crate::output::Output;
use crate::props::RSM_PREFIX;
use tsm_backends::KINDS;

/// How the file named its keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Style {
    /// `rsm.config.<key>`, as in a broker's server.properties.
    Prefixed,
    /// `<key>`, as the plugin receives them.
    Bare,
}

/// A checked file: its keys as the plugin sees them and what is wrong with them.
pub(crate) struct Report {
    /// How the keys were written.
    pub style: Style,
    /// The plugin's keys (prefix stripped).
    pub keys: usize,
    /// Keys that are not the plugin's (broker keys of a server.properties).
    pub ignored: usize,
    /// One `(key as written, message)` per problem.
    pub problems: Vec<(String, String)>,
    /// Every key's effective value (tsm-core's `effective_settings`: defaults included,
    /// secrets as `****`), when the backend class names a linked backend.
    pub effective: Vec<(String, String)>,
}

/// Reads and checks `path`. Errors (exit 2) only for a file that cannot be read or parsed.
pub(crate) fn check_file(path: &Path, key_files: KeyFiles) -> CliResult<Report> {
    let all = crate::props::read_file(path)?;
    let style = if all.keys().any(|k| k.starts_with(RSM_PREFIX)) {
        Style::Prefixed
    } else {
        Style::Bare
    };
    let prefix = match style {
        Style::Prefixed => RSM_PREFIX,
        Style::Bare => "",
    };
    let mut props = BTreeMap::new();
    let mut ignored = 0;
    let mut problems = Vec::new();
    for (k, v) in all {
        match k.strip_prefix(prefix) {
            Some(bare) => {
                props.insert(bare.to_string(), v);
            }
            _ => {
                ignored += 1;
                // broker.id / node.id are the broker's own keys (it adds them for the plugin).
                let broker_key = k == names::BROKER_ID || k == names::NODE_ID;
                if !broker_key && (is_core_key(&k) || k.starts_with(names::STORAGE_PREFIX)) {
                    problems.push((
                        k.clone(),
                        format!(
                            "a plugin key without the {RSM_PREFIX} prefix in a file of \
                             {RSM_PREFIX}* keys: the broker does not pass it to the plugin \
                             (write {RSM_PREFIX}{k})"
                        ),
                    ));
                }
            }
        }
    }
    let keys = props.len();
    let mut found = config::check(&props, KINDS, key_files);
    // The pools need the whole parse: planned only for a file without other problems.
    if found.is_empty() && problems.is_empty() {
        found.extend(memory_plan_problem(&props).map(ConfigProblem::Invalid));
    }
    for p in found {
        let written = format!("{prefix}{}", p.key());
        let message = match &p {
            ConfigProblem::Unknown(u) => {
                let of = u
                    .backend
                    .map(|b| format!(" of backend {b}"))
                    .unwrap_or_default();
                match u.did_you_mean {
                    Some(k) => format!("unknown key{of}: did you mean {prefix}{k}?"),
                    None => format!("unknown key{of}: tsm ignores it"),
                }
            }
            ConfigProblem::Invalid(e) if e.value == "<missing>" => {
                format!("missing: {}", e.allowed)
            }
            ConfigProblem::Invalid(e) => format!("invalid value {}: {}", e.value, e.allowed),
        };
        problems.push((written, message));
    }
    let effective = props
        .get(names::STORAGE_BACKEND_CLASS)
        .and_then(|class| KINDS.iter().find(|k| k.matches(class)))
        .map(|kind| effective_settings(&props, kind))
        .unwrap_or_default();
    Ok(Report {
        style,
        keys,
        ignored,
        problems,
        effective,
    })
}

/// The memory pools the broker's `configure` would plan (tsm-core's `plan_pools`, with the
/// backend's upload buffers computed from its keys): the refusal `configure` would give,
/// naming the key. For a file without other problems (its backend keys validated).
fn memory_plan_problem(props: &BTreeMap<String, String>) -> Option<ConfigError> {
    let cfg = RsmConfig::from_props(props.clone(), KINDS).ok()?;
    let upload_buffers = (cfg.backend.upload_buffer_bytes)(&cfg.storage).ok()?;
    let opts = EngineOptions::settings_of(&cfg);
    let RsmError::Config(mut e) = plan_pools(&opts, upload_buffers).err()? else {
        return None;
    };
    // tsm.max.in.flight defaults to the core count, which is the broker's there.
    let cores = if props.contains_key(names::MAX_IN_FLIGHT) {
        String::new()
    } else {
        format!(
            " (planned with {} = {}, this machine's default from its core count: the \
             broker's cores decide it there)",
            names::MAX_IN_FLIGHT,
            opts.max_in_flight
        )
    };
    e.allowed.push_str(&cores);
    Some(e)
}

/// Prints the report of `path` (text or `--json`); a file with problems is a
/// configuration error (exit 2).
pub(crate) fn run(out: Output, path: &Path, key_files: KeyFiles) -> CliResult {
    let r = check_file(path, key_files)?;
    let style = match r.style {
        Style::Prefixed => "prefixed",
        Style::Bare => "bare",
    };
    if out.json {
        let problems: Vec<serde_json::Value> = r
            .problems
            .iter()
            .map(|(k, m)| serde_json::json!({ "key": k, "message": m }))
            .collect();
        out.json(&serde_json::json!({
            "file": path.display().to_string(),
            "style": style,
            "keys": r.keys,
            "ignored": r.ignored,
            "problems": problems,
            "effective": r
                .effective
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str())))
                .collect::<serde_json::Map<_, _>>(),
        }))?;
    } else {
        let saw = match r.style {
            Style::Prefixed => format!(
                "{} keys with the {RSM_PREFIX} prefix (a broker's server.properties; {} other \
                 keys are the broker's, not checked)",
                r.keys, r.ignored
            ),
            Style::Bare => format!("{} bare keys (as the plugin receives them)", r.keys),
        };
        out.line(format!("{}: {saw}", path.display()))?;
        for (key, message) in &r.problems {
            out.line(format!("{key}: {message}"))?;
        }
        if r.problems.is_empty() {
            out.line("ok: every key is known and every value valid")?;
        }
    }
    match r.problems.len() {
        0 => Ok(()),
        n => Err(CliError::Usage(format!(
            "{}: {n} configuration problem{}",
            path.display(),
            if n == 1 { "" } else { "s" }
        ))),
    }
}
