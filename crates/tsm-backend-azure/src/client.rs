//! The SDK clients and the read-side operations: ranged streaming download, concurrent
//! idempotent delete, paged listing.
//!
//! Requests go to `<endpoint>/<container>/<blob>` through one [`BlobContainerClient`]. With
//! an account key the container URL carries an account SAS ([`crate::sas`]) that is re-signed
//! before it expires; with a SAS token the URL carries that token; with Entra ID the
//! SDK's bearer-token policy adds the token.
//!
//! Fetch memory: the SDK's managed download is asked for the whole requested range as one
//! partition, so the response body is streamed as it arrives (no partition buffers).

use std::num::NonZero;
use std::sync::{Arc, RwLock};

use azure_core::credentials::TokenCredential;
use azure_core::http::{ClientOptions, ExponentialRetryOptions, RetryOptions, StatusCode, Url};
use azure_storage_blob::models::{
    BlobClientDownloadOptions, BlobClientGetPropertiesResultHeaders,
    BlobContainerClientListBlobsOptions, HttpRange,
};
use azure_storage_blob::{BlobClient, BlobContainerClient, BlobContainerClientOptions};
use futures::{StreamExt, TryStreamExt};
use time::OffsetDateTime;
use tsm_storage::config::ConfigError;
use tsm_storage::{BackendError, ByteRange, ByteStream, ListStream, ObjectKey, ObjectMeta};

use tsm_storage::metrics::MetricsRegistry;

use crate::config::{Auth, AzureConfig, ENDPOINT_URL};
use crate::error::classify;
use crate::metrics::RequestMetrics;
use crate::sas::{self, AccountKey};

/// Partition size asked of the SDK for a whole-blob download: 2^50 - 1 bytes on 64-bit, so any real
/// segment is one request (the SDK sends `x-ms-range: bytes=0-<2^50-1>`, which the service
/// clamps) and the body is streamed; below 2^53 so JavaScript emulators parse it exactly.
const WHOLE_BLOB_PARTITION: usize = usize::MAX >> 14;

/// Deletes issued at once by [`AzureClient::delete_blobs`].
pub const DELETES_IN_FLIGHT: usize = 16;

/// Where the container client comes from.
enum Source {
    /// Fixed for the life of the backend (SAS token, Entra ID).
    Fixed(Arc<BlobContainerClient>),
    /// Re-signed account SAS.
    SharedKey {
        account: String,
        key: AccountKey,
        current: RwLock<(Arc<BlobContainerClient>, OffsetDateTime)>,
    },
}

/// The shared state of one backend: container name, settings, SDK client.
pub struct AzureClient {
    /// Container name.
    pub container: Arc<str>,
    /// The validated settings.
    pub cfg: Arc<AzureConfig>,
    source: Source,
    /// The request-counting policy every container client carries.
    metrics: Arc<RequestMetrics>,
}

impl std::fmt::Debug for AzureClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AzureClient")
            .field("container", &self.container)
            .field("endpoint", &self.cfg.endpoint)
            .finish_non_exhaustive()
    }
}

fn options(cfg: &AzureConfig, metrics: &Arc<RequestMetrics>) -> BlobContainerClientOptions {
    let retry = if cfg.max_retries == 0 {
        RetryOptions::none()
    } else {
        RetryOptions::exponential(ExponentialRetryOptions {
            max_retries: cfg.max_retries,
            ..Default::default()
        })
    };
    BlobContainerClientOptions {
        client_options: ClientOptions {
            retry,
            // Per try: every request on the wire is counted, retries included.
            per_try_policies: vec![metrics.clone() as Arc<dyn azure_core::http::policies::Policy>],
            ..Default::default()
        },
        ..Default::default()
    }
}

fn container_url(cfg: &AzureConfig, query: Option<&str>) -> Result<Url, ConfigError> {
    let mut url = Url::parse(&cfg.endpoint)
        .map_err(|_| ConfigError::new(format!("storage.{ENDPOINT_URL}"), &cfg.endpoint, "a URL"))?;
    url.path_segments_mut()
        .map_err(|_| {
            ConfigError::new(
                format!("storage.{ENDPOINT_URL}"),
                &cfg.endpoint,
                "a base URL",
            )
        })?
        .pop_if_empty()
        .push(&cfg.container);
    url.set_query(query);
    Ok(url)
}

