//! `tsm rekey --to <id>`: key rotation (docs/object-format.md "Encryption (envelope)",
//! "Rotation": the DEK is wrapped under a KEK; rotating a KEK re-wraps DEKs). For each
//! encrypted segment whose `dataKey` names another key pair: unwrap the DEK with the key
//! ring (the old pair must still be on it), wrap it under `<id>` (RSA-OAEP SHA3-512), check
//! the new wrapping unwraps to the same DEK, and upload the manifest with only
//! `encryption.dataKey` changed. Each upload replaces the manifest atomically (backend
//! contract); `.log` and `.indexes` are never read or written, so chunks stay valid (same
//! DEK, same AAD).
//!
//! Idempotent and resumable: segments already on `<id>` are skipped, so an interrupted
//! run (or one stopped by `--limit`) is finished by running it again. A segment whose
//! `.log` is gone (deleted by the broker meanwhile) is skipped so the manifest is not
//! resurrected. Memory: one manifest at a time.

use bytes::Bytes;
use futures::{StreamExt, stream};
use serde_json::json;
use tsm_core::manifest::SegmentManifest;

use crate::context::Context;
use crate::error::{CliError, CliResult};
use crate::manifest_io;
use crate::segment::{Filter, SegmentRef, list_segments, object_exists};

/// What happened to one segment.
enum Outcome {
    Rekeyed { from: String },
    WouldRekey { from: String },
    Skipped { reason: String },
    Failed { error: String },
}

pub(crate) async fn run(
    ctx: &Context,
    to: &str,
    filter: &Filter,
    dry_run: bool,
    limit: Option<u64>,
) -> CliResult {
    let ring = ctx.ring.as_ref().ok_or_else(|| {
        CliError::Usage(
            "rekey needs encryption configured (encryption.enabled=true and the key ring)".into(),
        )
    })?;
    ring.pair(to).map_err(|e| {
        CliError::Usage(format!(
            "--to {to}: not on the configured key ring (encryption.key.pairs): {e}"
        ))
    })?;
    let segments = list_segments(ctx.backend(), &ctx.prefix, ctx.mask, filter).await?;
    let pb = ctx.out.progress(segments.len() as u64, "rekeying", false);
    let mut rewritten = 0u64;
    let mut failed = 0u64;
    let mut stopped = false;
    let mut items = Vec::new();
    for seg in &segments {
        if limit.is_some_and(|l| rewritten >= l) {
            stopped = true;
            break;
        }
        let outcome = rekey_one(ctx, ring, seg, to, dry_run).await;
        pb.inc(1);
        let (action, detail) = match &outcome {
            Outcome::Rekeyed { from } => {
                rewritten += 1;
                ("rekeyed", format!("{from} -> {to}"))
            }
            Outcome::WouldRekey { from } => {
                rewritten += 1;
                ("would-rekey", format!("{from} -> {to}"))
            }
            Outcome::Skipped { reason } => ("skipped", reason.clone()),
            Outcome::Failed { error } => {
                failed += 1;
                ("failed", error.clone())
            }
        };
        if ctx.out.json {
            items.push(json!({"segment": seg.name(), "action": action, "detail": detail}));
        } else {
            pb.suspend(|| {
                ctx.out
                    .line(format!("{action:<12} {} ({detail})", seg.name()))
            })?;
        }
    }
    pb.finish_and_clear();
    let verb = if dry_run { "would rewrite" } else { "rewrote" };
    if ctx.out.json {
        ctx.out.json(&json!({
            "segments": items,
            "to": to,
            "dryRun": dry_run,
            "rewritten": rewritten,
            "failed": failed,
            "stoppedAtLimit": stopped,
        }))?;
    } else {
        ctx.out.line(format!(
            "{verb} {rewritten} manifest(s), {failed} failed{}",
            if stopped {
                "; stopped at --limit, run again to continue"
            } else {
                ""
            }
        ))?;
    }
    if failed > 0 {
        return Err(CliError::Findings(format!(
            "rekey: {failed} segment(s) failed; fix and run again (done ones are skipped)"
        )));
    }
    Ok(())
}

async fn rekey_one(
    ctx: &Context,
    ring: &tsm_crypto::KeyRing,
    seg: &SegmentRef,
    to: &str,
    dry_run: bool,
) -> Outcome {
    let key = &seg.keys.manifest;
    let failed = |error: String| Outcome::Failed { error };
    let bytes = match manifest_io::read_bytes(ctx.backend(), key).await {
        Ok(b) => b,
        Err(e) => return failed(e.to_string()),
    };
    let mut m: SegmentManifest = match manifest_io::parse(key, &bytes) {
        Ok(m) => m,
        Err(e) => return failed(e),
    };
    let Some(enc) = m.encryption.as_mut() else {
        return Outcome::Skipped {
            reason: "not encrypted".into(),
        };
    };
    let from = enc.data_key.split(':').next().unwrap_or("").to_string();
    if from == to {
        return Outcome::Skipped {
            reason: format!("already on {to}"),
        };
    }
    let dek = match ring.unwrap(&enc.data_key) {
        Ok(k) => k,
        Err(e) => {
            return failed(format!(
                "{key}: cannot unwrap the data key (key pair {from:?}): {e}"
            ));
        }
    };
    let new = match ring.wrap_with(to, &dek) {
        Ok(n) => n,
        Err(e) => return failed(format!("{key}: cannot wrap under {to:?}: {e}")),
    };
    match ring.unwrap(&new) {
        Ok(back) if back.expose_secret() == dek.expose_secret() => {}
        _ => {
            return failed(format!(
                "{key}: the new wrapping under {to:?} does not unwrap to the same data key"
            ));
        }
    }
    if dry_run {
        return Outcome::WouldRekey { from };
    }
    match object_exists(ctx.backend(), &seg.keys.log).await {
        Ok(true) => {}
        Ok(false) => {
            return Outcome::Skipped {
                reason: format!(
                    "{} is gone (segment being deleted); manifest left alone",
                    seg.keys.log
                ),
            };
        }
        Err(e) => return failed(e.to_string()),
    }
    enc.data_key = new;
    let body = Bytes::from(m.to_json());
    let len = body.len() as u64;
    let upload = stream::once(async move { Ok(body) }).boxed();
    match ctx.backend().upload(key, upload, Some(len)).await {
        Ok(_) => Outcome::Rekeyed { from },
        Err(e) => failed(e.to_string()),
    }
}
