//! Rust mirrors of the broker's types: `RemoteLogSegmentMetadata`, `LogSegmentData`,
//! `IndexType` (KIP-405, package `org.apache.kafka.server.log.remote.storage`) and Kafka's
//! `Uuid`. The JNI layer converts the Java objects into these.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use bytes::Bytes;

/// Kafka's `Uuid`: 16 bytes; `Display` is `Uuid.toString()`, URL-safe base64 without
/// padding (22 characters), as used in object keys.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KafkaUuid {
    /// Most significant 64 bits (Java `getMostSignificantBits`).
    pub msb: i64,
    /// Least significant 64 bits (Java `getLeastSignificantBits`).
    pub lsb: i64,
}

impl KafkaUuid {
    /// The 16 bytes, big-endian (msb first).
    pub fn to_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.msb.to_be_bytes());
        b[8..].copy_from_slice(&self.lsb.to_be_bytes());
        b
    }

    /// Parses `Uuid.toString()` output (22 characters of URL-safe base64, no padding).
    pub fn parse(s: &str) -> Option<Self> {
        let bytes = s.as_bytes();
        if bytes.len() != 22 {
            return None;
        }
        let mut acc: u128 = 0;
        for (i, &c) in bytes.iter().enumerate() {
            let v = match c {
                b'A'..=b'Z' => c - b'A',
                b'a'..=b'z' => c - b'a' + 26,
                b'0'..=b'9' => c - b'0' + 52,
                b'-' => 62,
                b'_' => 63,
                _ => return None,
            } as u128;
            if i == 21 {
                // last char carries 2 bits (128 = 21*6 + 2)
                if v & 0x0f != 0 {
                    return None;
                }
                acc = (acc << 2) | (v >> 4);
            } else {
                acc = (acc << 6) | v;
            }
        }
        Some(Self {
            msb: (acc >> 64) as u64 as i64,
            lsb: acc as u64 as i64,
        })
    }
}

impl fmt::Display for KafkaUuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let v = u128::from_be_bytes(self.to_bytes());
        let mut out = [0u8; 22];
        for (i, o) in out.iter_mut().enumerate().take(21) {
            *o = A[((v >> (122 - 6 * i)) & 0x3f) as usize];
        }
        out[21] = A[((v & 0x3) << 4) as usize];
        f.write_str(std::str::from_utf8(&out).unwrap_or("?"))
    }
}

impl fmt::Debug for KafkaUuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KafkaUuid({self})")
    }
}

/// `RemoteLogSegmentMetadata` as far as the plugin uses it. Object keys depend only on the
/// topic, topic id, partition, start offset and segment id (never on `state`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteLogSegmentMetadata {
    /// `remoteLogSegmentId().topicIdPartition().topicId()`.
    pub topic_id: KafkaUuid,
    /// Topic name.
    pub topic: String,
    /// Partition number.
    pub partition: i32,
    /// `remoteLogSegmentId().id()`: new for every copy attempt.
    pub segment_id: KafkaUuid,
    /// First offset in the segment.
    pub start_offset: i64,
    /// Last offset in the segment (inclusive).
    pub end_offset: i64,
    /// Largest record timestamp (ms since epoch).
    pub max_timestamp_ms: i64,
    /// The broker that copied it.
    pub broker_id: i32,
    /// When the metadata event was created (ms since epoch).
    pub event_timestamp_ms: i64,
    /// Leader epoch -> first offset of that epoch in the segment.
    pub segment_leader_epochs: BTreeMap<i32, i64>,
    /// Size of the local `.log` file in bytes.
    pub segment_size_in_bytes: i32,
    /// KIP-917 custom metadata returned by a previous copy (object prefix/key overrides).
    pub custom_metadata: Option<Vec<u8>>,
}

/// `LogSegmentData`: the broker's live files for one segment. Read everything before
/// `copy` returns; the broker may delete them right after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogSegmentData {
    /// The `.log` file.
    pub log_segment: PathBuf,
    /// The `.index` file (OFFSET).
    pub offset_index: PathBuf,
    /// The `.timeindex` file (TIMESTAMP).
    pub time_index: PathBuf,
    /// The `.txnindex` file (TRANSACTION), when the segment has one.
    pub transaction_index: Option<PathBuf>,
    /// The `.snapshot` file (PRODUCER_SNAPSHOT).
    pub producer_snapshot_index: PathBuf,
    /// Leader-epoch checkpoint bytes (LEADER_EPOCH), copied from the broker's heap buffer.
    pub leader_epoch_index: Bytes,
}

/// KIP-405 `RemoteStorageManager.IndexType`, in the order indexes are stored in
/// `.indexes` (docs/object-format.md "`.indexes`").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexType {
    /// `.index`
    Offset,
    /// `.timeindex`
    Timestamp,
    /// `.snapshot`
    ProducerSnapshot,
    /// Leader-epoch checkpoint.
    LeaderEpoch,
    /// `.txnindex` (optional).
    Transaction,
}

impl IndexType {
    /// Storage order in `.indexes`.
    pub const ALL: [IndexType; 5] = [
        IndexType::Offset,
        IndexType::Timestamp,
        IndexType::ProducerSnapshot,
        IndexType::LeaderEpoch,
        IndexType::Transaction,
    ];

    /// The Java enum constant name (`OFFSET`, `TIMESTAMP`, ...).
    pub fn java_name(self) -> &'static str {
        match self {
            Self::Offset => "OFFSET",
            Self::Timestamp => "TIMESTAMP",
            Self::ProducerSnapshot => "PRODUCER_SNAPSHOT",
            Self::LeaderEpoch => "LEADER_EPOCH",
            Self::Transaction => "TRANSACTION",
        }
    }

    /// Inverse of [`IndexType::java_name`].
    pub fn from_java_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.java_name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_round_trips_like_kafka() {
        // From the example key of docs/object-format.md "Objects per segment".
        let s = "MWJ6FHTfRYy67jzwZdeqSQ";
        let u = KafkaUuid::parse(s).expect("parses");
        assert_eq!(u.to_string(), s);
        let z = KafkaUuid { msb: 0, lsb: 1 };
        assert_eq!(KafkaUuid::parse(&z.to_string()), Some(z));
        assert_eq!(KafkaUuid::parse("short"), None);
    }
}
