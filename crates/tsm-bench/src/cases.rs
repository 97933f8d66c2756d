//! The measured cases, each run in its own child process (`tsm-bench case`, see
//! [`crate::child`]). Data comes from a generated segment set ([`crate::datagen`]) and
//! goes through the tsm engine (`tsm_core::RemoteStorageManager`, built from the same
//! plugin properties as the broker's: [`crate::plugin::props`]) or, for limits, straight
//! through the backend, zstd or the file system. Every fetched byte is compared with the
//! original file; a mismatch fails the case (and the run).
//!
//! Timing: `seconds` covers the measured calls only (stream polls, not the comparison
//! with the original, which runs between polls); `cpu_seconds` likewise sums
//! `getrusage(RUSAGE_SELF)` deltas around them (all threads, so background downloads that
//! overlap a comparison are counted).
//!
//! Memory: a copy holds what the engine holds (its doc: `max_in_flight` chunks); fetch
//! cases hold one ~1 MiB read plus one stream item; limits hold one 4 MiB buffer (zstd:
//! plus its output).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use futures::StreamExt;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use tsm_core::{IndexType, ObjectKey, RemoteStorageManager, StorageBackend};

use crate::child::self_cpu_seconds;
use crate::datagen::{DataKind, SegmentFiles, SegmentInfo};
use crate::plugin::{self, Backend, KeyFiles, Mode};
use crate::probe::Probe;
use crate::record::Record;

/// Bytes a broker fetch reads before closing the stream (`fetch.max.bytes`-sized, 1 MiB).
pub const FETCH_BYTES: u64 = 1024 * 1024;
/// Read size of the raw limits (file read, zstd, PUT body items): one chunk.
const LIMIT_BUF: usize = plugin::CHUNK_SIZE as usize;

/// What a case does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    /// `copyLogSegmentData` of the set in a mode.
    Copy,
    /// Random offset-index positions, ~1 MiB each, stream closed after (broker pattern).
    #[serde(rename = "fetch-1mib")]
    Fetch1Mib,
    /// Consumer catching up: consecutive ~1 MiB fetches over the whole log, no cache.
    FetchSeq,
    /// As `fetch-seq` with the memory chunk cache + prefetch.
    FetchSeqCached,
    /// One stream over the whole log (0 to end), plus every index checked.
    FetchStream,
    /// Deletes the copied segment (cleanup, not measured).
    Delete,
    /// Raw file read of the log (4 MiB reads).
    FileRead,
    /// Raw single-core zstd level 3 over the log in 4 MiB chunks.
    #[serde(rename = "zstd-1core")]
    Zstd1Core,
    /// Raw single-core zstd decompression of those chunks (what a zstd read can restore
    /// per core).
    #[serde(rename = "unzstd-1core")]
    Unzstd1Core,
    /// Raw backend upload of the log (no transform).
    Put,
    /// Raw backend download of that object (whole).
    Get,
    /// Deletes the raw object (cleanup, not measured).
    DeleteRaw,
}

impl Op {
    /// Every op, in run order for one data set: limits first, then per mode.
    pub const LIMITS: [Op; 6] = [
        Op::FileRead,
        Op::Zstd1Core,
        Op::Unzstd1Core,
        Op::Put,
        Op::Get,
        Op::DeleteRaw,
    ];
    /// Per-mode ops, in run order.
    pub const PER_MODE: [Op; 6] = [
        Op::Copy,
        Op::Fetch1Mib,
        Op::FetchSeq,
        Op::FetchSeqCached,
        Op::FetchStream,
        Op::Delete,
    ];

