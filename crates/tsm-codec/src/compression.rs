//! zstd compression of one chunk (docs/object-format.md "Compression": one independent frame per
//! chunk, content size recorded in every frame, level 3 by default, no dictionary). tsm
//! also sets the frame content checksum, which decompression verifies when present.
//!
//! Input: one original chunk (write path) or one stored chunk plus the original length the
//! chunk index promises (read path). Output: the zstd frame, or exactly the original bytes.
//! Each call is independent and CPU-bound; the pipeline runs calls on tokio's blocking pool.
//!
//! Memory: the input, the output and one zstd context per thread (kept in a thread-local so
//! that a pipeline thread does not reallocate it for every chunk; a level 3 compression
//! context is about 1-2 MiB, a decompression context about 100 KiB + window).

use std::cell::RefCell;

use zstd::bulk::{Compressor, Decompressor};
use zstd::zstd_safe;

use crate::error::CodecError;

/// The format's default zstd level (Java plugin: 3).
pub const DEFAULT_LEVEL: i32 = 3;

/// Largest `expected_len` [`decompress_chunk`] accepts (2 GiB - 1, the largest Java chunk).
pub const MAX_CHUNK_LEN: usize = i32::MAX as usize;

thread_local! {
    static COMPRESSOR: RefCell<Option<(i32, bool, Compressor<'static>)>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<Decompressor<'static>>> = const { RefCell::new(None) };
}

/// Checks that `level` is a zstd level the linked library supports.
///
/// # Errors
/// [`CodecError::InvalidLevel`] naming the supported range.
pub fn validate_level(level: i32) -> Result<(), CodecError> {
    let range = zstd::compression_level_range();
    if range.contains(&level) {
        Ok(())
    } else {
        Err(CodecError::InvalidLevel {
            level,
            min: *range.start(),
            max: *range.end(),
        })
    }
}

/// Compresses `chunk` into one zstd frame at `level`, with the content size (`chunk.len()`)
/// recorded in the frame header, as the format requires.
///
/// # Errors
/// [`CodecError::InvalidLevel`] for an unsupported level; [`CodecError::Compress`] if zstd
/// fails or (never expected) the frame lacks the content size.
pub fn compress_chunk(chunk: &[u8], level: i32) -> Result<Vec<u8>, CodecError> {
    compress_frame(chunk, level, true)
}

/// The largest frame [`compress_chunk`] can produce for `len` bytes (zstd's compress
/// bound: `len` plus a small margin), for callers sizing a buffer up front.
pub fn compress_bound(len: usize) -> usize {
    zstd_safe::compress_bound(len)
}

/// As [`compress_chunk`], appending the frame to `out` after the bytes it already holds
/// (e.g. room for an encryption IV in front) instead of allocating a new buffer; returns
/// the frame's length. `out` grows by at most zstd's compress bound of `chunk.len()`; on
/// error its length is unchanged.
///
/// # Errors
/// As [`compress_chunk`].
pub fn compress_chunk_into(
    chunk: &[u8],
    level: i32,
    out: &mut Vec<u8>,
) -> Result<usize, CodecError> {
    compress_frame_into(chunk, level, true, out)
}

/// As [`compress_chunk`], with the content checksum only when `checksum` (the manifest's
/// `transformedChunks` frame is written without one, as the format's test vector has it).
pub(crate) fn compress_frame(
    chunk: &[u8],
    level: i32,
    checksum: bool,
) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::new();
    compress_frame_into(chunk, level, checksum, &mut out)?;
    Ok(out)
}

