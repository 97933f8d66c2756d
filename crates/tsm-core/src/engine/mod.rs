//! The RemoteStorageManager engine: copy, ranged fetch, fetchIndex, delete (KIP-405).
//!
//! PLACEHOLDER API: the signatures below are the contract the JNI layer and the CLI build
//! against; the bodies are being written.

use std::collections::BTreeMap;

use bytes::Bytes;
use futures::stream::BoxStream;

pub use crate::metrics::MetricsSnapshot;
use crate::{BackendKind, IndexType, LogSegmentData, RemoteLogSegmentMetadata, RsmError};

/// The bytes of a segment range, in order, downloaded lazily: nothing is fetched beyond
/// what the consumer of the stream polls for (plus configured prefetch), and dropping the
/// stream stops further downloads.
pub type SegmentStream = BoxStream<'static, Result<Bytes, RsmError>>;

/// One configured plugin instance; safe to share between threads (`Arc`).
#[derive(Debug)]
pub struct RemoteStorageManager {
    _private: (),
}

impl RemoteStorageManager {
    /// Builds the engine from the broker's map (`rsm.config.` stripped, all values as
    /// strings, `broker.id` included). `backends` lists the backend kinds linked into this
    /// build; `storage.backend.class` picks one of them. Errors name the key.
    pub async fn configure(
        props: BTreeMap<String, String>,
        backends: &[&'static BackendKind],
    ) -> Result<Self, RsmError> {
        let _ = (props, backends);
        Err(RsmError::InvalidArgument(
            "engine not implemented yet".into(),
        ))
    }

    /// `copyLogSegmentData`: uploads `.log`, `.indexes`, then `.rsm-manifest`; returns the
    /// KIP-917 custom metadata bytes (`None` when no field is configured). Durable when
    /// it returns; on error, deletes what it wrote.
    pub async fn copy_log_segment_data(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        data: &LogSegmentData,
    ) -> Result<Option<Vec<u8>>, RsmError> {
        let _ = (metadata, data);
        Err(RsmError::Closed)
    }

    /// `fetchLogSegment`: bytes `start..=end` of the original segment (`end = None`: to
    /// the end; an `end` past the segment is clamped; `start` past the end is
    /// [`RsmError::InvalidArgument`]).
    pub async fn fetch_log_segment(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        start: u64,
        end: Option<u64>,
    ) -> Result<SegmentStream, RsmError> {
        let _ = (metadata, start, end);
        Err(RsmError::Closed)
    }

    /// `fetchIndex`: the exact bytes given at copy time. A segment without a transaction
    /// index gives [`RsmError::NotFound`] for [`IndexType::Transaction`].
    pub async fn fetch_index(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        index: IndexType,
    ) -> Result<Bytes, RsmError> {
        let _ = (metadata, index);
        Err(RsmError::Closed)
    }

    /// `deleteLogSegmentData`: removes all three objects; idempotent.
    pub async fn delete_log_segment_data(
        &self,
        metadata: &RemoteLogSegmentMetadata,
    ) -> Result<(), RsmError> {
        let _ = metadata;
        Err(RsmError::Closed)
    }

    /// `close`: new calls fail with [`RsmError::Closed`]; calls in flight finish or fail.
    pub fn close(&self) {}

    /// Current counters and latency summaries.
    pub fn metrics(&self) -> MetricsSnapshot {
        MetricsSnapshot::default()
    }
}
