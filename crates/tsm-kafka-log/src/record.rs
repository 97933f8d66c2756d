//! Records inside a v2 batch's records section: sizes, writing, decoding.
//!
//! Layout (Kafka's `DefaultRecord`): `length varint | attributes i8 | timestampDelta varlong
//! | offsetDelta varint | keyLength varint | key | valueLength varint | value | headerCount
//! varint | headers`, each header `keyLength varint | key | valueLength varint | value`; a
//! length of -1 is null. Deltas are from the batch's baseTimestamp and baseOffset; varints
//! are zig-zag ([`crate::varint`]).

use crate::batch::{HEADER_LEN, parse_header};
use crate::varint::{get_varint, put_varint, varint_len};

/// Encoded size in bytes of one header-less record, including its leading length varint
/// (Kafka's `DefaultRecord.sizeInBytes`).
pub fn record_len(
    ts_delta: i64,
    offset_delta: i32,
    key_len: Option<usize>,
    value_len: usize,
) -> usize {
    let body = record_body_len(ts_delta, offset_delta, key_len, value_len);
    varint_len(body as i64) + body
}

/// Size of a header-less record after its length varint.
fn record_body_len(
    ts_delta: i64,
    offset_delta: i32,
    key_len: Option<usize>,
    value_len: usize,
) -> usize {
    let key = match key_len {
        None => varint_len(-1),
        Some(k) => varint_len(k as i64) + k,
    };
    1 + varint_len(ts_delta)
        + varint_len(i64::from(offset_delta))
        + key
        + varint_len(value_len as i64)
        + value_len
        + 1
}

/// Appends one header-less record to `out` (Kafka's `DefaultRecord.writeTo`).
pub(crate) fn write_record(
    out: &mut Vec<u8>,
    ts_delta: i64,
    offset_delta: i32,
    key: Option<&[u8]>,
    value: &[u8],
) {
    let body = record_body_len(ts_delta, offset_delta, key.map(<[u8]>::len), value.len());
    put_varint(out, body as i64);
    out.push(0); // record attributes (unused by Kafka)
    put_varint(out, ts_delta);
    put_varint(out, i64::from(offset_delta));
    match key {
        None => put_varint(out, -1),
        Some(k) => {
            put_varint(out, k.len() as i64);
            out.extend_from_slice(k);
        }
    }
    put_varint(out, value.len() as i64);
    out.extend_from_slice(value);
    put_varint(out, 0); // no headers
}

/// One decoded record of an uncompressed batch (borrowing the batch bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordView<'a> {
    /// Offset delta from the batch's base offset.
    pub offset_delta: i64,
    /// Timestamp delta from the batch's base timestamp (ms).
    pub timestamp_delta: i64,
    /// Key (`None` = null).
    pub key: Option<&'a [u8]>,
    /// Value (`None` = null, a tombstone).
    pub value: Option<&'a [u8]>,
    /// Headers: (key, value), a null value as `None`.
    pub headers: Vec<(&'a [u8], Option<&'a [u8]>)>,
}

fn take_varint(rest: &mut &[u8]) -> Option<i64> {
    let (v, n) = get_varint(rest)?;
    *rest = &rest[n..];
    Some(v)
}

/// A length-prefixed byte string (-1 = null).
fn take_bytes<'a>(rest: &mut &'a [u8]) -> Option<Option<&'a [u8]>> {
    let len = take_varint(rest)?;
    if len < 0 {
        return Some(None);
    }
    let n = usize::try_from(len).ok()?;
    let (b, tail) = (rest.get(..n)?, rest.get(n..)?);
    *rest = tail;
    Some(Some(b))
}

