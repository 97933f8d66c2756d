//! Where results go: stdout as text lines or one JSON document (`--json`), progress bars
//! on stderr (indicatif; hidden with `--json`, `--quiet`, or when stderr is not a
//! terminal). Writing to a closed pipe becomes [`CliError::BrokenPipe`] (quiet exit 0).

use std::io::Write;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::error::{CliError, CliResult};

/// Output settings shared by the commands.
#[derive(Clone, Copy, Debug)]
pub struct Output {
    /// `--json`: one JSON document on stdout instead of text.
    pub json: bool,
    /// `--quiet`: no progress bars.
    pub quiet: bool,
}

impl Output {
    /// Writes one line of text to stdout.
    pub fn line(&self, text: impl AsRef<str>) -> CliResult {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", text.as_ref()).map_err(CliError::stdout)
    }

    /// Writes `value` as pretty JSON to stdout.
    pub fn json(&self, value: &serde_json::Value) -> CliResult {
        let mut out = std::io::stdout().lock();
        let text = serde_json::to_string_pretty(value).unwrap_or_default();
        writeln!(out, "{text}").map_err(CliError::stdout)?;
        out.flush().map_err(CliError::stdout)
    }

    /// A progress bar of `len` units (`bytes`: shown as bytes, else as items).
    pub fn progress(&self, len: u64, what: &str, bytes: bool) -> ProgressBar {
        if self.json || self.quiet {
            return ProgressBar::hidden();
        }
        let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        let template = if bytes {
            "{msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})"
        } else {
            "{msg} [{bar:30}] {pos}/{len} ({eta})"
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            pb.set_style(style.progress_chars("=> "));
        }
        pb.set_message(what.to_string());
        pb
    }
}

/// `n` bytes in a human unit (KiB, MiB, GiB).
pub fn human_bytes(n: u64) -> String {
    indicatif::HumanBytes(n).to_string()
}
