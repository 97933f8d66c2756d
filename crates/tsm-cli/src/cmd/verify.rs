//! `tsm verify`: checks segments (one `.rsm-manifest` each) under `key.prefix`:
//! 1. `.log` and `.indexes` exist and their stored sizes are what the manifest says
//!    (catches truncated objects);
//! 2. the manifest parses (tsm-core's parser) and its chunk table decodes;
//! 3. the data key unwraps with the configured key ring (catches a wrong key-pair id);
//! 4. every chunk authenticates (AES-GCM) and decompresses to its recorded size, through
//!    the engine's fetch path, and the restored log walks as Kafka v2 record batches
//!    with valid CRC32C and increasing offsets ([`tsm_kafka_log::walker`]);
//! 5. every index restores; the OFFSET index is a multiple of 8 bytes, TIMESTAMP of 12,
//!    TRANSACTION of 34;
//! 6. integrity (tsm-core's `manifest::integrity`, checked by the engine in 4 and 5): the
//!    recorded identity is the one the keys name, every stored chunk and index matches its
//!    digest, the MAC of an encrypted segment verifies; the recorded end offset is the
//!    last batch's. A segment without integrity data (the Java plugin's) is reported as
//!    such (`integrity: none`) and is bad only under `tsm.integrity.required=true`.
//!
//! Which segments ([`Options`]): those the listing finds (`-t`/`-p`), narrowed to
//! `--segments` (ids, main paths or keys; one that names no segment is a usage error),
//! then to `--since` (manifest last modified at or after a time, from the listing), then
//! a random `--sample N` of those (reproducible: `--seed`).
//!
//! Cost: verifying downloads every byte of each segment (its `.log`, `.indexes` and
//! manifest). On a remote bucket (any backend but the filesystem) the download and its
//! GET requests are estimated from the listing and printed on stderr before the first
//! one; on a terminal, when the estimate is at least [`CONFIRM_BYTES`], tsm asks before
//! it starts (`--yes` does not ask). Afterwards the bytes and GET requests it took are
//! printed too.
//!
//! `--jobs N` segments are checked at a time (default [`DEFAULT_JOBS`]); each holds one
//! segment's fetch pipeline (the engine's memory budget applies) plus one index at a time.
//! Reports come out in listing order whatever order the checks finish in; the progress
//! bar counts finished segments. Exit 1 when any segment is bad, with what and where.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use futures::{StreamExt, stream};
use serde_json::json;
use tsm_core::manifest::integrity::SegmentIntegrity;
use tsm_core::{IndexType, RsmError};

use crate::context::Context;
use crate::error::{CliError, CliResult};
use crate::manifest_io;
use crate::output::human_bytes;
use crate::segment::{Filter, Listed, SegmentRef, SegmentSpec, list_objects, unknown_segment};
use tsm_kafka_log::{BatchWalker, files};

/// Entry sizes (bytes) of the fixed-size Kafka indexes (layouts: `tsm_kafka_log::files`).
const OFFSET_ENTRY: u64 = files::OFFSET_INDEX_ENTRY as u64;
const TIME_ENTRY: u64 = files::TIME_INDEX_ENTRY as u64;
const TXN_ENTRY: u64 = files::TXN_INDEX_ENTRY as u64;

/// The outcome for one segment.
#[derive(Debug, Default)]
pub(crate) struct SegmentReport {
    /// What is wrong, each naming the object, chunk, byte or index.
    pub problems: Vec<String>,
    /// Record batches walked.
    pub batches: u64,
    /// Original bytes restored.
    pub bytes: u64,
    /// First and last offset found in the batches.
    pub offsets: Option<(i64, i64)>,
    /// What integrity data the segment has: `mac` (digests and MAC), `digests`, `none`.
    pub integrity: &'static str,
}

