//! tsm-backend-azure: the Azure Blob Storage [`StorageBackend`], on Microsoft's official
//! `azure_storage_blob` 1.x and `azure_identity`.
//!
//! # Brief overview
//! [`AzureBackend`] stores tsm's `.log`, `.indexes` and `.rsm-manifest` objects as block
//! blobs in one container (`storage.azure.container.name`), under the keys the engine
//! builds. It is selected with `storage.backend.class = azure` or the Java plugin's class
//! name `io.aiven.kafka.tieredstorage.storage.azure.AzureBlobStorage` ([`KIND`]); its keys
//! are in [`config::KEYS`].
//!
//! - Auth ([`config::Auth`]): account key (signs short-lived account SAS tokens, [`sas`]),
//!   SAS token, connection string, else Entra ID ([`credential`]).
//! - Upload ([`blocks`]): one Put Blob up to the block size, else staged blocks uploaded
//!   concurrently and committed as a block list, driven by the shared writer of
//!   `tsm_storage::multipart`; memory at most block size x (blocks in flight + 1); more
//!   than 50,000 blocks refused up front.
//! - Fetch ([`client::AzureClient::download`]): Get Blob with `x-ms-range`, streamed as it
//!   arrives; Azurite's range deviations are guarded.
//! - Delete: one Delete Blob per key, 16 at a time; missing blobs are success.
//! - List: List Blobs (flat) by prefix, page by page.
//! - Errors ([`error`]): one status -> meaning table; messages carry container, masked
//!   blob name, HTTP status and Azure error code, never the SAS signature.
//!
//! # Operator's sharp edges
//! - Staged blocks of an upload that never commits (broker killed mid-upload) are invisible
//!   and discarded by Azure after 7 days; they cannot be deleted earlier.
//! - Committing a block list discards every uncommitted block of that blob: of two
//!   concurrent multi-block uploads to one name, the later commit can fail with
//!   `InvalidBlockList` (a transient error; the blob holds the other upload, whole).
//! - Entra ID needs an `https://` endpoint and a role such as "Storage Blob Data
//!   Contributor" on the container.
//! - Azurite: endpoint `http://127.0.0.1:10000/devstoreaccount1` (no trailing slash), and
//!   `--skipApiVersionCheck` (the SDK sends a newer `x-ms-version` than Azurite knows).
//! - Metrics ([`metrics`]): a per-try pipeline policy counts every request (retries
//!   included) by kind into the engine's registry (`client.azure.*`).

mod block_body;
pub mod blocks;
pub mod client;
pub mod config;
pub mod credential;
pub mod error;
pub mod metrics;
pub mod sas;

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use tsm_storage::StorageBackend;
use tsm_storage::config::{BackendKind, BuildFuture, ConfigError, StorageConfig};
use tsm_storage::{BackendError, ByteRange, ByteStream, ListStream, ObjectKey};

pub use client::AzureClient;
pub use config::AzureConfig;

/// The Azure backend kind: `storage.backend.class = azure` (or the Java plugin's class name).
pub static KIND: BackendKind = BackendKind {
    name: "azure",
    aliases: &["io.aiven.kafka.tieredstorage.storage.azure.AzureBlobStorage"],
    keys: config::KEYS,
    build: build_kind,
    validate: |cfg| AzureConfig::from_storage_config(cfg).map(drop),
    upload_buffer_bytes: |cfg| {
        AzureConfig::from_storage_config(cfg).map(|c| blocks::limits(&c).buffer_bytes())
    },
};

fn build_kind(cfg: StorageConfig) -> BuildFuture {
    Box::pin(async move {
        let backend = AzureBackend::from_storage_config(&cfg)?;
        Ok(Arc::new(backend) as Arc<dyn StorageBackend>)
    })
}

/// A [`StorageBackend`] over one blob container. Cheap to clone (the client is shared).
///
/// `Display` is `Azure(<container>)`; `Debug` shows no secrets.
#[derive(Clone, Debug)]
pub struct AzureBackend {
    client: Arc<AzureClient>,
}

impl AzureBackend {
    /// Builds the backend from its `storage.*` keys (see [`config::KEYS`]). No request is
    /// made; errors name the key.
    pub fn from_storage_config(cfg: &StorageConfig) -> Result<Self, ConfigError> {
        Ok(Self {
            client: Arc::new(AzureClient::with_metrics(
                AzureConfig::from_storage_config(cfg)?,
                cfg.metrics(),
            )?),
        })
    }

    /// Builds the backend from a parsed [`AzureConfig`].
    pub fn new(cfg: AzureConfig) -> Result<Self, ConfigError> {
        Ok(Self {
            client: Arc::new(AzureClient::new(cfg)?),
        })
    }

    /// The container name.
    pub fn container(&self) -> &str {
        &self.client.container
    }

    /// The client, for tools and tests (container creation, inspection).
    pub fn client(&self) -> &AzureClient {
        &self.client
    }
}

