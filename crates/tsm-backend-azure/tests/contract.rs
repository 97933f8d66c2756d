//! The tsm-storage backend contract suite (`tsm_storage::contract`) against real Azurite, with
//! the test settings (100 KiB blocks, 3 in flight) and again with one block in flight and
//! a connection string; the large object spans several blocks and ends in a short one.

mod common;

use common::{BLOCK, backend};
use tsm_storage::contract::{ContractOptions, run_all};

fn opts() -> ContractOptions {
    ContractOptions::default()
        .with_large_object_size(5 * BLOCK as u64 + 1)
        .with_many_keys(1001)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contract_suite() {
    let b = backend("contract", &[]).await;
    run_all(&b, &opts()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contract_suite_one_block_in_flight() {
    let b = backend("contract1", &[("azure.upload.blocks.in.flight", "1")]).await;
    run_all(&b, &opts()).await;
}
