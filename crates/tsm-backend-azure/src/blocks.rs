//! Upload of one object as a block blob, from a [`ByteStream`] of unknown item sizes.
//!
//! - Up to `azure.upload.block.size` bytes (including 0): one Put Blob.
//! - Larger: the body is cut into blocks of exactly the block size (the last one shorter),
//!   staged with Put Block, at most `azure.upload.blocks.in.flight` at once, then committed
//!   in order with Put Block List. Until the commit nothing is visible under the name (an
//!   existing blob stays as it was); staged but never committed blocks are discarded by
//!   Azure after 7 days and cannot be deleted explicitly.
//! - A blob has at most 50,000 committed blocks ([`MAX_BLOCKS`]): with a known size the
//!   upload is refused before any request; with an unknown size when block 50,001 starts.
//!
//! Memory bound per upload: block size x (blocks in flight + 1), plus one body item.
//! Block ids are `<random 32 hex>-<6-digit index>` (all of one length, as Azure requires),
//! random per upload so concurrent uploads of one name never mix blocks.

use azure_core::http::RequestContent;
use azure_storage_blob::models::{BlockBlobClientUploadOptions, BlockLookupList};
use bytes::{Bytes, BytesMut};
use futures::stream::FuturesUnordered;
use futures::{StreamExt, TryStreamExt};
use tsm_storage::{BackendError, ByteStream, ObjectKey};

use crate::client::AzureClient;
use crate::config::{BLOCK_SIZE, MAX_BLOCKS};
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

/// Reads from `body` into `buf` until it holds `block_size` bytes or the body ends, while
/// driving the staged blocks in `in_flight` (so reading and uploading overlap). Returns
/// true when the body has ended.
async fn fill<F>(
    body: &mut ByteStream,
    buf: &mut BytesMut,
    block_size: usize,
    in_flight: &mut FuturesUnordered<F>,
) -> Result<bool, BackendError>
where
    F: Future<Output = Result<(), BackendError>>,
{
    while buf.len() < block_size {
        tokio::select! {
            biased;
            Some(done) = in_flight.next(), if !in_flight.is_empty() => done?,
            item = body.try_next() => match item? {
                Some(b) => buf.extend_from_slice(&b),
                None => return Ok(true),
            },
        }
    }
    Ok(false)
}

/// Uploads `body` under `key` and returns the number of bytes stored.
pub async fn upload(
    client: &AzureClient,
    key: &ObjectKey,
    mut body: ByteStream,
    size: Option<u64>,
) -> Result<u64, BackendError> {
    let block_size = client.cfg.block_size;
    if let Some(s) = size
        && block_count(s, block_size) > MAX_BLOCKS
    {
        return Err(too_many_blocks(key, size, block_size));
    }
    let bs = usize::try_from(block_size).unwrap_or(usize::MAX);
    // A client per request: with an account key each gets a SAS valid for at least 15
    // more minutes, however long the upload takes.
    let stage = |id: Vec<u8>, block: Bytes| {
        let blob = client.blob(key).block_blob_client();
        async move {
            let len = block.len() as u64;
            blob.stage_block(&id, len, block.into(), None)
                .await
                .map(|_| ())
                .map_err(|e| classify("PutBlock", &client.container, key, None, &e))
        }
    };
    let mut in_flight = FuturesUnordered::new();
    let mut buf = BytesMut::new();
    let mut ended = fill(&mut body, &mut buf, bs, &mut in_flight).await?;
    if ended {
        return put_blob(client, key, buf.freeze(), bs).await;
    }

    let upload_id = uuid::Uuid::new_v4().simple().to_string();
    let mut ids: Vec<Vec<u8>> = Vec::new();
    let mut total = 0u64;
    loop {
        while !buf.is_empty() && (buf.len() >= bs || ended) {
            let block: Bytes = buf.split_to(buf.len().min(bs)).freeze();
            if ids.len() as u64 >= MAX_BLOCKS {
                return Err(too_many_blocks(key, None, block_size));
            }
            let id = format!("{upload_id}-{:06}", ids.len()).into_bytes();
            ids.push(id.clone());
            total += block.len() as u64;
            in_flight.push(stage(id, block));
            while in_flight.len() >= client.cfg.blocks_in_flight {
                if let Some(r) = in_flight.next().await {
                    r?;
                }
            }
        }
        if ended {
            break;
        }
        ended = fill(&mut body, &mut buf, bs, &mut in_flight).await?;
    }
    while let Some(r) = in_flight.next().await {
        r?;
    }
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
    Ok(total)
}

/// One Put Blob of at most one block.
async fn put_blob(
    client: &AzureClient,
    key: &ObjectKey,
    data: Bytes,
    block_size: usize,
) -> Result<u64, BackendError> {
    let len = data.len() as u64;
    let options = BlockBlobClientUploadOptions {
        parallel: Some(std::num::NonZero::<usize>::MIN),
        partition_size: std::num::NonZero::new((block_size as u64).max(1)),
        ..Default::default()
    };
    client
        .blob(key)
        .upload(data.into(), Some(options))
        .await
        .map_err(|e| classify("PutBlob", &client.container, key, None, &e))?;
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

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
