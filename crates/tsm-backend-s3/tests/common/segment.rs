//! Segment files as the broker hands them to `copyLogSegmentData`, for the engine-level
//! tests of this crate (`brownout.rs`, `clock.rs`): a `.log` of a recognisable pattern,
//! its indexes, and the `RemoteLogSegmentMetadata` naming them.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};

use bytes::Bytes;
use tsm_core::{KafkaUuid, LogSegmentData, RemoteLogSegmentMetadata};

/// Size of the test segments' offset index (bytes).
pub(crate) const OFFSET_INDEX_SIZE: usize = 256 * 1024;

/// The broker's files of one segment and what fetch and fetchIndex must return.
pub(crate) struct Segment {
    pub(crate) metadata: RemoteLogSegmentMetadata,
    pub(crate) data: LogSegmentData,
    pub(crate) log: Vec<u8>,
    pub(crate) offset_index: Vec<u8>,
}

pub(crate) fn new_segment_id() -> KafkaUuid {
    static NEXT: AtomicI64 = AtomicI64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    KafkaUuid {
        msb: (i64::from(std::process::id()) << 32) | n,
        lsb: n.wrapping_mul(0x5851_F42D_4C95_7F2D),
    }
}

/// Writes a segment of `log_size` bytes (and its indexes) into a new directory under `dir`.
pub(crate) fn segment(dir: &Path, topic: &str, log_size: usize, seed: u64) -> Segment {
    let segment_id = new_segment_id();
    let sub = dir.join(format!("seg-{segment_id}"));
    std::fs::create_dir_all(&sub).expect("segment dir");
    let write = |name: &str, bytes: &[u8]| {
        let p = sub.join(name);
        std::fs::write(&p, bytes).expect("write segment file");
        p
    };
    let log = super::data(log_size, seed as u8);
    let offset_index = tsm_storage::contract::pattern_vec(seed + 1000, OFFSET_INDEX_SIZE);
    let data = LogSegmentData {
        log_segment: write("00000000000000001000.log", &log),
        offset_index: write("00000000000000001000.index", &offset_index),
        time_index: write(
            "00000000000000001000.timeindex",
            &tsm_storage::contract::pattern_vec(seed + 2000, 12 * 1024),
        ),
        transaction_index: None,
        producer_snapshot_index: write(
            "00000000000000001000.snapshot",
            &tsm_storage::contract::pattern_vec(seed + 3000, 1000),
        ),
        leader_epoch_index: Bytes::from_static(b"0\n1\n0 1000\n"),
    };
    let metadata = RemoteLogSegmentMetadata {
        topic_id: KafkaUuid::parse("MWJ6FHTfRYy67jzwZdeqSQ").expect("topic id"),
        topic: topic.into(),
        partition: 0,
        segment_id,
        start_offset: 1000,
        end_offset: 2000,
        max_timestamp_ms: 1_700_000_000_000,
        broker_id: 1,
        event_timestamp_ms: 1_700_000_000_000,
        segment_leader_epochs: BTreeMap::from([(0, 1000)]),
        segment_size_in_bytes: i32::try_from(log_size).expect("segment size"),
        custom_metadata: None,
    };
    Segment {
        metadata,
        data,
        log,
        offset_index,
    }
}

/// The same files under a new segment id: the broker's retry of a failed copy.
pub(crate) fn with_new_id(seg: &Segment) -> Segment {
    let mut metadata = seg.metadata.clone();
    metadata.segment_id = new_segment_id();
    Segment {
        metadata,
        data: seg.data.clone(),
        log: seg.log.clone(),
        offset_index: seg.offset_index.clone(),
    }
}
