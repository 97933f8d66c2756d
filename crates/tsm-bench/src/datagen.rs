//! `tsm-bench gen`: Kafka-shaped segment sets on disk, shared by the Rust and JVM harnesses
//! so both plugins copy exactly the same bytes.
//!
//! `DIR/compressible/` holds uncompressed v2 batches of JSON-ish events with real entropy
//! (ids, numbers, hex session ids; zstd level 3 shrinks them about 3-6x);
//! `DIR/incompressible/` holds batches of random payloads. Each set: the log
//! (`00000000000000000000.log`, exactly `size_mib` MiB of whole batches with valid CRC32C),
//! the offset index and time index written the way Kafka's `LogSegment.append` does
//! (an entry when more than `index.interval.bytes` = 4096 bytes were appended since the
//! last one), an empty producer snapshot, the leader-epoch checkpoint, and
//! `segment.json` ([`SegmentInfo`]), written last as the "set is complete" marker. The
//! batches, the indexes and the small files come from `tsm-kafka-log` (`BatchBuilder`,
//! `SegmentWriter`, `files`); this module chooses the records.
//!
//! Deterministic (fixed seeds) and idempotent: a set whose `segment.json` and files match
//! the requested size is reused. Streaming: memory is one batch plus the two indexes
//! (12 bytes per 4 KiB of log: ~3 MiB for 1 GiB).

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

use tsm_kafka_log::files::{empty_producer_snapshot, leader_epoch_checkpoint};
use tsm_kafka_log::{BatchBuilder, SegmentWriter};

/// Kafka's default `index.interval.bytes`.
pub const INDEX_INTERVAL_BYTES: usize = tsm_kafka_log::INDEX_INTERVAL_BYTES as usize;
/// Producer batches are closed at about this many bytes (Kafka's default `batch.size`).
pub const BATCH_TARGET_BYTES: usize = 16 * 1024;
/// First record's timestamp (2025-11-29T00:00:00Z, ms).
pub const BASE_TIMESTAMP_MS: i64 = 1_764_374_400_000;

/// File names inside a segment set (base offset 0).
pub const LOG_FILE: &str = "00000000000000000000.log";
/// Offset index file name.
pub const INDEX_FILE: &str = "00000000000000000000.index";
/// Time index file name.
pub const TIME_INDEX_FILE: &str = "00000000000000000000.timeindex";
/// Producer snapshot file name.
pub const SNAPSHOT_FILE: &str = "00000000000000000000.snapshot";
/// Leader epoch checkpoint file name.
pub const LEADER_EPOCH_FILE: &str = "leader-epoch-checkpoint";
/// Segment description file name.
pub const INFO_FILE: &str = "segment.json";
/// Kafka's leader-epoch-checkpoint text: version 0, one entry, epoch 0 from offset 0.
pub const LEADER_EPOCH_CHECKPOINT: &[u8] = b"0\n1\n0 0\n";

/// The two data sets `gen` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataKind {
    /// JSON-ish event payloads, uncompressed batches.
    Compressible,
    /// Random payloads.
    Incompressible,
}

impl DataKind {
    /// Both kinds, in report order.
    pub const ALL: [DataKind; 2] = [DataKind::Compressible, DataKind::Incompressible];

    /// Directory name under the data dir, also the `data` field of results.
    pub fn name(self) -> &'static str {
        match self {
            DataKind::Compressible => "compressible",
            DataKind::Incompressible => "incompressible",
        }
    }

    fn seed(self) -> u64 {
        match self {
            DataKind::Compressible => 0x7473_6d2d_6330,
            DataKind::Incompressible => 0x7473_6d2d_6931,
        }
    }
}

/// `segment.json`: what the harnesses need to build `RemoteLogSegmentMetadata`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SegmentInfo {
    /// First offset of the segment (0).
    pub base_offset: i64,
    /// Last offset in the segment (inclusive).
    pub end_offset: i64,
    /// Size of the `.log` file in bytes.
    pub log_bytes: u64,
    /// Largest record timestamp (ms since the epoch).
    pub max_timestamp_ms: i64,
}

impl SegmentInfo {
    /// Reads `DIR/segment.json`.
    pub fn read(set_dir: &Path) -> Result<Self> {
        let path = set_dir.join(INFO_FILE);
        let text = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_slice(&text).with_context(|| format!("parsing {}", path.display()))
    }
}

/// Paths of one segment set's files.
#[derive(Debug, Clone)]
pub struct SegmentFiles {
    /// The set's directory.
    pub dir: PathBuf,
    /// `.log`
    pub log: PathBuf,
    /// `.index`
    pub offset_index: PathBuf,
    /// `.timeindex`
    pub time_index: PathBuf,
    /// `.snapshot`
    pub producer_snapshot: PathBuf,
    /// `leader-epoch-checkpoint`
    pub leader_epoch: PathBuf,
}

