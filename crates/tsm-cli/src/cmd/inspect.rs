//! `tsm inspect <segment>`: the segment's keys and object sizes, its manifest (version,
//! compression, key-pair id, chunk table summary, index positions and sizes, what
//! integrity data it carries, the informational `remoteLogSegmentMetadata`) and the KIP-917 custom metadata the plugin
//! would return for it (only the fields in `custom.metadata.fields.include`). Reads the
//! manifest only.

use serde_json::json;
use tsm_core::IndexType;
use tsm_core::config::CustomMetadataField;
use tsm_core::manifest::integrity::SegmentIntegrity;

use crate::context::Context;
use crate::error::{CliError, CliResult};
use crate::manifest_io;
use crate::output::human_bytes;
use crate::segment::{Need, resolve};

pub(crate) async fn run(ctx: &Context, arg: &str) -> CliResult {
    let seg = resolve(ctx.backend(), &ctx.prefix, ctx.mask, arg, Need::Manifest).await?;
    let key = &seg.keys.manifest;
    let bytes = manifest_io::read_bytes(ctx.backend(), key).await?;
    let m = manifest_io::parse(key, &bytes).map_err(CliError::Findings)?;
    let index = manifest_io::chunk_index(key, &m).map_err(CliError::Findings)?;
    let sizes: Vec<u32> = index.transformed_sizes().collect();
    let (min, max) = (
        sizes.iter().copied().min().unwrap_or(0),
        sizes.iter().copied().max().unwrap_or(0),
    );
    let stored = index.transformed_file_size();
    let original = index.original_file_size();
    let indexes: Vec<serde_json::Value> = IndexType::ALL
        .into_iter()
        .map(|t| match m.segment_indexes.get(t) {
            Some(e) => json!({"index": t.java_name(), "position": e.position, "size": e.size}),
            None => json!({"index": t.java_name(), "position": null, "size": null}),
        })
        .collect();
    // What copy returns to the broker as custom metadata: only the fields configured in
    // `custom.metadata.fields.include` (none by default), as the plugin would compute them.
    let mut custom = serde_json::Map::new();
    for field in &ctx.rsm.options().custom_metadata_fields {
        let (name, value) = match field {
            CustomMetadataField::RemoteSize => ("remote_size", json!(seg.sizes.total())),
            CustomMetadataField::ObjectPrefix => ("object_prefix", json!(seg.keys.prefix)),
            CustomMetadataField::ObjectKey => ("object_key", json!(seg.keys.main_path)),
        };
        custom.insert(name.to_string(), value);
    }
    let custom = serde_json::Value::Object(custom);
    // What integrity data the manifest carries (checked by `tsm verify`, not here).
    let integrity = match SegmentIntegrity::from_manifest(key, &m) {
        Ok(Some(i)) => {
            let what = if i.mac.is_some() {
                "digests and MAC"
            } else {
                "digests"
            };
            format!(
                "{what} ({} chunk digests), written for {}",
                i.chunk_digests.len(),
                i.identity
            )
        }
        Ok(None) => "none (written by the Java plugin or an older tsm)".to_string(),
        Err(e) => format!("invalid: {e}"),
    };
    let report = json!({
        "integrity": integrity,
        "segment": seg.name(),
        "topicId": seg.topic_id.to_string(),
        "segmentId": seg.segment_id.to_string(),
        "keys": {
            "log": seg.keys.log.to_string(),
            "indexes": seg.keys.indexes.to_string(),
            "manifest": seg.keys.manifest.to_string(),
        },
        "objectSizes": {
            "log": seg.sizes.log,
            "indexes": seg.sizes.indexes,
            "manifest": seg.sizes.manifest,
        },
        "manifest": {
            "version": m.version,
            "compression": m.compression,
            "keyPairId": manifest_io::key_id(&m),
            "chunkIndex": {
                "type": if index.is_fixed() { "fixed" } else { "variable" },
                "originalChunkSize": index.original_chunk_size(),
                "originalFileSize": original,
                "transformedFileSize": stored,
                "chunks": index.chunk_count(),
                "minStoredChunk": min,
                "maxStoredChunk": max,
            },
            "segmentIndexes": indexes,
            "remoteLogSegmentMetadata": m.remote_log_segment_metadata,
        },
        "customMetadata": custom,
    });
    if ctx.out.json {
        return ctx.out.json(&report);
    }
    let o = &ctx.out;
    o.line(format!("segment      {}", seg.name()))?;
    o.line(format!("topic id     {}", seg.topic_id))?;
    o.line(format!("manifest     {}", seg.keys.manifest))?;
    let size = |s: Option<u64>| s.map_or_else(|| "MISSING".to_string(), |n| format!("{n} bytes"));
    o.line(format!(
        "log          {} ({})",
        seg.keys.log,
        size(seg.sizes.log)
    ))?;
    o.line(format!(
        "indexes      {} ({})",
        seg.keys.indexes,
        size(seg.sizes.indexes)
    ))?;
    o.line(format!("version      {}", m.version))?;
    o.line(format!(
        "compression  {}",
        if m.compression { "zstd" } else { "none" }
    ))?;
    o.line(format!(
        "encryption   {}",
        manifest_io::key_id(&m)
            .map_or("none".to_string(), |k| format!("AES-256-GCM, key pair {k}"))
    ))?;
    o.line(format!(
        "chunks       {} x {} ({}), {} index",
        index.chunk_count(),
        index.original_chunk_size(),
        human_bytes(u64::from(index.original_chunk_size())),
        if index.is_fixed() {
            "fixed"
        } else {
            "variable"
        }
    ))?;
    let ratio = if original > 0 {
        stored as f64 / original as f64
    } else {
        1.0
    };
    o.line(format!(
        "size         {original} bytes original, {stored} bytes stored ({:.1}%), stored chunks {min}..{max} bytes",
        ratio * 100.0
    ))?;
    o.line("indexes (stored bytes in .indexes):")?;
    for t in IndexType::ALL {
        match m.segment_indexes.get(t) {
            Some(e) => o.line(format!(
                "  {:<18} position {:>10} size {:>10}",
                t.java_name(),
                e.position,
                e.size
            ))?,
            None => o.line(format!("  {:<18} none", t.java_name()))?,
        }
    }
    o.line(format!("integrity    {integrity}"))?;
    if let Some(meta) = &m.remote_log_segment_metadata {
        for line in broker_metadata_lines(meta) {
            o.line(line)?;
        }
    }
    if custom.as_object().is_some_and(|c| c.is_empty()) {
        o.line("custom metadata none configured (custom.metadata.fields.include)")
    } else {
        o.line(format!("custom metadata {custom}"))
    }
}