fn build(
    cfg: &AzureConfig,
    query: Option<&str>,
    credential: Option<Arc<dyn TokenCredential>>,
    metrics: &Arc<RequestMetrics>,
) -> Result<Arc<BlobContainerClient>, ConfigError> {
    let url = container_url(cfg, query)?;
    BlobContainerClient::new(url, credential, Some(options(cfg, metrics)))
        .map(Arc::new)
        .map_err(|e| {
            ConfigError::new(
                format!("storage.{ENDPOINT_URL}"),
                &cfg.endpoint,
                format!(
                    "a blob endpoint the SDK accepts ({})",
                    crate::error::redact_sas(&e.to_string())
                ),
            )
        })
}

fn signed(
    cfg: &AzureConfig,
    account: &str,
    key: &AccountKey,
    metrics: &Arc<RequestMetrics>,
) -> Result<(Arc<BlobContainerClient>, OffsetDateTime), ConfigError> {
    let allow_http = cfg.endpoint.starts_with("http://");
    let (token, expiry) =
        sas::blob_account_sas(account, key, OffsetDateTime::now_utc(), allow_http);
    Ok((build(cfg, Some(&token), None, metrics)?, expiry))
}

impl AzureClient {
    /// Builds the SDK client for `cfg` (no request is made); requests are counted into a
    /// private registry.
    pub fn new(cfg: AzureConfig) -> Result<Self, ConfigError> {
        Self::with_metrics(cfg, &MetricsRegistry::new())
    }

    /// As [`AzureClient::new`], counting every request into `registry`
    /// ([`crate::metrics`]).
    pub fn with_metrics(cfg: AzureConfig, registry: &MetricsRegistry) -> Result<Self, ConfigError> {
        let metrics = Arc::new(RequestMetrics::new(registry));
        let source = match &cfg.auth {
            Auth::SharedKey { account, key } => Source::SharedKey {
                account: account.clone(),
                key: key.clone(),
                current: RwLock::new(signed(&cfg, account, key, &metrics)?),
            },
            Auth::Sas(token) => Source::Fixed(build(&cfg, Some(token.expose()), None, &metrics)?),
            Auth::EntraId => {
                let (credential, how) = crate::credential::entra_id()?;
                tracing::info!(endpoint = %cfg.endpoint, "azure: Entra ID via {how}");
                Source::Fixed(build(&cfg, None, Some(credential), &metrics)?)
            }
        };
        Ok(Self {
            container: Arc::from(cfg.container.as_str()),
            cfg: Arc::new(cfg),
            source,
            metrics,
        })
    }

    /// The container client, with a SAS valid for at least 15 more minutes.
    pub fn container_client(&self) -> Arc<BlobContainerClient> {
        match &self.source {
            Source::Fixed(c) => c.clone(),
            Source::SharedKey {
                account,
                key,
                current,
            } => {
                let renew_at = |exp: OffsetDateTime| exp - sas::SAS_RENEW_BEFORE;
                {
                    let guard = current.read().unwrap_or_else(|p| p.into_inner());
                    if OffsetDateTime::now_utc() < renew_at(guard.1) {
                        return guard.0.clone();
                    }
                }
                let mut guard = current.write().unwrap_or_else(|p| p.into_inner());
                if OffsetDateTime::now_utc() >= renew_at(guard.1) {
                    match signed(&self.cfg, account, key, &self.metrics) {
                        Ok(fresh) => *guard = fresh,
                        // Cannot happen: the same URL was accepted at build time.
                        Err(e) => tracing::error!("azure: re-signing the SAS failed: {e}"),
                    }
                }
                guard.0.clone()
            }
        }
    }

    /// A client for the blob named `key`.
    pub fn blob(&self, key: &ObjectKey) -> BlobClient {
        self.container_client().blob_client(key.as_str())
    }

