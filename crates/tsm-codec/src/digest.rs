//! The digest of one stored chunk or index: xxh3-64 of its stored bytes (what the `.log`
//! or `.indexes` object holds, after compression and encryption).
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
    }
}
