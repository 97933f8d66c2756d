//! Uploads: one PutObject for objects up to the part size, else an S3 multipart upload
//! (CreateMultipartUpload, concurrent UploadPart, CompleteMultipartUpload).
//!
//! Data flow: the caller's [`ByteStream`] -> [`PartReader`] cuts it into part-size [`Bytes`]
//! buffers -> each part is uploaded by its own tokio task (so parts progress while the next
//! one is read) -> the ETags are sorted and the upload completed.
//!
//! # Memory
//! At most `s3.multipart.upload.parts.in.flight` parts of `s3.multipart.upload.part.size`
//! bytes are held at once: a new part is read only when fewer parts than that are in flight
//! (plus one item of the caller's stream read ahead to tell "exactly one part" from "more").
//! A part's buffer is dropped when its UploadPart succeeds; SDK retries of a part replay
//! the same buffer.
//!
//! # Failure
//! Any error (the caller's stream, a part, completion, a size mismatch) aborts the
//! multipart upload before the error is returned, so no parts are left behind and nothing
//! becomes visible. If the upload future is dropped instead, [`AbortGuard`] cancels the
//! part tasks and spawns the AbortMultipartUpload (a compensation: the plugin's close waits
//! for it). A CreateMultipartUpload whose answer never came (cut by the engine's deadline)
//! leaves no id to abort: the guard then lists the key's uploads and aborts them. An abort
//! that itself fails (server
//! unreachable) is logged with the upload id; a bucket lifecycle rule
//! `AbortIncompleteMultipartUpload` cleans such leftovers (see the crate README).

use aws_sdk_s3::primitives::ByteStream as SdkByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use tokio::task::JoinSet;
use tsm_storage::{BackendError, ByteStream, ObjectKey, compensation};

use crate::client::S3Client;
use crate::error::classify_at;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_runtime_api::http::Response;

/// Most parts one multipart upload may have (S3 API limit).
pub const MAX_PARTS: i32 = 10_000;

/// Cuts a byte stream into buffers of exactly `part_size` bytes (the last one shorter).
pub struct PartReader {
    body: ByteStream,
    part_size: usize,
    /// Bytes read from `body` but not yet handed out.
    pending: Option<Bytes>,
    /// Bytes still expected when the caller gave the size.
    remaining_hint: Option<u64>,
    done: bool,
}

impl PartReader {
    /// A reader over `body`; `size` (when known) sizes the buffers exactly.
    pub fn new(body: ByteStream, part_size: usize, size: Option<u64>) -> Self {
        Self {
            body,
            part_size,
            pending: None,
            remaining_hint: size,
            done: false,
        }
    }

    async fn next_item(&mut self) -> Result<Option<Bytes>, BackendError> {
        if let Some(b) = self.pending.take() {
            return Ok(Some(b));
        }
        while !self.done {
            match self.body.next().await {
                Some(Ok(b)) if b.is_empty() => continue,
                Some(Ok(b)) => return Ok(Some(b)),
                Some(Err(e)) => return Err(e),
                None => self.done = true,
            }
        }
        Ok(None)
    }

    /// The next part: `part_size` bytes, fewer at the end, empty when the stream is done.
    pub async fn next_part(&mut self) -> Result<Bytes, BackendError> {
        let want = self.part_size;
        let initial = match self.remaining_hint {
            Some(n) => (n.min(want as u64)) as usize,
            None => want.min(64 * 1024),
        };
        let mut buf = BytesMut::with_capacity(initial);
        while buf.len() < want {
            let Some(mut item) = self.next_item().await? else {
                break;
            };
            let room = want - buf.len();
            if item.len() > room {
                self.pending = Some(item.split_off(room));
            }
            if buf.is_empty() && item.len() == want {
                // A whole part in one item: hand it out without copying.
                self.consume_hint(item.len());
                return Ok(item);
            }
            let needed = buf.len() + item.len();
            if needed > buf.capacity() {
                // Grow to at most the part size (BytesMut alone would double past it).
                let cap = (buf.capacity() * 2).max(needed).min(want);
                let mut bigger = BytesMut::with_capacity(cap);
                bigger.extend_from_slice(&buf);
                buf = bigger;
            }
            buf.extend_from_slice(&item);
        }
        self.consume_hint(buf.len());
        Ok(buf.freeze())
    }

    fn consume_hint(&mut self, n: usize) {
        if let Some(r) = self.remaining_hint.as_mut() {
            *r = r.saturating_sub(n as u64);
        }
    }

    /// True when the stream has no more bytes (reads ahead one item to know).
    pub async fn at_end(&mut self) -> Result<bool, BackendError> {
        match self.next_item().await? {
            Some(b) => {
                self.pending = Some(b);
                Ok(false)
            }
            None => Ok(true),
        }
    }
}

