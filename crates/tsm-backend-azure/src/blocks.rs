//! Upload of one object as a block blob, from a [`ByteStream`] of unknown item sizes,
//! driven by the shared writer [`tsm_storage::multipart`] (`BlockTarget` and
//! `BlockUpload` here send the Azure requests and name container, blob and block in
//! their errors).
//!
//! - Up to `azure.upload.block.size` bytes (including 0 and exactly one block): one Put
//!   Blob.
//! - Larger: the body is cut into blocks of exactly the block size (the last one shorter),
//!   staged with Put Block, at most `azure.upload.blocks.in.flight` at once (each in its
//!   own tokio task), then committed in order with Put Block List. Until the commit nothing
//!   is visible under the name (an existing blob stays as it was); staged but never
//!   committed blocks, of a failed or dropped upload alike, are discarded by Azure after 7
//!   days and cannot be deleted explicitly (the upload has no abort).
//! - A blob has at most 50,000 committed blocks ([`MAX_BLOCKS`]): with a known size the
//!   upload is refused before any request; with an unknown size when block 50,001 starts.
//! - A body whose length differs from the declared size fails before the commit.
//!
//! Memory bound per upload: block size x (blocks in flight + 1) ([`limits`], what
//! `upload_buffer_bytes` reports), besides the body item being cut.
//! Every Put Block and Put Blob body reports each frame the connection takes as upload
//! progress (`block_body.rs`), so the engine's idle deadline measures the link, not the
//! block.
//! Block ids are `<random 32 hex>-<6-digit index>` (all of one length, as Azure requires),
//! random per upload so concurrent uploads of one name never mix blocks.

use async_trait::async_trait;
use azure_core::http::RequestContent;
use azure_storage_blob::models::{BlockBlobClientUploadOptions, BlockLookupList};
use bytes::Bytes;
use tsm_storage::multipart::{Abort, MultipartTarget, MultipartUpload, PartFuture, PartLimits};
use tsm_storage::{BackendError, ByteStream, ObjectKey};

use crate::block_body::progress_body;
use crate::client::AzureClient;
use crate::config::{AzureConfig, BLOCK_SIZE, MAX_BLOCKS};
use crate::error::classify;

/// Number of blocks an object of `size` bytes needs with `block_size`-byte blocks (a
/// 0-byte object needs none).
pub fn block_count(size: u64, block_size: u64) -> u64 {
    size.div_ceil(block_size.max(1))
}

/// The error for an object that needs more than [`MAX_BLOCKS`] blocks.
pub fn too_many_blocks(key: &ObjectKey, size: Option<u64>, block_size: u64) -> BackendError {
    let what = match size {
        Some(s) => format!("{s} bytes need {} blocks", block_count(s, block_size)),
        None => format!("the body exceeds {} bytes", MAX_BLOCKS * block_size),
    };
    BackendError::Other {
        key: key.clone(),
        detail: format!(
            "azure upload refused: {what} of {block_size} bytes, more than Azure's {MAX_BLOCKS} \
             blocks per blob; raise storage.{BLOCK_SIZE} (largest object = 50,000 x block size)"
        ),
        source: None,
    }
}

/// Block size, blocks in flight and [`MAX_BLOCKS`] of `cfg`, as the shared writer uses
/// them.
pub fn limits(cfg: &AzureConfig) -> PartLimits {
    PartLimits {
        part_size: usize::try_from(cfg.block_size).unwrap_or(usize::MAX),
        parts_in_flight: cfg.blocks_in_flight.max(1),
        max_parts: u32::try_from(MAX_BLOCKS).unwrap_or(u32::MAX),
    }
}

/// Uploads `body` under `key` and returns the number of bytes stored.
pub async fn upload(
    client: &AzureClient,
    key: &ObjectKey,
    body: ByteStream,
    size: Option<u64>,
) -> Result<u64, BackendError> {
    tsm_storage::multipart::upload(&BlockTarget { client, key }, body, size).await
}

/// One blob of the container, as the shared writer writes it.
struct BlockTarget<'a> {
    client: &'a AzureClient,
    key: &'a ObjectKey,
}

#[async_trait]
impl<'a> MultipartTarget for BlockTarget<'a> {
    type Upload = BlockUpload<'a>;

    fn key(&self) -> &ObjectKey {
        self.key
    }

    fn limits(&self) -> PartLimits {
        limits(&self.client.cfg)
    }

    fn too_many_parts(&self, size: Option<u64>) -> BackendError {
        too_many_blocks(self.key, size, self.client.cfg.block_size)
    }

    fn part_task_failed(&self, part: u32, err: tokio::task::JoinError) -> BackendError {
        BackendError::other(
            self.key,
            format!(
                "azure PutBlock task failed in container {} (block #{})",
                self.client.container,
                u64::from(part) + 1
            ),
            err,
        )
    }

    async fn put_whole(&self, data: Bytes) -> Result<(), BackendError> {
        let block_size = usize::try_from(self.client.cfg.block_size).unwrap_or(usize::MAX);
        put_blob(self.client, self.key, data, block_size).await
    }

    async fn start(&self) -> Result<BlockUpload<'a>, BackendError> {
        Ok(BlockUpload {
            client: self.client,
            key: self.key,
            upload_id: uuid::Uuid::new_v4().simple().to_string(),
        })
    }
}

/// The blocks of one upload, named `<upload_id>-<index>`.
struct BlockUpload<'a> {
    client: &'a AzureClient,
    key: &'a ObjectKey,
    upload_id: String,
}