impl fmt::Display for AzureBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Azure({})", self.client.container)
    }
}

#[async_trait]
impl StorageBackend for AzureBackend {
    async fn upload(
        &self,
        key: &ObjectKey,
        body: ByteStream,
        size: Option<u64>,
    ) -> Result<u64, BackendError> {
        blocks::upload(&self.client, key, body, size).await
    }

    async fn fetch(
        &self,
        key: &ObjectKey,
        range: Option<ByteRange>,
    ) -> Result<ByteStream, BackendError> {
        self.client.download(key, range).await
    }

    async fn delete(&self, keys: &[ObjectKey]) -> Result<(), BackendError> {
        self.client.delete_blobs(keys).await
    }

    fn list(&self, prefix: &ObjectKey) -> ListStream {
        self.client.list(prefix)
    }

    /// Block buffers of one upload, as the shared writer holds them: block size x (blocks
    /// in flight + 1), the blocks in flight and the one being read
    /// ([`tsm_storage::multipart::PartLimits::buffer_bytes`]).
    fn upload_buffer_bytes(&self) -> u64 {
        blocks::limits(&self.client.cfg).buffer_bytes()
    }

    /// A network store: every read is a round trip.
    fn reads_are_local(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn kind_names_and_documented_keys() {
        assert!(KIND.matches("azure"));
        assert!(KIND.matches("io.aiven.kafka.tieredstorage.storage.azure.AzureBlobStorage"));
        assert!(!KIND.matches("s3"));
        let names: Vec<_> = KIND.keys.iter().map(|k| k.name).collect();
        for key in [
            config::CONTAINER_NAME,
            config::ACCOUNT_NAME,
            config::ACCOUNT_KEY,
            config::SAS_TOKEN,
            config::CONNECTION_STRING,
            config::ENDPOINT_URL,
            config::BLOCK_SIZE,
            config::BLOCKS_IN_FLIGHT,
            config::MAX_RETRIES,
        ] {
            let full = format!("storage.{key}");
            assert!(names.contains(&full.as_str()), "{full} not documented");
        }
        for k in KIND.keys {
            assert!(!k.doc.is_empty(), "{}", k.name);
            let secret = [
                config::ACCOUNT_KEY,
                config::SAS_TOKEN,
                config::CONNECTION_STRING,
            ]
            .iter()
            .any(|s| k.name == format!("storage.{s}"));
            assert_eq!(k.secret, secret, "{} secret flag", k.name);
        }
    }

    #[tokio::test]
    async fn builds_through_kind_without_network() {
        let m: BTreeMap<String, String> = [
            (config::CONTAINER_NAME, "c"),
            (config::CONNECTION_STRING, "UseDevelopmentStorage=true"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let b = (KIND.build)(StorageConfig::new(m)).await.expect("build");
        assert_eq!(b.to_string(), "Azure(c)");
        let dbg = format!("{b:?}");
        assert!(!dbg.contains("Eby8") && !dbg.contains("sig="), "{dbg}");
        let err = (KIND.build)(StorageConfig::new(BTreeMap::new()))
            .await
            .expect_err("no container");
        assert_eq!(err.key, "storage.azure.container.name");
    }

    /// Nothing listens on port 1: every call fails fast with a transient error naming the
    /// container and the blob, and without the SAS signature.
    #[tokio::test]
    async fn connection_refused_is_transient_and_redacted() {
        let m: BTreeMap<String, String> = [
            (config::CONTAINER_NAME, "tiered"),
            (config::ACCOUNT_NAME, config::AZURITE_ACCOUNT),
            (config::ACCOUNT_KEY, config::AZURITE_KEY),
            (config::ENDPOINT_URL, "http://127.0.0.1:1/devstoreaccount1"),
            (config::MAX_RETRIES, "0"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let b = AzureBackend::from_storage_config(&StorageConfig::new(m)).expect("build");
        let key = ObjectKey::plain("t/0.log");
        let body = futures::stream::once(async { Ok(bytes::Bytes::from_static(b"abc")) });
        let errs = [
            b.upload(&key, Box::pin(body), Some(3))
                .await
                .expect_err("upload"),
            b.fetch(&key, None).await.err().expect("fetch"),
            b.delete(std::slice::from_ref(&key))
                .await
                .expect_err("delete"),
        ];
        for e in errs {
            assert!(e.is_transient(), "{e}");
            let mut chain = String::new();
            let mut src: Option<&dyn std::error::Error> = Some(&e);
            while let Some(s) = src {
                chain.push_str(&s.to_string());
                chain.push('\n');
                src = s.source();
            }
            assert!(
                chain.contains("tiered") && chain.contains("t/0.log"),
                "{chain}"
            );
            assert!(
                !chain.contains("sig=") || chain.contains("sig=<redacted>"),
                "{chain}"
            );
            assert!(!chain.contains(config::AZURITE_KEY), "{chain}");
        }
    }
}