    /// Creates the container (tests and tools); an existing one is success.
    pub async fn create_container(&self) -> Result<(), BackendError> {
        match self.container_client().create(None).await {
            Ok(_) => Ok(()),
            Err(e) if e.http_status() == Some(StatusCode::Conflict) => Ok(()),
            Err(e) => Err(classify(
                "CreateContainer",
                &self.container,
                &ObjectKey::plain(""),
                None,
                &e,
            )),
        }
    }

    /// Size of the blob in bytes (Get Blob Properties).
    pub async fn blob_size(&self, key: &ObjectKey) -> Result<u64, BackendError> {
        let props = self
            .blob(key)
            .get_properties(None)
            .await
            .map_err(|e| classify("GetBlobProperties", &self.container, key, None, &e))?;
        Ok(props.content_length().ok().flatten().unwrap_or(0))
    }

    /// Streams the blob or an inclusive range of it (Get Blob with `x-ms-range`).
    ///
    /// Azurite deviations guarded here: a range on a 0-byte blob gets an unparsable
    /// `Content-Range: bytes 0--1/0`, and a range starting exactly at the size returns 0
    /// bytes where Azure returns 416. A ranged response of 0 bytes is therefore
    /// [`BackendError::InvalidRange`], and an unparsable response is checked against the
    /// blob's size.
    pub async fn download(
        &self,
        key: &ObjectKey,
        range: Option<ByteRange>,
    ) -> Result<ByteStream, BackendError> {
        if let Some(r) = range
            && r.start >= WHOLE_BLOB_PARTITION as u64
        {
            // Past any blob Azure can hold (190.7 TiB < 2^50 bytes); the SDK would overflow
            // computing the end. Answer from the blob's properties (NotFound if missing).
            let size = self.blob_size(key).await?;
            return Err(BackendError::InvalidRange {
                key: key.clone(),
                range: r,
                size: Some(size),
            });
        }
        let (http_range, partition) = match range {
            // The whole range in one partition: one request, body streamed.
            // `ByteRange::len` overflows for `0..=u64::MAX`: cap the length (the service
            // clamps the end to the blob size anyway).
            Some(r) => {
                let len = (r.end - r.start)
                    .saturating_add(1)
                    .min(WHOLE_BLOB_PARTITION as u64);
                (
                    Some(HttpRange::new(r.start, len)),
                    usize::try_from(len).unwrap_or(WHOLE_BLOB_PARTITION),
                )
            }
            None => (None, WHOLE_BLOB_PARTITION),
        };
        let options = BlobClientDownloadOptions {
            range: http_range,
            parallel: Some(NonZero::<usize>::MIN),
            partition_size: NonZero::new(partition.max(1)),
            ..Default::default()
        };
        let result = match self.blob(key).download(Some(options)).await {
            Ok(r) => r,
            Err(e) if e.http_status().is_none() && !is_transport(&e) => {
                // Possibly Azurite's `bytes 0--1/0` on a 0-byte blob.
                return match (self.blob_size(key).await?, range) {
                    (0, None) => Ok(futures::stream::empty().boxed()),
                    (size, Some(r)) if r.start >= size => Err(BackendError::InvalidRange {
                        key: key.clone(),
                        range: r,
                        size: Some(size),
                    }),
                    _ => Err(classify("GetBlob", &self.container, key, range, &e)),
                };
            }
            Err(e) => return Err(classify("GetBlob", &self.container, key, range, &e)),
        };
        if let (Some(r), Some(0)) = (range, result.properties.content_length) {
            return Err(BackendError::InvalidRange {
                key: key.clone(),
                range: r,
                size: None,
            });
        }
        let container = self.container.clone();
        let key = key.clone();
        Ok(result
            .body
            .map_err(move |e| classify("GetBlob (body)", &container, &key, range, &e))
            .boxed())
    }

    /// Deletes every blob, [`DELETES_IN_FLIGHT`] at a time; 404 is success.
    pub async fn delete_blobs(&self, keys: &[ObjectKey]) -> Result<(), BackendError> {
        futures::stream::iter(keys.iter().cloned())
            .map(|key| {
                let blob = self.blob(&key);
                let container = self.container.clone();
                async move {
                    match blob.delete(None).await {
                        Ok(_) => Ok(()),
                        Err(e)
                            if e.http_status() == Some(StatusCode::NotFound)
                                && !container_missing(&e) =>
                        {
                            Ok(())
                        }
                        Err(e) => Err(classify("DeleteBlob", &container, &key, None, &e)),
                    }
                }
            })
            .buffer_unordered(DELETES_IN_FLIGHT)
            .try_collect::<()>()
            .await
    }