/// Checks one segment (see the module docs).
pub(crate) async fn verify_segment(ctx: &Context, seg: &SegmentRef) -> SegmentReport {
    let mut r = SegmentReport::default();
    let keys = &seg.keys;
    if seg.sizes.log.is_none() {
        r.problems.push(format!("{}: object missing", keys.log));
    }
    if seg.sizes.indexes.is_none() {
        r.problems.push(format!("{}: object missing", keys.indexes));
    }
    let bytes = match manifest_io::read_bytes(ctx.backend(), &keys.manifest).await {
        Ok(b) => b,
        Err(e) => {
            r.problems.push(format!("manifest: {e}"));
            return r;
        }
    };
    let m = match manifest_io::parse(&keys.manifest, &bytes) {
        Ok(m) => m,
        Err(e) => {
            r.problems.push(e);
            return r;
        }
    };
    let recorded_end = match SegmentIntegrity::from_manifest(&keys.manifest, &m) {
        Ok(Some(i)) => {
            r.integrity = if i.mac.is_some() { "mac" } else { "digests" };
            Some(i.identity.end_offset)
        }
        Ok(None) => {
            r.integrity = "none";
            None
        }
        Err(e) => {
            r.integrity = "invalid";
            r.problems.push(e.to_string());
            None
        }
    };
    let index = match manifest_io::chunk_index(&keys.manifest, &m) {
        Ok(i) => i,
        Err(e) => {
            r.problems.push(e);
            return r;
        }
    };
    if let Some(stored) = seg.sizes.log {
        let expected = index.transformed_file_size();
        if stored != expected {
            r.problems.push(format!(
                "{}: stored size {stored} bytes, the manifest's chunk table says {expected} \
                 ({})",
                keys.log,
                if stored < expected {
                    "truncated"
                } else {
                    "extra bytes"
                }
            ));
        }
    }
    if let Some(stored) = seg.sizes.indexes {
        let expected = m.segment_indexes.stored_len();
        if stored != expected {
            r.problems.push(format!(
                "{}: stored size {stored} bytes, segmentIndexes say {expected}",
                keys.indexes
            ));
        }
    }
    if let Some(enc) = &m.encryption {
        let id = manifest_io::key_id(&m).unwrap_or("");
        match &ctx.ring {
            None => r.problems.push(format!(
                "{}: encrypted with key pair {id:?} but encryption is not configured",
                keys.manifest
            )),
            Some(ring) => {
                if let Err(e) = ring.unwrap(&enc.data_key) {
                    r.problems.push(format!(
                        "{}: data key (key pair {id:?}) does not unwrap: {e}",
                        keys.manifest
                    ));
                    return r;
                }
            }
        }
    }
    let meta = seg.metadata();
    if seg.sizes.log.is_some() {
        check_log(ctx, seg, &meta, &mut r).await;
        if let (Some(end), Some((_, last))) = (recorded_end, r.offsets)
            && end != last
        {
            r.problems.push(format!(
                "{}: the integrity data records end offset {end}, the last batch ends at \
                 {last}",
                keys.manifest
            ));
        }
    }
    if seg.sizes.indexes.is_some() {
        for t in IndexType::ALL {
            let present = m.segment_indexes.get(t).is_some();
            match ctx.rsm.fetch_index(&meta, t).await {
                Ok(b) => {
                    let len = b.len() as u64;
                    let entry = match t {
                        IndexType::Offset => OFFSET_ENTRY,
                        IndexType::Timestamp => TIME_ENTRY,
                        IndexType::Transaction => TXN_ENTRY,
                        _ => 1,
                    };
                    if !len.is_multiple_of(entry) {
                        r.problems.push(format!(
                            "{} index: {len} bytes, not a multiple of its {entry}-byte entries",
                            t.java_name()
                        ));
                    }
                }
                Err(RsmError::NotFound(_)) if !present => {}
                Err(e) => r.problems.push(format!("{} index: {e}", t.java_name())),
            }
        }
    }
    r
}

