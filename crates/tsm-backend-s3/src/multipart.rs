//! Uploads: one PutObject for objects up to the part size, else an S3 multipart upload
//! (CreateMultipartUpload, concurrent UploadPart, CompleteMultipartUpload), driven by the
//! shared writer [`tsm_storage::multipart`].
//!
//! Data flow: the caller's [`ByteStream`] -> the shared writer cuts it into part-size
//! buffers and bounds the parts in flight -> `S3Target` / `S3Upload` here send the S3
//! requests (each UploadPart in its own tokio task) and name bucket, endpoint, key and part
//! in their errors -> the ETags, in order, complete the upload.
//!
//! # Memory
//! At most `s3.multipart.upload.part.size` x (`s3.multipart.upload.parts.in.flight` + 1)
//! bytes: the parts in flight and the one being read ([`limits`], what
//! `upload_buffer_bytes` reports). A part's buffer is dropped when its UploadPart
//! succeeds; SDK retries of a part replay the same buffer.
//!
//! # Failure
//! Any error (the caller's stream, a part, completion, a size mismatch, more than
//! [`MAX_PARTS`] parts) aborts the multipart upload before the error is returned, so no
//! parts are left behind and nothing becomes visible. If the upload future is dropped
//! instead, the writer cancels the part tasks and spawns the AbortMultipartUpload (a
//! compensation: the plugin's close waits for it). A CreateMultipartUpload whose answer
//! never came (cut by the engine's deadline) leaves no id to abort: `CreateGuard` then
//! lists the key's uploads and aborts them. An abort that itself fails (server
//! unreachable) is logged with the upload id; a bucket lifecycle rule
//! `AbortIncompleteMultipartUpload` cleans such leftovers (see the crate README).

use async_trait::async_trait;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use bytes::Bytes;
use tsm_storage::multipart::{
    ABORT_TIMEOUT, Abort, MultipartTarget, MultipartUpload, PartFuture, PartLimits,
};
use tsm_storage::{BackendError, ByteStream, ObjectKey, compensation};

use crate::client::S3Client;
use crate::config::S3Config;
use crate::error::classify_at;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_runtime_api::http::Response;

/// Most parts one multipart upload may have (S3 API limit).
pub const MAX_PARTS: u32 = 10_000;

/// Part size, parts in flight and [`MAX_PARTS`] of `cfg`, as the shared writer uses them.
pub fn limits(cfg: &S3Config) -> PartLimits {
    PartLimits {
        part_size: usize::try_from(cfg.part_size).unwrap_or(usize::MAX),
        parts_in_flight: cfg.parts_in_flight.max(1),
        max_parts: MAX_PARTS,
    }
}

/// Uploads `body` to `key`; returns the bytes stored. See the module doc for memory and
/// failure behaviour. `size`, when given, must match the body's length.
pub async fn upload(
    client: &S3Client,
    key: &ObjectKey,
    body: ByteStream,
    size: Option<u64>,
) -> Result<u64, BackendError> {
    tsm_storage::multipart::upload(&S3Target { client, key }, body, size).await
}

/// One object of a bucket, as the shared writer writes it.
struct S3Target<'a> {
    client: &'a S3Client,
    key: &'a ObjectKey,
}

#[async_trait]
impl MultipartTarget for S3Target<'_> {
    type Upload = S3Upload;

    fn key(&self) -> &ObjectKey {
        self.key
    }

    fn limits(&self) -> PartLimits {
        limits(&self.client.cfg)
    }

    fn too_many_parts(&self, _size: Option<u64>) -> BackendError {
        BackendError::Other {
            key: self.key.clone(),
            detail: format!(
                "s3 multipart upload{}: object exceeds {MAX_PARTS} parts of {} bytes: raise storage.s3.multipart.upload.part.size",
                place(self.client),
                self.client.cfg.part_size
            ),
            source: None,
        }
    }

    fn part_task_failed(&self, part: u32, err: tokio::task::JoinError) -> BackendError {
        BackendError::other(
            self.key,
            format!(
                "s3 UploadPart task failed{} (part #{})",
                place(self.client),
                u64::from(part) + 1
            ),
            err,
        )
    }

    async fn put_whole(&self, data: Bytes) -> Result<(), BackendError> {
        self.client.put_object(self.key, data).await
    }

    async fn start(&self) -> Result<S3Upload, BackendError> {
        let (client, key) = (self.client, self.key);
        let (sse, kms) = client.sse();
        let mut guard = CreateGuard::armed(client, key);
        let created = client
            .sdk
            .create_multipart_upload()
            .bucket(client.bucket.as_ref())
            .key(key.as_str())
            .storage_class(client.cfg.storage_class.clone())
            .set_server_side_encryption(sse)
            .set_ssekms_key_id(kms)
            .send()
            .await
            .map_err(|e| classify("CreateMultipartUpload", client, key, e));
        // On an error the guard (still armed) looks for an upload the server may have
        // started anyway.
        let created = created?;
        let upload_id = created
            .upload_id()
            .ok_or_else(|| BackendError::Other {
                key: key.clone(),
                detail: format!(
                    "s3 CreateMultipartUpload{}: no upload id in the response",
                    place(client)
                ),
                source: None,
            })?
            .to_string();
        tracing::debug!(key = %key, upload_id, "multipart upload started");
        // From here the shared writer aborts by upload id.
        guard.disarm();
        Ok(S3Upload {
            client: client.clone(),
            key: key.clone(),
            upload_id,
        })
    }
}

