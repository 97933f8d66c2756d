//! `tsm`: the operator tool for tiered Kafka segments in object storage. It reads the
//! plugin's properties (the broker's server.properties), builds the same engine the
//! broker plugin runs (tsm-core) over the configured backend, and lists, inspects,
//! restores, verifies, re-keys, uploads and deletes segments without a broker. It also
//! finds and removes the objects crashed copies leave behind (`ls --orphans`, `gc`).
//!
//! `main` -> [`run`] -> [`ExitCode`]: 0 ok, 1 findings or a failed operation, 2 usage or
//! configuration errors. Logs (`RUST_LOG`, default `warn`) and progress bars go to
//! stderr; results to stdout (text, or JSON with `--json`). A closed stdout pipe ends the
//! output, not the command: the exit code is still the command's verdict (`tsm verify |
//! head -1` exits 1 on a bad segment); `fetch -o -` stops and exits 0 quietly.

mod cli;
mod cmd;
mod context;
mod error;
mod manifest_io;
mod orphans;
mod output;
mod props;
mod segment;
mod time;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;

use crate::error::{CliError, EXIT_USAGE};

fn main() -> ExitCode {
    run()
}

/// Parses the command line, runs the command on a tokio runtime and maps the outcome to
/// an exit code, printing the error (if any) on stderr.
fn run() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // --help / --version print to stdout and exit 0; real errors exit 2.
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    // Colours only on a terminal (and never with NO_COLOR): a log redirected to a file or
    // a pipe stays plain text.
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .try_init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tsm: cannot start the async runtime: {e}");
            return ExitCode::from(error::EXIT_FINDINGS);
        }
    };
    match runtime.block_on(cmd::dispatch(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        // Only `fetch -o -` returns it: the reader took what it wanted.
        Err(CliError::BrokenPipe) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tsm: {e}");
            e.exit_code()
        }
    }
}