async fn check_log(
    ctx: &Context,
    seg: &SegmentRef,
    meta: &tsm_core::RemoteLogSegmentMetadata,
    r: &mut SegmentReport,
) {
    let mut stream = match ctx.rsm.fetch_log_segment(meta, 0, None).await {
        Ok(s) => s,
        Err(e) => {
            r.problems.push(format!("log: {e}"));
            return;
        }
    };
    let mut walker = BatchWalker::new();
    while let Some(piece) = stream.next().await {
        match piece {
            Ok(b) => {
                r.bytes += b.len() as u64;
                walker.push(&b);
            }
            Err(e) => {
                r.problems.push(format!("log: {e}"));
                return;
            }
        }
    }
    match walker.finish() {
        Ok(s) => {
            r.batches = s.batches;
            if let (Some(first), Some(last)) = (s.first_offset, s.last_offset) {
                r.offsets = Some((first, last));
                if first < seg.start_offset {
                    r.problems.push(format!(
                        "{}: first batch offset {first} is below the segment's start offset {}",
                        seg.keys.log, seg.start_offset
                    ));
                }
            }
        }
        Err(p) => r.problems.push(format!(
            "{}: restored byte {}: {}",
            seg.keys.log, p.position, p.detail
        )),
    }
}

/// Segments checked at a time unless `--jobs` says otherwise.
pub(crate) const DEFAULT_JOBS: usize = 4;
/// Most `--jobs`.
pub(crate) const MAX_JOBS: usize = 64;
/// On a terminal, a remote verify whose estimated download is at least this large asks
/// before it starts (unless `--yes`): 1 GiB.
pub(crate) const CONFIRM_BYTES: u64 = 1 << 30;

/// `--since`: how far back, or from when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Since {
    /// A duration back from now (`2h`, `1d`).
    Ago(Duration),
    /// A point in time (`2024-05-01`, `2024-05-01T12:00:00Z`).
    At(SystemTime),
}

/// Parses a `--since` value: a duration (`90s`, `30m`, `2h`, `1d`, `1h30m`) or a
/// timestamp ([`crate::time::parse_timestamp`]).
pub(crate) fn parse_since(text: &str) -> Result<Since, String> {
    if let Ok(d) = crate::orphans::parse_duration(text) {
        return Ok(Since::Ago(d));
    }
    crate::time::parse_timestamp(text)
        .map(Since::At)
        .ok_or_else(|| {
            format!(
                "{text:?}: a duration (90s, 30m, 2h, 1d, 1h30m) or a UTC timestamp \
             (2024-05-01, 2024-05-01T12:00:00Z, 2024-05-01T14:00:00+02:00)"
            )
        })
}

/// What `tsm verify` checks and how (see the module docs).
#[derive(Clone, Debug, Default)]
pub(crate) struct Options {
    /// Segments checked at a time (1 to [`MAX_JOBS`]).
    pub jobs: usize,
    /// Check only this many segments, chosen at random.
    pub sample: Option<usize>,
    /// Seed of the sample (random when absent, and then printed).
    pub seed: Option<u64>,
    /// Only these segments (ids, main paths or keys).
    pub segments: Vec<String>,
    /// Only segments whose manifest was last modified at or after this.
    pub since: Option<Since>,
    /// Do not ask before a large remote download.
    pub yes: bool,
}

/// A deterministic generator for `--sample` (SplitMix64): the same seed over the same
/// listing picks the same segments, on any machine and in any tsm version that keeps it.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0), by rejection (no modulo bias).
    fn below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let x = self.next();
            if x < zone {
                return x % n;
            }
        }
    }
}

/// `n` of `items` chosen uniformly at random with `seed` (a partial Fisher-Yates shuffle),
/// kept in their original order. All of them when `n >= items.len()`.
fn sample<T>(items: Vec<T>, n: usize, seed: u64) -> Vec<T> {
    if n >= items.len() {
        return items;
    }
    let mut rng = SplitMix64(seed);
    let mut idx: Vec<usize> = (0..items.len()).collect();
    for i in 0..n {
        let j = i + rng.below((idx.len() - i) as u64) as usize;
        idx.swap(i, j);
    }
    let mut chosen = idx[..n].to_vec();
    chosen.sort_unstable();
    let mut keep = vec![false; items.len()];
    for i in chosen {
        keep[i] = true;
    }
    items
        .into_iter()
        .zip(keep)
        .filter_map(|(item, k)| k.then_some(item))
        .collect()
}

