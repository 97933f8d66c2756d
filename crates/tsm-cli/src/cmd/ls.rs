//! `tsm ls`: the segments in the bucket (one per `.rsm-manifest` under `key.prefix`), with
//! what their manifests say. Manifests are read 8 at a time; memory is one row per
//! segment.

use futures::{StreamExt, stream};
use serde_json::json;

use crate::context::Context;
use crate::error::CliResult;
use crate::manifest_io;
use crate::output::human_bytes;
use crate::segment::{Filter, SegmentRef, list_segments};

/// Manifests read concurrently.
const CONCURRENCY: usize = 8;

/// One listed segment.
struct Row {
    seg: SegmentRef,
    /// Original `.log` size, compression, key id, end offset; or why the manifest is bad.
    manifest: Result<(u64, bool, Option<String>, Option<i64>), String>,
}

pub async fn run(ctx: &Context, filter: &Filter) -> CliResult {
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
        return ctx.out.json(&json!({ "segments": items }));
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
    ctx.out.line(format!("{} segment(s)", rows.len()))
}