/// Aborts the multipart upload when dropped while still armed (a dropped or failed upload).
/// Armed from before CreateMultipartUpload is sent: a create whose answer never arrived
/// (the call was cut by a deadline, the connection dropped) may still have started an
/// upload on the server, whose id only a listing can tell.
struct AbortGuard {
    client: S3Client,
    key: ObjectKey,
    upload_id: Option<String>,
    /// CreateMultipartUpload was sent and its upload id is not known yet.
    creating: bool,
}

impl AbortGuard {
    fn creating(client: &S3Client, key: &ObjectKey) -> Self {
        Self {
            client: client.clone(),
            key: key.clone(),
            upload_id: None,
            creating: true,
        }
    }

    fn created(&mut self, upload_id: &str) {
        self.upload_id = Some(upload_id.to_string());
        self.creating = false;
    }

    fn disarm(&mut self) {
        self.upload_id = None;
        self.creating = false;
    }

    /// Aborts now and waits for the answer (at most [`ABORT_TIMEOUT`]). Stays armed until
    /// the abort returned, so a caller dropped meanwhile still spawns it from `Drop`.
    async fn abort(&mut self) {
        if let Some(id) = self.upload_id.clone() {
            let done =
                tokio::time::timeout(ABORT_TIMEOUT, abort_upload(&self.client, &self.key, &id))
                    .await;
            if done.is_err() {
                tracing::warn!(key = %self.key, upload_id = %id, "AbortMultipartUpload timed out");
            }
            self.upload_id = None;
        }
    }
}