#[async_trait]
impl MultipartUpload for BlockUpload<'_> {
    type Part = Vec<u8>;

    /// Put Block. A client per request: with an account key each gets a SAS valid for at
    /// least 15 more minutes, however long the upload takes.
    fn put_part(&self, index: u32, data: Bytes) -> PartFuture<Vec<u8>> {
        let id = format!("{}-{index:06}", self.upload_id).into_bytes();
        let blob = self.client.blob(self.key).block_blob_client();
        let container = self.client.container.clone();
        let key = self.key.clone();
        let op = format!("PutBlock #{}", u64::from(index) + 1);
        Box::pin(async move {
            let len = data.len() as u64;
            // Built here, in the block's task: each frame sent is upload progress.
            blob.stage_block(&id, len, progress_body(data).into(), None)
                .await
                .map_err(|e| classify(&op, &container, &key, None, &e))?;
            Ok(id)
        })
    }

    /// Put Block List, the ids in body order.
    async fn complete(&self, ids: Vec<Vec<u8>>) -> Result<(), BackendError> {
        let (client, key) = (self.client, self.key);
        let list = BlockLookupList {
            latest: Some(ids),
            ..Default::default()
        };
        let content = RequestContent::try_from(list)
            .map_err(|e| classify("PutBlockList", &client.container, key, None, &e))?;
        client
            .blob(key)
            .block_blob_client()
            .commit_block_list(content, None)
            .await
            .map_err(|e| classify("PutBlockList", &client.container, key, None, &e))?;
        Ok(())
    }

    /// None: staged blocks cannot be deleted; Azure discards them after 7 days.
    fn abort(&self) -> Option<Abort> {
        None
    }
}

/// One Put Blob of at most one block.
async fn put_blob(
    client: &AzureClient,
    key: &ObjectKey,
    data: Bytes,
    block_size: usize,
) -> Result<(), BackendError> {
    let options = BlockBlobClientUploadOptions {
        parallel: Some(std::num::NonZero::<usize>::MIN),
        partition_size: std::num::NonZero::new((block_size as u64).max(1)),
        ..Default::default()
    };
    client
        .blob(key)
        .upload(progress_body(data).into(), Some(options))
        .await
        .map_err(|e| classify("PutBlob", &client.container, key, None, &e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use futures::StreamExt;
    use tsm_storage::StorageBackend;
    use tsm_storage::config::StorageConfig;

    use super::*;
    use crate::config;

    /// A client for a server that is not there (nothing listens on 127.0.0.1:1), with
    /// 100 KiB blocks, 2 in flight and no retries.
    fn unreachable() -> AzureClient {
        let m: BTreeMap<String, String> = [
            (config::CONTAINER_NAME, "tiered"),
            (config::ACCOUNT_NAME, config::AZURITE_ACCOUNT),
            (config::ACCOUNT_KEY, config::AZURITE_KEY),
            (config::ENDPOINT_URL, "http://127.0.0.1:1/devstoreaccount1"),
            (config::BLOCK_SIZE, "102400"),
            (config::BLOCKS_IN_FLIGHT, "2"),
            (config::MAX_RETRIES, "0"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let cfg = AzureConfig::from_storage_config(&StorageConfig::new(m)).expect("config");
        AzureClient::new(cfg).expect("client")
    }

    /// A multi-block upload's failure names the operation with its block, the container
    /// and the blob (nothing listens: Put Block #1 fails at connect).
    #[tokio::test]
    async fn block_errors_name_the_block_container_and_blob() {
        let client = unreachable();
        let key = ObjectKey::plain("t/0/seg.log");
        let body: ByteStream =
            futures::stream::iter(vec![Ok(Bytes::from(vec![0u8; 250_000]))]).boxed();
        let e = upload(&client, &key, body, None)
            .await
            .expect_err("nothing listens on 127.0.0.1:1");
        let text = e.to_string();
        assert!(
            text.contains("azure PutBlock #") && text.contains("on container tiered"),
            "{text}"
        );
        assert!(text.contains("t/0/seg.log"), "{text}");
        assert!(e.is_transient(), "{e}");
        let target = BlockTarget {
            client: &client,
            key: &key,
        };
        let joined = target.part_task_failed(
            4,
            tokio::spawn(async { panic!("block task") })
                .await
                .expect_err("panics"),
        );
        let text = joined.to_string();
        assert!(
            text.contains("PutBlock task failed in container tiered (block #5)")
                && text.contains("t/0/seg.log"),
            "{text}"
        );
    }

    /// What the engine reserves per upload is what the shared writer holds: block size x
    /// (blocks in flight + 1).
    #[test]
    fn upload_buffers_are_the_writers_bound() {
        let client = unreachable();
        let l = limits(&client.cfg);
        assert_eq!(
            (l.part_size, l.parts_in_flight, l.max_parts),
            (102_400, 2, 50_000)
        );
        let backend = crate::AzureBackend {
            client: std::sync::Arc::new(client),
        };
        assert_eq!(backend.upload_buffer_bytes(), 3 * 102_400);
    }

    #[test]
    fn counts() {
        assert_eq!(block_count(0, 10), 0);
        assert_eq!(block_count(1, 10), 1);
        assert_eq!(block_count(10, 10), 1);
        assert_eq!(block_count(11, 10), 2);
        assert_eq!(block_count(MAX_BLOCKS * 10, 10), MAX_BLOCKS);
        assert_eq!(block_count(MAX_BLOCKS * 10 + 1, 10), MAX_BLOCKS + 1);
    }

    #[test]
    fn refusal_names_key_and_limit() {
        let key = ObjectKey::plain("t/0.log");
        let e = too_many_blocks(&key, Some(MAX_BLOCKS * 102_400 + 1), 102_400);
        let msg = e.to_string();
        assert!(msg.contains("t/0.log"), "{msg}");
        assert!(msg.contains("50001 blocks"), "{msg}");
        assert!(msg.contains("storage.azure.upload.block.size"), "{msg}");
    }
}
