//! `tsm copy <file.log> --topic T --partition P`: uploads a local segment exactly as the
//! broker plugin would (the engine's `copy_log_segment_data`: chunk, compress/encrypt per
//! configuration, `.log`, `.indexes`, then the manifest). The index files are taken from
//! next to the `.log` (same base name); missing ones are stored empty. The end offset and
//! max timestamp come from walking the log's record batches (which also checks them).
//! Memory: the engine's copy pipeline; the walk reads 1 MiB at a time.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use serde_json::json;
use tsm_core::custom_metadata::CustomMetadata;
use tsm_core::object_keys::SegmentKeys;
use tsm_core::{KafkaUuid, LogSegmentData, RemoteLogSegmentMetadata};

use crate::cli::CopyArgs;
use crate::context::Context;
use crate::error::{CliError, CliResult};
use tsm_kafka_log::{BatchSummary, BatchWalker};

/// A random Kafka `Uuid` (OS RNG).
fn random_uuid() -> CliResult<KafkaUuid> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b)
        .map_err(|e| CliError::Usage(format!("cannot get random bytes for an id: {e}")))?;
    let msb = i64::from_be_bytes(b[..8].try_into().unwrap_or_default());
    let lsb = i64::from_be_bytes(b[8..].try_into().unwrap_or_default());
    Ok(KafkaUuid { msb, lsb })
}

fn parse_uuid(flag: &str, v: Option<&str>) -> CliResult<KafkaUuid> {
    match v {
        None => random_uuid(),
        Some(s) => KafkaUuid::parse(s).ok_or_else(|| {
            CliError::Usage(format!(
                "{flag} {s:?}: not a Kafka Uuid (22 characters of URL-safe base64)"
            ))
        }),
    }
}

/// Walks the local log's batches (1 MiB reads).
fn walk(path: &Path) -> CliResult<BatchSummary> {
    let mut f = std::fs::File::open(path).map_err(|e| CliError::io(path.display(), e))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut w = BatchWalker::new();
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| CliError::io(path.display(), e))?;
        if n == 0 {
            break;
        }
        w.push(&buf[..n]);
    }
    w.finish().map_err(|p| {
        CliError::Findings(format!(
            "{}: byte {}: {} (not a valid Kafka log)",
            path.display(),
            p.position,
            p.detail
        ))
    })
}

pub(crate) async fn run(ctx: &Context, args: &CopyArgs) -> CliResult {
    let log = &args.log;
    let stem = log
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".log"))
        .ok_or_else(|| {
            CliError::Usage(format!(
                "{}: expected a <base offset>.log file",
                log.display()
            ))
        })?;
    let start_offset = match args.start_offset {
        Some(o) => o,
        None => stem.parse::<i64>().map_err(|_| {
            CliError::Usage(format!(
                "{}: the file name is not a base offset; pass --start-offset",
                log.display()
            ))
        })?,
    };
    let size = std::fs::metadata(log)
        .map_err(|e| CliError::io(log.display(), e))?
        .len();
    let summary = tokio::task::spawn_blocking({
        let log = log.clone();
        move || walk(&log)
    })
    .await
    .map_err(|e| CliError::Findings(format!("log walk: {e}")))??;
    let dir = log.parent().unwrap_or(Path::new("."));
    let sibling = |ext: &str| dir.join(format!("{stem}.{ext}"));
    let scratch = std::env::temp_dir().join(format!("tsm-copy-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| CliError::io(scratch.display(), e))?;
    let result = async {
        let existing_or_empty = |p: PathBuf, name: &str| -> CliResult<PathBuf> {
            if p.exists() {
                return Ok(p);
            }
            let empty = scratch.join(name);
            std::fs::write(&empty, b"").map_err(|e| CliError::io(empty.display(), e))?;
            Ok(empty)
        };
        let leader_epoch = match &args.leader_epoch_checkpoint {
            Some(p) => Bytes::from(std::fs::read(p).map_err(|e| CliError::io(p.display(), e))?),
            None => Bytes::new(),
        };
        let txn = sibling("txnindex");
        let data = LogSegmentData {
            log_segment: log.clone(),
            offset_index: existing_or_empty(sibling("index"), "empty.index")?,
            time_index: existing_or_empty(sibling("timeindex"), "empty.timeindex")?,
            transaction_index: txn.exists().then_some(txn),
            producer_snapshot_index: existing_or_empty(sibling("snapshot"), "empty.snapshot")?,
            leader_epoch_index: leader_epoch,
        };
        let meta = RemoteLogSegmentMetadata {
            topic_id: parse_uuid("--topic-id", args.topic_id.as_deref())?,
            topic: args.topic.clone(),
            partition: args.partition,
            segment_id: parse_uuid("--segment-id", args.segment_id.as_deref())?,
            start_offset,
            end_offset: summary.last_offset.unwrap_or(start_offset),
            max_timestamp_ms: summary.max_timestamp_ms.unwrap_or(0),
            broker_id: -1,
            event_timestamp_ms: 0,
            segment_leader_epochs: BTreeMap::new(),
            segment_size_in_bytes: i32::try_from(size).unwrap_or(i32::MAX),
            custom_metadata: None,
        };
        let pb = ctx.out.progress(size, "uploading", true);
        pb.enable_steady_tick(std::time::Duration::from_millis(200));
        let custom = ctx.rsm.copy_log_segment_data(&meta, &data).await;
        pb.finish_and_clear();
        Ok::<_, CliError>((meta, custom?))
    }
    .await;
    let _ = std::fs::remove_dir_all(&scratch);
    let (meta, custom) = result?;
    let keys = SegmentKeys::for_copy(&meta, &ctx.prefix, ctx.mask);
    let custom = custom
        .as_deref()
        .and_then(|b| CustomMetadata::decode(b).ok())
        .map(|c| json!({"remote_size": c.remote_size, "object_prefix": c.object_prefix, "object_key": c.object_key}));
    if ctx.out.json {
        return ctx.out.json(&json!({
            "topic": meta.topic,
            "topicId": meta.topic_id.to_string(),
            "partition": meta.partition,
            "segmentId": meta.segment_id.to_string(),
            "startOffset": meta.start_offset,
            "endOffset": meta.end_offset,
            "bytes": size,
            "batches": summary.batches,
            "records": summary.records,
            "manifestKey": keys.manifest.to_string(),
            "customMetadata": custom,
        }));
    }
    ctx.out.line(format!(
        "copied {} ({size} bytes, {} batches, offsets {}..{}) to {}",
        log.display(),
        summary.batches,
        meta.start_offset,
        meta.end_offset,
        keys.manifest
    ))
}
