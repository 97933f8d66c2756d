//! The request body of one UploadPart or PutObject: the buffer handed to the HTTP client in
//! frames of [`FRAME`] bytes, each frame reported as upload progress
//! ([`tsm_storage::progress`]) when the client asks for it, that is when the connection
//! has taken the previous ones, and the last one as a sent body
//! ([`UploadProgress::body_sent`]: its bytes may still be buffered on the way). So the
//! engine's idle deadline sees a slow link (a 25 MiB part taking a minute) as progress and
//! a store that reads nothing as a stall.
//!
//! Data comes from the multipart writer's part buffer (`Bytes`, shared: frames are
//! slices, nothing is copied) and goes to the SDK; the body is rebuilt from the same
//! buffer for each of the SDK's retries. Hand-written because the SDK's `ByteStream`
//! offers no progress callback; it is the `http-body` 1.x trait and nothing more.
//!
//! Integrity: a streaming body is not hashed into the request's SigV4 signature (the SDK
//! cannot read it ahead); TLS protects it in transit, and `aws.checksum.check.enabled`
//! adds the SDK's CRC trailer to every part.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use aws_sdk_s3::primitives::ByteStream as SdkByteStream;
use aws_smithy_types::body::SdkBody;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tsm_storage::progress::{self, UploadProgress};

/// Bytes per frame: small enough that a frame is sent within a fraction of any sensible
/// idle deadline even at a few KB/s, large enough to cost nothing per frame.
pub(crate) const FRAME: usize = 64 * 1024;

/// `data` as a replayable SDK body that reports progress to the current upload (captured
/// now, in the part's task: the HTTP client polls the body from its connection task).
pub(crate) fn progress_body(data: Bytes) -> SdkByteStream {
    let progress = progress::current();
    SdkByteStream::new(SdkBody::retryable(move || {
        SdkBody::from_body_1_x(PartBody::new(data.clone(), progress.clone()))
    }))
}

/// What is left of a part to hand out.
struct PartBody {
    rest: Bytes,
    /// The whole body's length.
    len: u64,
    progress: Option<Arc<UploadProgress>>,
}

impl PartBody {
    fn new(data: Bytes, progress: Option<Arc<UploadProgress>>) -> Self {
        Self {
            len: data.len() as u64,
            rest: data,
            progress,
        }
    }
}

impl Body for PartBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.rest.is_empty() {
            return Poll::Ready(None);
        }
        let n = FRAME.min(self.rest.len());
        let frame = self.rest.split_to(n);
        if let Some(p) = &self.progress {
            p.record();
            if self.rest.is_empty() {
                // The whole body is out (bytes may still be buffered on the way).
                p.body_sent(self.len);
            }
        }
        Poll::Ready(Some(Ok(Frame::data(frame))))
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.rest.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Frames cover the part exactly, in order, and each one is progress of the upload
    /// whose scope built the body.
    #[tokio::test(start_paused = true)]
    async fn frames_cover_the_part_and_report_progress() {
        let data: Bytes = (0..FRAME * 2 + 100)
            .map(|i| i as u8)
            .collect::<Vec<u8>>()
            .into();
        let p = Arc::new(UploadProgress::new());
        let body = progress::scope(p.clone(), async { progress_body(data.clone()) }).await;
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(p.idle_for(), Duration::from_secs(5));
        let got = body.collect().await.expect("body").into_bytes();
        assert_eq!(got, data);
        assert_eq!(p.idle_for(), Duration::ZERO, "frames were reported");
        // Then the answer is awaited for the body's time at the floor rate.
        let credit = data.len() as f64 / tsm_storage::progress::FLOOR_RATE as f64;
        tokio::time::sleep(Duration::from_secs_f64(credit) - Duration::from_millis(100)).await;
        assert_eq!(p.idle_for(), Duration::ZERO, "within the credit");
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let idle = p.idle_for();
        assert!(
            idle > Duration::ZERO && idle < Duration::from_millis(1050),
            "{idle:?}"
        );
    }
}
