//! Chunking of a segment on the ORIGINAL side (docs/object-format.md "`.log`": chunks are cut
//! on the original bytes, each `chunk.size` bytes long except the last).
//!
//! Input: a segment's size in bytes (or an [`AsyncRead`] over its bytes) and `chunk.size`.
//! Output: chunk counts and original byte ranges, or a [`Stream`] of chunks that feeds
//! [`crate::pipeline::ordered_transform`]. A 0-byte segment has 0 chunks; the Java plugin
//! fails on it, tsm does not.
//!
//! Memory: [`read_chunks`] holds one chunk (`chunk_size` bytes) at a time.

use std::io;
use std::ops::Range;

use bytes::{Bytes, BytesMut};
use futures::Stream;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Number of chunks of a file of `file_size` bytes cut into chunks of `chunk_size` bytes:
/// `ceil(file_size / chunk_size)`; 0 for an empty file.
///
/// `chunk_size` 0 is invalid (the index constructors reject it with
/// [`crate::CodecError::ZeroChunkSize`]); this function never panics and treats it as 1.
pub fn chunk_count(file_size: u64, chunk_size: u32) -> u64 {
    file_size.div_ceil(u64::from(chunk_size.max(1)))
}

/// Original length in bytes of chunk `index`: `chunk_size` for every chunk but the last, the
/// remainder for the last; `None` if `index >= chunk_count(file_size, chunk_size)`.
pub fn chunk_len(file_size: u64, chunk_size: u32, index: u64) -> Option<u64> {
    chunk_original_range(file_size, chunk_size, index).map(|r| r.end - r.start)
}

/// Original byte range (half-open, in bytes from the start of the segment) of chunk
/// `index`; `None` if the chunk does not exist.
pub fn chunk_original_range(file_size: u64, chunk_size: u32, index: u64) -> Option<Range<u64>> {
    let cs = u64::from(chunk_size.max(1));
    if index >= chunk_count(file_size, chunk_size) {
        return None;
    }
    // index < ceil(file_size / cs) so index * cs < file_size: no overflow.
    let start = index * cs;
    Some(start..file_size.min(start.saturating_add(cs)))
}

/// Zero-based chunk containing original byte `offset`; `None` if `offset >= file_size`.
/// O(1).
pub fn chunk_for_offset(file_size: u64, chunk_size: u32, offset: u64) -> Option<u64> {
    (offset < file_size).then(|| offset / u64::from(chunk_size.max(1)))
}

/// Reads `reader` to its end and yields its bytes as chunks of exactly `chunk_size` bytes,
/// the last one shorter (never empty); an empty reader yields nothing.
///
/// This is the producer side of the write path: the items feed
/// [`crate::pipeline::ordered_transform`]. Reads are issued until a chunk is full, so short
/// reads of the underlying reader do not produce short chunks. Memory: one chunk buffer of
/// `chunk_size` bytes at a time (plus whatever the consumer keeps). `chunk_size` 0 is
/// treated as 1.
///
/// # Errors
/// An I/O error of the reader ends the stream after being yielded.
pub fn read_chunks<R>(reader: R, chunk_size: u32) -> impl Stream<Item = io::Result<Bytes>> + Send
where
    R: AsyncRead + Unpin + Send,
{
    let chunk_size = chunk_size.max(1) as usize;
    futures::stream::try_unfold(Some(reader), move |state| async move {
        let Some(mut reader) = state else {
            return Ok(None);
        };
        let mut buf = BytesMut::with_capacity(chunk_size);
        while buf.len() < chunk_size {
            // `take` keeps the read from growing the buffer beyond one chunk.
            let want = (chunk_size - buf.len()) as u64;
            let n = (&mut reader).take(want).read_buf(&mut buf).await?;
            if n == 0 {
                break;
            }
        }
        if buf.is_empty() {
            return Ok(None);
        }
        let next = (buf.len() == chunk_size).then_some(reader);
        Ok(Some((buf.freeze(), next)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::TryStreamExt;

    #[test]
    fn counts_and_ranges() {
        assert_eq!(chunk_count(0, 10), 0);
        assert_eq!(chunk_count(1, 10), 1);
        assert_eq!(chunk_count(10, 10), 1);
        assert_eq!(chunk_count(11, 10), 2);
        assert_eq!(chunk_count(5, 0), 5);
        assert_eq!(chunk_count(u64::MAX, 1), u64::MAX);
        assert_eq!(chunk_original_range(25, 10, 2), Some(20..25));
        assert_eq!(chunk_original_range(25, 10, 3), None);
        assert_eq!(
            chunk_original_range(u64::MAX, u32::MAX, chunk_count(u64::MAX, u32::MAX) - 1)
                .map(|r| r.end),
            Some(u64::MAX)
        );
        assert_eq!(chunk_len(25, 10, 1), Some(10));
        assert_eq!(chunk_for_offset(25, 10, 24), Some(2));
        assert_eq!(chunk_for_offset(25, 10, 25), None);
    }

    #[tokio::test]
    async fn read_chunks_cuts_exact_sizes() {
        for len in [0usize, 1, 9, 10, 11, 30, 31] {
            let data: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let chunks: Vec<Bytes> = read_chunks(&data[..], 10)
                .try_collect()
                .await
                .expect("in-memory read");
            assert_eq!(
                chunks.len() as u64,
                chunk_count(len as u64, 10),
                "len {len}"
            );
            assert!(chunks.iter().rev().skip(1).all(|c| c.len() == 10));
            assert_eq!(chunks.concat(), data);
        }
    }

    /// Short reads (a pipe delivering at most 5 bytes at a time) still give full chunks.
    #[tokio::test]
    async fn read_chunks_survives_short_reads() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
        let (mut tx, rx) = tokio::io::duplex(5);
        let to_send = data.clone();
        let writer =
            tokio::spawn(
                async move { tokio::io::AsyncWriteExt::write_all(&mut tx, &to_send).await },
            );
        let chunks: Vec<Bytes> = read_chunks(rx, 64).try_collect().await.expect("pipe read");
        writer.await.expect("writer task").expect("pipe write");
        assert_eq!(chunks.len(), 16);
        assert!(chunks[..15].iter().all(|c| c.len() == 64));
        assert_eq!(chunks.concat(), data);
    }
}
