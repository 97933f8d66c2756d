//! One measurement = one JSON object per line in the results file (`results.jsonl`),
//! the format shared with the JVM harness (bench/jvm): see bench/README.md.
//!
//! Written by `tsm-bench run` (and bench/jvm), read by `tsm-bench report`.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// One result line. Units: bytes, seconds (wall), CPU seconds (user + sys).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// `rust` or `jvm`.
    pub harness: String,
    /// `tsm-core`, `tsm-jni`, `java-baseline`, `aiven-<version>` (the real Java plugin) or `limit`.
    pub subject: String,
    /// `filesystem` or `s3`.
    pub backend: String,
    /// `compressible` or `incompressible`.
    pub data: String,
    /// `plain`, `zstd`, `aes`, `zstd+aes`; `null` for limits.
    pub mode: Option<String>,
    /// `copy`, `fetch-1mib`, `fetch-seq`, `fetch-seq-cached`, `fetch-stream`,
    /// `zstd-1core`, `put`, `get`, `file-read`.
    pub op: String,
    /// Logical (original segment) bytes processed or delivered.
    pub bytes: u64,
    /// Wall time of the measured work, seconds.
    pub seconds: f64,
    /// User + system CPU of the process doing the work, seconds (`null` when unknown).
    pub cpu_seconds: Option<f64>,
    /// Peak resident set size of that process, bytes (`null` when unknown).
    pub peak_rss_bytes: Option<u64>,
    /// Bytes downloaded from the store (fetch ops), `null` otherwise.
    pub downloaded_bytes: Option<u64>,
    /// Op-specific details (latency percentiles, stored bytes, settings).
    #[serde(default)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl Record {
    /// Throughput in MB/s (10^6 bytes per second) of `bytes` over `seconds`.
    pub fn mb_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / self.seconds / 1e6
        } else {
            0.0
        }
    }

    /// Appends this record as one line to `path` (created if missing).
    pub fn append_to(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let mut line = serde_json::to_vec(self)?;
        line.push(b'\n');
        // One write of the whole line in append mode: lines from two writers do not mix.
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        f.write_all(&line)
            .with_context(|| format!("appending to {}", path.display()))
    }

    /// Reads every line of `path`; a malformed line is an error naming its line number.
    pub fn read_all(path: &Path) -> Result<Vec<Record>> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str(l).with_context(|| {
                    format!("{} line {}: not a result record", path.display(), i + 1)
                })
            })
            .collect()
    }
}