    /// The results' `op` string.
    pub fn name(self) -> &'static str {
        match self {
            Op::Copy => "copy",
            Op::Fetch1Mib => "fetch-1mib",
            Op::FetchSeq => "fetch-seq",
            Op::FetchSeqCached => "fetch-seq-cached",
            Op::FetchStream => "fetch-stream",
            Op::Delete => "delete",
            Op::FileRead => "file-read",
            Op::Zstd1Core => "zstd-1core",
            Op::Unzstd1Core => "unzstd-1core",
            Op::Put => "put",
            Op::Get => "get",
            Op::DeleteRaw => "delete-raw",
        }
    }

    /// Parses [`Op::name`].
    pub fn parse(s: &str) -> Option<Self> {
        Op::LIMITS
            .into_iter()
            .chain(Op::PER_MODE)
            .find(|o| o.name() == s)
    }
}

/// Everything a child needs to run one case (passed as JSON on its command line; holds
/// no secret: S3 credentials come from the environment).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseSpec {
    /// What to do.
    pub op: Op,
    /// Store.
    pub backend: Backend,
    /// Scratch dir (keys, filesystem storage root).
    pub work: PathBuf,
    /// The segment set's directory.
    pub set_dir: PathBuf,
    /// Which set.
    pub data: DataKind,
    /// Plugin mode (engine ops).
    pub mode: Option<Mode>,
    /// Number of random fetches of `fetch-1mib`.
    pub fetches: u32,
    /// Seed of the random fetch positions.
    pub seed: u64,
    /// Extra plugin properties (`--set key=value`) over the mode's; no secrets (the spec
    /// is on the child's command line).
    #[serde(default)]
    pub overrides: Vec<(String, String)>,
}

/// Runs `spec` in this process; `Some(record)` for measured ops.
pub fn run(spec: &CaseSpec) -> Result<Option<Record>> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(run_async(spec))
}

