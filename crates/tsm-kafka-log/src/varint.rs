//! Zig-zag varints as Kafka writes them inside records (Kafka's `ByteUtils.writeVarlong`,
//! `readVarlong`, `sizeOfVarlong`): 7 bits a byte, least significant group first, the high
//! bit set on every byte but the last; a signed value `v` is stored as `(v << 1) ^ (v >> 63)`.

/// Maximum bytes of a 64-bit varint.
const MAX_VARLONG_BYTES: usize = 10;

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Number of bytes `v` takes as a zig-zag varint (Kafka's `ByteUtils.sizeOfVarlong`): 1 to 10.
pub fn varint_len(v: i64) -> usize {
    let mut z = zigzag(v);
    let mut n = 1;
    while z >= 0x80 {
        z >>= 7;
        n += 1;
    }
    n
}

/// Appends `v` as a zig-zag varint (Kafka's `ByteUtils.writeVarlong`).
pub fn put_varint(out: &mut Vec<u8>, v: i64) {
    let mut z = zigzag(v);
    while z >= 0x80 {
        out.push((z as u8 & 0x7f) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// Reads the zig-zag varint at the start of `buf` (Kafka's `ByteUtils.readVarlong`):
/// `(value, bytes used)`, or `None` when `buf` ends inside it or it runs past 10 bytes.
pub fn get_varint(buf: &[u8]) -> Option<(i64, usize)> {
    let mut z: u64 = 0;
    for (i, b) in buf.iter().enumerate().take(MAX_VARLONG_BYTES) {
        z |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((((z >> 1) as i64) ^ -((z & 1) as i64), i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn varints_roundtrip(v in any::<i64>()) {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            prop_assert_eq!(out.len(), varint_len(v));
            prop_assert_eq!(get_varint(&out), Some((v, out.len())));
        }
    }

    #[test]
    fn varints_match_kafka() {
        let mut out = Vec::new();
        put_varint(&mut out, 0);
        put_varint(&mut out, -1);
        put_varint(&mut out, 1);
        put_varint(&mut out, 64);
        assert_eq!(out, [0x00, 0x01, 0x02, 0x80, 0x01]);
        assert_eq!(varint_len(63), 1);
        assert_eq!(varint_len(64), 2);
        assert_eq!(varint_len(-65), 2);
        assert_eq!(varint_len(i64::MIN), 10);
        assert_eq!(get_varint(&[0x80]), None);
        assert_eq!(get_varint(&[0xff; 11]), None);
    }
}
