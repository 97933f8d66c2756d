//! KIP-917 custom metadata: the bytes `copyLogSegmentData` returns and the broker stores in
//! `RemoteLogSegmentMetadata.customMetadata`, handed back on every later fetch and delete.
//!
//! Source: docs/object-format.md "Custom metadata (KIP-917)". Encoding is a Kafka tagged-fields
//! section: unsigned-varint field count, then per field (ascending tag) unsigned-varint tag,
//! unsigned-varint length, data. Tags: 0 `remote_size` (zig-zag varlong: bytes uploaded for
//! `.log` + `.indexes` + `.rsm-manifest`), 1 `object_prefix` (compact string), 2
//! `object_key` (compact string, the main path without suffix). Only the fields listed in
//! `custom.metadata.fields.include` are written; none listed means no custom metadata.
//!
//! The broker rejects custom metadata over `remote.log.metadata.custom.metadata.max.bytes`
//! (default [`CUSTOM_METADATA_MAX_BYTES`]) and then stops copying the partition, so the
//! engine checks the size with [`encoded_len_upper_bound`] before uploading anything.

pub use crate::config::CustomMetadataField;

/// The broker's default `remote.log.metadata.custom.metadata.max.bytes` (bytes).
pub const CUSTOM_METADATA_MAX_BYTES: usize = 128;

/// Tag of `remote_size`.
pub const TAG_REMOTE_SIZE: u32 = 0;
/// Tag of `object_prefix`.
pub const TAG_OBJECT_PREFIX: u32 = 1;
/// Tag of `object_key`.
pub const TAG_OBJECT_KEY: u32 = 2;

/// Decoded custom metadata. Absent fields are `None`; unknown tags are skipped on read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CustomMetadata {
    /// Tag 0: bytes uploaded for `.log` + `.indexes` + `.rsm-manifest`.
    pub remote_size: Option<i64>,
    /// Tag 1: key prefix used at copy time (overrides `key.prefix` when reading).
    pub object_prefix: Option<String>,
    /// Tag 2: main path used at copy time (overrides the computed path when reading).
    pub object_key: Option<String>,
}

/// Why custom metadata bytes could not be decoded (names the byte offset).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed KIP-917 custom metadata at byte {offset}: {detail}")]
pub struct CustomMetadataError {
    /// Byte offset in the custom metadata where decoding failed.
    pub offset: usize,
    /// What was wrong.
    pub detail: String,
}

impl CustomMetadata {
    /// Builds the metadata holding only `fields` (duplicates ignored).
    pub fn for_fields(
        fields: &[CustomMetadataField],
        remote_size: i64,
        object_prefix: &str,
        object_key: &str,
    ) -> Self {
        let has = |f| fields.contains(&f);
        Self {
            remote_size: has(CustomMetadataField::RemoteSize).then_some(remote_size),
            object_prefix: has(CustomMetadataField::ObjectPrefix).then(|| object_prefix.into()),
            object_key: has(CustomMetadataField::ObjectKey).then(|| object_key.into()),
        }
    }

    /// True when no field is set (then copy returns no custom metadata).
    pub fn is_empty(&self) -> bool {
        self.remote_size.is_none() && self.object_prefix.is_none() && self.object_key.is_none()
    }

    /// The tagged-fields encoding (see the module doc). Fields in ascending tag order.
    pub fn encode(&self) -> Vec<u8> {
        let mut fields: Vec<(u32, Vec<u8>)> = Vec::with_capacity(3);
        if let Some(size) = self.remote_size {
            let mut data = Vec::with_capacity(10);
            put_uvarint64(&mut data, zigzag64(size));
            fields.push((TAG_REMOTE_SIZE, data));
        }
        if let Some(prefix) = &self.object_prefix {
            fields.push((TAG_OBJECT_PREFIX, compact_string(prefix)));
        }
        if let Some(key) = &self.object_key {
            fields.push((TAG_OBJECT_KEY, compact_string(key)));
        }
        let mut out = Vec::new();
        put_uvarint64(&mut out, fields.len() as u64);
        for (tag, data) in fields {
            put_uvarint64(&mut out, u64::from(tag));
            put_uvarint64(&mut out, data.len() as u64);
            out.extend_from_slice(&data);
        }
        out
    }

