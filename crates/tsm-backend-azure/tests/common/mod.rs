//! Shared by the Azurite tests: the server comes from the environment.
//!
//! - `TSM_TEST_AZURE_ENDPOINT` (e.g. `http://127.0.0.1:10000/devstoreaccount1`),
//!   `TSM_TEST_AZURE_ACCOUNT` (default `devstoreaccount1`), `TSM_TEST_AZURE_KEY` (default
//!   Azurite's well-known key): set by `scripts/services/azurite.sh env` /
//!   `scripts/test.d/32-azure.sh`.
//! - A missing endpoint fails the test (there is no way to skip them and pass).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};

use tsm_backend_azure::AzureBackend;
use tsm_backend_azure::config::AZURITE_KEY;
use tsm_storage::config::StorageConfig;
use tsm_storage::contract;
use tsm_storage::{ByteStream, ObjectKey, StorageBackend};

/// Block size used by the tests: the minimum, 100 KiB.
pub(crate) const BLOCK: usize = 100 * 1024;

/// The server settings (`azure.*` keys). Panics when the endpoint is unset.
pub(crate) fn server() -> BTreeMap<String, String> {
    let endpoint = std::env::var("TSM_TEST_AZURE_ENDPOINT").unwrap_or_else(|_| {
        panic!(
            "TSM_TEST_AZURE_ENDPOINT is not set: start Azurite with \
             scripts/services/azurite.sh start and `eval $(scripts/services/azurite.sh env)`, \
             or run scripts/test.sh 32"
        )
    });
    let var = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
    let mut m = BTreeMap::new();
    m.insert("azure.endpoint.url".into(), endpoint);
    m.insert(
        "azure.account.name".into(),
        var("TSM_TEST_AZURE_ACCOUNT", "devstoreaccount1"),
    );
    m.insert(
        "azure.account.key".into(),
        var("TSM_TEST_AZURE_KEY", AZURITE_KEY),
    );
    m.insert("azure.upload.block.size".into(), BLOCK.to_string());
    m.insert("azure.upload.blocks.in.flight".into(), "3".into());
    // No retries: a 500 would otherwise be retried for a minute and look like a hang.
    m.insert("azure.max.retries".into(), "0".into());
    m
}

/// A fresh container name for one test (3-63 lowercase letters, digits, single dashes).
pub(crate) fn container_name(test: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut name = format!(
        "tsm-{}-{}-{}-{}",
        test.replace('_', "-").to_ascii_lowercase(),
        std::process::id(),
        nanos,
        N.fetch_add(1, Ordering::Relaxed)
    );
    name.truncate(63);
    name.trim_end_matches('-').to_string()
}

/// Builds a backend from `settings` (panics on a config error).
pub(crate) fn build(settings: BTreeMap<String, String>) -> AzureBackend {
    AzureBackend::from_storage_config(&StorageConfig::new(settings)).expect("build backend")
}

/// A backend over a new container, with `extra` settings on top of the server ones.
pub(crate) async fn backend(test: &str, extra: &[(&str, &str)]) -> AzureBackend {
    let mut settings = server();
    settings.insert("azure.container.name".into(), container_name(test));
    for (k, v) in extra {
        settings.insert(k.to_string(), v.to_string());
    }
    let b = build(settings);
    b.client()
        .create_container()
        .await
        .unwrap_or_else(|e| panic!("create container {}: {e}", b.container()));
    b
}

/// `n` bytes of a recognisable pattern (test stream `seed` of `tsm_storage::contract`).
pub(crate) fn data(n: usize, seed: u8) -> Vec<u8> {
    contract::pattern_vec(u64::from(seed), n)
}

/// `bytes` as a body stream of items of `item` bytes (odd sizes cross part boundaries).
pub(crate) fn body(bytes: &[u8], item: usize) -> ByteStream {
    contract::chunked_body(bytes, item)
}

/// Reads a fetched stream into memory (tests only).
pub(crate) async fn read_all(s: ByteStream) -> Vec<u8> {
    contract::read_to_vec(s).await
}

/// Fetches the whole blob.
pub(crate) async fn get(b: &AzureBackend, key: &ObjectKey) -> Vec<u8> {
    read_all(b.fetch(key, None).await.expect("fetch")).await
}
