//! Building the `aws_sdk_s3::Client` from [`S3Config`], and the single-request S3 calls
//! (PutObject, ranged GetObject, DeleteObjects, ListObjectsV2). Multipart upload lives in
//! [`crate::multipart`].
//!
//! Credential precedence (the branch taken is logged at `debug`): static keys, then
//! `aws.credentials.file`, then `aws.credentials.provider.class` (the Rust SDK's provider of
//! the source the Java class names, [`ProviderClass`]), then the SDK's default chain (env,
//! profile, web identity / IRSA, ECS container, EC2 IMDS).
//!
//! `s3.legacy.md5.plugin.enabled` adds the [`crate::legacy_md5::LegacyMd5`] interceptor.

use std::sync::Arc;

use aws_config::BehaviorVersion;
use aws_credential_types::Credentials;
use aws_sdk_s3::Client;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::config::{
    Region, RequestChecksumCalculation, ResponseChecksumValidation, SharedCredentialsProvider,
};
use aws_sdk_s3::types::{Delete, ObjectIdentifier, ServerSideEncryption};
use bytes::Bytes;
use futures::StreamExt;
use tsm_storage::config::ConfigError;
use tsm_storage::{BackendError, ByteRange, ByteStream, ListStream, ObjectKey, ObjectMeta};

use crate::config::{self, CredentialsSource, ProviderClass, S3Config, Sse};
use crate::credential::FileCredentials;
use crate::error::{classify_at, listing_key};

/// Most keys one DeleteObjects request may carry (S3 API limit).
pub const DELETE_BATCH: usize = 1000;

/// Builds the SDK client. Fails (naming `storage.s3.region`) when no region is configured
/// and the SDK's region chain finds none.
pub async fn build_client(cfg: &S3Config) -> Result<Client, ConfigError> {
    build_client_with(
        cfg,
        crate::metrics::RequestMetrics::new(&Default::default()),
    )
    .await
}

/// As [`build_client`], counting every request with `metrics` (an SDK interceptor).
pub async fn build_client_with(
    cfg: &S3Config,
    metrics: crate::metrics::RequestMetrics,
) -> Result<Client, ConfigError> {
    let mut loader = aws_config::defaults(BehaviorVersion::latest());
    if let Some(region) = &cfg.region {
        loader = loader.region(Region::new(region.clone()));
    }
    match &cfg.credentials {
        CredentialsSource::Static {
            access_key_id,
            secret_access_key,
            session_token,
        } => {
            tracing::debug!("S3 credentials: static keys from storage.aws.access.key.id");
            loader = loader.credentials_provider(Credentials::new(
                access_key_id.expose(),
                secret_access_key.expose(),
                session_token.as_ref().map(|t| t.expose().to_string()),
                None,
                "tsm-static",
            ));
        }
        CredentialsSource::File(path) => {
            tracing::debug!(path = %path.display(), "S3 credentials: storage.aws.credentials.file");
            loader = loader.credentials_provider(SharedCredentialsProvider::new(
                FileCredentials::new(path.clone()),
            ));
        }
        CredentialsSource::Provider(class) => {
            tracing::debug!(
                "S3 credentials: storage.aws.credentials.provider.class: {}",
                class.describe()
            );
            loader = provider(loader, *class, cfg.region.as_deref()).await;
        }
        CredentialsSource::DefaultChain => {
            tracing::debug!(
                "S3 credentials: SDK default chain (env, profile, web identity, container, IMDS)"
            );
        }
    }
    let mut timeouts = TimeoutConfig::builder();
    if let Some(t) = cfg.api_call_timeout {
        timeouts = timeouts.operation_timeout(t);
    }
    if let Some(t) = cfg.api_call_attempt_timeout {
        timeouts = timeouts.operation_attempt_timeout(t);
    }
    loader = loader.timeout_config(timeouts.build());
    let sdk = loader.load().await;
    if sdk.region().is_none() {
        return Err(ConfigError::new(
            format!("storage.{}", config::REGION),
            "<missing>",
            "required: no region in AWS_REGION, the profile or instance metadata",
        ));
    }
    let (calc, validate) = if cfg.checksum_check {
        (
            RequestChecksumCalculation::WhenSupported,
            ResponseChecksumValidation::WhenSupported,
        )
    } else {
        (
            RequestChecksumCalculation::WhenRequired,
            ResponseChecksumValidation::WhenRequired,
        )
    };
    let mut s3 = aws_sdk_s3::config::Builder::from(&sdk)
        .interceptor(metrics)
        .request_checksum_calculation(calc)
        .response_checksum_validation(validate);
    if cfg.legacy_md5 {
        s3 = s3.interceptor(crate::legacy_md5::LegacyMd5);
    }
    if let Some(url) = &cfg.endpoint_url {
        s3 = s3.endpoint_url(url);
    }
    if let Some(path_style) = cfg.path_style {
        s3 = s3.force_path_style(path_style);
    }
    Ok(Client::from_conf(s3.build()))
}

