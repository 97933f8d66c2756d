//! Renders `docs/configuration.md` from [`CONFIG_KEYS`], the plugin's [`JNI_KEYS`] and
//! each backend's [`BackendKind::keys`]. Output only; a test in the crate that links every
//! backend compares it with the committed file.

use std::fmt::Write as _;

use super::{BackendKind, CONFIG_KEYS, ConfigKeyDoc, JNI_KEYS};

/// The full configuration reference as Markdown: the core keys, the broker plugin's own
/// keys, then one section per backend in `kinds` order with its `storage.*` keys. Deterministic (same input, same
/// bytes), so a test can compare it with the committed `docs/configuration.md`.
pub fn render_configuration_markdown(kinds: &[&BackendKind]) -> String {
    let mut out = String::new();
    out.push_str("# tsm configuration\n\n");
    out.push_str(
        "<!-- Generated from tsm_core::config::CONFIG_KEYS and each backend's keys by \
         tsm_core::config::render_configuration_markdown. Do not edit by hand. -->\n\n",
    );
    out.push_str(
        "Kafka passes every broker property starting with `rsm.config.` to the plugin with \
         that prefix removed; the keys below are written without it (set \
         `rsm.config.chunk.size`, documented as `chunk.size`). Names and defaults follow \
         Aiven's Java plugin. Unknown keys are logged and ignored; an invalid value stops \
         the plugin with an error naming the key.\n\n",
    );
    out.push_str("## Core\n\n");
    table(&mut out, CONFIG_KEYS);
    out.push_str(LIFECYCLE);
    out.push_str(LOGGING);
    out.push_str(
        "\n## Broker plugin\n\nRead by the plugin's Java classes and JNI layer (crate \
         tsm-jni) and removed before the engine sees the map; the operator tool `tsm` \
         accepts and ignores them.\n\n",
    );
    table(&mut out, JNI_KEYS);
    for kind in kinds {
        let _ = write!(out, "\n## Backend `{}`\n\n", kind.name);
        let _ = write!(out, "Selected with `storage.backend.class={}`", kind.name);
        if kind.aliases.is_empty() {
            out.push_str(".\n\n");
        } else {
            out.push_str(" or ");
            let aliases: Vec<String> = kind.aliases.iter().map(|a| format!("`{a}`")).collect();
            out.push_str(&aliases.join(", "));
            out.push_str(".\n\n");
        }
        if kind.keys.is_empty() {
            out.push_str("No keys.\n");
        } else {
            table(&mut out, kind.keys);
        }
    }
    out
}

/// How long a call may take, how much memory all calls may hold, what is undone when a
/// call dies (`engine/lifecycle`), for operators.
const LIFECYCLE: &str = "
## Deadlines, memory, clean-up

**Every remote wait is bounded**, the same way for every backend (the engine wraps the \
backend it is given): a GET must deliver its first byte within \
`tsm.storage.get.first.byte.timeout.ms` and each next body item within \
`tsm.storage.get.idle.timeout.ms` and the whole GET within `tsm.storage.get.timeout.ms` \
(counted only while the reader waits); an upload must keep \
being taken by the store (`tsm.storage.get.idle.timeout.ms` without the store taking any \
bytes fails it: a slow link whose parts take minutes is not idle) and end within \
`tsm.storage.upload.timeout.ms` (the rate limit's waits not counted); a delete ends within \
`tsm.storage.delete.timeout.ms`. A deadline hit is a retriable error \
(`RetriableRemoteStorageException` on Kafka 4.1+, `RemoteStorageException` before) naming the \
object, the byte range and the key that fired. The broker does not interrupt a remote read \
that outlives `remote.fetch.max.wait.ms`, so these bounds are what frees a \
`remote.log.reader.threads` thread from a silent store. On top, the Java plugin's \
`fetch.*.cache.get.timeout.ms` bound a wait for one load through a cache, and \
`storage.s3.api.call.timeout` / `storage.s3.api.call.attempt.timeout` the S3 SDK's own \
calls (unset: the SDK's defaults, its 3.1 s connect timeout included).

