//! The chunk-size codec and its manifest embedding (docs/object-format.md
//! "`transformedChunks`: chunk-size codec").
//!
//! Input: the stored size of every chunk of a `variable` chunk index, last included.
//! Output: the codec bytes, and the manifest's `transformedChunks` string
//! `base64(zstd_frame(codec_bytes))`; and back. The layout, all integers big-endian:
//!
//! | count | layout |
//! |---|---|
//! | 0 | `count:i32` |
//! | 1 | `count:i32, value:i32` |
//! | >=2 | `count:i32, base:i32, bytesPerValue:u8, (count-1) values of bytesPerValue bytes, last:i32` |
//!
//! `base` is the minimum of the non-last values, each non-last value is stored as
//! `v - base` in `bytesPerValue` (1..=4) bytes, and the last value in full.
//!
//! Memory: decoding checks the exact length implied by `count` before allocating, so the
//! output is at most `len / bytesPerValue` values; the zstd frame is capped at
//! [`MAX_DECODED_LEN`] (10 MiB, as in the Java reader).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::compression;
use crate::error::CodecError;

/// Largest content size of the `transformedChunks` zstd frame accepted when decoding: 10 MiB,
/// the Java reader's cap.
pub const MAX_DECODED_LEN: u64 = 10 * 1024 * 1024;

fn bytes_needed(v: u32) -> u8 {
    match v {
        0..=0xFF => 1,
        0x100..=0xFFFF => 2,
        0x1_0000..=0xFF_FFFF => 3,
        _ => 4,
    }
}

fn check_i32(position: usize, v: u32) -> Result<i32, CodecError> {
    i32::try_from(v).map_err(|_| CodecError::SizeTooLarge {
        position,
        value: u64::from(v),
    })
}

/// Encodes `sizes` (bytes per chunk, in order, last included) into the codec bytes.
///
/// # Errors
/// [`CodecError::SizeTooLarge`] if a size, or the count, exceeds `i32::MAX` (the format
/// stores Java `int`s).
pub fn encode(sizes: &[u32]) -> Result<Vec<u8>, CodecError> {
    let count = i32::try_from(sizes.len()).map_err(|_| CodecError::SizeTooLarge {
        position: 0,
        value: sizes.len() as u64,
    })?;
    for (i, &v) in sizes.iter().enumerate() {
        check_i32(i, v)?;
    }
    let mut out = Vec::new();
    out.extend_from_slice(&count.to_be_bytes());
    match sizes {
        [] => {}
        [only] => out.extend_from_slice(&only.to_be_bytes()),
        [init @ .., last] => {
            // `init` is non-empty here.
            let base = init.iter().copied().min().unwrap_or(0);
            let width = init
                .iter()
                .map(|&v| bytes_needed(v - base))
                .max()
                .unwrap_or(1);
            out.reserve(4 + 1 + init.len() * usize::from(width) + 4);
            out.extend_from_slice(&base.to_be_bytes());
            out.push(width);
            for &v in init {
                let delta = (v - base).to_be_bytes();
                out.extend_from_slice(&delta[4 - usize::from(width)..]);
            }
            out.extend_from_slice(&last.to_be_bytes());
        }
    }
    Ok(out)
}

fn read_i32(bytes: &[u8], at: usize, what: &str) -> Result<u32, CodecError> {
    let raw: [u8; 4] = bytes
        .get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| {
            CodecError::MalformedSizes(format!("truncated before {what} at byte {at}"))
        })?;
    let v = i32::from_be_bytes(raw);
    u32::try_from(v)
        .map_err(|_| CodecError::MalformedSizes(format!("negative {what} {v} at byte {at}")))
}

