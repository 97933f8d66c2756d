//! Legacy message sets (magic 0 and 1), as segments written before message format v2 hold
//! them (Kafka's `LegacyRecord`; the engine's compression heuristic still walks them).
//!
//! Layout (big-endian): `offset i64 | size i32 (bytes after this field) | crc u32 (CRC32,
//! IEEE, of magic..end) | magic i8 | attributes i8 (bits 0-2: codec) | timestamp i64
//! (magic 1 only) | keyLength i32 (-1: null) | key | valueLength i32 | value`.

/// One legacy message at `offset` with a null key; `magic` 0 or 1 (any other value is
/// written as 1's layout with that magic byte), `codec` in the attributes, `timestamp_ms`
/// written for magic 1 only.
pub fn message(magic: u8, offset: i64, timestamp_ms: i64, value: &[u8], codec: u8) -> Vec<u8> {
    let mut body = Vec::with_capacity(22 + value.len());
    body.push(magic);
    body.push(codec & 0x07);
    if magic != 0 {
        body.extend_from_slice(&timestamp_ms.to_be_bytes());
    }
    body.extend_from_slice(&(-1i32).to_be_bytes()); // null key
    body.extend_from_slice(&(value.len() as i32).to_be_bytes());
    body.extend_from_slice(value);
    let mut m = Vec::with_capacity(16 + body.len());
    m.extend_from_slice(&offset.to_be_bytes());
    m.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    m.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
    m.extend_from_slice(&body);
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_crc() {
        let v0 = message(0, 7, 123, b"abc", 0);
        assert_eq!(v0.len(), 12 + 4 + 2 + 4 + 4 + 3);
        assert_eq!(&v0[8..12], &(v0.len() as i32 - 12).to_be_bytes());
        assert_eq!(&v0[12..16], &crc32fast::hash(&v0[16..]).to_be_bytes());
        let v1 = message(1, 7, 123, b"abc", 1);
        assert_eq!(v1.len(), v0.len() + 8);
        assert_eq!((v1[16], v1[17]), (1, 1));
        assert_eq!(&v1[18..26], &123i64.to_be_bytes());
    }
}
