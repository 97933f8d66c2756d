//! The calls to GCS: uploads and reads through Google's `google-cloud-storage` crate,
//! list / delete / stat through the GCS JSON API over HTTP.
//!
//! Why two paths: the crate's `Storage` client does object reads and writes over HTTP,
//! but its `StorageControl` client (list, delete, metadata) speaks gRPC only, which
//! emulators such as fake-gcs-server do not serve. The JSON API calls here are signed with
//! the same google-cloud-auth [`Credentials`] as the SDK's requests.
//!
//! Data flow:
//! - upload: the caller's [`ByteStream`] -> [`StreamSource`] (checks the declared size)
//!   -> `write_object(..).send_buffered()`, always a resumable upload (threshold 0) whose
//!   buffer is `gcs.resumable.upload.chunk.size` bytes: memory per upload is bounded by
//!   that chunk size plus one stream item.
//! - fetch: one `read_object` request, with a `Range` when asked; the body is streamed
//!   back as it arrives (the SDK resumes an interrupted body from the last byte read).
//! - delete: one JSON API `DELETE` per object, `delete_concurrency` in flight.
//! - list: JSON API `objects.list` pages of `list_page_size`, fetched lazily.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use google_cloud_auth::credentials::{CacheableResource, Credentials};
use google_cloud_gax::retry_policy::RetryPolicyExt;
use google_cloud_storage::client::Storage;
use google_cloud_storage::model_ext::ReadRange;
use google_cloud_storage::read_resume_policy::{ReadResumePolicyExt, Recommended};
use google_cloud_storage::retry_policy::RetryableErrors;
use google_cloud_storage::streaming_source::{SizeHint, StreamingSource};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::{Method, StatusCode};

use crate::metrics::RequestMetrics;
use tsm_storage::{BackendError, ByteRange, ObjectKey};
use tsm_storage::{ByteStream, ListStream, ObjectMeta};

use crate::config::GcsConfig;
use crate::error::{Failure, Op, classify};

/// Google's endpoint, used when `storage.gcs.endpoint.url` is not set.
const DEFAULT_ENDPOINT: &str = "https://storage.googleapis.com";

/// Characters escaped in a JSON API path segment: all but RFC 3986 unreserved ones.
const PATH_SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// One GCS bucket, reached through the SDK and the JSON API.
pub(crate) struct GcsClient {
    bucket: String,
    /// `projects/_/buckets/{bucket}`, the SDK's bucket name form.
    bucket_path: String,
    /// `{endpoint}/storage/v1`.
    json_base: String,
    storage: Storage,
    http: reqwest::Client,
    credentials: Credentials,
    max_attempts: u32,
    list_page_size: u32,
    delete_concurrency: usize,
    /// `resumable.upload.chunk.size`: bytes buffered by one upload.
    pub(crate) upload_chunk_bytes: u64,
    /// Request counters (`crate::metrics`).
    metrics: RequestMetrics,
}

impl std::fmt::Debug for GcsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GcsClient")
            .field("bucket", &self.bucket)
            .field("json_base", &self.json_base)
            .finish_non_exhaustive()
    }
}

impl GcsClient {
    /// Builds the SDK client and the JSON API client for `config`.
    ///
    /// # Errors
    /// A message (no secrets) when the credentials or the SDK client cannot be built.
    pub(crate) async fn new(config: &GcsConfig, metrics: RequestMetrics) -> Result<Self, String> {
        let credentials = crate::credential::build(&config.credentials)?;
        let attempts = config.max_attempts.max(1);
        let chunk = usize::try_from(config.chunk_size)
            .map_err(|_| format!("chunk size {} does not fit in memory", config.chunk_size))?;
        let mut builder = Storage::builder()
            .with_credentials(credentials.clone())
            .with_retry_policy(RetryableErrors.with_attempt_limit(attempts))
            .with_read_resume_policy(Recommended.with_attempt_limit(attempts))
            // Always resumable: memory stays bounded by the chunk size, and single-shot
            // uploads would buffer up to the threshold instead.
            .with_resumable_upload_threshold(0_usize)
            .with_resumable_upload_buffer_size(chunk);
        if let Some(endpoint) = &config.endpoint {
            builder = builder.with_endpoint(endpoint.clone());
        }
        let storage = builder
            .build()
            .await
            .map_err(|e| format!("cannot build the GCS client: {e}"))?;
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        let endpoint = config.endpoint.as_deref().unwrap_or(DEFAULT_ENDPOINT);
        Ok(Self {
            bucket: config.bucket.clone(),
            bucket_path: format!("projects/_/buckets/{}", config.bucket),
            json_base: format!("{endpoint}/storage/v1"),
            storage,
            http,
            credentials,
            max_attempts: attempts,
            list_page_size: config.list_page_size.clamp(1, 1000),
            delete_concurrency: config.delete_concurrency.max(1),
            upload_chunk_bytes: config.chunk_size,
            metrics,
        })
    }

