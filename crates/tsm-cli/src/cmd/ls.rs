//! `tsm ls`: the segments in the bucket (one per `.rsm-manifest` under `key.prefix`), with
//! what their manifests say. Manifests are read 8 at a time; memory is one row per
//! segment. `tsm ls --orphans` lists the objects without a manifest instead
//! ([`crate::orphans`]).

use std::time::Duration;

use futures::{StreamExt, stream};
use serde_json::json;

use crate::context::Context;
use crate::error::CliResult;
use crate::manifest_io;
use crate::orphans::{self, Orphan, OrphanObject};
use crate::output::human_bytes;
use crate::segment::{Filter, SegmentRef, list_objects, list_segments};

/// Manifests read concurrently.
const CONCURRENCY: usize = 8;

/// One listed segment.
struct Row {
    seg: SegmentRef,
    /// Original `.log` size, compression, key id, end offset; or why the manifest is bad.
    manifest: Result<(u64, bool, Option<String>, Option<i64>), String>,
}

pub(crate) async fn run(ctx: &Context, filter: &Filter) -> CliResult {
    let segments = list_segments(ctx.backend(), &ctx.prefix, ctx.mask, filter).await?;
    let pb = ctx
        .out
        .progress(segments.len() as u64, "reading manifests", false);
    let rows: Vec<Row> = stream::iter(segments)
        .map(|seg| {
            let pb = pb.clone();
            async move {
                let manifest = async {
                    let bytes = manifest_io::read_bytes(ctx.backend(), &seg.keys.manifest)
                        .await
                        .map_err(|e| e.to_string())?;
                    let m = manifest_io::parse(&seg.keys.manifest, &bytes)?;
                    Ok::<_, String>((
                        m.chunk_index.original_file_size(),
                        m.compression,
                        manifest_io::key_id(&m).map(str::to_string),
                        manifest_io::metadata_i64(&m, "endOffset"),
                    ))
                }
                .await;
                pb.inc(1);
                Row { seg, manifest }
            }
        })
        .buffered(CONCURRENCY)
        .collect()
        .await;
    pb.finish_and_clear();
    let stored: u64 = rows.iter().map(|r| r.seg.sizes.total()).sum();
    let original: u64 = rows
        .iter()
        .filter_map(|r| r.manifest.as_ref().ok().map(|m| m.0))
        .sum();
    let unreadable = rows.iter().filter(|r| r.manifest.is_err()).count();
    if ctx.out.json {
        let items: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                let mut v = json!({
                    "topic": r.seg.topic,
                    "topicId": r.seg.topic_id.to_string(),
                    "partition": r.seg.partition,
                    "startOffset": r.seg.start_offset,
                    "segmentId": r.seg.segment_id.to_string(),
                    "manifestKey": r.seg.keys.manifest.to_string(),
                    "storedSize": r.seg.sizes.total(),
                });
                match &r.manifest {
                    Ok((size, compression, key, end)) => {
                        v["endOffset"] = json!(end);
                        v["originalSize"] = json!(size);
                        v["compression"] = json!(compression);
                        v["keyPairId"] = json!(key);
                    }
                    Err(e) => v["error"] = json!(e),
                }
                v
            })
            .collect();
        return ctx.out.json(&json!({
            "segments": items,
            "totals": {
                "segments": rows.len(),
                "originalSize": original,
                "storedSize": stored,
                "manifestErrors": unreadable,
            },
        }));
    }
    ctx.out.line(format!(
        "{:<30} {:>5} {:>20} {:>20} {:>12} {:>12} {:>5} {:<12} SEGMENT ID",
        "TOPIC", "PART", "START", "END", "SIZE", "STORED", "ZSTD", "KEY"
    ))?;
    for r in &rows {
        let (size, zstd, key, end) = match &r.manifest {
            Ok((size, c, k, e)) => (
                human_bytes(*size),
                if *c { "yes" } else { "no" }.to_string(),
                k.clone().unwrap_or_else(|| "-".into()),
                e.map_or_else(|| "-".into(), |e| e.to_string()),
            ),
            Err(_) => ("?".into(), "?".into(), "?".into(), "?".into()),
        };
        ctx.out.line(format!(
            "{:<30} {:>5} {:>20} {:>20} {:>12} {:>12} {:>5} {:<12} {}",
            r.seg.topic,
            r.seg.partition,
            r.seg.start_offset,
            end,
            size,
            human_bytes(r.seg.sizes.total()),
            zstd,
            key,
            r.seg.segment_id
        ))?;
        if let Err(e) = &r.manifest {
            ctx.out.line(format!("  manifest error: {e}"))?;
        }
    }
    // Totals: original = the restored `.log` bytes; stored = every object of the segments.
    let mut total = format!(
        "{} segment(s), {} original, {} stored",
        rows.len(),
        human_bytes(original),
        human_bytes(stored)
    );
    if original > 0 {
        total.push_str(&format!(
            " ({:.1}% of original)",
            stored as f64 * 100.0 / original as f64
        ));
    }
    if unreadable > 0 {
        total.push_str(&format!(
            "; {unreadable} manifest(s) unreadable, their original size not counted"
        ));
    }
    ctx.out.line(total)
}

/// `tsm ls --orphans`: the `.log` / `.indexes` objects without their `.rsm-manifest`
/// whose segment is at least `older_than` old (or of unknown age), as
/// [`orphans::select`] decides for `tsm gc` too. One line per object, a summary; exit 0.
pub(crate) async fn run_orphans(ctx: &Context, filter: &Filter, older_than: Duration) -> CliResult {
    let listed = list_objects(ctx.backend(), &ctx.prefix, ctx.mask, filter).await?;
    let found = orphans::select(listed, older_than);
    let objects: Vec<(&Orphan, &OrphanObject)> = found
        .iter()
        .flat_map(|o| o.objects.iter().map(move |obj| (o, obj)))
        .collect();
    let bytes: u64 = objects.iter().map(|(_, obj)| obj.size).sum();
    let unknown = objects.iter().filter(|(o, _)| o.age.is_none()).count();
    if ctx.out.json {
        let items: Vec<serde_json::Value> = objects
            .iter()
            .map(|(o, obj)| {
                json!({
                    "key": obj.key.to_string(),
                    "segment": o.seg.name(),
                    "size": obj.size,
                    "ageSeconds": obj.age.map(|a| a.as_secs()),
                    "segmentAgeSeconds": o.age.map(|a| a.as_secs()),
                })
            })
            .collect();
        return ctx.out.json(&json!({
            "orphans": items,
            "objects": objects.len(),
            "segments": found.len(),
            "bytes": bytes,
            "unknownAge": unknown,
            "olderThanSeconds": older_than.as_secs(),
        }));
    }
    ctx.out.line(format!("{:>12} {:>7} KEY", "SIZE", "AGE"))?;
    for (_, obj) in &objects {
        ctx.out.line(format!(
            "{:>12} {:>7} {}",
            human_bytes(obj.size),
            orphans::format_age(obj.age),
            obj.key
        ))?;
    }
    let mut summary = format!(
        "{} orphan object(s), {}, in {} segment(s) without .rsm-manifest, older than {}",
        objects.len(),
        human_bytes(bytes),
        found.len(),
        orphans::format_duration(older_than)
    );
    if unknown > 0 {
        summary.push_str(&format!(
            "; {unknown} of unknown age (the store's listing gives no modification time: \
             tsm gc deletes them only with --include-unknown-age)"
        ));
    }
    ctx.out.line(summary)
}