/// Decodes the records of the uncompressed batch at the start of `buf`; `None` when it is
/// not a whole, well-formed uncompressed v2 batch (compressed, truncated, a record that
/// does not end where its length says, bytes left over after `recordCount` records).
pub fn records(buf: &[u8]) -> Option<Vec<RecordView<'_>>> {
    let h = parse_header(buf)?;
    if h.fields.codec() != crate::batch::codec::NONE {
        return None;
    }
    let mut rest = &buf[HEADER_LEN..h.size];
    let mut out = Vec::new();
    for _ in 0..h.fields.record_count {
        let len = usize::try_from(take_varint(&mut rest)?).ok()?;
        let (mut body, tail) = (rest.get(..len)?, rest.get(len..)?);
        rest = tail;
        body = body.get(1..)?; // attributes
        let timestamp_delta = take_varint(&mut body)?;
        let offset_delta = take_varint(&mut body)?;
        let key = take_bytes(&mut body)?;
        let value = take_bytes(&mut body)?;
        let count = take_varint(&mut body)?;
        let mut headers = Vec::new();
        for _ in 0..count {
            let k = take_bytes(&mut body)??;
            headers.push((k, take_bytes(&mut body)?));
        }
        if !body.is_empty() {
            return None;
        }
        out.push(RecordView {
            offset_delta,
            timestamp_delta,
            key,
            value,
            headers,
        });
    }
    rest.is_empty().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{BatchBuilder, BatchFields, encode_batch};
    use proptest::prelude::*;

    proptest! {
        /// Any records round-trip through the writer and the decoder; the predicted
        /// length is exact and the CRC checks.
        #[test]
        fn batches_roundtrip(
            base in 0i64..1 << 40,
            ts0 in 0i64..1 << 42,
            recs in prop::collection::vec(
                (prop::option::of(prop::collection::vec(any::<u8>(), 0..40)),
                 prop::collection::vec(any::<u8>(), 0..300),
                 0i64..100_000),
                1..40),
        ) {
            let mut b = BatchBuilder::new(base, ts0);
            let mut predicted = b.len();
            for (k, v, dt) in &recs {
                predicted += b.next_record_len(ts0 + dt, k.as_ref().map(Vec::len), v.len());
                b.push(ts0 + dt, k.as_deref(), v);
            }
            prop_assert_eq!(b.len(), predicted);
            let bytes = b.finish().expect("batch");
            prop_assert_eq!(bytes.len(), predicted);
            let h = parse_header(&bytes).expect("header");
            prop_assert!(h.crc_ok);
            prop_assert_eq!(h.base_offset(), base);
            prop_assert_eq!(h.last_offset(), base + recs.len() as i64 - 1);
            prop_assert_eq!(
                h.fields.max_timestamp,
                ts0 + recs.iter().map(|r| r.2).max().unwrap_or(0)
            );
            let got = records(&bytes).expect("records");
            prop_assert_eq!(got.len(), recs.len());
            for (i, (r, (k, v, dt))) in got.iter().zip(&recs).enumerate() {
                prop_assert_eq!(r.offset_delta, i as i64);
                prop_assert_eq!(r.timestamp_delta, *dt);
                prop_assert_eq!(r.key, k.as_deref());
                prop_assert_eq!(r.value, Some(v.as_slice()));
                prop_assert!(r.headers.is_empty());
            }
        }
    }

    #[test]
    fn push_exact_hits_every_size() {
        for target in 8..3000usize {
            let mut b = BatchBuilder::new(0, 0);
            let before = b.len();
            assert!(
                b.push_exact(0, target, &mut |n, out| out.resize(out.len() + n, b'x')),
                "size {target}"
            );
            assert_eq!(b.len() - before, target, "size {target}");
        }
    }

    /// A record with a null value and one header, as Kafka writes it: decoded, not refused.
    #[test]
    fn decodes_headers_and_null_values() {
        let mut section = Vec::new();
        let mut body = vec![0u8];
        put_varint(&mut body, 0);
        put_varint(&mut body, 0);
        put_varint(&mut body, 1);
        body.push(b'k');
        put_varint(&mut body, -1);
        put_varint(&mut body, 1);
        put_varint(&mut body, 2);
        body.extend_from_slice(b"hk");
        put_varint(&mut body, 1);
        body.push(b'v');
        put_varint(&mut section, body.len() as i64);
        section.extend_from_slice(&body);
        let batch = encode_batch(&BatchFields::new(0, 1, 0), &section).expect("batch");
        let r = records(&batch).expect("decodes");
        assert_eq!(r[0].key, Some(&b"k"[..]));
        assert_eq!(r[0].value, None);
        assert_eq!(r[0].headers, [(&b"hk"[..], Some(&b"v"[..]))]);
        let opaque = encode_batch(&BatchFields::new(0, 1, 0), b"not a record").expect("batch");
        assert!(records(&opaque).is_none());
    }
}
