//! The backend contract suite (`tsm_storage::contract`, feature `contract-tests`) against the
//! filesystem and in-memory backends, called from outside the crate exactly as the S3,
//! GCS and Azure crates call it. Needs no service.

use tsm_storage::config::StorageConfig;
use tsm_storage::contract::{self, ContractOptions};
use tsm_storage::filesystem::{FilesystemBackend, KIND};
use tsm_storage::memory::MemoryBackend;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_run_all() {
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = FilesystemBackend::new(dir.path().join("root")).expect("backend");
    contract::run_all(&backend, &ContractOptions::default()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_built_through_its_kind() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut values = std::collections::BTreeMap::new();
    values.insert("root".to_string(), dir.path().display().to_string());
    let backend = (KIND.build)(StorageConfig::new(values))
        .await
        .expect("build");
    let opts = ContractOptions::default().with_prefix("under/a/prefix-");
    contract::upload_fetch_delete(backend.as_ref(), &opts).await;
    contract::list_by_prefix(backend.as_ref(), &opts).await;
    contract::ranged_reads(backend.as_ref(), &opts).await;
}

#[tokio::test]
async fn filesystem_kind_requires_root() {
    let err = match (KIND.build)(StorageConfig::default()).await {
        Err(e) => e,
        Ok(b) => panic!("built {b} without storage.root"),
    };
    assert_eq!(err.key, "storage.root");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_run_all() {
    let opts = ContractOptions::default().with_large_object_size(2 * 1024 * 1024 + 1);
    contract::run_all(&MemoryBackend::new(), &opts).await;
}