    /// The bucket name.
    pub(crate) fn bucket(&self) -> &str {
        &self.bucket
    }

    fn error(&self, key: &ObjectKey, op: Op, f: Failure) -> BackendError {
        classify(&self.bucket, key, op, f)
    }

    /// Uploads `body` as `key` with one resumable upload; returns the stored size.
    pub(crate) async fn upload(
        &self,
        key: &ObjectKey,
        body: ByteStream,
        size: Option<u64>,
    ) -> Result<u64, BackendError> {
        let failure = Arc::new(Mutex::new(None));
        let source = StreamSource {
            stream: Mutex::new(body),
            key: key.clone(),
            expected: size,
            seen: 0,
            done: false,
            failure: failure.clone(),
        };
        self.metrics.upload_started();
        let result = self
            .storage
            .write_object(self.bucket_path.clone(), key.as_str(), source)
            .set_content_type("application/octet-stream")
            // tsm never rewrites a key with different bytes (object names carry segment
            // ids), so a repeated write is harmless: let the SDK retry the session start.
            .with_idempotency(true)
            .send_buffered()
            .await;
        let object = match result {
            Ok(object) => object,
            Err(e) => {
                // A failure of the caller's stream (or a size mismatch) wins over the SDK's
                // wrapping of it.
                let own = failure
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                return Err(
                    own.unwrap_or_else(|| self.error(key, Op::Upload, Failure::from_sdk(e)))
                );
            }
        };
        let stored = u64::try_from(object.size).map_err(|_| {
            self.error(
                key,
                Op::Upload,
                Failure::other(format!("service reported size {}", object.size), None),
            )
        })?;
        self.metrics
            .upload_completed(stored, self.upload_chunk_bytes);
        match size {
            Some(expected) if stored != expected => Err(self.error(
                key,
                Op::Upload,
                Failure::other(
                    format!("service stored {stored} bytes, {expected} were sent"),
                    None,
                ),
            )),
            _ => Ok(stored),
        }
    }

    /// Reads `key`, or the inclusive `range` of it, with one request.
    pub(crate) async fn fetch(
        &self,
        key: &ObjectKey,
        range: Option<ByteRange>,
    ) -> Result<ByteStream, BackendError> {
        let mut request = self
            .storage
            .read_object(self.bucket_path.clone(), key.as_str());
        if let Some(r) = range {
            let Some((offset, count)) = sdk_segment(r) else {
                return Err(BackendError::InvalidRange {
                    key: key.clone(),
                    range: r,
                    size: None,
                });
            };
            request = request.set_read_range(ReadRange::segment(offset, count));
        }
        self.metrics.object_read();
        match request.send().await {
            Ok(response) => {
                let bucket = self.bucket.clone();
                let key = key.clone();
                let op = Op::Fetch(range);
                // A valid inclusive range always has at least one byte. A ranged answer
                // that ends empty means the range started at or past the end (some
                // emulators answer 200 with no body, or a `Content-Range: bytes 0--1/0`
                // on empty objects, where GCS answers 416): report InvalidRange then.
                let state = (Some(response), false);
                let body = futures::stream::unfold(state, move |(response, got_bytes)| {
                    let bucket = bucket.clone();
                    let key = key.clone();
                    async move {
                        let mut response = response?;
                        match response.next().await {
                            Some(Ok(b)) => {
                                let got = got_bytes || !b.is_empty();
                                Some((Ok(b), (Some(response), got)))
                            }
                            Some(Err(e)) => {
                                let e = classify(&bucket, &key, op, Failure::from_sdk(e));
                                Some((Err(e), (None, got_bytes)))
                            }
                            None => match range {
                                Some(range) if !got_bytes => {
                                    let e = BackendError::InvalidRange {
                                        key,
                                        range,
                                        size: None,
                                    };
                                    Some((Err(e), (None, got_bytes)))
                                }
                                _ => None,
                            },
                        }
                    }
                });
                Ok(body.boxed())
            }
            Err(e) => {
                let status = e.http_status_code();
                let suspicious = !matches!(status, Some(404 | 416));
                if let (Some(r), true) = (range, suspicious) {
                    // fake-gcs-server answers a suffix range on a 0-byte object with
                    // `Content-Range: bytes 0--1/0`, which the SDK cannot parse (bounded
                    // ranges, which we send, get 416 there). Any range on an empty object
                    // is InvalidRange; check the size only on this error path, so good
                    // reads stay one request.
                    if let Ok(Some(0)) = self.stat(key).await {
                        return Err(BackendError::InvalidRange {
                            key: key.clone(),
                            range: r,
                            size: Some(0),
                        });
                    }
                }
                Err(self.error(key, Op::Fetch(range), Failure::from_sdk(e)))
            }
        }
    }

