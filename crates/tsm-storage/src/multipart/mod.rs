//! One multipart writer for every store that uploads an object in parts: S3 multipart
//! uploads (`tsm-backend-s3`) and Azure staged blocks (`tsm-backend-azure`).
//!
//! # Where data comes from and goes
//! The caller's [`ByteStream`](crate::ByteStream) (items of any size) -> [`PartReader`]
//! cuts it into [`Bytes`] of exactly [`PartLimits::part_size`] (the last one shorter;
//! zero-copy when an item holds a whole part) -> [`upload`] hands a body of at most one
//! part to [`MultipartTarget::put_whole`] (one request, 0 bytes included), and a larger one
//! to a [`MultipartUpload`] that the target starts: each part goes to
//! [`MultipartUpload::put_part`], whose future runs as its own tokio task (parts progress
//! on every worker thread while the next part is read), then the parts' ids, in order, go
//! to [`MultipartUpload::complete`]. A store implements the two traits with its own
//! requests, error texts and part ids (S3 ETags, Azure block ids); the cutting, the bound
//! on parts in flight, the part-count limit, the size check and the clean-up live here
//! once.
//!
//! # Memory
//! One upload holds at most [`PartLimits::buffer_bytes`] bytes of its own, part size x
//! (parts in flight + 1): up to `parts_in_flight` parts being uploaded and one part being
//! filled (read while the others upload; it waits for a free slot once full). Beyond that
//! it holds only the unconsumed rest of the one body item it is cutting, which the caller
//! produced (the engine counts it as its "chunk being cut"). A part's buffer is released
//! when its request succeeded; an SDK's retries of a part replay the same buffer. Backends
//! return [`PartLimits::buffer_bytes`] from
//! [`StorageBackend::upload_buffer_bytes`](crate::StorageBackend::upload_buffer_bytes), so
//! what the engine reserves (`engine/lifecycle/budget.rs`) is what the writer holds; the
//! unit tests check the writer never holds more.
//!
//! # Limits
//! A store allows at most [`PartLimits::max_parts`] parts (S3 10,000, Azure 50,000): with
//! a known size a larger body is refused before any byte is read or any request made;
//! with an unknown size when the part past the limit is cut (the upload is then aborted).
//! The refusal's text is the store's ([`MultipartTarget::too_many_parts`]).
//!
//! # Failure and clean-up
//! Any error (the body, a part, completion, a body whose length differs from the declared
//! size) stops the upload: part tasks are cancelled and the upload's
//! [`MultipartUpload::abort`] work is awaited (at most [`ABORT_TIMEOUT`]) before the error
//! is returned, so nothing becomes visible and, where the store can, no part is left. If
//! the upload future is dropped instead (the engine's deadline, a cancelled copy), the part
//! tasks are cancelled and the abort work is spawned as a
//! [`compensation`](crate::compensation): the plugin's close waits for it. Failures are
//! noticed between parts (before each part is read and while waiting for a slot), never by
//! cancelling a read of the body midway.
//!
//! What a store does before its upload exists stays the store's: S3's
//! `CreateMultipartUpload` whose answer never came is cleaned by listing the key's
//! uploads, inside its [`MultipartTarget::start`]. Azure cannot delete staged blocks: its
//! `abort` is `None`, and Azure discards uncommitted blocks after 7 days.
//!
//! # Google Cloud Storage
//! GCS does not use this writer. A resumable upload is one session whose chunks must be
//! sent in order, one at a time, each at the offset the previous one ended (every chunk
//! but the last a multiple of 256 KiB), and the official SDK's `send_buffered` already
//! cuts and sends them from its own buffer (`gcs.resumable.upload.chunk.size`): there is
//! nothing to run in parallel and no part to cut in front of it.

mod in_flight;
mod part_reader;
mod writer;

#[cfg(test)]
mod tests;

pub use part_reader::PartReader;
pub use writer::upload;

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::future::BoxFuture;

use crate::{BackendError, ObjectKey};

/// Longest wait for the abort of a failed or dropped upload (awaited on failure, the
/// compensation's bound on drop).
pub const ABORT_TIMEOUT: Duration = Duration::from_secs(30);