/// The informational `remoteLogSegmentMetadata` of the manifest for people: offsets,
/// times as UTC (`2023-11-14T22:13:20.000Z`, the epoch milliseconds after them), broker,
/// leader epochs; any other field as JSON. The integrity data is summed up elsewhere (its
/// digests are long) and the segment id is in the first lines.
fn broker_metadata_lines(meta: &serde_json::Value) -> Vec<String> {
    let Some(obj) = meta.as_object() else {
        return vec![format!("broker metadata {meta}")];
    };
    let mut rest = obj.clone();
    rest.remove(tsm_core::manifest::integrity::FIELD);
    rest.remove("remoteLogSegmentId");
    let mut take = |k: &str| rest.remove(k);
    let mut out = vec!["broker metadata".to_string()];
    let (start, end) = (take("startOffset"), take("endOffset"));
    if start.is_some() || end.is_some() {
        let show = |v: Option<serde_json::Value>| v.map_or("?".to_string(), |v| v.to_string());
        out.push(format!("  offsets        {}..{}", show(start), show(end)));
    }
    for (key, label) in [
        ("maxTimestampMs", "max timestamp"),
        ("eventTimestampMs", "event time   "),
    ] {
        if let Some(v) = take(key) {
            let shown = match v.as_i64() {
                Some(ms) if ms >= 0 => format!("{} ({ms} ms)", crate::time::format_millis(ms)),
                Some(ms) => format!("none ({ms})"),
                None => v.to_string(),
            };
            out.push(format!("  {label}  {shown}"));
        }
    }
    if let Some(v) = take("brokerId") {
        out.push(format!("  broker id      {v}"));
    }
    if let Some(v) = take("segmentLeaderEpochs") {
        let shown = match v.as_object() {
            Some(epochs) if epochs.is_empty() => "none".to_string(),
            Some(epochs) => epochs
                .iter()
                .map(|(e, o)| format!("epoch {e} from offset {o}"))
                .collect::<Vec<_>>()
                .join(", "),
            None => v.to_string(),
        };
        out.push(format!("  leader epochs  {shown}"));
    }
    if !rest.is_empty() {
        out.push(format!(
            "  other          {}",
            serde_json::Value::Object(rest)
        ));
    }
    out
}
