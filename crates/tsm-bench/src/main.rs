//! `tsm-bench`: generate Kafka-shaped segments, benchmark the tsm engine against the
//! machine's limits, and report ratios (issue 8). See bench/README.md.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "tsm-bench", about = "tsm benchmark harness (issue 8)")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Write (or reuse) the compressible and incompressible segment sets.
    Gen {
        /// Output directory (holds compressible/ and incompressible/).
        #[arg(
            long,
            env = "TSM_BENCH_DATA",
            default_value = "/var/tmp/tsm-bench/data"
        )]
        out: PathBuf,
        /// Size of each segment's .log in MiB (whole batches, exact size).
        #[arg(long, default_value_t = 1024)]
        size_mib: u64,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Gen { out, size_mib } => {
            tsm_bench::datagen::generate(&out, size_mib, |m| eprintln!("[tsm-bench] gen {m}"))
                .map(|_| ())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tsm-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}