    /// The object's size in bytes, `None` when it does not exist (JSON API `objects.get`).
    pub(crate) async fn stat(&self, key: &ObjectKey) -> Result<Option<u64>, BackendError> {
        let url = self.object_url(key);
        let response = self
            .send(Kind::Metadata, Method::GET, &url, &[("fields", "size")])
            .await
            .map_err(|f| self.error(key, Op::Stat, f))?;
        match response.status() {
            StatusCode::NOT_FOUND => Ok(None),
            s if s.is_success() => {
                let body: serde_json::Value = response
                    .json()
                    .await
                    .map_err(|e| self.error(key, Op::Stat, Failure::from_reqwest(e)))?;
                parse_size(&body).map(Some).ok_or_else(|| {
                    self.error(
                        key,
                        Op::Stat,
                        Failure::other("response has no numeric \"size\"", None),
                    )
                })
            }
            s => Err(self.error(key, Op::Stat, failure_of(s, response).await)),
        }
    }

    /// Deletes every key, `delete_concurrency` at a time; missing keys are success.
    pub(crate) async fn delete(&self, keys: &[ObjectKey]) -> Result<(), BackendError> {
        futures::stream::iter(keys.iter().cloned())
            .map(|key| async move { self.delete_one(&key).await })
            .buffer_unordered(self.delete_concurrency)
            .try_collect::<()>()
            .await
    }

    async fn delete_one(&self, key: &ObjectKey) -> Result<(), BackendError> {
        let url = self.object_url(key);
        let response = self
            .send(Kind::Delete, Method::DELETE, &url, &[])
            .await
            .map_err(|f| self.error(key, Op::Delete, f))?;
        match response.status() {
            s if s.is_success() || s == StatusCode::NOT_FOUND => Ok(()),
            s => Err(self.error(key, Op::Delete, failure_of(s, response).await)),
        }
    }

    /// Lists the objects whose name starts with `prefix`, page by page, lazily.
    pub(crate) fn list(self: &Arc<Self>, prefix: &ObjectKey) -> ListStream {
        struct Cursor {
            token: Option<String>,
            finished: bool,
        }
        let client = self.clone();
        let prefix = prefix.clone();
        let pages = futures::stream::try_unfold(
            Cursor {
                token: None,
                finished: false,
            },
            move |cursor| {
                let client = client.clone();
                let prefix = prefix.clone();
                async move {
                    if cursor.finished {
                        return Ok(None);
                    }
                    let (items, next) = client.list_page(&prefix, cursor.token.as_deref()).await?;
                    let finished = next.is_none();
                    Ok(Some((
                        futures::stream::iter(items.into_iter().map(Ok)),
                        Cursor {
                            token: next,
                            finished,
                        },
                    )))
                }
            },
        );
        pages.try_flatten().boxed()
    }