/// `loader` with the credentials provider of `class`. The providers that call an AWS
/// service or endpoint (web identity through STS, container, instance metadata, profiles
/// that assume a role) get the SDK's HTTP client and `region` (else the SDK's region chain).
async fn provider(
    loader: aws_config::ConfigLoader,
    class: ProviderClass,
    region: Option<&str>,
) -> aws_config::ConfigLoader {
    use aws_config::provider_config::ProviderConfig;
    let pc = || async {
        match region {
            Some(r) => {
                ProviderConfig::without_region().with_region(Some(Region::new(r.to_string())))
            }
            None => ProviderConfig::with_default_region().await,
        }
    };
    match class {
        // What the loader does when given no provider.
        ProviderClass::Default => loader,
        ProviderClass::Environment => loader.credentials_provider(
            aws_config::environment::EnvironmentVariableCredentialsProvider::new(),
        ),
        ProviderClass::Profile => loader.credentials_provider(
            aws_config::profile::ProfileFileCredentialsProvider::builder()
                .configure(&pc().await)
                .build(),
        ),
        ProviderClass::WebIdentity => loader.credentials_provider(
            aws_config::web_identity_token::WebIdentityTokenCredentialsProvider::builder()
                .configure(&pc().await)
                .build(),
        ),
        ProviderClass::Container => loader.credentials_provider(
            aws_config::ecs::EcsCredentialsProvider::builder()
                .configure(&pc().await)
                .build(),
        ),
        ProviderClass::InstanceProfile => loader.credentials_provider(
            aws_config::imds::credentials::ImdsCredentialsProvider::builder()
                .configure(&pc().await)
                .build(),
        ),
    }
}

/// The HTTP `Range` header for an inclusive range. An `end` beyond `i64::MAX` is sent
/// open-ended (`bytes=N-`): servers parse the end as a signed 64-bit number and ignore a
/// Range they cannot parse (MinIO answers 200 with the whole object).
pub fn http_range(r: ByteRange) -> String {
    if r.end >= i64::MAX as u64 {
        format!("bytes={}-", r.start)
    } else {
        format!("bytes={}-{}", r.start, r.end)
    }
}

/// The S3 calls of one backend: client, bucket and upload settings.
#[derive(Clone, Debug)]
pub struct S3Client {
    /// The SDK client (cheap to clone).
    pub sdk: Client,
    /// `s3.bucket.name`.
    pub bucket: Arc<str>,
    /// Upload settings.
    pub cfg: Arc<S3Config>,
}

impl S3Client {
    /// Where requests go, for error messages: `s3.endpoint.url` when set, else the AWS
    /// endpoint of the region.
    pub fn endpoint(&self) -> String {
        match (&self.cfg.endpoint_url, self.sdk.config().region()) {
            (Some(url), _) => url.clone(),
            (None, Some(region)) => format!("the AWS endpoint of region {region}"),
            (None, None) => "the AWS endpoint".to_string(),
        }
    }

    /// `x-amz-server-side-encryption` and the KMS key id to send on PutObject /
    /// CreateMultipartUpload.
    pub fn sse(&self) -> (Option<ServerSideEncryption>, Option<String>) {
        match &self.cfg.sse {
            None => (None, None),
            Some(Sse::S3) => (Some(ServerSideEncryption::Aes256), None),
            Some(Sse::Kms { key_id }) => (Some(ServerSideEncryption::AwsKms), key_id.clone()),
        }
    }