fn compress_frame_into(
    chunk: &[u8],
    level: i32,
    checksum: bool,
    out: &mut Vec<u8>,
) -> Result<usize, CodecError> {
    validate_level(level)?;
    let err = |source| CodecError::Compress {
        len: chunk.len(),
        source,
    };
    let start = out.len();
    out.reserve(zstd_safe::compress_bound(chunk.len()));
    let mut cursor = std::io::Cursor::new(std::mem::take(out));
    cursor.set_position(start as u64);
    let written = COMPRESSOR.with(|cell| -> Result<usize, CodecError> {
        let mut slot = cell.borrow_mut();
        let compressor = match &mut *slot {
            Some((l, sum, c)) if *l == level && *sum == checksum => c,
            _ => {
                let mut c = Compressor::new(level).map_err(err)?;
                c.set_parameter(zstd::zstd_safe::CParameter::ContentSizeFlag(true))
                    .map_err(err)?;
                // The frame's content checksum (XXH64, 4 bytes): the decoder verifies it, so
                // a flipped stored byte of a compressed, unencrypted chunk is an error rather
                // than wrong data. Any zstd reader (zstd-jni too) accepts it; frames written
                // without it (older tsm, the Java plugin) still decode.
                c.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(checksum))
                    .map_err(err)?;
                &mut slot.insert((level, checksum, c)).2
            }
        };
        compressor
            .compress_to_buffer(chunk, &mut cursor)
            .map_err(err)
    });
    *out = cursor.into_inner();
    let written = match written {
        Ok(n) => n,
        Err(e) => {
            out.truncate(start);
            return Err(e);
        }
    };
    // Cheap header check: the Java reader rejects frames without the content size.
    match zstd_safe::get_frame_content_size(&out[start..]) {
        Ok(Some(n)) if n == chunk.len() as u64 && out.len() == start + written => Ok(written),
        _ => {
            out.truncate(start);
            Err(err(std::io::Error::other(
                "zstd frame does not record the content size",
            )))
        }
    }
}

/// Checks that `stored` is exactly one zstd frame (no trailing bytes) recording a content
/// size, and returns that size. Shared by [`decompress_chunk`] and the manifest decoder.
pub(crate) fn frame_content_size(stored: &[u8]) -> Result<u64, String> {
    let content_size = match zstd_safe::get_frame_content_size(stored) {
        Ok(Some(n)) => n,
        Ok(None) => return Err("zstd frame does not record its content size".into()),
        Err(_) => return Err("not a zstd frame (bad magic or truncated header)".into()),
    };
    match zstd_safe::find_frame_compressed_size(stored) {
        Ok(n) if n == stored.len() => Ok(content_size),
        Ok(n) => Err(format!(
            "{} trailing bytes after the zstd frame of {n} bytes",
            stored.len() - n
        )),
        Err(code) => Err(format!(
            "truncated or corrupt zstd frame: {}",
            zstd_safe::get_error_name(code)
        )),
    }
}

