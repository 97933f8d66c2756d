//! `tsm fetch <segment> -o FILE [--range A-B | --index TYPE]`: restores the original
//! segment bytes (or a byte range, or one index) through the engine's fetch path
//! (ranged GETs, decrypt, decompress), streaming to the file. The file is written as
//! `FILE.tsm-partial` and renamed when complete, so a failed fetch leaves no
//! half-written FILE. Memory: the engine's fetch pipeline (`max_in_flight` chunks).

use std::path::Path;

use futures::StreamExt;
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tsm_core::IndexType;

use crate::context::Context;
use crate::error::{CliError, CliResult};
use crate::manifest_io;
use crate::segment::resolve;

/// Parses `START-END` (inclusive) or `START-`.
pub fn parse_range(s: &str) -> CliResult<(u64, Option<u64>)> {
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
pub fn parse_index(s: &str) -> CliResult<IndexType> {
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

pub async fn run(
    ctx: &Context,
    arg: &str,
    range: Option<&str>,
    index: Option<&str>,
    output: &Path,
) -> CliResult {
    let range = range.map(parse_range).transpose()?;
    let index = index.map(parse_index).transpose()?;
    let seg = resolve(ctx.backend(), &ctx.prefix, ctx.mask, arg).await?;
    let meta = seg.metadata();
    let mut sink = Sink::open(output).await?;
    let written = if let Some(t) = index {
        let bytes = ctx.rsm.fetch_index(&meta, t).await?;
        sink.write(&bytes).await?;
        bytes.len() as u64
    } else {
        let (start, end) = range.unwrap_or((0, None));
        let bytes = manifest_io::read_bytes(ctx.backend(), &seg.keys.manifest).await?;
        let m = manifest_io::parse(&seg.keys.manifest, &bytes).map_err(CliError::Findings)?;
        let size = m.chunk_index.original_file_size();
        let last = end.map_or(size, |e| e.saturating_add(1).min(size));
        let pb = ctx
            .out
            .progress(last.saturating_sub(start), "fetching", true);
        let mut stream = ctx.rsm.fetch_log_segment(&meta, start, end).await?;
        let mut n = 0u64;
        while let Some(piece) = stream.next().await {
            let piece = piece?;
            sink.write(&piece).await?;
            n += piece.len() as u64;
            pb.inc(piece.len() as u64);
        }
        pb.finish_and_clear();
        n
    };
    sink.finish().await?;
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

/// The destination: stdout (std's blocking handle: a CLI has nothing else to run while
/// stdout is full), or a `.tsm-partial` file renamed on [`Sink::finish`].
enum Sink {
    Stdout(std::io::Stdout),
    File {
        file: tokio::fs::File,
        partial: std::path::PathBuf,
        target: std::path::PathBuf,
    },
}

impl Sink {
    async fn open(path: &Path) -> CliResult<Self> {
        if path == Path::new("-") {
            return Ok(Self::Stdout(std::io::stdout()));
        }
        let mut partial = path.as_os_str().to_owned();
        partial.push(".tsm-partial");
        let partial = std::path::PathBuf::from(partial);
        let file = tokio::fs::File::create(&partial)
            .await
            .map_err(|e| CliError::io(partial.display(), e))?;
        Ok(Self::File {
            file,
            partial,
            target: path.to_path_buf(),
        })
    }

    async fn write(&mut self, data: &[u8]) -> CliResult {
        match self {
            Self::Stdout(s) => std::io::Write::write_all(s, data).map_err(CliError::stdout),
            Self::File { file, partial, .. } => file
                .write_all(data)
                .await
                .map_err(|e| CliError::io(partial.display(), e)),
        }
    }

    async fn finish(self) -> CliResult {
        match self {
            Self::Stdout(mut s) => std::io::Write::flush(&mut s).map_err(CliError::stdout),
            Self::File {
                mut file,
                partial,
                target,
            } => {
                file.flush()
                    .await
                    .map_err(|e| CliError::io(partial.display(), e))?;
                file.sync_all()
                    .await
                    .map_err(|e| CliError::io(partial.display(), e))?;
                drop(file);
                tokio::fs::rename(&partial, &target)
                    .await
                    .map_err(|e| CliError::io(target.display(), e))
            }
        }
    }
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