    /// Lists blobs whose names start with `prefix`, page by page (List Blobs, flat; the
    /// service's page size, 5000 on Azure).
    pub fn list(&self, prefix: &ObjectKey) -> ListStream {
        self.list_paged(prefix, None)
    }

    /// [`Self::list`] with pages of at most `page_size` blobs (`maxresults`), e.g. to
    /// exercise paging in tests. Each page is fetched when the previous one is consumed.
    pub fn list_paged(&self, prefix: &ObjectKey, page_size: Option<i32>) -> ListStream {
        let container = self.container.clone();
        let p = prefix.clone();
        let options = BlobContainerClientListBlobsOptions {
            prefix: (!prefix.as_str().is_empty()).then(|| prefix.as_str().to_string()),
            maxresults: page_size,
            ..Default::default()
        };
        match self.container_client().list_blobs(Some(options)) {
            Ok(pager) => pager
                .map(move |item| match item {
                    Ok(b) => Ok(ObjectMeta {
                        key: b.name.unwrap_or_default(),
                        size: b
                            .properties
                            .as_ref()
                            .and_then(|p| p.content_length)
                            .unwrap_or(0),
                        last_modified: b
                            .properties
                            .and_then(|p| p.last_modified)
                            .map(std::time::SystemTime::from),
                    }),
                    Err(e) => Err(classify("ListBlobs", &container, &p, None, &e)),
                })
                .boxed(),
            Err(e) => {
                let err = classify("ListBlobs", &container, &p, None, &e);
                futures::stream::once(async move { Err(err) }).boxed()
            }
        }
    }
}

fn is_transport(e: &azure_core::Error) -> bool {
    matches!(
        e.kind(),
        azure_core::error::ErrorKind::Connection | azure_core::error::ErrorKind::Io
    )
}

fn container_missing(e: &azure_core::Error) -> bool {
    matches!(e.kind(), azure_core::error::ErrorKind::HttpResponse { error_code: Some(c), .. } if c == "ContainerNotFound")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use tsm_storage::config::StorageConfig;

    use super::*;
    use crate::config::{AZURITE_ACCOUNT, AZURITE_KEY};

    fn query_value(c: &BlobContainerClient, name: &str) -> Option<String> {
        c.url()
            .query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    }

    #[test]
    fn sas_is_reused_then_renewed_before_expiry() {
        let m: BTreeMap<String, String> = [
            ("azure.container.name", "c"),
            ("azure.account.name", AZURITE_ACCOUNT),
            ("azure.account.key", AZURITE_KEY),
            (
                "azure.endpoint.url",
                "http://127.0.0.1:10000/devstoreaccount1",
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let cfg = AzureConfig::from_storage_config(&StorageConfig::new(m)).expect("cfg");
        let client = AzureClient::new(cfg).expect("client");
        let first = client.container_client();
        assert_eq!(first.url().path(), "/devstoreaccount1/c");
        assert_eq!(query_value(&first, "spr").as_deref(), Some("https,http"));
        assert!(query_value(&first, "sig").is_some());
        // Fresh token: the same client is handed out.
        assert!(Arc::ptr_eq(&first, &client.container_client()));
        // Pretend the token expires in 5 minutes: the next call re-signs.
        let Source::SharedKey { current, .. } = &client.source else {
            panic!("shared key expected");
        };
        current.write().expect("lock").1 = OffsetDateTime::now_utc() + Duration::from_secs(300);
        let renewed = client.container_client();
        assert!(!Arc::ptr_eq(&first, &renewed));
        let expiry = current.read().expect("lock").1;
        assert!(expiry > OffsetDateTime::now_utc() + sas::SAS_RENEW_BEFORE);
        // Blob URLs keep the token and encode nothing but the name.
        let blob = client.blob(&ObjectKey::plain("a/b c.log"));
        assert!(blob.url().query().is_some_and(|q| q.contains("sig=")));
    }
}