/// Decodes codec bytes into the list of sizes.
///
/// # Errors
/// [`CodecError::MalformedSizes`] naming the problem and byte position: truncated input,
/// negative count/base/last, `bytesPerValue` outside 1..=4, a value above `i32::MAX`, or
/// trailing bytes.
pub fn decode(bytes: &[u8]) -> Result<Vec<u32>, CodecError> {
    let count = read_i32(bytes, 0, "count")? as usize;
    let (sizes, used) = match count {
        0 => (Vec::new(), 4),
        1 => (vec![read_i32(bytes, 4, "value")?], 8),
        n => {
            let base = read_i32(bytes, 4, "base")?;
            let width = *bytes.get(8).ok_or_else(|| {
                CodecError::MalformedSizes("truncated before bytesPerValue at byte 8".into())
            })?;
            if !(1..=4).contains(&width) {
                return Err(CodecError::MalformedSizes(format!(
                    "bytesPerValue {width} at byte 8 is not in 1..=4"
                )));
            }
            let width = usize::from(width);
            // Exact length before any allocation: count comes from untrusted input.
            let needed = (n - 1)
                .checked_mul(width)
                .and_then(|v| v.checked_add(9 + 4))
                .ok_or_else(|| CodecError::MalformedSizes(format!("count {n} too large")))?;
            if bytes.len() < needed {
                return Err(CodecError::MalformedSizes(format!(
                    "count {n} with {width} bytes per value needs {needed} bytes, got {}",
                    bytes.len()
                )));
            }
            let mut sizes = Vec::with_capacity(n);
            for (i, raw) in bytes[9..9 + (n - 1) * width]
                .chunks_exact(width)
                .enumerate()
            {
                let delta = raw.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
                let v = u64::from(base) + delta;
                if v > i32::MAX as u64 {
                    return Err(CodecError::MalformedSizes(format!(
                        "value {i} = base {base} + {delta} exceeds i32::MAX"
                    )));
                }
                sizes.push(v as u32);
            }
            sizes.push(read_i32(bytes, needed - 4, "last value")?);
            (sizes, needed)
        }
    };
    if bytes.len() != used {
        return Err(CodecError::MalformedSizes(format!(
            "{} trailing bytes after {used} bytes of {count} sizes",
            bytes.len() - used
        )));
    }
    Ok(sizes)
}

/// The manifest's `transformedChunks` string: standard base64 (with padding) of a zstd frame
/// at `level` (3 in the Java plugin) that records its content size, holding [`encode`]`(sizes)`.
///
/// # Errors
/// As [`encode`] and [`compression::compress_chunk`].
pub fn encode_manifest_string(sizes: &[u32], level: i32) -> Result<String, CodecError> {
    let frame = compression::compress_frame(&encode(sizes)?, level, false)?;
    Ok(STANDARD.encode(frame))
}