/// How one store cuts and bounds an upload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartLimits {
    /// Bytes of every part but the last (S3 `s3.multipart.upload.part.size`, Azure
    /// `azure.upload.block.size`); 0 is taken as 1.
    pub part_size: usize,
    /// Parts uploaded at once (S3 `s3.multipart.upload.parts.in.flight`, Azure
    /// `azure.upload.blocks.in.flight`); 0 is taken as 1.
    pub parts_in_flight: usize,
    /// Most parts one object may have (the store's API limit).
    pub max_parts: u32,
}

impl PartLimits {
    /// The limits with `part_size` and `parts_in_flight` at least 1.
    pub fn normalized(self) -> Self {
        Self {
            part_size: self.part_size.max(1),
            parts_in_flight: self.parts_in_flight.max(1),
            max_parts: self.max_parts,
        }
    }

    /// Bytes one upload buffers at most: part size x (parts in flight + 1), see the
    /// module doc. What a backend returns from `upload_buffer_bytes`.
    pub fn buffer_bytes(&self) -> u64 {
        let n = self.normalized();
        (n.part_size as u64).saturating_mul(n.parts_in_flight as u64 + 1)
    }

    /// Parts a body of `size` bytes is cut into (0 for an empty body).
    pub fn parts_for(&self, size: u64) -> u64 {
        size.div_ceil(self.normalized().part_size as u64)
    }
}

/// The future of one part's request: the part's id for [`MultipartUpload::complete`].
/// `'static` (it owns clones of what it needs), because it runs as its own tokio task.
pub type PartFuture<P> = BoxFuture<'static, Result<P, BackendError>>;

/// The clean-up of an upload that will not be completed (S3 `AbortMultipartUpload`).
pub struct Abort {
    /// What is undone, for logs: operation, masked key, upload id (no secrets).
    pub what: String,
    /// The work; it logs its own failure (nothing waits for its result).
    pub work: BoxFuture<'static, ()>,
}

/// One object to write in parts: what a store supplies to [`upload`] for one key.
#[async_trait]
pub trait MultipartTarget: Send + Sync {
    /// The store's upload in progress.
    type Upload: MultipartUpload;

    /// The object's key, named by the errors [`upload`] makes itself.
    fn key(&self) -> &ObjectKey;

    /// Part size, parts in flight and the part-count limit.
    fn limits(&self) -> PartLimits;

    /// The refusal of a body that needs more than [`PartLimits::max_parts`] parts: `size`
    /// when the caller declared it (refused before any request), `None` when the limit
    /// was reached while reading.
    fn too_many_parts(&self, size: Option<u64>) -> BackendError;

    /// The error for a part task that panicked or was cancelled (`part` is 0-based).
    fn part_task_failed(&self, part: u32, err: tokio::task::JoinError) -> BackendError {
        BackendError::other(
            self.key(),
            format!("upload task of part #{} failed", u64::from(part) + 1),
            err,
        )
    }

    /// Stores a body of at most one part (possibly empty) with one request.
    async fn put_whole(&self, data: Bytes) -> Result<(), BackendError>;

    /// Starts a multipart upload (S3 `CreateMultipartUpload`; Azure picks its block ids).
    /// Cleaning up a start that failed midway is the store's (see the module doc).
    async fn start(&self) -> Result<Self::Upload, BackendError>;
}

/// A started multipart upload: put parts, then complete or abort.
#[async_trait]
pub trait MultipartUpload: Send + Sync {
    /// What [`put_part`](Self::put_part) returns and [`complete`](Self::complete) takes
    /// (S3's ETag with the part number, Azure's block id).
    type Part: Send + 'static;

    /// Uploads part `index` (0-based, in body order; parts may finish in any order).
    fn put_part(&self, index: u32, data: Bytes) -> PartFuture<Self::Part>;

    /// Makes the object visible from `parts`, in index order.
    async fn complete(&self, parts: Vec<Self::Part>) -> Result<(), BackendError>;

    /// The work that discards the upload's parts, or `None` when the store cannot (Azure).
    /// May be asked again after a first abort was cut short.
    fn abort(&self) -> Option<Abort>;
}
