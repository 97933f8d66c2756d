//! The compact big-endian encoding the Java side (`io.tsm.kafka.Wire`) uses to hand the
//! broker's objects to native code in one `byte[]` instead of dozens of JNI calls.
//! Written with `java.io.DataOutputStream`; strings are `int length + UTF-8 bytes`.
//!
//! - properties: `int count`, then `count` x (key string, value string).
//! - segment metadata (`RemoteLogSegmentMetadata`): topicId msb/lsb (long, long), topic
//!   (string), partition (int), segment id msb/lsb (long, long), startOffset, endOffset,
//!   maxTimestampMs (long x3), brokerId (int), eventTimestampMs (long),
//!   segmentSizeInBytes (int), epoch count (int) then count x (epoch int, offset long),
//!   custom metadata (int length, -1 = absent, then the bytes).
//! - copy result (native -> Java, the `takeBytes` of a copy): custom metadata (int length,
//!   -1 = absent, then the bytes), object count (int), then count x (object type byte:
//!   0 log, 1 indexes, 2 rsm-manifest; stored bytes long).
//!
//! Hand-written because it is ~60 lines on each side and both sides are ours; a general
//! serialization library would need a Java dependency bundled into the plugin jar.

use std::collections::BTreeMap;

use tsm_core::{CopyOutcome, KafkaUuid, RemoteLogSegmentMetadata};

/// Upper bound for one encoded string or byte field (bytes): guards allocations against a
/// corrupt buffer.
const MAX_FIELD: usize = 64 * 1024 * 1024;

/// A cursor over an encoded buffer; errors name the field being read.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| {
                format!(
                    "encoded buffer too short reading {what}: need {n} bytes at offset {}, have {}",
                    self.pos,
                    self.buf.len()
                )
            })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn i32(&mut self, what: &str) -> Result<i32, String> {
        let b = self.take(4, what)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn i64(&mut self, what: &str) -> Result<i64, String> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    fn len(&mut self, what: &str) -> Result<Option<usize>, String> {
        let n = self.i32(what)?;
        if n < 0 {
            return Ok(None);
        }
        let n = n as usize;
        if n > MAX_FIELD {
            return Err(format!("{what} length {n} exceeds {MAX_FIELD} bytes"));
        }
        Ok(Some(n))
    }

    fn bytes(&mut self, what: &str) -> Result<Option<Vec<u8>>, String> {
        match self.len(what)? {
            None => Ok(None),
            Some(n) => Ok(Some(self.take(n, what)?.to_vec())),
        }
    }

    fn string(&mut self, what: &str) -> Result<String, String> {
        let b = self.bytes(what)?.ok_or_else(|| format!("{what} is null"))?;
        String::from_utf8(b).map_err(|e| format!("{what} is not UTF-8: {e}"))
    }

    fn finish(&self, what: &str) -> Result<(), String> {
        if self.pos == self.buf.len() {
            Ok(())
        } else {
            Err(format!(
                "{} trailing bytes after {what}",
                self.buf.len() - self.pos
            ))
        }
    }
}

/// Decodes the configuration map.
pub fn decode_props(buf: &[u8]) -> Result<BTreeMap<String, String>, String> {
    let mut r = Reader { buf, pos: 0 };
    let n = r.i32("property count")?;
    let mut out = BTreeMap::new();
    for i in 0..n.max(0) {
        let k = r.string(&format!("property {i} key"))?;
        let v = r.string(&format!("value of property {k}"))?;
        out.insert(k, v);
    }
    r.finish("properties")?;
    Ok(out)
}

/// Decodes a `RemoteLogSegmentMetadata`.
pub fn decode_metadata(buf: &[u8]) -> Result<RemoteLogSegmentMetadata, String> {
    let mut r = Reader { buf, pos: 0 };
    let topic_id = KafkaUuid {
        msb: r.i64("topicId")?,
        lsb: r.i64("topicId")?,
    };
    let topic = r.string("topic")?;
    let partition = r.i32("partition")?;
    let segment_id = KafkaUuid {
        msb: r.i64("segment id")?,
        lsb: r.i64("segment id")?,
    };
    let start_offset = r.i64("startOffset")?;
    let end_offset = r.i64("endOffset")?;
    let max_timestamp_ms = r.i64("maxTimestampMs")?;
    let broker_id = r.i32("brokerId")?;
    let event_timestamp_ms = r.i64("eventTimestampMs")?;
    let segment_size_in_bytes = r.i32("segmentSizeInBytes")?;
    let epochs = r.i32("leader epoch count")?;
    let mut segment_leader_epochs = BTreeMap::new();
    for _ in 0..epochs.max(0) {
        let e = r.i32("leader epoch")?;
        let o = r.i64("leader epoch offset")?;
        segment_leader_epochs.insert(e, o);
    }
    let custom_metadata = r.bytes("customMetadata")?;
    r.finish("segment metadata")?;
    Ok(RemoteLogSegmentMetadata {
        topic_id,
        topic,
        partition,
        segment_id,
        start_offset,
        end_offset,
        max_timestamp_ms,
        broker_id,
        event_timestamp_ms,
        segment_leader_epochs,
        segment_size_in_bytes,
        custom_metadata,
    })
}