**One memory budget** per plugin instance, `tsm.memory.budget.bytes` (512 MiB), in three \
parts: the default read-ahead store (`tsm.fetch.read.ahead.store.bytes`, 80 MiB, used when no \
chunk cache is set), the copies' pool (`tsm.memory.copy.bytes`) and the reads' pool (the \
rest). Each call reserves its working set from its own pool, once, before allocating it, \
and gives it back when it ends (also on error, or when its future or stream is dropped); a \
copy waiting for memory never holds up a read. With `C` = `chunk.size`, `S` = `C + C/128 + \
1 KiB` (a stored chunk at most), `F` = `tsm.max.in.flight` (default: cores), `P` = the \
backend's upload buffers (S3: `multipart.upload.part.size x (parts.in.flight + 1)`; Azure: \
block size x (blocks in flight + 1); GCS: 2 x resumable chunk size), `G` = \
`tsm.fetch.gets.in.flight`:

| call | pool | reserves |
|---|---|---|
| copy | copies | `(F + 2) x (C + S) + 2 x largest index + P` |
| fetch of a plain segment | reads | each GET in flight its length (at most `G` GETs of at most 4 MiB), from issue until its bytes were handed out |
| fetch of a transformed segment, or a sequential reader | reads | while a chunk loads: its GETs plus `C`; each read-ahead load `C + S`, only when free |
| fetchIndex | reads | `2 x` the stored index size |

Unset, the copies' pool is half of what the store leaves, or one copy's working set when \
that is larger. Example: 4 MiB chunks, 2 cores, S3 defaults (25 MiB parts, 4 in flight): a \
copy needs about 32 + 20 + 125 = 177 MiB; the copies' pool is 216 MiB (one copy at a time, \
further copies wait) and the reads' pool 216 MiB (a fetch holds at most 8 MiB while a chunk \
loads). Raise `tsm.memory.copy.bytes` (and the budget) to run copies side by side. The \
plugin refuses to start when the copies' pool cannot hold one copy, or the reads' pool one \
read (the larger of `2 x C` and a fetchIndex of a 10 MiB index), naming the key to change. \
A call that cannot get memory waits (copy: up to `tsm.storage.upload.timeout.ms`; fetch \
and fetchIndex: up to `tsm.storage.get.first.byte.timeout.ms`) and then fails with a \
retriable error naming the pool and the timeout key. Not in the budget: the caches \
(`fetch.chunk.cache.size`, `fetch.indexes.cache.size`, manifests: a few KiB each) and the \
SDKs' socket buffers. Native memory is outside the JVM heap: leave \
`budget + caches + about 64 MiB` of container memory above `-Xmx`.

**Reads.** A plain segment (no compression, no encryption) is read at the exact byte \
range asked, the store's bytes handed to the broker as they arrive; the first 1 MiB (the \
broker's `max.partition.fetch.bytes`) goes out as up to `tsm.fetch.gets.in.flight` \
parallel sub-range GETs of at least 256 KiB, later bytes in 1 MiB GETs as the broker reads \
on. A transformed segment is read by chunk, each wanted chunk in parallel sub-range GETs \
concatenated before decryption and decompression. When the broker's `fetchLogSegment` of \
a segment starts within what its previous one read, for the second time in a row (a \
lagging consumer), `tsm.fetch.read.ahead.bytes` of following chunks are downloaded ahead, up to \
`tsm.fetch.gets.in.flight` chunk GETs at once, into the chunk cache (`fetch.chunk.cache.*`) \
or else the read-ahead store, so each stored byte is downloaded about once (measured: at \
most 1.05 x the segment for a whole-segment catch-up in 1 MiB fetches, about one GET per \
chunk) and the wanted chunk never waits for read-ahead. Random reads read nothing ahead \
(one that happens to start inside the previous read does not start it either). \
With a chunk cache, `fetch.chunk.cache.prefetch.max.size` still prefetches after every \
read, hits included.

**Nothing left behind.** A copy that fails deletes its `.log` and `.indexes` before the error \
returns; a copy whose call is abandoned (broker thread interrupted on shutdown or a \
leadership change) deletes them in the background; a dropped S3 multipart upload is aborted \
the same way. The manifest is written last, so a segment is either complete or has no \
manifest; a manifest write the copy gave up on (its deadline passed) is deleted once more 5 s \
after the clean-up, in case the store committed it late. `close()` refuses new calls and waits up to `tsm.close.timeout.ms` for this \
clean-up before the native runtime stops; a delete the broker issues on an interrupted \
thread still runs to its end. If the store is down longer than the deadlines, objects \
without a manifest can remain: `tsm ls --orphans` lists them, `tsm gc --older-than 1h` \
removes them.