/// What checking some segments downloads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Estimate {
    /// Bytes, from the listed sizes: every `.log`, `.indexes` and `.rsm-manifest`, the
    /// manifest twice (tsm reads it, then the engine).
    pub bytes: u64,
    /// GET requests: per segment two for the manifest, one per chunk of the `.log`, one
    /// per non-empty index (OFFSET and TIMESTAMP together in one). Chunk and index counts
    /// are in the manifests: those of up to [`PROBE`] segments are read, and the others'
    /// counts extrapolated from their stored `.log` sizes.
    pub gets: u64,
}

/// Manifests read for the [`Estimate`] (a fixed sample: the same segments each run).
const PROBE: usize = 32;

/// Chunks and index GETs of one segment, from its manifest; `None` when it cannot be
/// read or parsed (the check reports why).
async fn probe(ctx: &Context, seg: &SegmentRef) -> Option<(u64, u64)> {
    let bytes = manifest_io::read_bytes(ctx.backend(), &seg.keys.manifest)
        .await
        .ok()?;
    let m = manifest_io::parse(&seg.keys.manifest, &bytes).ok()?;
    let chunks = manifest_io::chunk_index(&seg.keys.manifest, &m)
        .ok()?
        .chunk_count() as u64;
    let present = |t| m.segment_indexes.get(t).is_some_and(|e| e.size > 0);
    let mut index_gets = IndexType::ALL.into_iter().filter(|t| present(*t)).count() as u64;
    if present(IndexType::Offset) && present(IndexType::Timestamp) {
        index_gets -= 1;
    }
    Some((chunks, index_gets))
}

/// The [`Estimate`] of checking `segments`.
async fn estimate(ctx: &Context, segments: &[SegmentRef]) -> Estimate {
    let bytes = segments
        .iter()
        .map(|s| {
            s.sizes.log.unwrap_or(0)
                + s.sizes.indexes.unwrap_or(0)
                + 2 * s.sizes.manifest.unwrap_or(0)
        })
        .sum();
    let picked = sample((0..segments.len()).collect(), PROBE, 0);
    let probed: Vec<(usize, Option<(u64, u64)>)> = stream::iter(picked)
        .map(|i| async move { (i, probe(ctx, &segments[i]).await) })
        .buffer_unordered(8)
        .collect()
        .await;
    let mut known = vec![None; segments.len()];
    let (mut chunks, mut stored, mut index_gets, mut n) = (0u64, 0u64, 0u64, 0u64);
    for (i, p) in probed {
        if let Some((c, g)) = p {
            known[i] = Some(c + g);
            chunks += c;
            stored += segments[i].sizes.log.unwrap_or(0);
            index_gets += g;
            n += 1;
        }
    }
    // Unprobed segments: chunks per stored byte and index GETs per segment as probed
    // (none probed: one chunk per `chunk.size` stored bytes, five index GETs).
    let per_byte = if stored > 0 {
        chunks as f64 / stored as f64
    } else {
        1.0 / f64::from(ctx.rsm.options().chunk_size.max(1))
    };
    let per_segment_index = if n > 0 {
        index_gets as f64 / n as f64
    } else {
        5.0
    };
    let gets = segments
        .iter()
        .zip(known)
        .map(|(s, k)| {
            2 + k.unwrap_or_else(|| {
                let log = s
                    .sizes
                    .log
                    .map_or(0.0, |b| (b as f64 * per_byte).ceil().max(1.0));
                let idx = if s.sizes.indexes.is_some() {
                    per_segment_index
                } else {
                    0.0
                };
                (log + idx).round() as u64
            })
        })
        .sum();
    Estimate { bytes, gets }
}

