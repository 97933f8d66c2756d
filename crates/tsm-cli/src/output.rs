//! Where results go: stdout as text lines or one JSON document (`--json`), progress bars
//! on stderr (indicatif; hidden with `--json`, `--quiet`, or when stderr is not a
//! terminal).
//!
//! A closed stdout (`tsm verify | head -1`: the reader went away, EPIPE) ends the output,
//! not the command: the first failed write marks stdout closed, later lines are dropped,
//! and the command runs to its end, so its exit code is its verdict (`verify` still exits
//! 1 on a bad segment; `ls` exits 0). Only `fetch -o -` stops at a closed stdout (its
//! bytes have nowhere to go; [`CliError::BrokenPipe`], quiet exit 0).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::error::{CliError, CliResult};

/// Output settings shared by the commands.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Output {
    /// `--json`: one JSON document on stdout instead of text.
    pub json: bool,
    /// `--quiet`: no progress bars.
    pub quiet: bool,
}

/// Set once a write to stdout failed with EPIPE: the reader is gone for good.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Runs `write` on the locked stdout unless it is closed. A closed pipe marks stdout
/// closed and counts as written; other errors are [`CliError::Io`] on `<stdout>`.
fn to_stdout(
    write: impl FnOnce(&mut std::io::StdoutLock<'static>) -> std::io::Result<()>,
) -> CliResult {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    match write(&mut out) {
        Ok(()) => Ok(()),
        Err(e) => match CliError::stdout(e) {
            CliError::BrokenPipe => {
                STDOUT_CLOSED.store(true, Ordering::Relaxed);
                Ok(())
            }
            other => Err(other),
        },
    }
}

impl Output {
    /// Writes one line of text to stdout (dropped once stdout is closed).
    pub(crate) fn line(&self, text: impl AsRef<str>) -> CliResult {
        to_stdout(|out| writeln!(out, "{}", text.as_ref()))
    }

    /// Writes `value` as pretty JSON to stdout (dropped once stdout is closed).
    pub(crate) fn json(&self, value: &serde_json::Value) -> CliResult {
        let text = serde_json::to_string_pretty(value).unwrap_or_default();
        to_stdout(|out| {
            writeln!(out, "{text}")?;
            out.flush()
        })
    }

    /// A progress bar of `len` units (`bytes`: shown as bytes, else as items).
    pub(crate) fn progress(&self, len: u64, what: &str, bytes: bool) -> ProgressBar {
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
pub(crate) fn human_bytes(n: u64) -> String {
    indicatif::HumanBytes(n).to_string()
}