async fn run_async(spec: &CaseSpec) -> Result<Option<Record>> {
    let files = SegmentFiles::in_dir(&spec.set_dir);
    let info = SegmentInfo::read(&spec.set_dir)?;
    let mut rec = Record {
        harness: "rust".into(),
        subject: "tsm-core".into(),
        backend: crate::probe::backend_label(spec.backend.name()),
        data: spec.data.name().into(),
        mode: spec.mode.map(|m| m.name().to_string()),
        op: spec.op.name().into(),
        bytes: info.log_bytes,
        ..Record::default()
    };
    let keys = KeyFiles::ensure(&spec.work)?;
    let mode = spec.mode.unwrap_or(Mode::Plain);
    let cached = spec.op == Op::FetchSeqCached;
    let mut props = plugin::props(spec.backend, &spec.work, mode, &keys, cached)?;
    props.extend(spec.overrides.iter().cloned());
    if !spec.overrides.is_empty() {
        let set: Vec<String> = spec
            .overrides
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        rec.extra.insert("overrides".into(), set.into());
    }
    let engine_for = |props| async move {
        RemoteStorageManager::configure(props, plugin::KINDS)
            .await
            .context("configuring the engine")
    };
    match spec.op {
        Op::FileRead => {
            rec.subject = "limit".into();
            rec.mode = None;
            file_read(&files.log, &mut rec)?;
        }
        Op::Zstd1Core => {
            rec.subject = "limit".into();
            rec.mode = None;
            zstd_1core(&files.log, &mut rec)?;
        }
        Op::Unzstd1Core => {
            rec.subject = "limit".into();
            rec.mode = None;
            unzstd_1core(&files.log, &mut rec)?;
        }
        Op::Put | Op::Get | Op::DeleteRaw => {
            rec.subject = "limit".into();
            rec.mode = None;
            plugin::ensure_bucket(spec.backend, &props).await?;
            let engine = engine_for(props).await?;
            let key = ObjectKey::plain(format!("bench-limit/{}.log", spec.data.name()));
            let backend = engine.backend().clone();
            match spec.op {
                Op::Put => {
                    let probe = Probe::start()?;
                    raw_put(&backend, &key, &files.log, &mut rec).await?;
                    probe.finish(&mut rec)?;
                }
                Op::Get => {
                    let probe = Probe::start()?;
                    raw_get(&backend, &key, &files.log, &mut rec).await?;
                    probe.finish(&mut rec)?;
                }
                _ => {
                    backend.delete(&[key]).await?;
                    return Ok(None);
                }
            }
        }
        Op::Copy => {
            plugin::ensure_bucket(spec.backend, &props).await?;
            let engine = engine_for(props).await?;
            let meta = plugin::metadata(&info, spec.data, mode)?;
            let data = plugin::segment_data(&files)?;
            let probe = Probe::start()?;
            let (t, c) = (Instant::now(), self_cpu_seconds());
            engine
                .copy_log_segment_data(&meta, &data)
                .await
                .with_context(|| format!("copying {} in mode {}", spec.data.name(), mode.name()))?;
            rec.seconds = t.elapsed().as_secs_f64();
            rec.cpu_seconds = Some(self_cpu_seconds() - c);
            probe.finish(&mut rec)?;
            let up = counter(&engine, "backend.bytes.uploaded");
            rec.extra.insert("uploaded_bytes".into(), up.into());
        }
        Op::Delete => {
            let engine = engine_for(props).await?;
            let meta = plugin::metadata(&info, spec.data, mode)?;
            engine.delete_log_segment_data(&meta).await?;
            return Ok(None);
        }
        Op::Fetch1Mib | Op::FetchSeq | Op::FetchSeqCached | Op::FetchStream => {
            let engine = engine_for(props).await?;
            let meta = plugin::metadata(&info, spec.data, mode)?;
            let original = Original::open(&files.log)?;
            let f = Fetcher {
                engine: &engine,
                meta: &meta,
                original: &original,
            };
            // Warm the manifest cache (the broker fetches a segment many times).
            f.warm_up().await?;
            let stored = stored_log_bytes(&engine, &meta).await?;
            rec.extra.insert("stored_log_bytes".into(), stored.into());
            rec.extra
                .insert("segment_bytes".into(), info.log_bytes.into());
            let gets0 = counter(&engine, "backend.fetch.requests");
            let probe = Probe::start()?;
            match spec.op {
                Op::Fetch1Mib => f.random(&files, spec, &mut rec).await?,
                Op::FetchStream => f.stream_all(&mut rec).await?,
                _ => f.sequential(&mut rec).await?,
            }
            probe.finish(&mut rec)?;
            // tsm's own count of object reads in the same window (cross-checks the store's).
            let gets = counter(&engine, "backend.fetch.requests") - gets0;
            rec.extra.insert("tsm_get_requests".into(), gets.into());
            if spec.op == Op::FetchStream {
                check_indexes(&engine, &meta, &files).await?;
            }
            if cached {
                rec.extra
                    .insert("chunk_cache_bytes".into(), plugin::CHUNK_CACHE_BYTES.into());
                rec.extra
                    .insert("prefetch_bytes".into(), plugin::PREFETCH_BYTES.into());
            }
        }
    }
    rec.extra
        .insert("chunk_size".into(), plugin::CHUNK_SIZE.into());
    Ok(Some(rec))
}

/// Size of the segment's stored `.log` object (chunks after compression/encryption).
async fn stored_log_bytes(
    engine: &RemoteStorageManager,
    meta: &tsm_core::RemoteLogSegmentMetadata,
) -> Result<u64> {
    let key = tsm_core::object_keys::SegmentKeys::for_copy(meta, "", false).log;
    let mut list = engine.backend().list(&key);
    while let Some(m) = list.next().await {
        let m = m.with_context(|| format!("listing {key}"))?;
        if m.key == key.as_str() {
            return Ok(m.size);
        }
    }
    bail!("{key} not found: was the segment copied?")
}

fn counter(engine: &RemoteStorageManager, name: &str) -> u64 {
    engine.metrics().counters.get(name).copied().unwrap_or(0)
}

/// The original log, for comparing fetched bytes.
struct Original {
    file: File,
    path: PathBuf,
}