impl SegmentFiles {
    /// The files of the set in `dir`.
    pub fn in_dir(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            log: dir.join(LOG_FILE),
            offset_index: dir.join(INDEX_FILE),
            time_index: dir.join(TIME_INDEX_FILE),
            producer_snapshot: dir.join(SNAPSHOT_FILE),
            leader_epoch: dir.join(LEADER_EPOCH_FILE),
        }
    }
}

/// Writes (or reuses) both sets of `size_mib` MiB under `out`. Returns the set dirs.
pub fn generate(out: &Path, size_mib: u64, mut progress: impl FnMut(&str)) -> Result<Vec<PathBuf>> {
    if size_mib == 0 {
        bail!("--size-mib must be at least 1");
    }
    let log_bytes = size_mib
        .checked_mul(1024 * 1024)
        .filter(|b| *b < i32::MAX as u64)
        .with_context(|| format!("--size-mib {size_mib}: a Kafka segment is below 2 GiB"))?;
    let mut dirs = Vec::new();
    for kind in DataKind::ALL {
        let dir = out.join(kind.name());
        if is_complete(&dir, log_bytes) {
            progress(&format!(
                "{}: reusing {} ({} MiB)",
                kind.name(),
                dir.display(),
                size_mib
            ));
        } else {
            progress(&format!(
                "{}: writing {} ({} MiB)",
                kind.name(),
                dir.display(),
                size_mib
            ));
            write_set(&dir, kind, log_bytes)?;
        }
        dirs.push(dir);
    }
    Ok(dirs)
}

/// True when `dir` holds a finished set whose log is `log_bytes` long.
fn is_complete(dir: &Path, log_bytes: u64) -> bool {
    let files = SegmentFiles::in_dir(dir);
    let size = |p: &Path| fs::metadata(p).map(|m| m.len()).ok();
    match SegmentInfo::read(dir) {
        Ok(info) => {
            info.log_bytes == log_bytes
                && size(&files.log) == Some(log_bytes)
                && size(&files.offset_index).is_some()
                && size(&files.time_index).is_some()
                && size(&files.producer_snapshot).is_some()
                && size(&files.leader_epoch).is_some()
        }
        Err(_) => false,
    }
}

/// Writes one set: log with its indexes, then the small files, then `segment.json`.
fn write_set(dir: &Path, kind: DataKind, log_bytes: u64) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let files = SegmentFiles::in_dir(dir);
    // The marker goes first so an interrupted run is never mistaken for a complete set.
    match fs::remove_file(dir.join(INFO_FILE)) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(e).with_context(|| format!("removing {}", dir.join(INFO_FILE).display()));
        }
    }
    let create = |p: &Path| -> Result<BufWriter<File>> {
        Ok(BufWriter::with_capacity(
            1 << 20,
            File::create(p).with_context(|| format!("creating {}", p.display()))?,
        ))
    };
    let mut segment =
        SegmentWriter::new(create(&files.log)?, 0, tsm_kafka_log::INDEX_INTERVAL_BYTES);

    let mut payloads = Payloads::new(kind);
    let total = log_bytes as usize;
    let mut value = Vec::with_capacity(4096);
    while (segment.position() as usize) < total {
        let position = segment.position() as usize;
        let remaining = total - position;
        let next_offset = segment.next_offset();
        let ts0 = BASE_TIMESTAMP_MS + next_offset;
        let mut batch = BatchBuilder::new(next_offset, ts0);
        // The last batch (or two) is sized to end the log exactly at `total`.
        let exact = remaining < 3 * BATCH_TARGET_BYTES;
        let target = if exact {
            remaining
        } else {
            BATCH_TARGET_BYTES.min(remaining - 2 * BATCH_TARGET_BYTES)
        };
        loop {
            let ts = BASE_TIMESTAMP_MS + batch.next_offset();
            let key = payloads.key();
            value.clear();
            payloads.value(&mut value);
            let len = batch.next_record_len(ts, Some(key.len()), value.len());
            if batch.len() + len > target {
                break;
            }
            batch.push(ts, Some(&key), &value);
            if batch.len() + 64 > target {
                break;
            }
        }
        if exact {
            let ts = BASE_TIMESTAMP_MS + batch.next_offset();
            let rest = remaining - batch.len();
            if rest > 0 && !batch.push_exact(ts, rest, &mut |n, out| payloads.fill(n, out)) {
                bail!("cannot end the log at exactly {total} bytes ({rest} bytes left)");
            }
        }
        if batch.is_empty() {
            bail!("internal: empty batch at position {position}");
        }
        let bytes = batch.finish()?;
        segment
            .append(&bytes)
            .with_context(|| format!("writing {}", files.log.display()))?;
    }
    let written = segment
        .finish()
        .with_context(|| format!("writing {}", files.log.display()))?;
    let log = written
        .log
        .into_inner()
        .map_err(|e| e.into_error())
        .with_context(|| format!("flushing {}", files.log.display()))?;
    log.sync_all()
        .with_context(|| format!("syncing {}", files.log.display()))?;
    for (bytes, p) in [
        (&written.offset_index, &files.offset_index),
        (&written.time_index, &files.time_index),
    ] {
        let mut f = File::create(p).with_context(|| format!("creating {}", p.display()))?;
        f.write_all(bytes)
            .and_then(|()| f.sync_all())
            .with_context(|| format!("writing {}", p.display()))?;
    }
    // The plugin treats the snapshot as opaque bytes.
    fs::write(&files.producer_snapshot, empty_producer_snapshot())
        .with_context(|| format!("writing {}", files.producer_snapshot.display()))?;
    fs::write(&files.leader_epoch, leader_epoch_checkpoint(&[(0, 0)]))
        .with_context(|| format!("writing {}", files.leader_epoch.display()))?;
    let Some(max_ts) = written.max_timestamp_ms else {
        bail!("internal: no batch written for {log_bytes} bytes");
    };
    let info = SegmentInfo {
        base_offset: 0,
        end_offset: written.end_offset,
        log_bytes,
        max_timestamp_ms: max_ts,
    };
    let path = dir.join(INFO_FILE);
    fs::write(&path, serde_json::to_vec_pretty(&info)?)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Record keys and values of one data kind, from a seeded generator.
