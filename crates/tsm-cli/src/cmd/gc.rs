//! `tsm gc --older-than DURATION`: deletes the orphans `tsm ls --orphans` lists (the same
//! [`orphans::select`]): `.log` / `.indexes` objects without their `.rsm-manifest`, whose
//! segment's youngest object is at least DURATION old. There is no default age: an
//! object younger than any copy can take may belong to a copy in flight.
//!
//! Safety: a manifest is never deleted, nor any object of a segment that has one. Just
//! before deleting, each segment's manifest is looked up again (a listing of exactly that
//! key); a segment whose manifest appeared meanwhile is skipped, and one whose check
//! fails is left alone. Orphans of unknown age (the store's listing gave no modification
//! time) are kept unless `--include-unknown-age`. Deletes go through the backend's batched
//! delete (one call per [`SEGMENTS_PER_BATCH`] segments; idempotent). `--dry-run` runs
//! every check and deletes nothing. Exit 1 when a check or a delete failed.

use std::collections::BTreeSet;
use std::time::Duration;

use futures::{StreamExt, stream};
use serde_json::json;
use tsm_core::ObjectKey;

use crate::context::Context;
use crate::error::{CliError, CliResult};
use crate::orphans::{self, Orphan};
use crate::output::human_bytes;
use crate::segment::{Filter, list_objects, object_exists};

/// Manifest re-checks in flight.
const CONCURRENCY: usize = 8;
/// Segments per batch: manifests re-checked, then one call to the backend's batched
/// delete of at most 1000 keys (an orphan has one or two objects; S3 DeleteObjects takes
/// 1000).
const SEGMENTS_PER_BATCH: usize = 500;

/// `tsm gc` options.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Options {
    /// `--older-than` (required).
    pub older_than: Option<Duration>,
    /// `--dry-run`
    pub dry_run: bool,
    /// `--include-unknown-age`
    pub include_unknown_age: bool,
}

/// What happened to one orphan object.
#[derive(Clone, Debug)]
enum Action {
    Deleted,
    WouldDelete,
    /// Age unknown and no `--include-unknown-age`.
    KeptUnknownAge,
    /// The segment's manifest exists now.
    Skipped,
    Failed(String),
}

impl Action {
    fn name(&self) -> &'static str {
        match self {
            Self::Deleted => "deleted",
            Self::WouldDelete => "would-delete",
            Self::KeptUnknownAge => "kept",
            Self::Skipped => "skipped",
            Self::Failed(_) => "failed",
        }
    }
}

/// An orphan and its position in the listing (the report keeps the listing order).
type Numbered = (usize, Orphan);

/// One reported object.
struct Item {
    /// Position of its segment in the listing.
    ord: usize,
    key: ObjectKey,
    segment: String,
    size: u64,
    age: Option<Duration>,
    action: Action,
}

pub(crate) async fn run(ctx: &Context, filter: &Filter, opts: &Options) -> CliResult {
    let older_than = opts.older_than.ok_or_else(|| {
        CliError::Usage(
            "gc needs --older-than DURATION (for example --older-than 1h; 90s, 30m, 2h, 1d): \
             an object younger than a copy can take may belong to a copy still in flight, so \
             there is no default age; `tsm ls --orphans --older-than DURATION` shows what it \
             would delete"
                .into(),
        )
    })?;
    let listed = list_objects(ctx.backend(), &ctx.prefix, ctx.mask, filter).await?;
    let found = orphans::select(listed, older_than);
    let (candidates, unknown): (Vec<Numbered>, Vec<Numbered>) = found
        .into_iter()
        .enumerate()
        .partition(|(_, o)| o.age.is_some() || opts.include_unknown_age);

    let mut items: Vec<Item> = Vec::new();
    let item = |(ord, o): &Numbered, obj: &orphans::OrphanObject, action: Action| Item {
        ord: *ord,
        key: obj.key.clone(),
        segment: o.seg.name(),
        size: obj.size,
        age: obj.age,
        action,
    };
    for o in &unknown {
        for obj in &o.1.objects {
            items.push(item(o, obj, Action::KeptUnknownAge));
        }
    }

    // Batch by batch: look each segment's manifest up again, then delete the rest.
    let pb = ctx.out.progress(candidates.len() as u64, "deleting", false);
    for batch in candidates.chunks(SEGMENTS_PER_BATCH) {
        let checked: Vec<(&Numbered, CliResult<bool>)> = stream::iter(batch)
            .map(|o| async move {
                let exists = object_exists(ctx.backend(), &o.1.seg.keys.manifest).await;
                (o, exists)
            })
            .buffered(CONCURRENCY)
            .collect()
            .await;
        let mut to_delete: Vec<Item> = Vec::new();
        for (o, exists) in &checked {
            for obj in &o.1.objects {
                match exists {
                    Ok(false) => to_delete.push(item(o, obj, Action::WouldDelete)),
                    Ok(true) => items.push(item(o, obj, Action::Skipped)),
                    Err(e) => items.push(item(
                        o,
                        obj,
                        Action::Failed(format!(
                            "cannot check {}: {e}; left alone",
                            o.1.seg.keys.manifest
                        )),
                    )),
                }
            }
        }
        if !opts.dry_run && !to_delete.is_empty() {
            let keys: Vec<ObjectKey> = to_delete.iter().map(|i| i.key.clone()).collect();
            let outcome = ctx.backend().delete(&keys).await;
            for i in &mut to_delete {
                i.action = match &outcome {
                    Ok(()) => Action::Deleted,
                    Err(e) => Action::Failed(e.to_string()),
                };
            }
        }
        items.extend(to_delete);
        pb.inc(batch.len() as u64);
    }
    pb.finish_and_clear();
    items.sort_by_key(|i| i.ord);
    report(ctx, &items, older_than, opts)
}

