//! [`RateLimitedBackend`]: a [`StorageBackend`] wrapper bounding uploaded bytes per second
//! (`upload.rate.limit.bytes.per.second`), shared by every upload of the wrapper.
//!
//! Every body item of every upload takes its length in tokens from one [`TokenBucket`]
//! before it is handed to the inner backend, so the limit applies to every byte uploaded
//! (`.log`, `.indexes`, manifest), whatever the object. Fetch, delete and list pass
//! through. Adds no buffering: the body stream is only delayed. Each wait is a
//! [`crate::progress::local_wait`], so the upload's idle and whole-upload deadlines do not
//! count it.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use tokio::time::Instant;

use super::{BackendError, ByteRange, ByteStream, ListStream, ObjectKey, StorageBackend};

/// A token bucket in bytes: refills at `rate` bytes/s up to `burst` bytes. A request larger
/// than the tokens available goes into debt and waits until the debt is repaid, so requests
/// of any size (even above `burst`) are served in arrival order and the long-run rate never
/// exceeds `rate`. Uses tokio's clock (tests can pause time).
#[derive(Debug)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    state: Mutex<BucketState>,
}

#[derive(Debug)]
struct BucketState {
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket of `burst` bytes refilling at `rate` bytes per second (both at least 1).
    pub fn new(rate: u64, burst: u64) -> Self {
        let burst = burst.max(1) as f64;
        Self {
            rate: rate.max(1) as f64,
            burst,
            state: Mutex::new(BucketState {
                tokens: burst,
                last: Instant::now(),
            }),
        }
    }

    /// Takes `n` tokens and returns how long the caller must wait before using them.
    pub fn reserve(&self, n: u64) -> Duration {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(s.last).as_secs_f64();
        s.last = now;
        s.tokens = (s.tokens + elapsed * self.rate).min(self.burst);
        s.tokens -= n as f64;
        if s.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::try_from_secs_f64(-s.tokens / self.rate).unwrap_or(Duration::MAX)
        }
    }

    /// Takes `n` tokens, waiting as long as needed. If the wait is cancelled the tokens
    /// stay taken (the limit errs on the slow side).
    pub async fn acquire(&self, n: u64) {
        let wait = self.reserve(n);
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

/// Wraps a backend and limits the bytes its uploads send per second.
#[derive(Debug)]
pub struct RateLimitedBackend {
    inner: Arc<dyn StorageBackend>,
    bucket: Arc<TokenBucket>,
    rate: u64,
}

impl RateLimitedBackend {
    /// Limits `inner`'s uploads to `bytes_per_second` in total, with a burst of one
    /// second's worth.
    pub fn new(inner: Arc<dyn StorageBackend>, bytes_per_second: u64) -> Self {
        Self {
            inner,
            bucket: Arc::new(TokenBucket::new(bytes_per_second, bytes_per_second)),
            rate: bytes_per_second,
        }
    }

    /// The configured limit (bytes per second).
    pub fn rate(&self) -> u64 {
        self.rate
    }
}

impl fmt::Display for RateLimitedBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.inner)
    }
}

#[async_trait]
impl StorageBackend for RateLimitedBackend {
    async fn upload(
        &self,
        key: &ObjectKey,
        body: ByteStream,
        size: Option<u64>,
    ) -> Result<u64, BackendError> {
        let bucket = self.bucket.clone();
        let body = body
            .then(move |item| {
                let bucket = bucket.clone();
                async move {
                    if let Ok(b) = &item {
                        // Our own wait, not the store's: the upload's deadlines leave it out.
                        let _local = crate::progress::local_wait();
                        bucket.acquire(b.len() as u64).await;
                    }
                    item
                }
            })
            .boxed();
        self.inner.upload(key, body, size).await
    }

    async fn fetch(
        &self,
        key: &ObjectKey,
        range: Option<ByteRange>,
    ) -> Result<ByteStream, BackendError> {
        self.inner.fetch(key, range).await
    }

    async fn delete(&self, keys: &[ObjectKey]) -> Result<(), BackendError> {
        self.inner.delete(keys).await
    }

    fn upload_buffer_bytes(&self) -> u64 {
        self.inner.upload_buffer_bytes()
    }

    fn reads_are_local(&self) -> bool {
        self.inner.reads_are_local()
    }

    fn list(&self, prefix: &ObjectKey) -> ListStream {
        self.inner.list(prefix)
    }
}