struct Payloads {
    kind: DataKind,
    rng: SmallRng,
    seq: u64,
}

const EVENTS: [&str; 8] = [
    "page_view",
    "add_to_cart",
    "checkout",
    "search",
    "login",
    "logout",
    "click",
    "purchase",
];
const COUNTRIES: [&str; 12] = [
    "DE", "US", "FR", "GB", "NL", "SE", "PL", "ES", "IT", "BR", "IN", "JP",
];
const AGENTS: [&str; 4] = [
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
    "okhttp/4.12.0",
];
const SECTIONS: [&str; 6] = ["products", "cart", "account", "search", "blog", "help"];

impl Payloads {
    fn new(kind: DataKind) -> Self {
        Self {
            kind,
            rng: SmallRng::seed_from_u64(kind.seed()),
            seq: 0,
        }
    }

    fn key(&mut self) -> Vec<u8> {
        match self.kind {
            DataKind::Compressible => {
                format!("user-{}", self.rng.random_range(0..200_000u32)).into_bytes()
            }
            DataKind::Incompressible => {
                let mut k = vec![0u8; 16];
                self.rng.fill_bytes(&mut k);
                k
            }
        }
    }

    /// Appends one record value.
    fn value(&mut self, out: &mut Vec<u8>) {
        match self.kind {
            DataKind::Compressible => self.event(out),
            DataKind::Incompressible => {
                let n = self.rng.random_range(200..1200);
                self.fill(n, out);
            }
        }
    }

    /// Appends `n` bytes of this kind's filler (random bytes, or repeated event JSON).
    fn fill(&mut self, n: usize, out: &mut Vec<u8>) {
        let start = out.len();
        match self.kind {
            DataKind::Incompressible => {
                out.resize(start + n, 0);
                self.rng.fill_bytes(&mut out[start..]);
            }
            DataKind::Compressible => {
                while out.len() - start < n {
                    self.event(out);
                    out.push(b'\n');
                }
                out.truncate(start + n);
            }
        }
    }