/// Prints the per-object lines and the summary; `Err` (exit 1) when anything failed.
fn report(ctx: &Context, items: &[Item], older_than: Duration, opts: &Options) -> CliResult {
    let count = |f: fn(&Action) -> bool| items.iter().filter(|i| f(&i.action)).count();
    let removed: Vec<&Item> = items
        .iter()
        .filter(|i| matches!(i.action, Action::Deleted | Action::WouldDelete))
        .collect();
    let bytes: u64 = removed.iter().map(|i| i.size).sum();
    let segments: BTreeSet<&str> = removed.iter().map(|i| i.segment.as_str()).collect();
    let kept = count(|a| matches!(a, Action::KeptUnknownAge));
    let skipped = count(|a| matches!(a, Action::Skipped));
    let failed = count(|a| matches!(a, Action::Failed(_)));
    if ctx.out.json {
        let objects: Vec<serde_json::Value> = items
            .iter()
            .map(|i| {
                let mut v = json!({
                    "key": i.key.to_string(),
                    "segment": i.segment,
                    "size": i.size,
                    "ageSeconds": i.age.map(|a| a.as_secs()),
                    "action": i.action.name(),
                });
                if let Action::Failed(e) = &i.action {
                    v["error"] = json!(e);
                }
                v
            })
            .collect();
        ctx.out.json(&json!({
            "objects": objects,
            "dryRun": opts.dry_run,
            "olderThanSeconds": older_than.as_secs(),
            "deleted": if opts.dry_run { 0 } else { removed.len() },
            "wouldDelete": if opts.dry_run { removed.len() } else { 0 },
            "bytes": bytes,
            "segments": segments.len(),
            "keptUnknownAge": kept,
            "skipped": skipped,
            "failed": failed,
        }))?;
    } else {
        for i in items {
            let detail = match &i.action {
                Action::KeptUnknownAge => "; --include-unknown-age deletes it".to_string(),
                Action::Skipped => "; its .rsm-manifest exists now, left alone".to_string(),
                Action::Failed(e) => format!("; {e}"),
                Action::Deleted | Action::WouldDelete => String::new(),
            };
            let verb = match i.action {
                Action::WouldDelete => "would delete",
                _ => i.action.name(),
            };
            ctx.out.line(format!(
                "{verb:<12} {} ({}, age {}{detail})",
                i.key,
                human_bytes(i.size),
                orphans::format_age(i.age)
            ))?;
        }
        let verb = if opts.dry_run {
            "would delete"
        } else {
            "deleted"
        };
        ctx.out.line(format!(
            "{verb} {} orphan object(s), {}, in {} segment(s) older than {}; \
             {kept} of unknown age kept{}, {skipped} skipped, {failed} failed",
            removed.len(),
            human_bytes(bytes),
            segments.len(),
            orphans::format_duration(older_than),
            if kept > 0 && !opts.include_unknown_age {
                " (--include-unknown-age deletes them)"
            } else {
                ""
            }
        ))?;
    }
    if failed > 0 {
        return Err(CliError::Findings(format!(
            "gc: {failed} object(s) not deleted (a check or a delete failed); run again"
        )));
    }
    Ok(())
}