/// The segments `opts` selects among `listed` (committed segments, listing order), and a
/// note on how they were chosen (for the summary), or a usage error for a `--segments`
/// entry that names no segment.
fn select(
    ctx: &Context,
    listed: Vec<Listed>,
    opts: &Options,
) -> CliResult<(Vec<SegmentRef>, Selected)> {
    let listed_n = listed.len();
    let mut chosen = listed;
    if !opts.segments.is_empty() {
        let specs = parse_specs(ctx, &opts.segments)?;
        let mut missing = Vec::new();
        for (arg, spec) in opts.segments.iter().zip(&specs) {
            if !chosen
                .iter()
                .any(|l| l.seg.sizes.manifest.is_some() && spec.matches(&l.seg))
            {
                let orphan = chosen.iter().find(|l| spec.matches(&l.seg));
                let committed: Vec<SegmentRef> = chosen
                    .iter()
                    .filter(|l| l.seg.sizes.manifest.is_some())
                    .map(|l| l.seg.clone())
                    .collect();
                missing.push(unknown_segment(
                    arg,
                    spec,
                    (&ctx.prefix, ctx.mask),
                    orphan,
                    &committed,
                ));
            }
        }
        if !missing.is_empty() {
            let lines: Vec<String> = missing.iter().map(|e| format!("  {e}")).collect();
            return Err(CliError::Usage(format!(
                "verify --segments: {} of {} name no segment (within -t/-p when given):\n{}",
                missing.len(),
                opts.segments.len(),
                lines.join("\n")
            )));
        }
        chosen.retain(|l| specs.iter().any(|s| s.matches(&l.seg)));
    }
    chosen.retain(|l| l.seg.sizes.manifest.is_some());
    let mut unknown_age = 0;
    if let Some(since) = opts.since {
        // The oldest manifest age still selected; `None`: a time in the future, none is.
        let max_age = match since {
            Since::Ago(d) => Some(d),
            Since::At(t) => SystemTime::now().duration_since(t).ok(),
        };
        chosen.retain(|l| match (l.ages.manifest, max_age) {
            (None, _) => {
                unknown_age += 1;
                true
            }
            (Some(age), Some(max)) => age <= max,
            (Some(_), None) => false,
        });
    }
    let matched = chosen.len();
    let mut segments: Vec<SegmentRef> = chosen.into_iter().map(|l| l.seg).collect();
    let mut seed = None;
    if let Some(n) = opts.sample {
        let s = match opts.seed {
            Some(s) => s,
            None => random_seed()?,
        };
        segments = sample(segments, n, s);
        seed = Some(s);
    }
    Ok((
        segments,
        Selected {
            listed: listed_n,
            matched,
            seed,
            unknown_age,
        },
    ))
}

/// How the checked segments were chosen.
struct Selected {
    /// Committed segments the listing found (`-t`/`-p`).
    listed: usize,
    /// Of those, the ones `--segments` and `--since` kept.
    matched: usize,
    /// The seed of `--sample`.
    seed: Option<u64>,
    /// Kept by `--since` although the store reported no modification time.
    unknown_age: usize,
}

fn parse_specs(ctx: &Context, args: &[String]) -> CliResult<Vec<SegmentSpec>> {
    let mut specs = Vec::with_capacity(args.len());
    let mut bad = Vec::new();
    for a in args {
        match SegmentSpec::parse(a, &ctx.prefix, ctx.mask) {
            Ok(s) => specs.push(s),
            Err(why) => bad.push(why),
        }
    }
    if bad.is_empty() {
        Ok(specs)
    } else {
        Err(CliError::Usage(format!(
            "verify --segments: {}",
            bad.join("; ")
        )))
    }
}

fn random_seed() -> CliResult<u64> {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).map_err(|e| CliError::Usage(format!("no random seed: {e}")))?;
    // Small enough to type back (`--seed`), random enough to sample.
    Ok(u64::from_le_bytes(b) % 1_000_000_000)
}

/// Asks on the terminal whether to go on; true for `y` / `yes`.
fn confirm(question: &str) -> CliResult<bool> {
    let mut err = std::io::stderr().lock();
    write!(err, "{question} [y/N] ")
        .and_then(|()| err.flush())
        .ok();
    drop(err);
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| CliError::io("<stdin>", e))?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