    async fn list_page(
        &self,
        prefix: &ObjectKey,
        token: Option<&str>,
    ) -> Result<(Vec<ObjectMeta>, Option<String>), BackendError> {
        let url = format!(
            "{}/b/{}/o",
            self.json_base,
            utf8_percent_encode(&self.bucket, PATH_SEGMENT)
        );
        let page_size = self.list_page_size.to_string();
        let mut query = vec![
            ("prefix", prefix.as_str()),
            ("maxResults", page_size.as_str()),
            ("fields", "items(name,size),nextPageToken"),
        ];
        if let Some(t) = token {
            query.push(("pageToken", t));
        }
        let response = self
            .send(Kind::Other, Method::GET, &url, &query)
            .await
            .map_err(|f| self.error(prefix, Op::List, f))?;
        let status = response.status();
        if !status.is_success() {
            return Err(self.error(prefix, Op::List, failure_of(status, response).await));
        }
        let body: serde_json::Value = response
            .json()
            .await
            .map_err(|e| self.error(prefix, Op::List, Failure::from_reqwest(e)))?;
        let mut items = Vec::new();
        for item in body
            .get("items")
            .and_then(|i| i.as_array())
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let name = item.get("name").and_then(|n| n.as_str());
            let size = parse_size(item);
            match (name, size) {
                (Some(name), Some(size)) => items.push(ObjectMeta {
                    key: name.to_string(),
                    size,
                    last_modified: item
                        .get("updated")
                        .and_then(|u| u.as_str())
                        .and_then(parse_rfc3339),
                }),
                _ => {
                    return Err(self.error(
                        prefix,
                        Op::List,
                        Failure::other("list item without name or numeric size", None),
                    ));
                }
            }
        }
        let next = body
            .get("nextPageToken")
            .and_then(|t| t.as_str())
            .filter(|t| !t.is_empty())
            .map(str::to_owned);
        Ok((items, next))
    }

    fn object_url(&self, key: &ObjectKey) -> String {
        format!(
            "{}/b/{}/o/{}",
            self.json_base,
            utf8_percent_encode(&self.bucket, PATH_SEGMENT),
            utf8_percent_encode(key.as_str(), PATH_SEGMENT)
        )
    }

    /// Sends one JSON API request with auth headers, retrying transient failures (408,
    /// 429, 5xx, connection errors) up to `max_attempts` times with exponential backoff
    /// (100 ms doubling, at most 5 s). Returns the first non-retryable response.
    async fn send(
        &self,
        kind: Kind,
        method: Method,
        url: &str,
        query: &[(&str, &str)],
    ) -> Result<reqwest::Response, Failure> {
        let mut backoff = Duration::from_millis(100);
        let mut attempt = 1;
        loop {
            match kind {
                Kind::Metadata => &self.metrics.metadata_get,
                Kind::Delete => &self.metrics.object_delete,
                Kind::Other => &self.metrics.other,
            }
            .inc();
            let outcome = self.send_once(method.clone(), url, query).await;
            let retryable = match &outcome {
                Ok(r) => is_retryable_status(r.status().as_u16()),
                Err(f) => f.transient_io,
            };
            if !retryable || attempt >= self.max_attempts {
                return outcome;
            }
            tracing::debug!(attempt, "GCS JSON API call failed, retrying");
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(5));
            attempt += 1;
        }
    }

    async fn send_once(
        &self,
        method: Method,
        url: &str,
        query: &[(&str, &str)],
    ) -> Result<reqwest::Response, Failure> {
        let headers = match self.credentials.headers(http::Extensions::new()).await {
            Ok(CacheableResource::New { data, .. }) => data,
            // Only returned when we pass an entity tag, which we never do.
            Ok(CacheableResource::NotModified) => http::HeaderMap::new(),
            Err(e) => {
                let transient = e.is_transient();
                let mut f = Failure::other(format!("credentials: {e}"), Some(Box::new(e)));
                f.transient_io = transient;
                return Err(f);
            }
        };
        self.http
            .request(method, url)
            .query(query)
            .headers(headers)
            .send()
            .await
            .map_err(Failure::from_reqwest)
    }
}

/// What a JSON API request is, for its request counter.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// `objects.get` of metadata.
    Metadata,
    /// `objects.delete`.
    Delete,
    /// Listings.
    Other,
}

/// Ends of ranges are capped here: no GCS object comes near it (the limit is 5 TiB).
const MAX_READ_END: u64 = 1 << 62;

/// `(offset, count)` for `ReadRange::segment`, or `None` when the range starts where no
/// object can reach (so it is past the end of any object).
///
/// google-cloud-storage 1.21 builds the `Range` header as `offset + count - 1` in `i64`,
/// which overflows (a panic in debug builds, a garbage header in release) for ends near
/// `u64::MAX`, e.g. "read to the end" ranges. Capping the end at [`MAX_READ_END`] keeps the
/// sum far inside `i64` and changes nothing, since GCS clamps the end to the object anyway.
pub(crate) fn sdk_segment(range: ByteRange) -> Option<(u64, u64)> {
    if range.start >= MAX_READ_END {
        return None;
    }
    let end = range.end.min(MAX_READ_END - 1);
    Some((range.start, end - range.start + 1))
}

fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 429 | 500 | 502 | 503 | 504)
}

/// The JSON API encodes `size` as a decimal string (uint64); accept a number too.
fn parse_size(item: &serde_json::Value) -> Option<u64> {
    match item.get("size")? {
        serde_json::Value::String(s) => s.parse().ok(),
        v => v.as_u64(),
    }
}

async fn failure_of(status: StatusCode, response: reqwest::Response) -> Failure {
    let body = response.text().await.unwrap_or_default();
    Failure::from_status(status.as_u16(), &body)
}