impl Original {
    fn open(path: &Path) -> Result<Self> {
        Ok(Self {
            file: File::open(path).with_context(|| format!("opening {}", path.display()))?,
            path: path.to_path_buf(),
        })
    }

    /// Fails unless `got` equals the original bytes at `pos..pos + got.len()`.
    fn check(&self, pos: u64, got: &[u8], scratch: &mut Vec<u8>) -> Result<()> {
        scratch.resize(got.len(), 0);
        self.file
            .read_exact_at(scratch, pos)
            .with_context(|| format!("reading {} at {pos}", self.path.display()))?;
        if let Some(i) = scratch.iter().zip(got).position(|(a, b)| a != b) {
            bail!(
                "fetched bytes differ from {} at byte {} (read of {} bytes from {pos})",
                self.path.display(),
                pos + i as u64,
                got.len()
            );
        }
        Ok(())
    }
}

/// Time and CPU spent inside measured calls.
#[derive(Default)]
struct Clock {
    wall: Duration,
    cpu: f64,
}

impl Clock {
    fn start() -> (Instant, f64) {
        (Instant::now(), self_cpu_seconds())
    }

    /// Puts `bytes` and the time measured (wall and CPU seconds) into `rec`.
    fn record(&self, rec: &mut Record, bytes: u64) {
        rec.bytes = bytes;
        rec.seconds = self.wall.as_secs_f64();
        rec.cpu_seconds = Some(self.cpu);
    }

    fn stop(&mut self, (t, c): (Instant, f64)) {
        self.wall += t.elapsed();
        self.cpu += self_cpu_seconds() - c;
    }
}

struct Fetcher<'a> {
    engine: &'a RemoteStorageManager,
    meta: &'a tsm_core::RemoteLogSegmentMetadata,
    original: &'a Original,
}

/// One broker-style read: what it delivered, when the first byte came, what it
/// downloaded.
struct Read {
    bytes: Vec<u8>,
    ttfb: Duration,
}

