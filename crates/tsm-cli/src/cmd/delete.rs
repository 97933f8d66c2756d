//! `tsm delete <segment>`: removes the segment's `.log`, `.indexes` and `.rsm-manifest`
//! through the engine's delete (one batched delete; idempotent: missing objects are
//! success).

use serde_json::json;

use crate::context::Context;
use crate::error::CliResult;
use crate::segment::{Need, resolve};

pub(crate) async fn run(ctx: &Context, arg: &str, dry_run: bool) -> CliResult {
    let seg = resolve(ctx.backend(), &ctx.prefix, ctx.mask, arg, Need::Any).await?;
    let keys: Vec<String> = seg.keys.all().iter().map(|k| k.to_string()).collect();
    if !dry_run {
        ctx.rsm.delete_log_segment_data(&seg.metadata()).await?;
    }
    if ctx.out.json {
        return ctx.out.json(&json!({
            "segment": seg.name(),
            "deleted": !dry_run,
            "keys": keys,
        }));
    }
    let verb = if dry_run { "would delete" } else { "deleted" };
    for k in &keys {
        ctx.out.line(format!("{verb} {k}"))?;
    }
    Ok(())
}