    /// Decodes a tagged-fields section. Unknown tags are skipped; trailing bytes, bad
    /// varints, lengths past the end and non-UTF-8 strings are errors.
    pub fn decode(bytes: &[u8]) -> Result<Self, CustomMetadataError> {
        let mut r = Reader { bytes, pos: 0 };
        let count = r.uvarint("field count")?;
        let mut out = Self::default();
        for _ in 0..count {
            let tag = r.uvarint("tag")?;
            let len = r.uvarint("field length")?;
            let start = r.pos;
            let data = r.take(len, "field data")?;
            let mut fr = Reader {
                bytes: data,
                pos: 0,
            };
            let err_at = |e: CustomMetadataError| CustomMetadataError {
                offset: start + e.offset,
                detail: format!("tag {tag}: {}", e.detail),
            };
            match tag {
                0 => out.remote_size = Some(unzigzag64(fr.uvarint("remote_size").map_err(err_at)?)),
                1 => out.object_prefix = Some(fr.compact_string().map_err(err_at)?),
                2 => out.object_key = Some(fr.compact_string().map_err(err_at)?),
                _ => {}
            }
        }
        if r.pos != bytes.len() {
            return Err(CustomMetadataError {
                offset: r.pos,
                detail: format!("{} trailing bytes", bytes.len() - r.pos),
            });
        }
        Ok(out)
    }
}

/// The largest encoded length of custom metadata holding `fields`, with `remote_size` at
/// most `max_remote_size` (bytes). Used to refuse a copy before uploading anything.
pub fn encoded_len_upper_bound(
    fields: &[CustomMetadataField],
    max_remote_size: i64,
    object_prefix: &str,
    object_key: &str,
) -> usize {
    CustomMetadata::for_fields(fields, max_remote_size, object_prefix, object_key)
        .encode()
        .len()
}

fn zigzag64(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag64(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn put_uvarint64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn compact_string(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 2);
    put_uvarint64(&mut out, s.len() as u64 + 1);
    out.extend_from_slice(s.as_bytes());
    out
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn err(&self, detail: impl Into<String>) -> CustomMetadataError {
        CustomMetadataError {
            offset: self.pos,
            detail: detail.into(),
        }
    }

    fn uvarint(&mut self, what: &str) -> Result<u64, CustomMetadataError> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let Some(&b) = self.bytes.get(self.pos) else {
                return Err(self.err(format!("{what}: varint runs past the end")));
            };
            self.pos += 1;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.err(format!("{what}: varint longer than 10 bytes")))
    }

    fn take(&mut self, len: u64, what: &str) -> Result<&'a [u8], CustomMetadataError> {
        let remaining = self.bytes.len() - self.pos;
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l <= remaining)
            .ok_or_else(|| self.err(format!("{what}: length {len} but {remaining} bytes left")))?;
        let out = &self.bytes[self.pos..self.pos + len];
        self.pos += len;
        Ok(out)
    }

    fn compact_string(&mut self) -> Result<String, CustomMetadataError> {
        let n = self.uvarint("compact string length")?;
        if n == 0 {
            return Err(self.err("null compact string"));
        }
        let start = self.pos;
        let data = self.take(n - 1, "compact string")?;
        String::from_utf8(data.to_vec()).map_err(|_| CustomMetadataError {
            offset: start,
            detail: "string is not UTF-8".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_kafka_tagged_fields() {
        let m = CustomMetadata {
            remote_size: Some(10),
            object_prefix: Some("p/".into()),
            object_key: None,
        };
        // count=2, tag0 len1 zigzag(10)=20, tag1 len3 compact "p/"
        assert_eq!(m.encode(), vec![2, 0, 1, 20, 1, 3, 3, b'p', b'/']);
        assert_eq!(CustomMetadata::decode(&m.encode()), Ok(m));
        assert_eq!(CustomMetadata::default().encode(), vec![0]);
    }

    #[test]
    fn round_trips_all_fields_and_skips_unknown_tags() {
        let m = CustomMetadata::for_fields(&CustomMetadataField::ALL, 1 << 40, "pre/", "t-x/0/1");
        assert_eq!(CustomMetadata::decode(&m.encode()), Ok(m.clone()));
        let mut bytes = m.encode();
        bytes[0] = 4;
        bytes.extend_from_slice(&[9, 2, 0xaa, 0xbb]);
        assert_eq!(CustomMetadata::decode(&bytes), Ok(m));
    }

    #[test]
    fn rejects_malformed_input_with_offsets() {
        assert!(CustomMetadata::decode(&[]).is_err());
        assert!(CustomMetadata::decode(&[1, 1, 5, 3]).is_err());
        assert!(CustomMetadata::decode(&[0, 0]).is_err());
        let e = CustomMetadata::decode(&[1, 2, 2, 0, b'x']).unwrap_err();
        assert!(e.to_string().contains("tag 2"), "{e}");
        assert!(CustomMetadata::decode(&[0xff; 12]).is_err());
    }
}