impl Fetcher<'_> {
    /// Loads the manifest into the engine's cache (the broker fetches a segment many
    /// times): opening a stream reads the manifest; dropping it unpolled downloads no
    /// chunk.
    async fn warm_up(&self) -> Result<()> {
        let s = self.engine.fetch_log_segment(self.meta, 0, None).await?;
        drop(s);
        Ok(())
    }

    /// `fetchLogSegment(start)` (open-ended, as the broker calls it), read `want` bytes
    /// (fewer at the end of the log), close. Only the stream calls are timed.
    async fn read(&self, start: u64, want: u64, clock: &mut Clock) -> Result<Read> {
        let t = Clock::start();
        let opened = Instant::now();
        let mut stream = self
            .engine
            .fetch_log_segment(self.meta, start, None)
            .await
            .with_context(|| format!("fetch from byte {start}"))?;
        let mut bytes = Vec::with_capacity(want as usize + plugin::CHUNK_SIZE as usize);
        let mut ttfb = None;
        while (bytes.len() as u64) < want {
            match stream.next().await {
                None => break,
                Some(item) => {
                    let b: Bytes = item.with_context(|| format!("fetch from byte {start}"))?;
                    if ttfb.is_none() && !b.is_empty() {
                        ttfb = Some(opened.elapsed());
                    }
                    bytes.extend_from_slice(&b);
                }
            }
        }
        drop(stream);
        clock.stop(t);
        bytes.truncate(want as usize);
        Ok(Read {
            ttfb: ttfb.unwrap_or_default(),
            bytes,
        })
    }

    /// `fetch-1mib`: random offset-index positions.
    async fn random(&self, files: &SegmentFiles, spec: &CaseSpec, rec: &mut Record) -> Result<()> {
        let index = std::fs::read(&files.offset_index)
            .with_context(|| format!("reading {}", files.offset_index.display()))?;
        let positions: Vec<u64> = index
            .chunks_exact(8)
            .filter_map(|e| u64::try_from(i32::from_be_bytes([e[4], e[5], e[6], e[7]])).ok())
            .collect();
        if positions.is_empty() {
            bail!("{} has no entries", files.offset_index.display());
        }
        let mut rng = SmallRng::seed_from_u64(spec.seed);
        let mut clock = Clock::default();
        let mut ttfbs = Vec::new();
        let (mut delivered, mut max_down) = (0u64, 0u64);
        let mut scratch = Vec::new();
        let down0 = counter(self.engine, "backend.bytes.downloaded");
        for _ in 0..spec.fetches.max(1) {
            let pos = positions[rng.random_range(0..positions.len())];
            let before = counter(self.engine, "backend.bytes.downloaded");
            let r = self.read(pos, FETCH_BYTES, &mut clock).await?;
            max_down = max_down.max(counter(self.engine, "backend.bytes.downloaded") - before);
            self.original.check(pos, &r.bytes, &mut scratch)?;
            delivered += r.bytes.len() as u64;
            ttfbs.push(r.ttfb);
        }
        clock.record(rec, delivered);
        rec.downloaded_bytes = Some(counter(self.engine, "backend.bytes.downloaded") - down0);
        ttfbs.sort();
        let pct = |p: f64| {
            let i = ((ttfbs.len() as f64 - 1.0) * p).round() as usize;
            ttfbs[i.min(ttfbs.len() - 1)].as_secs_f64() * 1e3
        };
        rec.extra.insert("fetches".into(), ttfbs.len().into());
        rec.extra.insert("ttfb_p50_ms".into(), pct(0.5).into());
        rec.extra.insert("ttfb_p99_ms".into(), pct(0.99).into());
        rec.extra
            .insert("max_downloaded_per_fetch".into(), max_down.into());
        Ok(())
    }

    /// `fetch-seq` / `fetch-seq-cached`: a consumer catching up. Each fetch starts at a
    /// batch boundary, reads ~1 MiB and closes; the next starts at the first batch not
    /// wholly delivered (as the broker's next fetch offset would).
    async fn sequential(&self, rec: &mut Record) -> Result<()> {
        let starts = batch_starts(&self.original.file, &self.original.path)?;
        let size = self.meta.segment_size_in_bytes as u64;
        let mut clock = Clock::default();
        let mut scratch = Vec::new();
        let down0 = counter(self.engine, "backend.bytes.downloaded");
        let (mut pos, mut fetches, mut read_total) = (0u64, 0u64, 0u64);
        while pos < size {
            let r = self.read(pos, FETCH_BYTES, &mut clock).await?;
            self.original.check(pos, &r.bytes, &mut scratch)?;
            read_total += r.bytes.len() as u64;
            fetches += 1;
            let end = pos + r.bytes.len() as u64;
            // The broker delivers whole batches: the next fetch starts at the last batch
            // start <= end (or at `end` if the read ended inside the first batch).
            let next = match starts.partition_point(|s| *s <= end) {
                0 => end,
                i => starts[i - 1],
            };
            pos = if end >= size {
                size
            } else if next > pos {
                next
            } else {
                end
            };
        }
        clock.record(rec, size);
        rec.downloaded_bytes = Some(counter(self.engine, "backend.bytes.downloaded") - down0);
        rec.extra.insert("fetches".into(), fetches.into());
        rec.extra.insert("read_bytes".into(), read_total.into());
        Ok(())
    }

    /// `fetch-stream`: one stream from 0 to the end.
    async fn stream_all(&self, rec: &mut Record) -> Result<()> {
        let size = self.meta.segment_size_in_bytes as u64;
        let mut clock = Clock::default();
        let mut scratch = Vec::new();
        let down0 = counter(self.engine, "backend.bytes.downloaded");
        let t = Clock::start();
        let mut stream = self.engine.fetch_log_segment(self.meta, 0, None).await?;
        clock.stop(t);
        let mut pos = 0u64;
        loop {
            let t = Clock::start();
            let item = stream.next().await;
            clock.stop(t);
            let Some(item) = item else { break };
            let b = item.with_context(|| format!("whole-segment fetch at byte {pos}"))?;
            self.original.check(pos, &b, &mut scratch)?;
            pos += b.len() as u64;
        }
        if pos != size {
            bail!("whole-segment fetch delivered {pos} bytes, the log has {size}");
        }
        clock.record(rec, size);
        rec.downloaded_bytes = Some(counter(self.engine, "backend.bytes.downloaded") - down0);
        Ok(())
    }
}