**Integrity.** Every segment tsm writes records its identity and a digest of each stored \
chunk and index, and a MAC under its data key when encrypted; each is checked before a byte \
is served (a plain segment with digests is read in whole chunks). Segments written by the \
Java plugin or an older tsm have none: they read as before (encrypted chunks are still \
authenticated by AES-GCM) and are counted, or refused with `tsm.integrity.required=true`. \
What each mode protects: docs/security.md.
";

/// What the plugin logs and never logs (crate tsm-jni's `logging`), for operators.
const LOGGING: &str = "
## Logging

The plugin's native records reach the broker's log through SLF4J, under the loggers \
`io.tsm.kafka.native.<rust target>` (`::` becomes `.`). tsm's own targets (`tsm_core`, \
`tsm_backend_s3`, ...) log at `tsm.log.level`, else at the level the broker's log4j gives \
`io.tsm.kafka.native` (inherited from `io.tsm.kafka`), read at load and at every \
`configure`. Everything else (the AWS, Google and Azure SDKs, hyper, h2, rustls, reqwest, \
tower) stays at WARN unless `tsm.log.filter` names it, e.g. \
`tsm.log.filter=aws_smithy_runtime=debug`; a record must also pass the broker's level of \
its logger. The filter is per process (per copy of the native library): with several \
plugin instances the last `configure` wins. Each instance logs one INFO line at \
configure: `tsm <version> configured: backend <name>, native log filter <directives>, \
settings <key>=<value>, ...` with every key's effective value (defaults included, secret \
values as `****`, key file paths but never key material).

**Never logged, at any level:** the values of secret keys (those marked secret below, \
and any key named like a secret) of every configured instance, replaced verbatim (also \
percent-encoded) by `****`; and, by pattern, the values of `authorization`, \
`x-amz-security-token`, `X-Amz-Signature`, `X-Amz-Credential`, SAS `sig` and similar \
headers and query parameters, `Bearer`/`SharedKey` credentials, SigV4 `Authorization` \
values, STS credentials and PEM private key blocks.
";

fn table(out: &mut String, keys: &[ConfigKeyDoc]) {
    out.push_str("| Key | Default | Description |\n|---|---|---|\n");
    for k in keys {
        let default = if k.default.is_empty() {
            String::new()
        } else {
            format!("`{}`", cell(k.default))
        };
        let secret = if k.secret {
            " Secret: never logged or shown in errors."
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "| `{}` | {default} | {}{secret} |",
            k.name,
            cell(k.doc)
        );
    }
}

/// Escapes what would break a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    static TEST_KIND: BackendKind = BackendKind {
        name: "demo",
        aliases: &["com.example.DemoStorage"],
        keys: &[
            ConfigKeyDoc {
                name: "storage.demo.bucket",
                default: "",
                doc: "Required. Bucket | name.",
                secret: false,
            },
            ConfigKeyDoc {
                name: "storage.demo.secret",
                default: "",
                doc: "The secret.",
                secret: true,
            },
        ],
        build: |_| Box::pin(async { Err(crate::ConfigError::new("x", "y", "z")) }),
        validate: |_| Ok(()),
        upload_buffer_bytes: |_| Ok(0),
    };

    #[test]
    fn renders_core_and_backend_keys() {
        let md = render_configuration_markdown(&[&TEST_KIND]);
        for k in CONFIG_KEYS.iter().chain(JNI_KEYS) {
            assert!(
                md.contains(&format!("| `{}` |", k.name)),
                "{} missing",
                k.name
            );
        }
        assert!(md.contains("## Backend `demo`"));
        assert!(md.contains("`com.example.DemoStorage`"));
        assert!(md.contains("| `storage.demo.bucket` |  | Required. Bucket \\| name. |"));
        assert!(md.contains("Secret: never logged"));
        assert!(md.contains("| `chunk.size` |"));
        assert!(md.contains("| `fetch.manifest.cache.size` | `1000` |"));
        assert_eq!(md, render_configuration_markdown(&[&TEST_KIND]));
    }
}