    /// One PutObject of `body` (buffered, so SDK retries replay it).
    pub async fn put_object(&self, key: &ObjectKey, body: Bytes) -> Result<(), BackendError> {
        let (sse, kms) = self.sse();
        let len = body.len() as i64;
        self.sdk
            .put_object()
            .bucket(self.bucket.as_ref())
            .key(key.as_str())
            .content_length(len)
            .storage_class(self.cfg.storage_class.clone())
            .set_server_side_encryption(sse)
            .set_ssekms_key_id(kms)
            // Replayable; reports upload progress (src/part_body.rs).
            .body(crate::part_body::progress_body(body))
            .send()
            .await
            .map_err(|e| {
                classify_at(
                    "PutObject",
                    &self.bucket,
                    Some(&self.endpoint()),
                    key,
                    None,
                    e,
                )
            })?;
        Ok(())
    }

    /// GetObject, streamed as the body arrives. S3 itself clamps an `end` past the last byte
    /// and answers 416 for a start at or past the end (any range of a 0-byte object).
    pub async fn get_object(
        &self,
        key: &ObjectKey,
        range: Option<ByteRange>,
    ) -> Result<ByteStream, BackendError> {
        if let Some(r) = range.filter(|r| r.start >= i64::MAX as u64) {
            // No object is that large, and servers cannot parse such a Range: answer from a
            // HeadObject (NotFound for a missing key, else InvalidRange with the size).
            let head = self
                .sdk
                .head_object()
                .bucket(self.bucket.as_ref())
                .key(key.as_str())
                .send()
                .await
                .map_err(|e| {
                    classify_at(
                        "HeadObject",
                        &self.bucket,
                        Some(&self.endpoint()),
                        key,
                        range,
                        e,
                    )
                })?;
            return Err(BackendError::InvalidRange {
                key: key.clone(),
                range: r,
                size: head.content_length().and_then(|n| u64::try_from(n).ok()),
            });
        }
        let req = self
            .sdk
            .get_object()
            .bucket(self.bucket.as_ref())
            .key(key.as_str())
            .set_range(range.map(http_range));
        let out = req.send().await.map_err(|e| {
            classify_at(
                "GetObject",
                &self.bucket,
                Some(&self.endpoint()),
                key,
                range,
                e,
            )
        })?;
        if let (Some(r), None) = (range, out.content_range()) {
            // A 200 with the whole object instead of a 206: never hand out wrong bytes.
            return Err(BackendError::Other {
                key: key.clone(),
                detail: format!(
                    "s3 GetObject on bucket {} at {}: the server ignored the Range header ({r})",
                    self.bucket,
                    self.endpoint()
                ),
                source: None,
            });
        }
        let body = out.body;
        let key = key.clone();
        let place: Arc<str> = Arc::from(format!("bucket {} at {}", self.bucket, self.endpoint()));
        let stream = futures::stream::try_unfold(body, move |mut body| {
            let key = key.clone();
            let place = place.clone();
            async move {
                match body.try_next().await {
                    Ok(Some(bytes)) => Ok(Some((bytes, body))),
                    Ok(None) => Ok(None),
                    Err(e) => Err(BackendError::transient(
                        &key,
                        format!("s3 GetObject on {place}: body read failed"),
                        e,
                    )),
                }
            }
        });
        Ok(stream.boxed())
    }