/// Every index fetched equals the file given at copy time.
async fn check_indexes(
    engine: &RemoteStorageManager,
    meta: &tsm_core::RemoteLogSegmentMetadata,
    files: &SegmentFiles,
) -> Result<()> {
    for (t, path) in [
        (IndexType::Offset, &files.offset_index),
        (IndexType::Timestamp, &files.time_index),
        (IndexType::ProducerSnapshot, &files.producer_snapshot),
        (IndexType::LeaderEpoch, &files.leader_epoch),
    ] {
        let got = engine.fetch_index(meta, t).await?;
        let want = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        if got.as_ref() != want.as_slice() {
            bail!(
                "fetchIndex {} differs from {}",
                t.java_name(),
                path.display()
            );
        }
    }
    Ok(())
}

/// Byte positions of every batch in the log (walks the 12-byte batch prefixes).
fn batch_starts(file: &File, path: &Path) -> Result<Vec<u64>> {
    let size = file.metadata()?.len();
    let mut starts = Vec::new();
    let mut pos = 0u64;
    let mut head = [0u8; 12];
    while pos < size {
        file.read_exact_at(&mut head, pos)
            .with_context(|| format!("reading the batch header of {} at {pos}", path.display()))?;
        let len = i32::from_be_bytes([head[8], head[9], head[10], head[11]]);
        let Ok(len) = u64::try_from(len) else {
            bail!("{}: negative batch length at {pos}", path.display());
        };
        starts.push(pos);
        pos += 12 + len;
    }
    Ok(starts)
}

/// `file-read`: the log read front to back in 4 MiB reads.
fn file_read(log: &Path, rec: &mut Record) -> Result<()> {
    use std::io::Read as _;
    let mut f = File::open(log).with_context(|| format!("opening {}", log.display()))?;
    let mut buf = vec![0u8; LIMIT_BUF];
    let (t, c) = Clock::start();
    let mut total = 0u64;
    loop {
        let n = f
            .read(&mut buf)
            .with_context(|| format!("reading {}", log.display()))?;
        if n == 0 {
            break;
        }
        total += n as u64;
    }
    rec.seconds = t.elapsed().as_secs_f64();
    rec.cpu_seconds = Some(self_cpu_seconds() - c);
    rec.bytes = total;
    rec.extra.insert(
        "page_cache".into(),
        "as found (usually hot: the data was just generated or read)".into(),
    );
    Ok(())
}

/// `zstd-1core`: level 3, one 4 MiB chunk at a time on this thread; only the
/// compression calls are timed.
fn zstd_1core(log: &Path, rec: &mut Record) -> Result<()> {
    let mut f = File::open(log).with_context(|| format!("opening {}", log.display()))?;
    let mut buf = vec![0u8; LIMIT_BUF];
    let mut out = vec![0u8; zstd::zstd_safe::compress_bound(LIMIT_BUF)];
    let mut z = zstd::bulk::Compressor::new(3).context("zstd compressor")?;
    let mut clock = Clock::default();
    let (mut total, mut compressed) = (0u64, 0u64);
    loop {
        let n =
            read_full(&mut f, &mut buf).with_context(|| format!("reading {}", log.display()))?;
        if n == 0 {
            break;
        }
        let t = Clock::start();
        let m = z
            .compress_to_buffer(&buf[..n], &mut out)
            .context("zstd compression")?;
        clock.stop(t);
        total += n as u64;
        compressed += m as u64;
        if n < buf.len() {
            break;
        }
    }
    clock.record(rec, total);
    rec.extra
        .insert("compressed_bytes".into(), compressed.into());
    rec.extra.insert("level".into(), 3.into());
    Ok(())
}