/// Decompresses one stored chunk, which must be a single zstd frame recording a content size
/// equal to `expected_len` and decompressing to exactly `expected_len` bytes.
///
/// The output buffer is allocated once at `expected_len` (the length comes from the chunk
/// index, never from the frame), so a hostile frame cannot make it allocate more.
///
/// # Errors
/// [`CodecError::Decompress`] naming both lengths and the reason: not a zstd frame, no
/// content size, content size != `expected_len`, trailing bytes, corrupt data, or
/// `expected_len` above [`MAX_CHUNK_LEN`]. Wrap with [`CodecError::in_chunk`] to name the
/// chunk.
pub fn decompress_chunk(stored: &[u8], expected_len: usize) -> Result<Vec<u8>, CodecError> {
    let fail = |reason: String| CodecError::Decompress {
        stored_len: stored.len(),
        expected_len,
        reason,
    };
    if expected_len > MAX_CHUNK_LEN {
        return Err(fail(format!(
            "expected length exceeds the maximum chunk size {MAX_CHUNK_LEN}"
        )));
    }
    let content_size = frame_content_size(stored).map_err(fail)?;
    if content_size != expected_len as u64 {
        return Err(fail(format!(
            "zstd frame records content size {content_size}"
        )));
    }
    let mut out = Vec::with_capacity(expected_len);
    let written = DECOMPRESSOR.with(|cell| -> Result<usize, String> {
        let mut slot = cell.borrow_mut();
        let d = match &mut *slot {
            Some(d) => d,
            None => slot.insert(Decompressor::new().map_err(|e| e.to_string())?),
        };
        d.decompress_to_buffer(stored, &mut out)
            .map_err(|e| format!("zstd: {e}"))
    });
    match written {
        Ok(n) if n == expected_len => Ok(out),
        Ok(n) => Err(fail(format!("decompressed to {n} bytes"))),
        Err(reason) => {
            // A failed call may leave the context mid-frame; start the next one fresh.
            DECOMPRESSOR.with(|cell| cell.borrow_mut().take());
            Err(fail(reason))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_content_size() {
        for len in [0usize, 1, 100, 70_000] {
            let data: Vec<u8> = (0..len).map(|i| (i % 7) as u8).collect();
            let frame = compress_chunk(&data, DEFAULT_LEVEL).expect("compress");
            assert_eq!(
                zstd_safe::get_frame_content_size(&frame).ok(),
                Some(Some(len as u64))
            );
            assert_eq!(decompress_chunk(&frame, len).expect("decompress"), data);
        }
    }

    #[test]
    fn compress_into_appends_after_what_is_there() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let mut out = vec![7u8; 12];
        let n = compress_chunk_into(&data, DEFAULT_LEVEL, &mut out).expect("compress");
        assert_eq!(out.len(), 12 + n);
        assert_eq!(out[..12], [7u8; 12]);
        assert_eq!(
            out[12..],
            compress_chunk(&data, DEFAULT_LEVEL).expect("compress")[..]
        );
        assert_eq!(
            decompress_chunk(&out[12..], data.len()).expect("decompress"),
            data
        );
        // An error leaves the buffer as it was.
        assert!(compress_chunk_into(b"x", 1000, &mut out).is_err());
        assert_eq!(out.len(), 12 + n);
    }

    #[test]
    fn levels() {
        assert!(matches!(
            compress_chunk(b"x", 1000),
            Err(CodecError::InvalidLevel { level: 1000, .. })
        ));
        for level in [-5, 1, 3, 19] {
            let frame = compress_chunk(b"hello hello hello", level).expect("compress");
            assert_eq!(
                decompress_chunk(&frame, 17).expect("decompress"),
                b"hello hello hello"
            );
        }
    }

    #[test]
    fn rejects_bad_frames() {
        let data = vec![42u8; 1000];
        let frame = compress_chunk(&data, 3).expect("compress");
        // Wrong expected length, both ways.
        assert!(decompress_chunk(&frame, 999).is_err());
        assert!(decompress_chunk(&frame, 1001).is_err());
        // Trailing bytes.
        let mut trailing = frame.clone();
        trailing.push(0);
        let e = decompress_chunk(&trailing, 1000).expect_err("trailing byte");
        assert!(e.to_string().contains("trailing"), "{e}");
        // Two frames.
        let mut two = frame.clone();
        two.extend_from_slice(&frame);
        assert!(decompress_chunk(&two, 2000).is_err());
        // Truncated.
        assert!(decompress_chunk(&frame[..frame.len() - 1], 1000).is_err());
        assert!(decompress_chunk(&[], 0).is_err());
        assert!(decompress_chunk(b"not zstd at all", 15).is_err());
        // No content size: a streaming frame.
        let mut enc = zstd::stream::Encoder::new(Vec::new(), 3).expect("encoder");
        enc.include_contentsize(false).expect("param");
        std::io::Write::write_all(&mut enc, &data).expect("write");
        let no_size = enc.finish().expect("finish");
        let e = decompress_chunk(&no_size, 1000).expect_err("no content size");
        assert!(e.to_string().contains("content size"), "{e}");
        // Corrupt payload with valid header.
        let mut corrupt = compress_chunk(
            &(0..5000u32)
                .flat_map(|i| i.to_le_bytes())
                .collect::<Vec<_>>(),
            3,
        )
        .expect("compress");
        let mid = corrupt.len() / 2;
        corrupt[mid] ^= 0xff;
        // The frame's checksum catches the flip.
        assert!(decompress_chunk(&corrupt, 20_000).is_err());
        // A frame written without a checksum (the Java plugin, older tsm) still decodes; a
        // flip there may go unnoticed, but never panics or returns another length.
        let plain: Vec<u8> = (0..5000u32).flat_map(|i| i.to_le_bytes()).collect();
        let mut c = Compressor::new(3).expect("compressor");
        c.set_parameter(zstd_safe::CParameter::ContentSizeFlag(true))
            .expect("param");
        let mut no_sum = c.compress(&plain).expect("compress");
        assert_eq!(decompress_chunk(&no_sum, 20_000).expect("old frame"), plain);
        let mid = no_sum.len() / 2;
        no_sum[mid] ^= 0xff;
        if let Ok(out) = decompress_chunk(&no_sum, 20_000) {
            assert_eq!(out.len(), 20_000);
        }
        // The context still works after a failure.
        assert_eq!(decompress_chunk(&frame, 1000).expect("after failure"), data);
    }
}
