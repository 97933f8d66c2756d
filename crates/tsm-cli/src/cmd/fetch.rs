//! `tsm fetch <segment> -o FILE [--range A-B | --index TYPE]`: restores the original
//! segment bytes (or a byte range, or one index) through the engine's fetch path
//! (ranged GETs, decrypt, decompress), streaming to the file. The file is written as
//! `FILE.tsm-partial` and renamed when complete; on any failure (segment or object
//! missing, a chunk that does not authenticate mid-stream, a local write error) the
//! partial file is removed, so a failed fetch leaves neither a half-written FILE nor a
//! `FILE.tsm-partial` (an existing FILE is left as it was). So does an interrupted one:
//! SIGINT (Ctrl-C) or SIGTERM stops the fetch, removes the partial file and exits 130 or
//! 143 ([`CliError::Interrupted`]). Memory: the engine's fetch pipeline (`max_in_flight`
//! chunks).

use std::path::{Path, PathBuf};

use futures::StreamExt;
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tsm_core::IndexType;

use crate::context::Context;
use crate::error::{CliError, CliResult};
use crate::manifest_io;
use crate::segment::{Need, resolve};

/// Parses `START-END` (inclusive) or `START-`.
pub(crate) fn parse_range(s: &str) -> CliResult<(u64, Option<u64>)> {
    let bad = || {
        CliError::Usage(format!(
            "--range {s:?}: expected START-END or START- (bytes)"
        ))
    };
    let (a, b) = s.split_once('-').ok_or_else(bad)?;
    let start = a.trim().parse::<u64>().map_err(|_| bad())?;
    let end = match b.trim() {
        "" => None,
        e => Some(e.parse::<u64>().map_err(|_| bad())?),
    };
    if end.is_some_and(|e| e < start) {
        return Err(bad());
    }
    Ok((start, end))
}

/// Parses an index name: `offset`, `timestamp`, `producer-snapshot`, `leader-epoch`,
/// `transaction`, or the Java constant names.
pub(crate) fn parse_index(s: &str) -> CliResult<IndexType> {
    let java = s.trim().to_ascii_uppercase().replace('-', "_");
    let java = match java.as_str() {
        "TIME" | "TIMEINDEX" => "TIMESTAMP",
        "TXN" | "TXNINDEX" => "TRANSACTION",
        "SNAPSHOT" => "PRODUCER_SNAPSHOT",
        other => other,
    };
    IndexType::from_java_name(java).ok_or_else(|| {
        CliError::Usage(format!(
            "--index {s:?}: expected offset, timestamp, producer-snapshot, leader-epoch or \
             transaction"
        ))
    })
}

pub(crate) async fn run(
    ctx: &Context,
    arg: &str,
    range: Option<&str>,
    index: Option<&str>,
    output: &Path,
) -> CliResult {
    let range = range.map(parse_range).transpose()?;
    let index = index.map(parse_index).transpose()?;
    // From here on SIGINT/SIGTERM no longer kill the process: they end the fetch below.
    let interrupted = interrupted()?;
    let seg = resolve(ctx.backend(), &ctx.prefix, ctx.mask, arg, Need::Manifest).await?;
    let fetched = async {
        let mut sink = Sink::open(output).await?;
        // On any error `sink` is dropped here, which removes FILE.tsm-partial.
        let written = restore(ctx, &seg, range, index, &mut sink).await?;
        sink.finish().await?;
        Ok::<u64, CliError>(written)
    };
    // A signal drops the fetch (and with it the partial file) before the process exits.
    let written = tokio::select! {
        written = fetched => written?,
        signal = interrupted => return Err(signal),
    };
    let what = match (index, range) {
        (Some(t), _) => t.java_name().to_string(),
        (None, Some((s, e))) => format!("bytes {s}-{}", e.map_or(String::new(), |e| e.to_string())),
        (None, None) => "log".to_string(),
    };
    if ctx.out.json {
        return ctx.out.json(&json!({
            "segment": seg.name(),
            "what": what,
            "bytes": written,
            "output": output.display().to_string(),
        }));
    }
    if output != Path::new("-") {
        ctx.out.line(format!(
            "{}: {what}: {written} bytes written to {}",
            seg.name(),
            output.display()
        ))?;
    }
    Ok(())
}

/// Resolves on the first SIGINT or SIGTERM after this call, as [`CliError::Interrupted`].
/// The handlers are installed at once (the default action, ending the process where it
/// stands, no longer applies).
fn interrupted() -> CliResult<impl std::future::Future<Output = CliError>> {
    use tokio::signal::unix::{SignalKind, signal};
    let install = |kind: SignalKind| signal(kind).map_err(|e| CliError::io("<signal handler>", e));
    let mut int = install(SignalKind::interrupt())?;
    let mut term = install(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => CliError::Interrupted { signal: "SIGINT", code: 130 },
            _ = term.recv() => CliError::Interrupted { signal: "SIGTERM", code: 143 },
        }
    })
}