/// `unzstd-1core`: each 4 MiB chunk compressed at level 3 (untimed), then decompressed on
/// this thread; only the decompression calls are timed. `bytes`: original bytes restored.
fn unzstd_1core(log: &Path, rec: &mut Record) -> Result<()> {
    let mut f = File::open(log).with_context(|| format!("opening {}", log.display()))?;
    let mut buf = vec![0u8; LIMIT_BUF];
    let mut packed = vec![0u8; zstd::zstd_safe::compress_bound(LIMIT_BUF)];
    let mut z = zstd::bulk::Compressor::new(3).context("zstd compressor")?;
    let mut d = zstd::bulk::Decompressor::new().context("zstd decompressor")?;
    let mut clock = Clock::default();
    let mut total = 0u64;
    loop {
        let n =
            read_full(&mut f, &mut buf).with_context(|| format!("reading {}", log.display()))?;
        if n == 0 {
            break;
        }
        let m = z
            .compress_to_buffer(&buf[..n], &mut packed)
            .context("zstd compression")?;
        let t = Clock::start();
        let k = d
            .decompress_to_buffer(&packed[..m], &mut buf)
            .context("zstd decompression")?;
        clock.stop(t);
        anyhow::ensure!(k == n, "zstd restored {k} bytes of a {n}-byte chunk");
        total += n as u64;
        if n < buf.len() {
            break;
        }
    }
    clock.record(rec, total);
    rec.extra.insert("level".into(), 3.into());
    Ok(())
}

fn read_full(f: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    use std::io::Read as _;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// `put`: the log uploaded as is through the backend (4 MiB body items).
async fn raw_put(
    backend: &Arc<dyn StorageBackend>,
    key: &ObjectKey,
    log: &Path,
    rec: &mut Record,
) -> Result<()> {
    let file = tokio::fs::File::open(log)
        .await
        .with_context(|| format!("opening {}", log.display()))?;
    let size = file.metadata().await?.len();
    let k = key.clone();
    let body = tokio_util::io::ReaderStream::with_capacity(file, LIMIT_BUF)
        .map(move |r| r.map_err(|e| tsm_core::BackendError::other(&k, "reading the log", e)))
        .boxed();
    let (t, c) = Clock::start();
    let n = backend.upload(key, body, Some(size)).await?;
    rec.seconds = t.elapsed().as_secs_f64();
    rec.cpu_seconds = Some(self_cpu_seconds() - c);
    if n != size {
        bail!("raw PUT of {key} stored {n} bytes, the log has {size}");
    }
    Ok(())
}

/// `get`: the raw object downloaded whole and compared with the log (comparison not
/// timed).
async fn raw_get(
    backend: &Arc<dyn StorageBackend>,
    key: &ObjectKey,
    log: &Path,
    rec: &mut Record,
) -> Result<()> {
    let original = Original::open(log)?;
    let mut clock = Clock::default();
    let mut scratch = Vec::new();
    let t = Clock::start();
    let mut s = backend.fetch(key, None).await?;
    clock.stop(t);
    let mut pos = 0u64;
    loop {
        let t = Clock::start();
        let item = s.next().await;
        clock.stop(t);
        let Some(item) = item else { break };
        let b = item?;
        original.check(pos, &b, &mut scratch)?;
        pos += b.len() as u64;
    }
    if pos != rec.bytes {
        bail!(
            "raw GET of {key} delivered {pos} bytes, the log has {}",
            rec.bytes
        );
    }
    rec.seconds = clock.wall.as_secs_f64();
    rec.cpu_seconds = Some(clock.cpu);
    rec.downloaded_bytes = Some(pos);
    Ok(())
}
