//! The compression heuristic (`compression.heuristic.enabled`; docs/object-format.md
//! "Compression").
//!
//! Input: a segment file (`Read + Seek`) and its size. Output: a [`HeuristicDecision`] saying
//! whether to zstd-compress its chunks, and why.
//!
//! The Java plugin looks only at the FIRST record batch. tsm walks ALL batch headers: it
//! reads the first 23 bytes of each batch (offset, length, epoch, magic, crc, attributes),
//! then skips the payload by the batch length, never reading it. It compresses when the
//! batches whose codec (attributes bits 0-2) is "none" hold at least half of the segment's
//! bytes: compressing already-compressed batches wastes CPU for nothing.
//!
//! Kafka's on-disk formats (KIP-98 record batch v2, and the legacy message sets v0/v1 of
//! older segments) put `length:i32` at byte 8 and `magic:i8` at byte 16 of every entry;
//! the entry is `12 + length` bytes. Attributes are an `i16` at byte 21 (v2) or an `i8` at
//! byte 17 (v0/v1). Codecs: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
//!
//! Anything unparseable (an I/O error, a truncated header or batch, an unknown magic or
//! codec, a length below the format minimum) means "upload uncompressed", with the reason
//! logged via `tracing` and returned.
//!
//! Memory: 23 bytes. Cost: one small read and one seek per batch. Pass a `BufReader` over
//! the file when batches are small: it serves skips within its buffer.

use std::io::{self, Read, Seek, SeekFrom};

/// Bytes read from the start of each batch: up to and including the v2 attributes.
const HEADER_LEN: usize = 23;
/// Size of `baseOffset:i64` + `length:i32`, not counted in `length`.
const LOG_OVERHEAD: u64 = 12;

/// The outcome of [`analyze`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeuristicDecision {
    /// `true`: compress the segment's chunks with zstd.
    pub compress: bool,
    /// Human-readable reason, for logs (names byte counts or the unparseable byte offset).
    pub reason: String,
    /// Record batches (or legacy messages) walked.
    pub batches: u64,
    /// Bytes in batches whose codec is "none".
    pub uncompressed_bytes: u64,
    /// Bytes walked (all of the segment when `compress` is decided from the batches).
    pub walked_bytes: u64,
}

struct Walk {
    batches: u64,
    uncompressed_bytes: u64,
    walked_bytes: u64,
}

/// Walks every record-batch header of a segment of `file_size` bytes and decides whether to
/// compress it. Never fails and never panics: unparseable input gives `compress: false`.
/// The reader is positioned at 0 first; where it is left afterwards is unspecified.
pub fn analyze<R: Read + Seek>(mut reader: R, file_size: u64) -> HeuristicDecision {
    let mut walk = Walk {
        batches: 0,
        uncompressed_bytes: 0,
        walked_bytes: 0,
    };
    let decision = match walk_batches(&mut reader, file_size, &mut walk) {
        Err(reason) => {
            let reason = format!("upload uncompressed: {reason}");
            tracing::info!(file_size, batches = walk.batches, %reason, "compression heuristic");
            return HeuristicDecision {
                compress: false,
                reason,
                batches: walk.batches,
                uncompressed_bytes: walk.uncompressed_bytes,
                walked_bytes: walk.walked_bytes,
            };
        }
        Ok(()) if file_size == 0 => (false, "empty segment: nothing to compress".to_string()),
        Ok(()) => {
            let compress = walk.uncompressed_bytes.saturating_mul(2) >= file_size;
            let reason = format!(
                "{} of {} bytes are in uncompressed record batches ({} batches walked): {}",
                walk.uncompressed_bytes,
                file_size,
                walk.batches,
                if compress {
                    "at least half, compress"
                } else {
                    "less than half, upload uncompressed"
                }
            );
            (compress, reason)
        }
    };
    tracing::debug!(file_size, batches = walk.batches, compress = decision.0, reason = %decision.1, "compression heuristic");
    HeuristicDecision {
        compress: decision.0,
        reason: decision.1,
        batches: walk.batches,
        uncompressed_bytes: walk.uncompressed_bytes,
        walked_bytes: walk.walked_bytes,
    }
}

fn io_reason(pos: u64, e: io::Error) -> String {
    format!("I/O error reading the record batch header at byte {pos}: {e}")
}

fn walk_batches<R: Read + Seek>(
    reader: &mut R,
    file_size: u64,
    walk: &mut Walk,
) -> Result<(), String> {
    reader
        .seek(SeekFrom::Start(0))
        .map_err(|e| io_reason(0, e))?;
    let mut pos: u64 = 0;
    let mut header = [0u8; HEADER_LEN];
    while pos < file_size {
        let remaining = file_size - pos;
        let n = remaining.min(HEADER_LEN as u64) as usize;
        if n < 17 {
            return Err(format!(
                "truncated record batch header at byte {pos}: {remaining} bytes left in the segment"
            ));
        }
        reader
            .read_exact(&mut header[..n])
            .map_err(|e| io_reason(pos, e))?;
        let length = i32::from_be_bytes([header[8], header[9], header[10], header[11]]);
        let magic = header[16] as i8;
        let (min_length, codec) = match magic {
            2 if n >= HEADER_LEN => (49, i16::from_be_bytes([header[21], header[22]]) & 0x07),
            2 => {
                return Err(format!(
                    "truncated v2 record batch header at byte {pos}: {remaining} bytes left in the segment"
                ));
            }
            0 => (14, i16::from(header[17] & 0x07)),
            1 => (22, i16::from(header[17] & 0x07)),
            other => return Err(format!("unknown record batch magic {other} at byte {pos}")),
        };
        if length < min_length {
            return Err(format!(
                "record batch at byte {pos} (magic {magic}) has length {length}, below the minimum {min_length}"
            ));
        }
        if codec > 4 {
            return Err(format!(
                "record batch at byte {pos} has unknown compression codec {codec}"
            ));
        }
        let size = LOG_OVERHEAD + length as u64; // length >= 0 checked above.
        if size > remaining {
            return Err(format!(
                "record batch at byte {pos} of {size} bytes extends past the end of the {file_size}-byte segment"
            ));
        }
        walk.batches += 1;
        walk.walked_bytes += size;
        if codec == 0 {
            walk.uncompressed_bytes += size;
        }
        pos += size;
        if pos < file_size {
            // Skip the payload; size >= 12 + 14 > n, so the skip is forward.
            let skip = i64::try_from(size - n as u64)
                .map_err(|_| format!("record batch at byte {pos} too large"))?;
            reader.seek_relative(skip).map_err(|e| io_reason(pos, e))?;
        }
    }
    Ok(())
}