/// Encodes a copy's result for `Wire.copyResult` (layout in the module docs).
pub fn encode_copy_outcome(out: &CopyOutcome) -> Vec<u8> {
    let custom = out.custom_metadata.as_deref();
    let mut b = Vec::with_capacity(8 + custom.map_or(0, <[u8]>::len) + 9 * out.uploaded.len());
    match custom {
        None => b.extend_from_slice(&(-1i32).to_be_bytes()),
        Some(c) => {
            // Custom metadata is bounded far below 2 GiB (the broker's limit is KiBs).
            b.extend_from_slice(&i32::try_from(c.len()).unwrap_or(i32::MAX).to_be_bytes());
            b.extend_from_slice(c);
        }
    }
    b.extend_from_slice(&(out.uploaded.len() as i32).to_be_bytes());
    for (t, n) in &out.uploaded {
        b.push(t.code());
        b.extend_from_slice(&i64::try_from(*n).unwrap_or(i64::MAX).to_be_bytes());
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_outcome_encodes() {
        use tsm_core::ObjectType;
        let out = CopyOutcome {
            custom_metadata: Some(vec![7, 8]),
            uploaded: vec![(ObjectType::Log, 300), (ObjectType::Manifest, 5)],
        };
        let b = encode_copy_outcome(&out);
        let mut want = 2i32.to_be_bytes().to_vec();
        want.extend_from_slice(&[7, 8]);
        want.extend_from_slice(&2i32.to_be_bytes());
        want.push(0);
        want.extend_from_slice(&300i64.to_be_bytes());
        want.push(2);
        want.extend_from_slice(&5i64.to_be_bytes());
        assert_eq!(b, want);
        let none = encode_copy_outcome(&CopyOutcome::default());
        assert_eq!(none, [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
    }

    fn s(out: &mut Vec<u8>, v: &str) {
        out.extend_from_slice(&(v.len() as i32).to_be_bytes());
        out.extend_from_slice(v.as_bytes());
    }

    #[test]
    fn props_round_trip_and_reject_garbage() {
        let mut b = 2i32.to_be_bytes().to_vec();
        s(&mut b, "a");
        s(&mut b, "1");
        s(&mut b, "broker.id");
        s(&mut b, "3");
        let p = decode_props(&b).expect("decodes");
        assert_eq!(p.get("broker.id").map(String::as_str), Some("3"));
        assert!(decode_props(&b[..b.len() - 1]).is_err());
        let mut extra = b.clone();
        extra.push(0);
        assert!(decode_props(&extra).is_err());
        assert!(decode_props(&[0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff]).is_err());
    }

    #[test]
    fn metadata_decodes() {
        let mut b = Vec::new();
        b.extend_from_slice(&1i64.to_be_bytes());
        b.extend_from_slice(&2i64.to_be_bytes());
        s(&mut b, "topic");
        b.extend_from_slice(&7i32.to_be_bytes());
        b.extend_from_slice(&3i64.to_be_bytes());
        b.extend_from_slice(&4i64.to_be_bytes());
        for v in [10i64, 20, 30] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&40i64.to_be_bytes());
        b.extend_from_slice(&100i32.to_be_bytes());
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&5i32.to_be_bytes());
        b.extend_from_slice(&10i64.to_be_bytes());
        b.extend_from_slice(&(-1i32).to_be_bytes());
        let m = decode_metadata(&b).expect("decodes");
        assert_eq!(m.topic, "topic");
        assert_eq!(m.partition, 7);
        assert_eq!(m.segment_id, KafkaUuid { msb: 3, lsb: 4 });
        assert_eq!(m.end_offset, 20);
        assert_eq!(m.segment_leader_epochs.get(&5), Some(&10));
        assert_eq!(m.custom_metadata, None);
        assert!(decode_metadata(&b[..10]).is_err());
    }
}
