//! Kafka's log format, written and read: v2 record batches (`DefaultRecordBatch`) and
//! their records (`DefaultRecord`), a streaming batch check for restored `.log` files, log
//! segments with the offset and time indexes Kafka keeps beside them (`LogSegment`,
//! `OffsetIndex`, `TimeIndex`), and the small per-segment files (transaction index,
//! producer snapshot, leader-epoch checkpoint).
//!
//! One implementation for every producer and consumer of Kafka log bytes in the
//! workspace: the operator tool's `tsm verify` and `tsm copy` ([`BatchWalker`]), the
//! benchmark data generator, and the tests of every crate. It depends on no tsm crate.
//!
//! - [`varint`]: zig-zag varints (`ByteUtils`).
//! - [`batch`]: the batch header layout, [`BatchBuilder`], [`encode_batch`], [`parse_header`].
//! - [`record`]: record sizes and decoding ([`records`]).
//! - [`walker`]: [`BatchWalker`], the streaming CRC and offset check.
//! - [`segment`]: [`SegmentWriter`], a `.log` with its `.index` and `.timeindex`.
//! - [`legacy`]: magic 0 / 1 messages of segments older than format v2.
//! - [`files`]: index entries, transaction index, producer snapshot, leader-epoch checkpoint.

pub mod batch;
pub mod files;
pub mod legacy;
pub mod record;
pub mod segment;
pub mod varint;
pub mod walker;

pub use batch::{
    BatchBuilder, BatchError, BatchFields, BatchHeader, Compression, Producer, batches,
    encode_batch, parse_header,
};
pub use record::{RecordView, records};
pub use segment::{INDEX_INTERVAL_BYTES, SegmentWriter, WrittenSegment};
pub use walker::{BatchProblem, BatchSummary, BatchWalker};
