//! `tsm-bench run`: every case for each data set, each in its own child process
//! ([`crate::child`]), results appended to the results file ([`crate::record`]).
//!
//! Order per data set: limits (file read, single-core zstd, raw PUT, raw GET), then per
//! mode: copy, fetch-1mib, fetch-seq, fetch-seq-cached, fetch-stream, delete. A failed
//! case (a fetched byte differing from the original included) is reported and the run
//! goes on; the run then fails.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use crate::cases::{CaseSpec, Op};
use crate::child;
use crate::datagen::{DataKind, SegmentInfo};
use crate::plugin::{Backend, KeyFiles, Mode};

/// What to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Store.
    pub backend: Backend,
    /// Directory made by `gen` (holds `compressible/` and `incompressible/`).
    pub data: PathBuf,
    /// Results file (appended).
    pub out: PathBuf,
    /// Scratch dir: key pair, filesystem storage root.
    pub work: PathBuf,
    /// Ops to run (empty: all). Fetch ops imply the copy and delete of their segment.
    pub cases: Vec<Op>,
    /// Modes (empty: all).
    pub modes: Vec<Mode>,
    /// Data sets (empty: all).
    pub sets: Vec<DataKind>,
    /// Random fetches of `fetch-1mib`.
    pub fetches: u32,
    /// Runs of each measured case (each its own process); the fastest is recorded (peak
    /// RSS: the largest of all runs), with every run's seconds in `extra.runs_seconds`.
    pub repeat: u32,
    /// Plugin properties set over every mode's (`--set key=value`).
    pub overrides: Vec<(String, String)>,
}

/// Runs every selected case; fails if any case failed.
pub fn run(o: &RunOptions, mut progress: impl FnMut(&str)) -> Result<()> {
    std::fs::create_dir_all(&o.work)?;
    // Generated once per work dir, before the children start (they only read it).
    KeyFiles::ensure(&o.work)?;
    let wanted = |op: Op| o.cases.is_empty() || o.cases.contains(&op);
    let any_fetch = [
        Op::Fetch1Mib,
        Op::FetchSeq,
        Op::FetchSeqCached,
        Op::FetchStream,
    ]
    .into_iter()
    .any(wanted);
    let mut failures = Vec::new();
    let sets: Vec<DataKind> = if o.sets.is_empty() {
        DataKind::ALL.to_vec()
    } else {
        o.sets.clone()
    };
    let modes: Vec<Mode> = if o.modes.is_empty() {
        Mode::ALL.to_vec()
    } else {
        o.modes.clone()
    };
    for data in sets {
        let set_dir = o.data.join(data.name());
        if let Err(e) = SegmentInfo::read(&set_dir) {
            bail!(
                "{e:#} (run `tsm-bench gen --out {}` first)",
                o.data.display()
            );
        }
        let spec = |op: Op, mode: Option<Mode>| CaseSpec {
            op,
            backend: o.backend,
            work: o.work.clone(),
            set_dir: set_dir.clone(),
            data,
            mode,
            fetches: o.fetches,
            seed: 42,
            overrides: o.overrides.clone(),
        };
        let mut todo: Vec<CaseSpec> = Vec::new();
        for op in Op::LIMITS {
            let run = match op {
                Op::Get => wanted(Op::Get),
                Op::Put => wanted(Op::Put) || wanted(Op::Get),
                Op::DeleteRaw => wanted(Op::Put) || wanted(Op::Get),
                _ => wanted(op),
            };
            if run {
                todo.push(spec(op, None));
            }
        }
        for &mode in &modes {
            for op in Op::PER_MODE {
                let run = match op {
                    Op::Copy | Op::Delete => wanted(Op::Copy) || any_fetch,
                    _ => wanted(op),
                };
                if run {
                    todo.push(spec(op, Some(mode)));
                }
            }
        }
        let mut copy_failed = false;
        for s in todo {
            let what = format!(
                "{} {} {}{}",
                o.backend.name(),
                data.name(),
                s.op.name(),
                s.mode.map(|m| format!(" {}", m.name())).unwrap_or_default()
            );
            if copy_failed && s.op != Op::Copy && s.mode.is_some() {
                if s.op == Op::Delete {
                    copy_failed = false;
                }
                continue;
            }
            let json = serde_json::to_string(&s)?;
            let runs = if matches!(s.op, Op::Delete | Op::DeleteRaw) {
                1
            } else {
                o.repeat.max(1)
            };
            let mut got = Vec::new();
            let mut failed = None;
            for _ in 0..runs {
                if matches!(s.op, Op::Put | Op::Copy) {
                    // Start every write from clean page cache: without this, a case pays
                    // for the previous case's dirty pages (the kernel throttles writers
                    // and makes them flush), which made filesystem PUT/copy times bimodal.
                    child::sync_filesystems();
                }
                match child::run_case(&json, &what) {
                    Ok((Some(mut rec), usage)) => {
                        rec.peak_rss_bytes = Some(usage.peak_rss_bytes);
                        rec.extra
                            .insert("process_cpu_seconds".into(), usage.cpu_seconds.into());
                        got.push(rec);
                    }
                    Ok((None, _)) => {}
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            if let Some(e) = failed {
                progress(&format!("{what}: FAILED: {e:#}"));
                failures.push(what);
                if s.op == Op::Copy {
                    copy_failed = true;
                }
                continue;
            }
            if got.is_empty() {
                continue;
            }
            // Noise on a shared VM only ever slows a run down (page-cache copies in the
            // kernel varied 3x between identical runs), so the fastest run is recorded,
            // the same statistic for limits and subjects; peak RSS is the largest of all
            // runs (memory is not noise).
            let all: Vec<f64> = got.iter().map(|r| r.seconds).collect();
            let max_rss = got.iter().filter_map(|r| r.peak_rss_bytes).max();
            got.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
            let mut rec = got.swap_remove(0);
            rec.peak_rss_bytes = max_rss.or(rec.peak_rss_bytes);
            if all.len() > 1 {
                rec.extra.insert("runs_seconds".into(), all.into());
            }
            if s.op != Op::Copy || wanted(Op::Copy) {
                rec.append_to(&o.out)?;
            }
            progress(&format!(
                "{what}: {:.1} MB/s, {:.2} s (best of {runs}), peak RSS {} MiB{}",
                rec.mb_per_s(),
                rec.seconds,
                rec.peak_rss_bytes.unwrap_or(0) >> 20,
                rec.downloaded_bytes
                    .map(|d| format!(
                        ", downloaded/delivered {:.3}",
                        d as f64 / rec.bytes.max(1) as f64
                    ))
                    .unwrap_or_default()
            ));
        }
    }
    if !failures.is_empty() {
        bail!("{} case(s) failed: {}", failures.len(), failures.join("; "));
    }
    Ok(())
}

/// Default scratch dir: `$TSM_WORK/bench-rust` or `/var/tmp/tsm-bench/work`.
pub fn default_work() -> PathBuf {
    match std::env::var_os("TSM_WORK") {
        Some(w) => Path::new(&w).join("bench-rust"),
        None => PathBuf::from("/var/tmp/tsm-bench/work"),
    }
}