impl Drop for AbortGuard {
    fn drop(&mut self) {
        if std::mem::take(&mut self.creating) {
            let client = self.client.clone();
            let key = self.key.clone();
            let what = format!("abort of the unanswered CreateMultipartUpload of {key}");
            if !compensation::spawn(what, ABORT_TIMEOUT, async move {
                abort_uploads_of_key(&client, &key).await
            }) {
                tracing::warn!(key = %self.key, "multipart upload creation dropped outside a tokio runtime: not aborted");
            }
            return;
        }
        let Some(id) = self.upload_id.take() else {
            return;
        };
        let client = self.client.clone();
        let key = self.key.clone();
        let what = format!("AbortMultipartUpload of {key}");
        let (k, b, i) = (key.clone(), client.bucket.clone(), id.clone());
        // A compensation: counted, so the plugin's close waits for it instead of killing it
        // with the runtime; bounded so a silent store cannot hold close up.
        if !compensation::spawn(what, ABORT_TIMEOUT, async move {
            abort_upload(&client, &key, &id).await
        }) {
            tracing::warn!(
                key = %k, bucket = %b, upload_id = %i,
                "multipart upload dropped outside a tokio runtime: not aborted"
            );
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

/// Longest wait for the AbortMultipartUpload of a dropped upload.
const ABORT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

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

/// Uploads `body` to `key`; returns the bytes stored. See the module doc for memory and
/// failure behaviour. `size`, when given, must match the body's length.
pub async fn upload(
    client: &S3Client,
    key: &ObjectKey,
    body: ByteStream,
    size: Option<u64>,
) -> Result<u64, BackendError> {
    let part_size = usize::try_from(client.cfg.part_size).unwrap_or(usize::MAX);
    let mut reader = PartReader::new(body, part_size, size);
    let first = reader.next_part().await?;
    if first.len() < part_size || reader.at_end().await? {
        let len = first.len() as u64;
        check_size(key, size, len)?;
        client.put_object(key, first).await?;
        return Ok(len);
    }
    multipart(client, key, first, reader, size).await
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

fn check_size(key: &ObjectKey, size: Option<u64>, actual: u64) -> Result<(), BackendError> {
    match size {
        Some(n) if n != actual => Err(BackendError::Other {
            key: key.clone(),
            detail: format!("upload body has {actual} bytes but its size was given as {n}"),
            source: None,
        }),
        _ => Ok(()),
    }
}

async fn multipart(
    client: &S3Client,
    key: &ObjectKey,
    first: Bytes,
    reader: PartReader,
    size: Option<u64>,
) -> Result<u64, BackendError> {
    let (sse, kms) = client.sse();
    let mut guard = AbortGuard::creating(client, key);
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
    // On an error the guard (still "creating") looks for an upload the server may have
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
    guard.created(&upload_id);
    let result = async {
        let (parts, total) = upload_parts(client, key, &upload_id, first, reader).await?;
        check_size(key, size, total)?;
        client
            .sdk
            .complete_multipart_upload()
            .bucket(client.bucket.as_ref())
            .key(key.as_str())
            .upload_id(&upload_id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(parts))
                    .build(),
            )
            .send()
            .await
            .map_err(|e| classify("CompleteMultipartUpload", client, key, e))?;
        Ok(total)
    }
    .await;
    match result {
        Ok(total) => {
            guard.disarm();
            Ok(total)
        }
        Err(e) => {
            guard.abort().await;
            Err(e)
        }
    }
}

/// Uploads every part, at most `parts_in_flight` at once; returns the parts in order and
/// the total byte count. Dropping this future aborts the part tasks (the [`JoinSet`]).
async fn upload_parts(
    client: &S3Client,
    key: &ObjectKey,
    upload_id: &str,
    first: Bytes,
    mut reader: PartReader,
) -> Result<(Vec<CompletedPart>, u64), BackendError> {
    let in_flight = client.cfg.parts_in_flight.max(1);
    let mut tasks: JoinSet<Result<CompletedPart, BackendError>> = JoinSet::new();
    let mut done: Vec<CompletedPart> = Vec::new();
    let mut next = Some(first);
    let mut part_number: i32 = 1;
    let mut total: u64 = 0;
    loop {
        // Collect finished parts (fail fast), then wait for a free slot before reading more.
        while let Some(r) = tasks.try_join_next() {
            done.push(joined(client, key, r)?);
        }
        while tasks.len() >= in_flight {
            if let Some(r) = tasks.join_next().await {
                done.push(joined(client, key, r)?);
            }
        }
        let data = match next.take() {
            Some(d) => d,
            None => reader.next_part().await?,
        };
        if data.is_empty() {
            break;
        }
        if part_number > MAX_PARTS {
            return Err(BackendError::Other {
                key: key.clone(),
                detail: format!(
                    "s3 multipart upload{}: object exceeds {MAX_PARTS} parts of {} bytes: raise storage.s3.multipart.upload.part.size",
                    place(client),
                    client.cfg.part_size
                ),
                source: None,
            });
        }
        total += data.len() as u64;
        tasks.spawn(upload_part(
            client.clone(),
            key.clone(),
            upload_id.to_string(),
            part_number,
            data,
        ));
        part_number += 1;
    }
    while let Some(r) = tasks.join_next().await {
        done.push(joined(client, key, r)?);
    }
    done.sort_by_key(|p| p.part_number());
    Ok((done, total))
}

fn joined(
    client: &S3Client,
    key: &ObjectKey,
    r: Result<Result<CompletedPart, BackendError>, tokio::task::JoinError>,
) -> Result<CompletedPart, BackendError> {
    r.map_err(|e| {
        BackendError::other(
            key,
            format!("s3 UploadPart task failed{}", place(client)),
            e,
        )
    })?
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
        // From `Bytes`: the SDK's retries replay the buffered part.
        .body(SdkByteStream::from(data))
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
    use super::*;

    fn stream(items: Vec<&'static [u8]>) -> ByteStream {
        futures::stream::iter(items.into_iter().map(|b| Ok(Bytes::from_static(b)))).boxed()
    }

    #[tokio::test]
    async fn cuts_exact_parts_across_items() {
        let mut r = PartReader::new(stream(vec![b"ab", b"", b"cde", b"fghij", b"k"]), 4, None);
        assert_eq!(&r.next_part().await.unwrap()[..], b"abcd");
        assert!(!r.at_end().await.unwrap());
        assert_eq!(&r.next_part().await.unwrap()[..], b"efgh");
        assert_eq!(&r.next_part().await.unwrap()[..], b"ijk");
        assert!(r.next_part().await.unwrap().is_empty());
        assert!(r.at_end().await.unwrap());
    }

    #[tokio::test]
    async fn exact_multiple_ends_cleanly() {
        let mut r = PartReader::new(stream(vec![b"abcd", b"efgh"]), 4, Some(8));
        assert_eq!(&r.next_part().await.unwrap()[..], b"abcd");
        assert_eq!(&r.next_part().await.unwrap()[..], b"efgh");
        assert!(r.at_end().await.unwrap());
        assert!(r.next_part().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn empty_stream_gives_empty_part() {
        let mut r = PartReader::new(stream(vec![]), 4, Some(0));
        assert!(r.next_part().await.unwrap().is_empty());
        assert!(r.at_end().await.unwrap());
    }

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
        let joined = joined(
            &client,
            &key,
            Err(tokio::spawn(async { panic!("part task") })
                .await
                .expect_err("panics")),
        );
        let text = joined.expect_err("a failed task").to_string();
        assert!(
            text.contains("UploadPart task failed on bucket my-bucket at http://127.0.0.1:1"),
            "{text}"
        );
    }

    #[test]
    fn size_mismatch_names_the_key() {
        let k = ObjectKey::plain("a/b.log");
        let e = check_size(&k, Some(3), 4).unwrap_err();
        assert!(e.to_string().contains("a/b.log"), "{e}");
        assert!(check_size(&k, None, 4).is_ok());
    }
}