    /// DeleteObjects in batches of [`DELETE_BATCH`]. A per-key error in a 200 response is
    /// a failure naming the key and the S3 code, except `NoSuchKey` (already gone).
    pub async fn delete_objects(&self, keys: &[ObjectKey]) -> Result<(), BackendError> {
        for batch in keys.chunks(DELETE_BATCH) {
            let Some(first) = batch.first() else { continue };
            let ids = batch
                .iter()
                .map(|k| ObjectIdentifier::builder().key(k.as_str()).build())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| BackendError::other(first, "s3 DeleteObjects request", e))?;
            let delete = Delete::builder()
                .set_objects(Some(ids))
                .quiet(true)
                .build()
                .map_err(|e| BackendError::other(first, "s3 DeleteObjects request", e))?;
            let out = self
                .sdk
                .delete_objects()
                .bucket(self.bucket.as_ref())
                .delete(delete)
                .send()
                .await
                .map_err(|e| {
                    classify_at(
                        "DeleteObjects",
                        &self.bucket,
                        Some(&self.endpoint()),
                        first,
                        None,
                        e,
                    )
                })?;
            let failed: Vec<_> = out
                .errors()
                .iter()
                .filter(|e| e.code() != Some("NoSuchKey"))
                .collect();
            if let Some(err) = failed.first() {
                let raw = err.key().unwrap_or_default();
                let key = batch
                    .iter()
                    .find(|k| k.as_str() == raw)
                    .cloned()
                    .unwrap_or_else(|| first.clone());
                let code = err.code().unwrap_or("unknown");
                let detail = format!(
                    "s3 DeleteObjects on bucket {} at {}: HTTP 200 with {} per-key error(s); this key: {code}: {}",
                    self.bucket,
                    self.endpoint(),
                    failed.len(),
                    err.message().unwrap_or_default()
                );
                let transient = matches!(code, "SlowDown" | "InternalError" | "ServiceUnavailable");
                return Err(if transient {
                    BackendError::Transient {
                        key,
                        detail,
                        source: None,
                    }
                } else {
                    BackendError::Other {
                        key,
                        detail,
                        source: None,
                    }
                });
            }
        }
        Ok(())
    }

    /// ListObjectsV2 pages, lazily.
    pub fn list(&self, prefix: &ObjectKey) -> ListStream {
        let pages = self
            .sdk
            .list_objects_v2()
            .bucket(self.bucket.as_ref())
            .prefix(prefix.as_str())
            .into_paginator()
            .send();
        // Errors name `s3://<bucket>/<prefix>` (never an empty key) and the endpoint.
        let target = listing_key(&self.bucket, prefix);
        let bucket = self.bucket.clone();
        let endpoint: Arc<str> = Arc::from(self.endpoint());
        futures::stream::unfold(pages, move |mut pages| {
            let target = target.clone();
            let bucket = bucket.clone();
            let endpoint = endpoint.clone();
            async move {
                let page = pages.next().await?;
                let items: Vec<Result<ObjectMeta, BackendError>> = match page {
                    Ok(page) => page
                        .contents()
                        .iter()
                        .filter_map(|o| {
                            o.key().map(|k| ObjectMeta {
                                key: k.to_string(),
                                size: o.size().unwrap_or(0).max(0) as u64,
                                last_modified: o
                                    .last_modified()
                                    .and_then(|t| std::time::SystemTime::try_from(*t).ok()),
                            })
                        })
                        .map(Ok)
                        .collect(),
                    Err(e) => vec![Err(classify_at(
                        "ListObjectsV2",
                        &bucket,
                        Some(&endpoint),
                        &target,
                        None,
                        e,
                    ))],
                };
                Some((futures::stream::iter(items), pages))
            }
        })
        .flatten()
        .boxed()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::time::Duration;
    use tsm_storage::config::StorageConfig;

    async fn client(extra: &[(&str, &str)]) -> Client {
        let mut m: BTreeMap<String, String> = [
            (config::BUCKET_NAME, "b"),
            (config::REGION, "us-east-1"),
            (config::ENDPOINT_URL, "http://127.0.0.1:1"),
            (config::ACCESS_KEY_ID, "id"),
            (config::SECRET_ACCESS_KEY, "secret"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        for (k, v) in extra {
            m.insert(k.to_string(), v.to_string());
        }
        let cfg = S3Config::from_storage_config(&StorageConfig::new(m)).expect("config");
        build_client(&cfg).await.expect("client")
    }

    /// Setting (or not setting) the call timeouts keeps the SDK's connect timeout: a store
    /// that does not accept connections fails fast, not at the engine's deadline.
    #[tokio::test]
    async fn sdk_connect_timeout_is_kept() {
        let sdk_default = Some(Duration::from_millis(3100));
        let c = client(&[]).await;
        let t = c.config().timeout_config().expect("timeouts");
        assert_eq!(t.connect_timeout(), sdk_default);
        assert_eq!(t.operation_timeout(), None);
        let c = client(&[(config::API_CALL_TIMEOUT, "5000")]).await;
        let t = c.config().timeout_config().expect("timeouts");
        assert_eq!(t.connect_timeout(), sdk_default);
        assert_eq!(t.operation_timeout(), Some(Duration::from_secs(5)));
    }

    /// An [`S3Client`] for `bucket` at http://127.0.0.1:1 that tries each call once (the
    /// test does not wait for the SDK's retry backoff).
    pub(crate) async fn s3_client(bucket: &str) -> S3Client {
        let sdk = client(&[]).await;
        let sdk = Client::from_conf(
            sdk.config()
                .to_builder()
                .retry_config(aws_sdk_s3::config::retry::RetryConfig::disabled())
                .build(),
        );
        let mut m: BTreeMap<String, String> = BTreeMap::new();
        m.insert(config::BUCKET_NAME.into(), bucket.into());
        m.insert(config::ENDPOINT_URL.into(), "http://127.0.0.1:1".into());
        let cfg = S3Config::from_storage_config(&StorageConfig::new(m)).expect("config");
        S3Client {
            sdk,
            bucket: Arc::from(bucket),
            cfg: Arc::new(cfg),
        }
    }

    /// Nothing listens on 127.0.0.1:1, so every call fails at connect, at once: the error
    /// names the bucket, the endpoint and the prefix or key, and why the connection failed.
    #[tokio::test]
    async fn connection_errors_name_bucket_endpoint_and_key() {
        use futures::TryStreamExt;
        let c = s3_client("my-bucket").await;
        let list_err = |prefix: ObjectKey| {
            let c = c.clone();
            async move {
                c.list(&prefix)
                    .try_collect::<Vec<_>>()
                    .await
                    .expect_err("nothing listens on 127.0.0.1:1")
            }
        };
        // The whole bucket (no key.prefix): the key field is not empty.
        let e = list_err(ObjectKey::plain("")).await;
        let text = e.to_string();
        assert!(e.is_transient(), "{text}");
        assert!(!text.contains(" on : "), "{text}");
        assert!(text.contains("s3://my-bucket/"), "{text}");
        assert!(text.contains("ListObjectsV2"), "{text}");
        assert!(text.contains("http://127.0.0.1:1"), "{text}");
        assert!(text.to_lowercase().contains("refused"), "the cause: {text}");
        // A prefix is named; a masked one stays masked.
        let text = list_err(ObjectKey::new("tiered/", "orders-", false))
            .await
            .to_string();
        assert!(text.contains("s3://my-bucket/tiered/orders-"), "{text}");
        assert!(text.contains("http://127.0.0.1:1"), "{text}");
        let text = list_err(ObjectKey::new("tenant-secret/", "orders-", true))
            .await
            .to_string();
        assert!(!text.contains("tenant-secret"), "{text}");
        assert!(
            text.contains("<prefix>/orders-") && text.contains("my-bucket"),
            "{text}"
        );
        // A GET names its key, the bucket and the endpoint.
        let key = ObjectKey::plain("t-abc/0/00000000000000000000-xyz.rsm-manifest");
        let text = match c.get_object(&key, None).await {
            Ok(_) => panic!("nothing listens on 127.0.0.1:1"),
            Err(e) => e.to_string(),
        };
        assert!(text.contains(key.as_str()), "{text}");
        assert!(
            text.contains("my-bucket") && text.contains("http://127.0.0.1:1"),
            "{text}"
        );
    }

    #[test]
    fn range_header() {
        let r = |s, e| ByteRange::new(s, e).unwrap();
        assert_eq!(http_range(r(0, 0)), "bytes=0-0");
        assert_eq!(http_range(r(5, 100)), "bytes=5-100");
        assert_eq!(http_range(r(500, u64::MAX)), "bytes=500-");
        assert_eq!(http_range(r(1, i64::MAX as u64)), "bytes=1-");
        assert_eq!(
            http_range(r(1, i64::MAX as u64 - 1)),
            format!("bytes=1-{}", i64::MAX - 1)
        );
    }
}
