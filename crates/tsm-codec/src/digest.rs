//! The digest of one stored chunk or index: xxh3-64 of its stored bytes (what the `.log`
//! or `.indexes` object holds, after compression and encryption), or, for a unit that
//! checks its own content (AES-GCM, a zstd frame with a content checksum), its tail token
//! ([`tail_token`]: no hashing at all).
//!
//! tsm records one digest per stored chunk and per index in its integrity fields
//! (tsm-core's `manifest::integrity`) at copy and checks them before a stored chunk is
//! restored or served. xxh3-64 is a fast non-cryptographic hash (tens of GB/s per core):
//! it detects corruption, and, bound into the segment's MAC when the segment is encrypted,
//! a reordered or foreign chunk (an encrypted chunk cannot be forged without the data key,
//! so only existing chunks can be moved, and two of them collide with probability about
//! n^2 / 2^65 for n chunks). 64 bits rather than CRC32C's 32 keep that bound negligible for
//! segments of millions of chunks. Source of the algorithm: the `xxhash-rust` crate
//! (XXH3 64-bit, seed 0).

/// Name of the digest algorithm, as recorded in the integrity fields.
pub const DIGEST_NAME: &str = "xxh3-64";

/// Bytes per digest in the packed digest list (big-endian `u64`).
pub const DIGEST_LEN: usize = 8;

/// The digest of one stored chunk or index (`bytes`: exactly its stored bytes).
pub fn chunk_digest(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// The tail token of a stored unit that checks its own content: its last 8 bytes,
/// big-endian (for an AES-GCM chunk, the first half of its authentication tag; for a zstd
/// frame with a content checksum, its last block's end and the checksum). Recorded instead
/// of a digest for such units, it binds each to its place at no cost: the unit's own check
/// (the GCM tag, the frame checksum) covers its content, and the token tells it from every
/// other unit. A unit under 8 bytes (never written so) falls back to [`chunk_digest`].
pub fn tail_token(bytes: &[u8]) -> u64 {
    match bytes.len().checked_sub(DIGEST_LEN) {
        Some(at) => {
            let mut b = [0u8; DIGEST_LEN];
            b.copy_from_slice(&bytes[at..]);
            u64::from_be_bytes(b)
        }
        None => chunk_digest(bytes),
    }
}

/// True when `frame` is a zstd frame (magic `28 B5 2F FD`) whose header says it carries a
/// content checksum (Frame_Header_Descriptor bit 2, RFC 8878 section 3.1.1.1.1), which
/// decompression verifies.
pub fn zstd_frame_has_checksum(frame: &[u8]) -> bool {
    frame.len() > 4 && frame[..4] == [0x28, 0xB5, 0x2F, 0xFD] && frame[4] & 0x04 != 0
}

/// Packs digests into `DIGEST_LEN` big-endian bytes each, in order.
pub fn pack(digests: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(digests.len() * DIGEST_LEN);
    for d in digests {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out
}

/// Unpacks a list written by [`pack`]; `None` when `bytes` is not a whole number of
/// digests.
pub fn unpack(bytes: &[u8]) -> Option<Vec<u64>> {
    if bytes.len() % DIGEST_LEN != 0 {
        return None;
    }
    Some(
        bytes
            .chunks_exact(DIGEST_LEN)
            .map(|c| {
                let mut b = [0u8; DIGEST_LEN];
                b.copy_from_slice(c);
                u64::from_be_bytes(b)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_and_packing() {
        // XXH3-64 of the empty input with seed 0 (the reference implementation's value).
        assert_eq!(chunk_digest(b""), 0x2D06_8005_38D3_94C2);
        assert_ne!(chunk_digest(b"a"), chunk_digest(b"b"));
        let d = vec![1, u64::MAX, chunk_digest(b"chunk")];
        let packed = pack(&d);
        assert_eq!(packed.len(), 24);
        assert_eq!(&packed[..8], &[0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(unpack(&packed), Some(d));
        assert_eq!(unpack(&packed[..7]), None);
        assert_eq!(unpack(&[]), Some(vec![]));
        assert_eq!(tail_token(&[9, 0, 0, 0, 0, 0, 0, 0, 0, 1]), 1);
        assert_eq!(tail_token(b"short"), chunk_digest(b"short"));
    }

    #[test]
    fn checksum_flag_of_zstd_frames() {
        let with = crate::compression::compress_chunk(b"some chunk bytes", 3).expect("zstd");
        assert!(zstd_frame_has_checksum(&with));
        let without =
            crate::compression::compress_frame(b"some chunk bytes", 3, false).expect("zstd");
        assert!(!zstd_frame_has_checksum(&without));
        assert!(!zstd_frame_has_checksum(b"not zstd"));
    }
}
