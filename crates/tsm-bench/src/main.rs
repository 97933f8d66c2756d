//! `tsm-bench`: generate Kafka-shaped segments, benchmark the tsm engine against the
//! machine's limits, and report ratios (issue 8). See bench/README.md.
//!
//! Exit codes: 0 ok; 1 a failed case (a fetched byte differing from the original
//! included) or I/O error; 2 usage.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tsm_bench::cases::{CaseSpec, Op};
use tsm_bench::datagen::DataKind;
use tsm_bench::plugin::{Backend, Mode};
use tsm_bench::run::RunOptions;

#[derive(Debug, Parser)]
#[command(
    name = "tsm-bench",
    about = "tsm benchmark harness (issue 8); see bench/README.md"
)]
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
    /// Run the cases (each in its own process) and append results to --out.
    Run {
        /// Store: filesystem (under --work) or s3 (MinIO; needs TSM_TEST_S3_*).
        #[arg(long, value_enum, default_value = "filesystem")]
        backend: Backend,
        /// Directory made by `gen`.
        #[arg(
            long,
            env = "TSM_BENCH_DATA",
            default_value = "/var/tmp/tsm-bench/data"
        )]
        data: PathBuf,
        /// Results file (JSON lines, appended).
        #[arg(
            long,
            env = "TSM_BENCH_OUT",
            default_value = "/var/tmp/tsm-bench/results.jsonl"
        )]
        out: PathBuf,
        /// Scratch dir (key pair, filesystem storage). Default: $TSM_WORK/bench-rust or
        /// /var/tmp/tsm-bench/work.
        #[arg(long)]
        work: Option<PathBuf>,
        /// Comma-separated ops (default all): copy, fetch-1mib, fetch-seq,
        /// fetch-seq-cached, fetch-stream, file-read, zstd-1core, put, get.
        #[arg(long, value_delimiter = ',')]
        cases: Vec<String>,
        /// Comma-separated modes (default all): plain, zstd, aes, zstd+aes.
        #[arg(long, value_delimiter = ',')]
        modes: Vec<String>,
        /// Comma-separated data sets (default both): compressible, incompressible.
        #[arg(long, value_delimiter = ',')]
        sets: Vec<String>,
        /// Random 1 MiB fetches per fetch-1mib case.
        #[arg(long, default_value_t = 200)]
        fetches: u32,
        /// Runs of each measured case (each in its own process); the fastest is recorded
        /// (peak RSS: the largest of all runs).
        #[arg(long, default_value_t = 3)]
        repeat: u32,
        /// Plugin property over every mode's, e.g.
        /// `--set storage.s3.multipart.upload.parts.in.flight=2` (repeatable; recorded in
        /// each result's extra.overrides; never pass secrets here).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        overrides: Vec<String>,
    },
    /// Results file -> markdown (ratios to limits, the targets) on stdout.
    Report {
        /// Results file (JSON lines).
        #[arg(
            long,
            env = "TSM_BENCH_OUT",
            default_value = "/var/tmp/tsm-bench/results.jsonl"
        )]
        results: PathBuf,
    },
    /// One measured case (internal: run by `run` in a child process).
    #[command(hide = true)]
    Case {
        /// The case as JSON.
        #[arg(long)]
        spec: String,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match dispatch(cli.cmd) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tsm-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn parse_list<T>(
    what: &str,
    items: &[String],
    parse: impl Fn(&str) -> Option<T>,
) -> anyhow::Result<Vec<T>> {
    items
        .iter()
        .filter(|s| !s.is_empty())
        .map(|s| parse(s).ok_or_else(|| anyhow::anyhow!("unknown {what} {s:?}")))
        .collect()
}

fn dispatch(cmd: Cmd) -> anyhow::Result<()> {
    match cmd {
        Cmd::Gen { out, size_mib } => {
            tsm_bench::datagen::generate(&out, size_mib, |m| eprintln!("[tsm-bench] gen {m}"))?;
            Ok(())
        }
        Cmd::Run {
            backend,
            data,
            out,
            work,
            cases,
            modes,
            sets,
            fetches,
            repeat,
            overrides,
        } => {
            let overrides = overrides
                .iter()
                .map(|kv| {
                    kv.split_once('=')
                        .map(|(k, v)| (k.trim().to_string(), v.to_string()))
                        .ok_or_else(|| anyhow::anyhow!("--set {kv:?}: expected KEY=VALUE"))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let opts = RunOptions {
                backend,
                data,
                out,
                work: work.unwrap_or_else(tsm_bench::run::default_work),
                cases: parse_list("case", &cases, Op::parse)?,
                modes: parse_list("mode", &modes, Mode::parse)?,
                sets: parse_list("data set", &sets, |s| {
                    DataKind::ALL.into_iter().find(|k| k.name() == s)
                })?,
                fetches,
                repeat,
                overrides,
            };
            tsm_bench::run::run(&opts, |m| eprintln!("[tsm-bench] {m}"))?;
            eprintln!("[tsm-bench] results appended to {}", opts.out.display());
            Ok(())
        }
        Cmd::Report { results } => {
            let records = tsm_bench::record::Record::read_all(&results)?;
            print!("{}", tsm_bench::report::render(&records));
            Ok(())
        }
        Cmd::Case { spec } => {
            let spec: CaseSpec =
                serde_json::from_str(&spec).map_err(|e| anyhow::anyhow!("bad --spec: {e}"))?;
            if let Some(rec) = tsm_bench::cases::run(&spec)? {
                println!("{}", serde_json::to_string(&rec)?);
            }
            Ok(())
        }
    }
}