/// Bytes downloaded and GET requests sent so far, from the engine's registry (plus the
/// manifests `verify` reads itself, counted by the caller).
fn counters(ctx: &Context) -> (u64, u64) {
    let m = ctx.rsm.metrics();
    (
        m.counter("bytes.downloaded"),
        m.counter("client.get.requests"),
    )
}

pub(crate) async fn run(ctx: &Context, filter: &Filter, opts: &Options) -> CliResult {
    let jobs = opts.jobs.clamp(1, MAX_JOBS);
    // With --segments of one topic only, list that topic.
    let mut filter = filter.clone();
    if filter.topic.is_none() && !opts.segments.is_empty() {
        let specs = parse_specs(ctx, &opts.segments)?;
        let topics: Vec<&str> = specs
            .iter()
            .map(|s| match s {
                SegmentSpec::Path(p) => Some(p.topic.as_str()),
                SegmentSpec::Id(_) => None,
            })
            .collect::<Option<Vec<_>>>()
            .unwrap_or_default();
        if let Some(first) = topics.first()
            && topics.iter().all(|t| t == first)
        {
            filter.topic = Some((*first).to_string());
        }
    }
    let listed = list_objects(ctx.backend(), &ctx.prefix, ctx.mask, &filter).await?;
    let (segments, selected) = select(ctx, listed, opts)?;
    let est = estimate(ctx, &segments).await;
    // How the checked segments were chosen, for the summary line.
    let mut how = Vec::new();
    if selected.matched < selected.listed {
        let by: Vec<&str> = [
            (!opts.segments.is_empty()).then_some("--segments"),
            opts.since.map(|_| "--since"),
        ]
        .into_iter()
        .flatten()
        .collect();
        how.push(format!(
            "{} of {} listed selected by {}",
            selected.matched,
            selected.listed,
            by.join(" and ")
        ));
    }
    if let Some(seed) = selected.seed {
        how.push(format!(
            "a random sample of {} of {}: --seed {seed} picks the same ones again",
            segments.len(),
            selected.matched
        ));
    }
    if selected.unknown_age > 0 {
        how.push(format!(
            "{} kept by --since without a modification time in the listing",
            selected.unknown_age
        ));
    }
    if ctx.remote && !segments.is_empty() {
        eprintln!(
            "tsm verify: {} segment(s) in {}: about {} to download ({} bytes) in about {} GET \
             requests, {} segment(s) at a time",
            segments.len(),
            ctx.backend(),
            human_bytes(est.bytes),
            est.bytes,
            est.gets,
            jobs.min(segments.len())
        );
        let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        if terminal
            && !opts.yes
            && est.bytes >= CONFIRM_BYTES
            && !confirm("Download and check them?")?
        {
            return Err(CliError::Findings(
                "verify: not confirmed, nothing checked (--yes does not ask; --sample N, \
                 --segments, --since or -t/-p check fewer)"
                    .into(),
            ));
        }
    }
    let before = counters(ctx);
    let restored = AtomicU64::new(0);
    let pb = ctx.out.progress(segments.len() as u64, "verifying", false);
    let at_once = jobs.min(segments.len()).max(1);
    pb.set_message(format!("verifying, {at_once} at a time"));
    let mut checks = stream::iter(&segments)
        .map(|seg| {
            let pb = pb.clone();
            let restored = &restored;
            async move {
                let r = verify_segment(ctx, seg).await;
                let total = restored.fetch_add(r.bytes, Ordering::Relaxed) + r.bytes;
                pb.set_message(format!(
                    "verifying, {at_once} at a time, {} restored",
                    human_bytes(total)
                ));
                pb.inc(1);
                (seg, r)
            }
        })
        .buffered(jobs);
    let mut bad = 0usize;
    let mut unverified = 0usize;
    let mut items = Vec::new();
    while let Some((seg, r)) = checks.next().await {
        if !r.problems.is_empty() {
            bad += 1;
        }
        if r.integrity == "none" {
            unverified += 1;
        }
        if ctx.out.json {
            items.push(json!({
                "segment": seg.name(),
                "manifestKey": seg.keys.manifest.to_string(),
                "ok": r.problems.is_empty(),
                "problems": r.problems,
                "batches": r.batches,
                "bytes": r.bytes,
                "offsets": r.offsets.map(|(a, b)| json!([a, b])),
                "integrity": r.integrity,
            }));
        } else {
            pb.suspend(|| -> CliResult {
                if r.problems.is_empty() {
                    let offsets = r
                        .offsets
                        .map_or("empty".to_string(), |(a, b)| format!("offsets {a}..{b}"));
                    ctx.out.line(format!(
                        "OK   {} ({} bytes, {} batches, {offsets}, integrity: {})",
                        seg.name(),
                        r.bytes,
                        r.batches,
                        r.integrity
                    ))
                } else {
                    ctx.out.line(format!("BAD  {}", seg.name()))?;
                    for p in &r.problems {
                        ctx.out.line(format!("     - {p}"))?;
                    }
                    Ok(())
                }
            })?;
        }
    }
    drop(checks);
    pb.finish_and_clear();
    let after = counters(ctx);
    let manifests: u64 = segments.iter().filter_map(|s| s.sizes.manifest).sum();
    let downloaded = after.0.saturating_sub(before.0) + manifests;
    let gets = after.1.saturating_sub(before.1);
    // Before the summary, which stays the last line of `tsm verify >out 2>&1`.
    if ctx.remote && !segments.is_empty() {
        eprintln!(
            "tsm verify: downloaded {} ({downloaded} bytes) in {gets} GET requests",
            human_bytes(downloaded)
        );
    }
    let checked = segments.len();
    if ctx.out.json {
        ctx.out.json(&json!({
            "segments": items,
            "checked": checked,
            "bad": bad,
            "withoutIntegrity": unverified,
            "listed": selected.listed,
            "sample": selected.seed.map(|seed| json!({"size": checked, "of": selected.matched, "seed": seed})),
            "jobs": jobs,
            "estimate": {"bytes": est.bytes, "getRequests": est.gets},
            "downloaded": {"bytes": downloaded, "getRequests": gets},
        }))?;
    } else {
        let mut summary =
            format!("{checked} segment(s) checked, {bad} bad, {unverified} without integrity data");
        if !how.is_empty() {
            summary.push_str(&format!(" ({})", how.join("; ")));
        }
        ctx.out.line(summary)?;
    }
    if bad > 0 {
        return Err(CliError::Findings(format!(
            "verify: {bad} of {checked} segment(s) are bad"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_uniform_ordered_and_reproducible() {
        let items: Vec<u32> = (0..100).collect();
        let a = sample(items.clone(), 10, 42);
        assert_eq!(a.len(), 10);
        assert!(a.windows(2).all(|w| w[0] < w[1]), "{a:?}");
        assert_eq!(a, sample(items.clone(), 10, 42));
        assert_ne!(a, sample(items.clone(), 10, 43));
        assert_eq!(sample(items.clone(), 200, 1), items);
        assert!(sample(items.clone(), 0, 1).is_empty());
        // Every item is drawn about equally often.
        let mut hits = [0u32; 10];
        for seed in 0..2000 {
            for i in sample((0..10).collect::<Vec<usize>>(), 3, seed) {
                hits[i] += 1;
            }
        }
        assert!(hits.iter().all(|&h| (450..750).contains(&h)), "{hits:?}");
    }

    #[test]
    fn since_takes_durations_and_timestamps() {
        assert_eq!(parse_since("2h"), Ok(Since::Ago(Duration::from_secs(7200))));
        assert!(matches!(parse_since("2024-05-01"), Ok(Since::At(_))));
        assert!(matches!(
            parse_since("2024-05-01T12:00:00Z"),
            Ok(Since::At(_))
        ));
        let e = parse_since("last week").expect_err("bad");
        assert!(e.contains("duration") && e.contains("timestamp"), "{e}");
    }
}