/// A started multipart upload of one key.
struct S3Upload {
    client: S3Client,
    key: ObjectKey,
    upload_id: String,
}

#[async_trait]
impl MultipartUpload for S3Upload {
    type Part = CompletedPart;

    fn put_part(&self, index: u32, data: Bytes) -> PartFuture<CompletedPart> {
        let part_number = i32::try_from(u64::from(index) + 1).unwrap_or(i32::MAX);
        Box::pin(upload_part(
            self.client.clone(),
            self.key.clone(),
            self.upload_id.clone(),
            part_number,
            data,
        ))
    }

    async fn complete(&self, parts: Vec<CompletedPart>) -> Result<(), BackendError> {
        self.client
            .sdk
            .complete_multipart_upload()
            .bucket(self.client.bucket.as_ref())
            .key(self.key.as_str())
            .upload_id(&self.upload_id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(parts))
                    .build(),
            )
            .send()
            .await
            .map_err(|e| classify("CompleteMultipartUpload", &self.client, &self.key, e))?;
        Ok(())
    }

    fn abort(&self) -> Option<Abort> {
        let (client, key, id) = (
            self.client.clone(),
            self.key.clone(),
            self.upload_id.clone(),
        );
        Some(Abort {
            what: format!(
                "AbortMultipartUpload of {key} (bucket {}, upload id {id})",
                client.bucket
            ),
            work: Box::pin(async move { abort_upload(&client, &key, &id).await }),
        })
    }
}

/// Armed from before CreateMultipartUpload is sent until its upload id is known: a create
/// whose answer never arrived (the call was cut by a deadline, the connection dropped) may
/// still have started an upload on the server, whose id only a listing can tell. Dropped
/// while armed, it spawns that listing and the aborts (a compensation).
struct CreateGuard<'a> {
    client: &'a S3Client,
    key: &'a ObjectKey,
    armed: bool,
}

impl<'a> CreateGuard<'a> {
    fn armed(client: &'a S3Client, key: &'a ObjectKey) -> Self {
        Self {
            client,
            key,
            armed: true,
        }
    }

    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for CreateGuard<'_> {
    fn drop(&mut self) {
        if !std::mem::take(&mut self.armed) {
            return;
        }
        let client = self.client.clone();
        let key = self.key.clone();
        let what = format!("abort of the unanswered CreateMultipartUpload of {key}");
        if !compensation::spawn(what, ABORT_TIMEOUT, async move {
            abort_uploads_of_key(&client, &key).await
        }) {
            tracing::warn!(key = %self.key, "multipart upload creation dropped outside a tokio runtime: not aborted");
        }
    }
}

/// Aborts every incomplete multipart upload of exactly `key` (ListMultipartUploads by
/// prefix), twice a few seconds apart: a create request the server sees late is caught by
/// the second pass. Segment keys are unique per segment id, so only another attempt of
/// the same copy could be hit, and that attempt then fails and is retried by the broker.
async fn abort_uploads_of_key(client: &S3Client, key: &ObjectKey) {
    for pass in 0..2 {
        if pass > 0 {
            tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        }
        let listed = client
            .sdk
            .list_multipart_uploads()
            .bucket(client.bucket.as_ref())
            .prefix(key.as_str())
            .send()
            .await;
        match listed {
            Ok(page) => {
                for u in page.uploads() {
                    if let (Some(k), Some(id)) = (u.key(), u.upload_id())
                        && k == key.as_str()
                    {
                        abort_upload(client, key, id).await;
                    }
                }
            }
            Err(e) => {
                let e = classify("ListMultipartUploads", client, key, e);
                tracing::warn!(error = %e, "cannot list multipart uploads to abort");
            }
        }
    }
}

async fn abort_upload(client: &S3Client, key: &ObjectKey, upload_id: &str) {
    let res = client
        .sdk
        .abort_multipart_upload()
        .bucket(client.bucket.as_ref())
        .key(key.as_str())
        .upload_id(upload_id)
        .send()
        .await;
    match res {
        Ok(_) => tracing::debug!(key = %key, upload_id, "multipart upload aborted"),
        Err(e) => {
            let e = classify("AbortMultipartUpload", client, key, e);
            tracing::warn!(
                upload_id,
                error = %e,
                "multipart upload could not be aborted; its parts stay billed until an \
                 AbortIncompleteMultipartUpload lifecycle rule removes them"
            );
        }
    }
}

