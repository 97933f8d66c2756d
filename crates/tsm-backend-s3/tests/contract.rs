//! The tsm-storage backend contract suite (`tsm_storage::contract`) against real MinIO, with the
//! default settings and again with a single part in flight; the large object spans
//! several multipart parts and ends in a short one.

mod common;

use common::{PART, backend};
use tsm_storage::contract::{ContractOptions, run_all};

fn opts() -> ContractOptions {
    ContractOptions::default()
        .with_large_object_size(2 * PART as u64 + 1)
        .with_many_keys(1001)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contract_suite() {
    let b = backend("contract", &[]).await;
    run_all(&b, &opts()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contract_suite_one_part_in_flight_and_checksums() {
    let b = backend(
        "contract1",
        &[
            ("s3.multipart.upload.parts.in.flight", "1"),
            ("aws.checksum.check.enabled", "true"),
        ],
    )
    .await;
    run_all(&b, &opts()).await;
}
