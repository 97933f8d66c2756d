//! The small files beside a segment's `.log`, byte for byte as Kafka writes them.
//!
//! - Offset index (`.index`, Kafka's `OffsetIndex`): 8-byte entries `relativeOffset i32 |
//!   position i32` (offset minus the segment's base offset, byte position in the log).
//! - Time index (`.timeindex`, `TimeIndex`): 12-byte entries `timestamp i64 |
//!   relativeOffset i32`.
//! - Transaction index (`.txnindex`, `TransactionIndex` / `AbortedTxn`): 34-byte entries
//!   `version i16 = 0 | producerId i64 | firstOffset i64 | lastOffset i64 |
//!   lastStableOffset i64`.
//! - Producer snapshot (`.snapshot`, `ProducerStateManager.writeSnapshot`): `version i16 =
//!   1 | crc u32 (CRC32C of the rest) | producer entries (i32 count, then entries)`.
//! - Leader-epoch checkpoint (`leader-epoch-checkpoint`, `LeaderEpochCheckpointFile`): text,
//!   `0\n<count>\n` then `<epoch> <startOffset>\n` per entry.
//!
//! Integers big-endian.

/// Bytes of one offset index entry.
pub const OFFSET_INDEX_ENTRY: usize = 8;
/// Bytes of one time index entry.
pub const TIME_INDEX_ENTRY: usize = 12;
/// Bytes of one transaction index entry.
pub const TXN_INDEX_ENTRY: usize = 34;

/// One offset index entry.
pub fn offset_index_entry(relative_offset: i32, position: i32) -> [u8; OFFSET_INDEX_ENTRY] {
    let mut e = [0u8; OFFSET_INDEX_ENTRY];
    e[..4].copy_from_slice(&relative_offset.to_be_bytes());
    e[4..].copy_from_slice(&position.to_be_bytes());
    e
}

/// One time index entry.
pub fn time_index_entry(timestamp_ms: i64, relative_offset: i32) -> [u8; TIME_INDEX_ENTRY] {
    let mut e = [0u8; TIME_INDEX_ENTRY];
    e[..8].copy_from_slice(&timestamp_ms.to_be_bytes());
    e[8..].copy_from_slice(&relative_offset.to_be_bytes());
    e
}

/// The entries of an offset index: `(relativeOffset, position)`; a partial trailing entry
/// is ignored.
pub fn offset_index_entries(index: &[u8]) -> impl Iterator<Item = (i32, i32)> + '_ {
    index.chunks_exact(OFFSET_INDEX_ENTRY).map(|e| {
        (
            i32::from_be_bytes([e[0], e[1], e[2], e[3]]),
            i32::from_be_bytes([e[4], e[5], e[6], e[7]]),
        )
    })
}

/// The entries of a time index: `(timestamp ms, relativeOffset)`; a partial trailing
/// entry is ignored.
pub fn time_index_entries(index: &[u8]) -> impl Iterator<Item = (i64, i32)> + '_ {
    index.chunks_exact(TIME_INDEX_ENTRY).map(|e| {
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&e[..8]);
        (
            i64::from_be_bytes(ts),
            i32::from_be_bytes([e[8], e[9], e[10], e[11]]),
        )
    })
}

/// One aborted transaction of a transaction index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbortedTxn {
    /// The producer whose transaction was aborted.
    pub producer_id: i64,
    /// Its first offset.
    pub first_offset: i64,
    /// Its last offset (the abort marker's).
    pub last_offset: i64,
    /// The partition's last stable offset when it was aborted.
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    /// The 34-byte entry (version 0).
    pub fn entry(&self) -> [u8; TXN_INDEX_ENTRY] {
        let mut e = [0u8; TXN_INDEX_ENTRY];
        e[..2].copy_from_slice(&0i16.to_be_bytes());
        e[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        e[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        e[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        e[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        e
    }
}

/// A transaction index holding `txns`.
pub fn transaction_index(txns: &[AbortedTxn]) -> Vec<u8> {
    txns.iter().flat_map(|t| t.entry()).collect()
}

/// A producer snapshot with no producers (version 1, valid CRC32C): 10 bytes.
pub fn empty_producer_snapshot() -> Vec<u8> {
    let entries = 0i32.to_be_bytes();
    let mut out = Vec::with_capacity(10);
    out.extend_from_slice(&1i16.to_be_bytes());
    out.extend_from_slice(&crc32c::crc32c(&entries).to_be_bytes());
    out.extend_from_slice(&entries);
    out
}

/// A leader-epoch checkpoint with `entries` `(epoch, startOffset)`, in order.
pub fn leader_epoch_checkpoint(entries: &[(i32, i64)]) -> Vec<u8> {
    let mut s = format!("0\n{}\n", entries.len());
    for (epoch, offset) in entries {
        s.push_str(&format!("{epoch} {offset}\n"));
    }
    s.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip() {
        let idx: Vec<u8> = [(1, 100), (7, 9000)]
            .iter()
            .flat_map(|&(o, p)| offset_index_entry(o, p))
            .collect();
        assert_eq!(idx.len(), 16);
        assert_eq!(
            offset_index_entries(&idx).collect::<Vec<_>>(),
            [(1, 100), (7, 9000)]
        );
        let ti = time_index_entry(1_700_000_000_000, 3);
        assert_eq!(
            time_index_entries(&ti).collect::<Vec<_>>(),
            [(1_700_000_000_000, 3)]
        );
        let t = AbortedTxn {
            producer_id: 5,
            first_offset: 10,
            last_offset: 20,
            last_stable_offset: 21,
        };
        let txn = transaction_index(&[t, t]);
        assert_eq!(txn.len(), 68);
        assert_eq!(&txn[2..10], &5i64.to_be_bytes());
    }

    #[test]
    fn small_files_are_kafkas() {
        assert_eq!(leader_epoch_checkpoint(&[(0, 0)]), b"0\n1\n0 0\n");
        assert_eq!(
            leader_epoch_checkpoint(&[(0, 0), (3, 1000)]),
            b"0\n2\n0 0\n3 1000\n"
        );
        let snap = empty_producer_snapshot();
        assert_eq!(snap.len(), 10);
        assert_eq!(&snap[..2], &[0, 1]);
        assert_eq!(&snap[2..6], &crc32c::crc32c(&[0, 0, 0, 0]).to_be_bytes());
    }
}
