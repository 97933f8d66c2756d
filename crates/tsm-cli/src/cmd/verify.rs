//! `tsm verify`: checks every segment (one `.rsm-manifest`) under `key.prefix`:
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
//! Segments are checked one after the other; memory is the engine's fetch pipeline plus
//! one index at a time. Exit 1 when any segment is bad, with what and where.

use futures::StreamExt;
use serde_json::json;
use tsm_core::manifest::integrity::SegmentIntegrity;
use tsm_core::{IndexType, RsmError};

use crate::context::Context;
use crate::error::{CliError, CliResult};
use crate::manifest_io;
use crate::segment::{Filter, SegmentRef, list_segments};
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

pub(crate) async fn run(ctx: &Context, filter: &Filter) -> CliResult {
    let segments = list_segments(ctx.backend(), &ctx.prefix, ctx.mask, filter).await?;
    let pb = ctx.out.progress(segments.len() as u64, "verifying", false);
    let mut bad = 0usize;
    let mut unverified = 0usize;
    let mut items = Vec::new();
    for seg in &segments {
        pb.set_message(format!("verifying {}", seg.name()));
        let r = verify_segment(ctx, seg).await;
        pb.inc(1);
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
    pb.finish_and_clear();
    if ctx.out.json {
        ctx.out.json(&json!({
            "segments": items,
            "checked": segments.len(),
            "bad": bad,
            "withoutIntegrity": unverified,
        }))?;
    } else {
        ctx.out.line(format!(
            "{} segment(s) checked, {bad} bad, {unverified} without integrity data",
            segments.len()
        ))?;
    }
    if bad > 0 {
        return Err(CliError::Findings(format!(
            "verify: {bad} of {} segment(s) are bad",
            segments.len()
        )));
    }
    Ok(())
}