    /// One JSON-ish event: random ids and amounts (real entropy), repeated field names and
    /// enumerations (what makes Kafka JSON compress).
    fn event(&mut self, out: &mut Vec<u8>) {
        use std::fmt::Write as _;
        self.seq += 1;
        let r = &mut self.rng;
        let mut s = String::with_capacity(512);
        let _ = write!(
            s,
            "{{\"event_id\":\"{:016x}{:016x}\",\"seq\":{},\"type\":\"{}\",\"user_id\":{},\"session\":\"{:012x}\",",
            r.next_u64(),
            r.next_u64(),
            self.seq,
            EVENTS[r.random_range(0..EVENTS.len())],
            r.random_range(0..2_000_000u32),
            r.next_u64() & 0xffff_ffff_ffff,
        );
        let _ = write!(
            s,
            "\"page\":\"/{}/{}\",\"country\":\"{}\",\"user_agent\":\"{}\",\"latency_ms\":{},\"items\":[",
            SECTIONS[r.random_range(0..SECTIONS.len())],
            r.random_range(0..100_000u32),
            COUNTRIES[r.random_range(0..COUNTRIES.len())],
            AGENTS[r.random_range(0..AGENTS.len())],
            r.random_range(1..5000u32),
        );
        for i in 0..r.random_range(0..4u32) {
            if i > 0 {
                s.push(',');
            }
            let _ = write!(
                s,
                "{{\"sku\":\"SKU-{:06}\",\"qty\":{},\"price_cents\":{}}}",
                r.random_range(0..1_000_000u32),
                r.random_range(1..6u32),
                r.random_range(99..100_000u32),
            );
        }
        s.push_str("]}");
        out.extend_from_slice(s.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tsm_kafka_log::{parse_header, records};

    fn be32(b: &[u8]) -> i32 {
        i32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// Every batch is whole with a valid CRC, offsets are consecutive, index entries point
    /// at batch starts with the batch's last offset, time index is monotonic.
    #[test]
    fn sets_are_valid_kafka_segments_and_reused() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dirs = generate(tmp.path(), 2, |_| {}).expect("gen");
        for dir in &dirs {
            let files = SegmentFiles::in_dir(dir);
            let info = SegmentInfo::read(dir).expect("segment.json");
            let log = fs::read(&files.log).expect("log");
            assert_eq!(log.len() as u64, 2 * 1024 * 1024);
            assert_eq!(info.log_bytes, log.len() as u64);
            let mut pos = 0;
            let mut next = 0i64;
            let mut starts = std::collections::BTreeMap::new();
            let mut max_ts = 0;
            while pos < log.len() {
                let h = parse_header(&log[pos..]).expect("whole batch");
                assert!(h.crc_ok, "crc at {pos}");
                let recs = records(&log[pos..pos + h.size]).expect("records decode");
                assert_eq!(recs.len() as i32, h.fields.record_count);
                assert_eq!(h.base_offset(), next);
                starts.insert(pos as i32, h.last_offset());
                next = h.last_offset() + 1;
                max_ts = max_ts.max(h.fields.max_timestamp);
                pos += h.size;
            }
            assert_eq!(pos, log.len());
            assert_eq!(info.end_offset, next - 1);
            assert_eq!(info.max_timestamp_ms, max_ts);
            let index = fs::read(&files.offset_index).expect("index");
            assert_eq!(index.len() % 8, 0);
            assert!(index.len() / 8 >= log.len() / BATCH_TARGET_BYTES - 2);
            for e in index.chunks(8) {
                let (off, at) = (be32(&e[0..4]), be32(&e[4..8]));
                assert_eq!(
                    starts.get(&at).copied(),
                    Some(i64::from(off)),
                    "entry at {at}"
                );
            }
            let ti = fs::read(&files.time_index).expect("timeindex");
            assert_eq!(ti.len() % 12, 0);
            let ts: Vec<i64> = ti
                .chunks(12)
                .map(|e| i64::from_be_bytes(e[0..8].try_into().expect("8 bytes")))
                .collect();
            assert!(ts.windows(2).all(|w| w[0] < w[1]));
            assert_eq!(ts.last().copied(), Some(max_ts));
            assert_eq!(
                fs::read(&files.leader_epoch).expect("lec"),
                LEADER_EPOCH_CHECKPOINT
            );
            assert_eq!(
                fs::read(&files.producer_snapshot).expect("snapshot"),
                empty_producer_snapshot()
            );
        }
        // Reuse: a second run leaves the log untouched (same mtime).
        let log = SegmentFiles::in_dir(&dirs[0]).log;
        let before = fs::metadata(&log)
            .and_then(|m| m.modified())
            .expect("mtime");
        generate(tmp.path(), 2, |_| {}).expect("gen again");
        let after = fs::metadata(&log)
            .and_then(|m| m.modified())
            .expect("mtime");
        assert_eq!(before, after);
    }

    #[test]
    fn compressible_data_compresses_realistically() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dirs = generate(tmp.path(), 1, |_| {}).expect("gen");
        let ratio = |d: &Path| {
            let log = fs::read(d.join(LOG_FILE)).expect("log");
            let z = zstd::bulk::compress(&log, 3).expect("zstd");
            log.len() as f64 / z.len() as f64
        };
        let c = ratio(&dirs[0]);
        assert!((3.0..=6.0).contains(&c), "compressible ratio {c}");
        assert!(ratio(&dirs[1]) < 1.01);
    }
}