/// Decodes the manifest's `transformedChunks` string. Accepts any valid single zstd frame
/// that records its content size (any level, any writer).
///
/// The caller checks the count against the file size and chunk size; use
/// [`crate::ChunkIndex::variable_from_manifest_string`] to do both.
///
/// # Errors
/// [`CodecError::MalformedManifestString`] for invalid base64, a frame without content size,
/// a content size above [`MAX_DECODED_LEN`], trailing bytes after the frame, or a corrupt
/// frame; [`CodecError::MalformedSizes`] for malformed codec bytes inside.
pub fn decode_manifest_string(s: &str) -> Result<Vec<u32>, CodecError> {
    let bad = CodecError::MalformedManifestString;
    let frame = STANDARD
        .decode(s.trim())
        .map_err(|e| bad(format!("invalid base64 ({} chars): {e}", s.len())))?;
    let size = compression::frame_content_size(&frame).map_err(bad)?;
    if size > MAX_DECODED_LEN {
        return Err(bad(format!(
            "zstd frame content size {size} bytes exceeds the {MAX_DECODED_LEN}-byte limit"
        )));
    }
    let codec_bytes =
        compression::decompress_chunk(&frame, size as usize).map_err(|e| bad(e.to_string()))?;
    decode(&codec_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/object-format.md "`transformedChunks`: chunk-size codec": the test vector, both
    /// ways.
    #[test]
    fn spec_test_vector() {
        let codec = encode(&[10, 20, 30]).expect("encode");
        assert_eq!(
            codec,
            [0, 0, 0, 3, 0, 0, 0, 0x0a, 1, 0, 0x0a, 0, 0, 0, 0x1e]
        );
        assert_eq!(decode(&codec).expect("decode"), [10, 20, 30]);
        assert_eq!(
            encode_manifest_string(&[10, 20, 30], 3).expect("encode string"),
            "KLUv/SAPeQAAAAAAAwAAAAoBAAoAAAAe"
        );
        assert_eq!(
            decode_manifest_string("KLUv/SAPeQAAAAAAAwAAAAoBAAoAAAAe").expect("decode string"),
            [10, 20, 30]
        );
    }

    #[test]
    fn small_counts_and_widths() {
        assert_eq!(encode(&[]).expect("empty"), [0, 0, 0, 0]);
        assert_eq!(encode(&[7]).expect("one"), [0, 0, 0, 1, 0, 0, 0, 7]);
        // Equal values: width 1, deltas 0.
        assert_eq!(
            encode(&[5, 5, 1]).expect("eq"),
            [0, 0, 0, 3, 0, 0, 0, 5, 1, 0, 0, 0, 0, 0, 1]
        );
        for (sizes, width) in [
            (vec![0u32, 0x100, 0], 2u8),
            (vec![0, 0x1_0000, 0], 3),
            (vec![0, 0x100_0000, 0], 4),
            (vec![i32::MAX as u32, 0, i32::MAX as u32], 4),
        ] {
            let bytes = encode(&sizes).expect("encode");
            assert_eq!(bytes[8], width, "{sizes:?}");
            assert_eq!(decode(&bytes).expect("decode"), sizes);
        }
        assert!(matches!(
            encode(&[1, u32::MAX]),
            Err(CodecError::SizeTooLarge { position: 1, .. })
        ));
    }

    #[test]
    fn rejects_malformed_codec_bytes() {
        let good = encode(&[10, 20, 30]).expect("encode");
        for bad in [
            vec![],
            vec![0, 0, 0],
            vec![0xff, 0xff, 0xff, 0xff],    // negative count
            vec![0, 0, 0, 1, 0xff, 0, 0, 0], // negative value
            vec![0, 0, 0, 0, 0],             // trailing
            vec![0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], // width 0
            vec![0, 0, 0, 2, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0], // width 5
            vec![0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 1], // huge count, short input
            good[..good.len() - 1].to_vec(),
            [good.as_slice(), &[0]].concat(),
            // base + delta > i32::MAX
            vec![0, 0, 0, 2, 0x7f, 0xff, 0xff, 0xff, 1, 1, 0, 0, 0, 0],
        ] {
            assert!(
                matches!(decode(&bad), Err(CodecError::MalformedSizes(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn rejects_bad_manifest_strings() {
        let codec = encode(&[10, 20, 30]).expect("encode");
        // Accepts other levels and writers as long as the size is recorded.
        let other = zstd::bulk::compress(&codec, 19).expect("compress");
        assert_eq!(
            decode_manifest_string(&STANDARD.encode(&other)).expect("level 19"),
            [10, 20, 30]
        );
        // With a checksum (and any other frame parameter) as long as the size is recorded.
        let mut c = zstd::bulk::Compressor::new(3).expect("compressor");
        c.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))
            .expect("param");
        let with_checksum = c.compress(&codec).expect("compress");
        assert_eq!(
            decode_manifest_string(&STANDARD.encode(&with_checksum)).expect("checksum"),
            [10, 20, 30]
        );
        // No content size.
        let mut enc = zstd::stream::Encoder::new(Vec::new(), 3).expect("encoder");
        enc.include_contentsize(false).expect("param");
        std::io::Write::write_all(&mut enc, &codec).expect("write");
        let no_size = STANDARD.encode(enc.finish().expect("finish"));
        let e = decode_manifest_string(&no_size).expect_err("no content size");
        assert!(e.to_string().contains("content size"), "{e}");
        // Trailing bytes.
        let mut trailing = other.clone();
        trailing.extend_from_slice(&[0, 1, 2]);
        let e = decode_manifest_string(&STANDARD.encode(&trailing)).expect_err("trailing");
        assert!(e.to_string().contains("trailing"), "{e}");
        // Over 10 MiB: rejected from the header, before decompressing.
        let big = zstd::bulk::compress(&vec![0u8; MAX_DECODED_LEN as usize + 1], 1)
            .expect("compress big");
        let e = decode_manifest_string(&STANDARD.encode(&big)).expect_err("over 10 MiB");
        assert!(e.to_string().contains("limit"), "{e}");
        // Not base64, not zstd.
        assert!(decode_manifest_string("!!!").is_err());
        assert!(decode_manifest_string(&STANDARD.encode(b"plain bytes")).is_err());
        assert!(decode_manifest_string("").is_err());
    }
}
