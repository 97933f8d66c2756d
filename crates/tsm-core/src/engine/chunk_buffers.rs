//! The chunk buffers of one copy, reused from chunk to chunk.
//!
//! Every chunk job of `engine/copy.rs` needs a chunk-sized buffer to read into and (with
//! compression) one for the frame; each was a fresh allocation of several MiB, i.e. fresh
//! pages from the kernel, each faulted in and zeroed on first touch (about a fifth of a
//! plain copy's CPU). Here a stored chunk handed to the backend is a [`Bytes`] whose owner
//! gives its buffer back to the pool when the backend drops it, and the jobs take buffers
//! from the pool first.
//!
//! Memory: every buffer has the same capacity (`IV + zstd bound of the chunk + tag`, a few
//! KiB over the chunk size); the pool keeps at most `keep` idle buffers (the copy's
//! pipeline window plus what the backend holds) and is freed when the copy and the last
//! stored chunk are done with it, so nothing outlives the copy's budget reservation.

use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::transform::ChunkBuffers;

/// Idle buffers of one copy (see the [module docs](self)).
#[derive(Debug)]
pub(super) struct BufferPool {
    free: Mutex<Vec<Vec<u8>>>,
    capacity: usize,
    keep: usize,
}

impl BufferPool {
    /// A pool of buffers of `capacity` bytes, keeping at most `keep` idle ones.
    pub(super) fn new(capacity: usize, keep: usize) -> Arc<Self> {
        Arc::new(Self {
            free: Mutex::new(Vec::with_capacity(keep)),
            capacity,
            keep,
        })
    }

    fn put(&self, buf: Vec<u8>) {
        if buf.capacity() < self.capacity {
            return;
        }
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        if free.len() < self.keep {
            free.push(buf);
        }
    }
}

/// A pooled buffer inside a [`Bytes`]: back to the pool when the last clone is dropped.
struct Pooled {
    buf: Vec<u8>,
    pool: Arc<BufferPool>,
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        self.pool.put(std::mem::take(&mut self.buf));
    }
}

impl ChunkBuffers for Arc<BufferPool> {
    fn take(&self, len: usize) -> Vec<u8> {
        let reused = self.free.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match reused {
            // Old contents stay (no memset); the caller overwrites all `len` bytes.
            Some(mut buf) if len <= buf.capacity() => {
                if buf.len() >= len {
                    buf.truncate(len);
                } else {
                    buf.resize(len, 0);
                }
                buf
            }
            _ => {
                // Zeroed allocation: fresh pages need no memset.
                let mut buf = vec![0u8; self.capacity.max(len)];
                buf.truncate(len);
                buf
            }
        }
    }

    fn give_back(&self, buf: Vec<u8>) {
        self.put(buf);
    }

    fn stored_bytes(&self, buf: Vec<u8>) -> Bytes {
        Bytes::from_owner(Pooled {
            buf,
            pool: Arc::clone(self),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_buffers_given_back_and_through_bytes() {
        let pool = BufferPool::new(64, 2);
        let a = pool.take(64);
        assert_eq!(a.len(), 64);
        let ptr = a.as_ptr();
        let bytes = pool.stored_bytes(a);
        assert_eq!(bytes.len(), 64);
        drop(bytes);
        // The same allocation comes back, resized to what is asked.
        let b = pool.take(10);
        assert_eq!((b.as_ptr(), b.len()), (ptr, 10));
        let c = pool.take(64);
        assert_ne!(c.as_ptr(), ptr);
        assert_eq!(c.len(), 64, "grown back with zeros");
        pool.give_back(b);
        pool.give_back(c);
        // At most `keep` idle buffers; too-small ones are not kept.
        pool.give_back(vec![0u8; 64]);
        pool.give_back(Vec::with_capacity(8));
        assert_eq!(pool.free.lock().unwrap().len(), 2);
        // Larger than the pool's buffers: a fresh one of that size.
        assert_eq!(pool.take(100).len(), 100);
    }
}