/// Streams the index or the (range of the) log into `sink`; the bytes written.
async fn restore(
    ctx: &Context,
    seg: &crate::segment::SegmentRef,
    range: Option<(u64, Option<u64>)>,
    index: Option<IndexType>,
    sink: &mut Sink,
) -> CliResult<u64> {
    let meta = seg.metadata();
    if let Some(t) = index {
        let bytes = ctx.rsm.fetch_index(&meta, t).await?;
        sink.write(&bytes).await?;
        return Ok(bytes.len() as u64);
    }
    let (start, end) = range.unwrap_or((0, None));
    let bytes = manifest_io::read_bytes(ctx.backend(), &seg.keys.manifest).await?;
    let m = manifest_io::parse(&seg.keys.manifest, &bytes).map_err(CliError::Findings)?;
    let size = m.chunk_index.original_file_size();
    let last = end.map_or(size, |e| e.saturating_add(1).min(size));
    let pb = ctx
        .out
        .progress(last.saturating_sub(start), "fetching", true);
    let copied = async {
        let mut stream = ctx.rsm.fetch_log_segment(&meta, start, end).await?;
        let mut n = 0u64;
        while let Some(piece) = stream.next().await {
            let piece = piece?;
            sink.write(&piece).await?;
            n += piece.len() as u64;
            pb.inc(piece.len() as u64);
        }
        Ok(n)
    }
    .await;
    pb.finish_and_clear();
    copied
}

/// The destination: stdout (std's blocking handle: a CLI has nothing else to run while
/// stdout is full), or a `.tsm-partial` file renamed on [`Sink::finish`] and removed when
/// the sink is dropped unfinished (any error, mid-stream or in `finish` itself).
enum Sink {
    Stdout(std::io::Stdout),
    File {
        // Declared before `partial`: the file is closed before the guard removes it.
        file: tokio::fs::File,
        partial: PartialFile,
        target: PathBuf,
    },
}

/// `FILE.tsm-partial`: removed on drop unless [`PartialFile::keep`] was called.
struct PartialFile {
    path: PathBuf,
    keep: bool,
}

impl PartialFile {
    /// The file was renamed into place: nothing to remove.
    fn keep(mut self) {
        self.keep = true;
    }
}

impl Drop for PartialFile {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        match std::fs::remove_file(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(
                path = %self.path.display(),
                "cannot remove the partial file of a failed fetch: {e}"
            ),
        }
    }
}

impl Sink {
    async fn open(path: &Path) -> CliResult<Self> {
        if path == Path::new("-") {
            return Ok(Self::Stdout(std::io::stdout()));
        }
        let mut partial = path.as_os_str().to_owned();
        partial.push(".tsm-partial");
        let partial = PathBuf::from(partial);
        let file = tokio::fs::File::create(&partial)
            .await
            .map_err(|e| CliError::io(partial.display(), e))?;
        Ok(Self::File {
            file,
            partial: PartialFile {
                path: partial,
                keep: false,
            },
            target: path.to_path_buf(),
        })
    }

    async fn write(&mut self, data: &[u8]) -> CliResult {
        match self {
            Self::Stdout(s) => std::io::Write::write_all(s, data).map_err(CliError::stdout),
            Self::File { file, partial, .. } => file
                .write_all(data)
                .await
                .map_err(|e| CliError::io(partial.path.display(), e)),
        }
    }

    async fn finish(self) -> CliResult {
        match self {
            Self::Stdout(mut s) => std::io::Write::flush(&mut s).map_err(CliError::stdout),
            Self::File {
                file,
                partial,
                target,
            } => {
                // `file` is closed when `close` returns, before `partial` can remove it.
                close(file, &partial.path).await?;
                tokio::fs::rename(&partial.path, &target)
                    .await
                    .map_err(|e| CliError::io(target.display(), e))?;
                partial.keep();
                Ok(())
            }
        }
    }
}

/// Flushes, syncs and closes `file` (at `path`).
async fn close(mut file: tokio::fs::File, path: &Path) -> CliResult {
    file.flush()
        .await
        .map_err(|e| CliError::io(path.display(), e))?;
    file.sync_all()
        .await
        .map_err(|e| CliError::io(path.display(), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_and_index_names() {
        assert_eq!(parse_range("0-99").expect("r"), (0, Some(99)));
        assert_eq!(parse_range("5-").expect("r"), (5, None));
        assert!(parse_range("9-1").is_err());
        assert!(parse_range("x").is_err());
        assert_eq!(parse_index("offset").expect("i"), IndexType::Offset);
        assert_eq!(
            parse_index("leader-epoch").expect("i"),
            IndexType::LeaderEpoch
        );
        assert_eq!(
            parse_index("PRODUCER_SNAPSHOT").expect("i"),
            IndexType::ProducerSnapshot
        );
        assert!(parse_index("nope").is_err());
    }
}
