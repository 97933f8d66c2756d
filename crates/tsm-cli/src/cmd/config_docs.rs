//! `tsm config docs`: the configuration reference (docs/configuration.md), rendered by
//! tsm-core from its key table and the `storage.*` keys of every backend linked into this
//! build ([`tsm_backends::KINDS`]).

use crate::error::CliResult;
use crate::output::Output;
use tsm_backends::KINDS;

/// The Markdown this build documents.
pub(crate) fn markdown() -> String {
    tsm_core::config::render_configuration_markdown(KINDS)
}

/// Prints [`markdown`] (with `--json`: `{"markdown": ...}`).
pub(crate) fn run(out: Output) -> CliResult {
    if out.json {
        return out.json(&serde_json::json!({ "markdown": markdown() }));
    }
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(markdown().as_bytes())
        .map_err(crate::error::CliError::stdout)
}
