//! [`upload`]: drives a body through a [`MultipartTarget`] (see the module doc of
//! [`crate::multipart`] for the memory bound and the clean-up).

use bytes::Bytes;

use super::in_flight::InFlight;
use super::{ABORT_TIMEOUT, MultipartTarget, MultipartUpload, PartLimits, PartReader};
use crate::{BackendError, ByteStream, ObjectKey, compensation};

/// Uploads `body` through `target` and returns the number of bytes stored.
///
/// `size`, when given, must be the body's length: a larger part count than the store
/// allows is refused before the body is read, and a body of another length fails (and is
/// aborted) with an error naming the key. A body of at most one part is one
/// [`MultipartTarget::put_whole`]; a larger one a multipart upload with at most
/// `parts_in_flight` parts in flight, aborted on any error or when this future is dropped.
///
/// # Errors
/// The body's own errors as they are; the store's errors for its requests;
/// [`MultipartTarget::too_many_parts`]; [`BackendError::Other`] naming the key for a size
/// mismatch.
pub async fn upload<T: MultipartTarget>(
    target: &T,
    body: ByteStream,
    size: Option<u64>,
) -> Result<u64, BackendError> {
    let limits = target.limits().normalized();
    if let Some(s) = size {
        if limits.parts_for(s) > u64::from(limits.max_parts) {
            return Err(target.too_many_parts(size));
        }
    }
    let mut reader = PartReader::new(body, limits.part_size, size);
    let first = reader.next_part().await?;
    if first.len() < limits.part_size || reader.at_end().await? {
        let len = first.len() as u64;
        check_size(target.key(), size, len)?;
        target.put_whole(first).await?;
        return Ok(len);
    }
    // No await between the start and the guard: a started upload is always guarded.
    let mut guard = Armed::new(target.start().await?);
    let result = async {
        let upload = &guard.upload;
        let (parts, total) = upload_parts(target, upload, limits, first, reader).await?;
        check_size(target.key(), size, total)?;
        upload.complete(parts).await?;
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

/// Puts every part, at most `parts_in_flight` at once; returns the parts in order and the
/// byte count. The next part is read while the others upload, then waits for a slot.
/// Dropping this future cancels the part tasks.
async fn upload_parts<T: MultipartTarget>(
    target: &T,
    upload: &T::Upload,
    limits: PartLimits,
    first: Bytes,
    mut reader: PartReader,
) -> Result<(Vec<<T::Upload as MultipartUpload>::Part>, u64), BackendError> {
    let mut flight = InFlight::new();
    let mut next = Some(first);
    let mut index: u32 = 0;
    let mut total: u64 = 0;
    loop {
        // Fail fast on a finished part before reading more of the body.
        flight.reap_ready(target)?;
        let data = match next.take() {
            Some(d) => d,
            None => reader.next_part().await?,
        };
        if data.is_empty() {
            break;
        }
        if index >= limits.max_parts {
            return Err(target.too_many_parts(None));
        }
        flight.wait_below(limits.parts_in_flight, target).await?;
        total += data.len() as u64;
        flight.spawn(index, upload.put_part(index, data));
        index += 1;
    }
    let parts = flight.finish(target).await?;
    Ok((parts, total))
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

/// Aborts the upload when dropped while still armed (a dropped upload future), as a
/// [`compensation`]; [`Armed::abort`] does it in place on a failure.
struct Armed<U: MultipartUpload> {
    upload: U,
    armed: bool,
}

impl<U: MultipartUpload> Armed<U> {
    fn new(upload: U) -> Self {
        Self {
            upload,
            armed: true,
        }
    }

    fn disarm(&mut self) {
        self.armed = false;
    }

    /// Aborts now and waits for it (at most [`ABORT_TIMEOUT`]). Stays armed until the
    /// abort returned, so a caller dropped meanwhile still spawns it from `Drop`.
    async fn abort(&mut self) {
        if let Some(abort) = self.upload.abort() {
            if tokio::time::timeout(ABORT_TIMEOUT, abort.work)
                .await
                .is_err()
            {
                tracing::warn!(
                    what = %abort.what,
                    "abort timed out: what is left stays until the store expires unfinished \
                     uploads (S3: an AbortIncompleteMultipartUpload lifecycle rule)"
                );
            }
        }
        self.armed = false;
    }
}

impl<U: MultipartUpload> Drop for Armed<U> {
    fn drop(&mut self) {
        if !std::mem::take(&mut self.armed) {
            return;
        }
        let Some(abort) = self.upload.abort() else {
            return;
        };
        // Counted, so the plugin's close waits for it instead of killing it with the
        // runtime; bounded, so a silent store cannot hold close up.
        let what = abort.what.clone();
        if !compensation::spawn(abort.what, ABORT_TIMEOUT, abort.work) {
            tracing::warn!(what, "upload dropped outside a tokio runtime: not aborted");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_mismatch_names_the_key() {
        let k = ObjectKey::plain("a/b.log");
        let e = check_size(&k, Some(3), 4).unwrap_err();
        assert!(e.to_string().contains("a/b.log"), "{e}");
        assert!(e.to_string().contains("4 bytes"), "{e}");
        assert!(check_size(&k, None, 4).is_ok());
        assert!(check_size(&k, Some(4), 4).is_ok());
    }
}
