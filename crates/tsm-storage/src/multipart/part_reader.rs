//! [`PartReader`]: cuts a byte stream into parts of exactly one size.

use bytes::{Bytes, BytesMut};
use futures::StreamExt;

use crate::{BackendError, ByteStream};

/// Cuts a [`ByteStream`] into [`Bytes`] of exactly `part_size` bytes (the last one
/// shorter). An item that holds a whole part at a part boundary is handed out without a
/// copy; other parts are copied into one buffer of at most `part_size` bytes (sized
/// exactly when the body's size is known). Empty items are skipped; the stream's errors
/// are returned as they are.
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
    /// A reader over `body`; `size` (when known) sizes the buffers exactly. A
    /// `part_size` of 0 is taken as 1.
    pub fn new(body: ByteStream, part_size: usize, size: Option<u64>) -> Self {
        Self {
            body,
            part_size: part_size.max(1),
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
            Some(n) => usize::try_from(n.min(want as u64)).unwrap_or(want),
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

    #[tokio::test]
    async fn a_whole_part_item_is_not_copied() {
        let item = Bytes::from_static(b"abcdefgh");
        let body = futures::stream::iter(vec![Ok(item.clone())]).boxed();
        let mut r = PartReader::new(body, 4, None);
        let first = r.next_part().await.unwrap();
        assert_eq!(first.as_ptr(), item.as_ptr(), "the item's own bytes");
        let second = r.next_part().await.unwrap();
        assert_eq!(second.as_ptr(), item[4..].as_ptr());
    }

    #[tokio::test]
    async fn stream_errors_pass_through() {
        let key = crate::ObjectKey::plain("k.log");
        let body = futures::stream::iter(vec![
            Ok(Bytes::from_static(b"ab")),
            Err(BackendError::Other {
                key,
                detail: "source gone".into(),
                source: None,
            }),
        ])
        .boxed();
        let mut r = PartReader::new(body, 4, None);
        let e = r.next_part().await.unwrap_err();
        assert!(e.to_string().contains("source gone"), "{e}");
    }
}
