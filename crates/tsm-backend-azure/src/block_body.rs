//! The request body of one Put Block or Put Blob: the buffered block handed to the HTTP
//! client in reads of at most [`FRAME`] bytes, each read reported as upload progress
//! ([`tsm_storage::progress`]) when the client asks for it, that is when the connection has
//! taken the previous ones, and the last one as a sent body
//! ([`UploadProgress::body_sent`]: its bytes may still be buffered on the way). So the
//! engine's idle deadline sees a slow link (a 25 MiB block, the default, taking a minute)
//! as progress and a store that reads nothing as a stall; before, only a finished block
//! counted, and a block slower than the idle bound failed the copy while bytes flowed.
//!
//! Data comes from the multipart writer's block buffer (`Bytes`, shared) and goes to the
//! SDK as a seekable stream, which its retry policy rewinds ([`SeekableStream::reset`]).
//! Each read copies one frame into the buffer the SDK's stream adapter allocates for it
//! (azure_core turns a `SeekableStream` into the request body through `AsyncRead`: no
//! zero-copy way through that API; a memcpy per byte sent, next to a network send). Only
//! uploads the engine watches take this path; others send the block as `Body::Bytes`.
//! Hand-written because the SDK's `Body::Bytes` offers no progress callback; the trait is
//! azure_core's and nothing more. The S3 backend's `part_body.rs` is the same idea on the
//! `http-body` trait.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use async_trait::async_trait;
use azure_core::http::Body;
use azure_core::stream::SeekableStream;
use bytes::Bytes;
use futures::io::AsyncRead;
use tsm_storage::progress::{self, UploadProgress};

/// Bytes per read: small enough that a read is sent within a fraction of any sensible idle
/// deadline even at a few KB/s, large enough to cost nothing per read (the SDK's own
/// streaming buffer size).
pub(crate) const FRAME: usize = 64 * 1024;

/// `data` as the body of one request: a seekable stream that reports progress to the
/// current upload (captured now, in the block's task: the HTTP client polls the body from
/// its connection task), or plain bytes when no upload progress is being watched (a tool
/// calling the backend directly).
pub(crate) fn progress_body(data: Bytes) -> Body {
    match progress::current() {
        Some(progress) => Body::SeekableStream(Box::new(BlockBody {
            data,
            sent: 0,
            progress,
        })),
        None => Body::Bytes(data),
    }
}

/// A block being sent: `data[..sent]` has been handed to the HTTP client.
#[derive(Clone)]
struct BlockBody {
    data: Bytes,
    sent: usize,
    progress: Arc<UploadProgress>,
}

impl std::fmt::Debug for BlockBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockBody")
            .field("len", &self.data.len())
            .field("sent", &self.sent)
            .finish_non_exhaustive()
    }
}

impl AsyncRead for BlockBody {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let rest = self.data.len() - self.sent;
        let n = rest.min(buf.len()).min(FRAME);
        if n == 0 {
            return Poll::Ready(Ok(0));
        }
        let at = self.sent;
        buf[..n].copy_from_slice(&self.data[at..at + n]);
        self.sent += n;
        self.progress.record();
        if self.sent == self.data.len() {
            // The whole body is out (bytes may still be buffered on the way).
            self.progress.body_sent(self.data.len() as u64);
        }
        Poll::Ready(Ok(n))
    }
}

#[async_trait]
impl SeekableStream for BlockBody {
    async fn reset(&mut self) -> azure_core::Result<()> {
        self.sent = 0;
        Ok(())
    }

    fn len(&self) -> Option<u64> {
        Some(self.data.len() as u64)
    }

    fn buffer_size(&self) -> usize {
        FRAME
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::StreamExt;

    use super::*;

    fn pattern(len: usize) -> Bytes {
        (0..len)
            .map(|i| (i % 251) as u8)
            .collect::<Vec<u8>>()
            .into()
    }

    /// Reads cover the block exactly, in order, in frames of at most [`FRAME`] bytes, each
    /// one progress of the upload whose scope built the body; a reset (the SDK's retry)
    /// sends it again from the start.
    #[tokio::test(start_paused = true)]
    async fn reads_cover_the_block_report_progress_and_rewind() {
        let data = pattern(FRAME * 2 + 100);
        let p = Arc::new(UploadProgress::new());
        let body = progress::scope(p.clone(), async { progress_body(data.clone()) }).await;
        let Body::SeekableStream(mut stream) = body else {
            panic!("a watched upload gets a streaming body");
        };
        assert_eq!(stream.len(), Some(data.len() as u64));
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(p.idle_for(), Duration::from_secs(5));
        let mut got = Vec::new();
        let mut frames = 0;
        while let Some(frame) = stream.next().await {
            let frame = frame.expect("frame");
            assert!(frame.len() <= FRAME, "{}", frame.len());
            got.extend_from_slice(&frame);
            frames += 1;
            assert_eq!(p.idle_for(), Duration::ZERO, "frame {frames} was reported");
        }
        assert_eq!(got, data);
        assert_eq!(frames, 3);
        stream.reset().await.expect("reset");
        let mut again = Vec::new();
        while let Some(frame) = stream.next().await {
            again.extend_from_slice(&frame.expect("frame"));
        }
        assert_eq!(again, data, "a retry sends the same bytes");
    }

    /// Without an upload watching, the body is the bytes themselves.
    #[test]
    fn unwatched_bodies_are_plain_bytes() {
        let data = pattern(10);
        match progress_body(data.clone()) {
            Body::Bytes(b) => assert_eq!(b, data),
            Body::SeekableStream(_) => panic!("no progress scope: plain bytes"),
        }
    }
}