/// A failed multipart call as the other S3 errors report it: operation, bucket, endpoint,
/// key, status and code ([`classify_at`]).
fn classify<E>(
    op: &str,
    client: &S3Client,
    key: &ObjectKey,
    err: SdkError<E, Response>,
) -> BackendError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    classify_at(op, &client.bucket, Some(&client.endpoint()), key, None, err)
}

/// ` on bucket <bucket> at <endpoint>`, for the errors that are not SDK errors.
fn place(client: &S3Client) -> String {
    format!(" on bucket {} at {}", client.bucket, client.endpoint())
}

async fn upload_part(
    client: S3Client,
    key: ObjectKey,
    upload_id: String,
    part_number: i32,
    data: Bytes,
) -> Result<CompletedPart, BackendError> {
    let len = data.len() as i64;
    let out = client
        .sdk
        .upload_part()
        .bucket(client.bucket.as_ref())
        .key(key.as_str())
        .upload_id(upload_id)
        .part_number(part_number)
        .content_length(len)
        // Replayable from the buffered part for the SDK's retries; reports each frame sent
        // as upload progress (the engine's idle deadline measures the store, not the slot).
        .body(crate::part_body::progress_body(data))
        .send()
        .await
        .map_err(|e| classify(&format!("UploadPart #{part_number}"), &client, &key, e))?;
    Ok(CompletedPart::builder()
        .part_number(part_number)
        .set_e_tag(out.e_tag().map(str::to_string))
        .build())
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    /// A multipart upload's errors name the operation, bucket, endpoint and key as the
    /// other S3 calls do (they used to lack the endpoint). Nothing listens on 127.0.0.1:1:
    /// CreateMultipartUpload fails at connect.
    #[tokio::test]
    async fn multipart_errors_name_bucket_endpoint_and_key() {
        let client = crate::client::tests::s3_client("my-bucket").await;
        let key = ObjectKey::plain("t-abc/0/00000000000000000000-xyz.log");
        let part = usize::try_from(client.cfg.part_size).expect("part size");
        let body: ByteStream = futures::stream::iter(vec![
            Ok(Bytes::from(vec![0u8; part])),
            Ok(Bytes::from_static(b"more than one part")),
        ])
        .boxed();
        let e = upload(&client, &key, body, None)
            .await
            .expect_err("nothing listens on 127.0.0.1:1");
        let text = e.to_string();
        for part in [
            "s3 CreateMultipartUpload on bucket my-bucket at http://127.0.0.1:1",
            key.as_str(),
        ] {
            assert!(text.contains(part), "{part:?} not in {text}");
        }
        assert!(text.to_lowercase().contains("refused"), "the cause: {text}");
        let target = S3Target {
            client: &client,
            key: &key,
        };
        let joined = target.part_task_failed(
            2,
            tokio::spawn(async { panic!("part task") })
                .await
                .expect_err("panics"),
        );
        let text = joined.to_string();
        assert!(
            text.contains("UploadPart task failed on bucket my-bucket at http://127.0.0.1:1"),
            "{text}"
        );
        assert!(
            text.contains("(part #3)") && text.contains(key.as_str()),
            "{text}"
        );
    }

    /// More than 10,000 parts with a known size: refused before any request (nothing
    /// listens on 127.0.0.1:1, so a request would fail with another error), naming the
    /// bucket, the key and the key to raise.
    #[tokio::test]
    async fn more_than_max_parts_is_refused_before_any_request() {
        let client = crate::client::tests::s3_client("my-bucket").await;
        let key = ObjectKey::plain("t/0/huge.log");
        let poisoned = futures::stream::once(async {
            panic!("the body must not be read when the upload is refused")
        })
        .boxed();
        let size = u64::from(MAX_PARTS) * client.cfg.part_size + 1;
        let e = upload(&client, &key, poisoned, Some(size))
            .await
            .expect_err("refused");
        let text = e.to_string();
        for part in [
            "object exceeds 10000 parts",
            "on bucket my-bucket",
            "storage.s3.multipart.upload.part.size",
            key.as_str(),
        ] {
            assert!(text.contains(part), "{part:?} not in {text}");
        }
    }

    /// What the engine reserves per copy is what the shared writer holds: part size x
    /// (parts in flight + 1).
    #[tokio::test]
    async fn upload_buffers_are_the_writers_bound() {
        use tsm_storage::StorageBackend;
        let client = crate::client::tests::s3_client("b").await;
        let l = limits(&client.cfg);
        assert_eq!(l.part_size as u64, client.cfg.part_size);
        assert_eq!(l.parts_in_flight, client.cfg.parts_in_flight);
        assert_eq!(l.max_parts, 10_000);
        let backend = crate::S3Backend {
            client: client.clone(),
        };
        assert_eq!(
            backend.upload_buffer_bytes(),
            client.cfg.part_size * (client.cfg.parts_in_flight as u64 + 1)
        );
    }
}