/// Adapts a [`ByteStream`] to the SDK's [`StreamingSource`], enforcing the declared size.
///
/// The stream sits in a `Mutex` only to be `Sync` (the SDK requires it); it is reached
/// through `get_mut`, never locked. A failure of the caller's stream, or a stream longer
/// or shorter than `expected`, is recorded in `failure` (so [`GcsClient::upload`] returns
/// it as is) and aborts the upload before its last chunk is sent: nothing is committed.
struct StreamSource {
    stream: Mutex<ByteStream>,
    key: ObjectKey,
    expected: Option<u64>,
    seen: u64,
    done: bool,
    failure: Arc<Mutex<Option<BackendError>>>,
}

/// The error the SDK sees when [`StreamSource`] aborts; the real one is in `failure`.
#[derive(Debug, thiserror::Error)]
#[error("upload source failed")]
struct SourceAborted;

impl StreamSource {
    fn abort(&mut self, error: BackendError) -> Option<Result<Bytes, SourceAborted>> {
        self.done = true;
        *self.failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(error);
        Some(Err(SourceAborted))
    }

    fn size_error(&self, detail: String) -> BackendError {
        BackendError::Other {
            key: self.key.clone(),
            detail,
            source: None,
        }
    }

    /// The next non-empty item of the inner stream.
    async fn next_item(&mut self) -> Option<Result<Bytes, BackendError>> {
        let stream = self
            .stream
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        loop {
            match stream.next().await {
                Some(Ok(b)) if b.is_empty() => continue,
                other => return other,
            }
        }
    }
}

impl StreamingSource for StreamSource {
    type Error = SourceAborted;

    async fn next(&mut self) -> Option<Result<Bytes, Self::Error>> {
        if self.done {
            return None;
        }
        match self.next_item().await {
            None => {
                self.done = true;
                match self.expected {
                    Some(n) if n != self.seen => {
                        let e = self.size_error(format!(
                            "upload body ended after {} bytes, {n} were declared",
                            self.seen
                        ));
                        self.abort(e)
                    }
                    _ => None,
                }
            }
            Some(Err(e)) => self.abort(e),
            Some(Ok(bytes)) => {
                self.seen += bytes.len() as u64;
                match self.expected {
                    Some(n) if self.seen > n => {
                        let e = self.size_error(format!(
                            "upload body is longer than the {n} bytes declared"
                        ));
                        self.abort(e)
                    }
                    // The declared size is reached: the SDK will finalize with these bytes,
                    // so make sure the body really ends here first.
                    Some(n) if self.seen == n => match self.next_item().await {
                        None => {
                            self.done = true;
                            Some(Ok(bytes))
                        }
                        Some(Err(e)) => self.abort(e),
                        Some(Ok(_)) => {
                            let e = self.size_error(format!(
                                "upload body is longer than the {n} bytes declared"
                            ));
                            self.abort(e)
                        }
                    },
                    _ => Some(Ok(bytes)),
                }
            }
        }
    }

    async fn size_hint(&self) -> Result<SizeHint, Self::Error> {
        Ok(match self.expected {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::new(),
        })
    }
}

/// An RFC 3339 timestamp (the JSON API's `updated`) as a `SystemTime`; `None` if malformed.
fn parse_rfc3339(s: &str) -> Option<std::time::SystemTime> {
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .ok()
        .map(std::time::SystemTime::from)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The SDK's `offset + count - 1` never overflows `i64`, the range is never
        /// empty, and only the unreachable tail of the `u64` space is cut.
        #[test]
        fn sdk_segment_never_overflows(start in any::<u64>(), len in any::<u64>()) {
            let end = start.saturating_add(len);
            let range = ByteRange::new(start, end).unwrap();
            match sdk_segment(range) {
                None => prop_assert!(start >= MAX_READ_END),
                Some((offset, count)) => {
                    prop_assert_eq!(offset, start);
                    prop_assert!(count >= 1);
                    let last = (offset as i64).checked_add(count as i64 - 1);
                    prop_assert!(last.is_some());
                    prop_assert_eq!(offset + count - 1, end.min(MAX_READ_END - 1));
                }
            }
        }
    }

    #[test]
    fn listing_times_parse_as_rfc3339() {
        let t = super::parse_rfc3339("2026-12-01T10:00:00.123Z").expect("parses");
        let secs = t
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after epoch")
            .as_secs();
        assert_eq!(secs, 1_796_119_200);
        assert!(super::parse_rfc3339("yesterday").is_none());
    }
}
