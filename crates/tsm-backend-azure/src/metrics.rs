//! Counts every HTTP request the SDK sends to Blob Storage (each try: retries are
//! requests) with a per-try pipeline policy ([`Policy`], installed through
//! `ClientOptions::per_try_policies`), into the engine's registry
//! ([`tsm_storage::config::StorageConfig::metrics`]).
//!
//! Names (the request kinds of the Java plugin's `azure-blob-storage-client-metrics`):
//! `client.azure.blob-get.requests` (GET of a blob: downloads),
//! `client.azure.blob-upload.requests` (Put Blob), `client.azure.block-upload.requests`
//! (Put Block), `client.azure.block-list-upload.requests` (Put Block List),
//! `client.azure.blob-delete.requests` (Delete Blob); other requests (listings, blob
//! properties, container creation) count as `client.azure.other.requests`. Also
//! `client.get.requests` (blob GETs) and `client.put.requests` (Put Blob, Put Block, Put
//! Block List), the totals of every backend.

use std::sync::Arc;

use async_trait::async_trait;
use azure_core::http::policies::{Policy, PolicyResult};
use azure_core::http::{Context, Method, Request};
use tsm_storage::metrics::{Counter, MetricsRegistry};

/// The request kinds counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// GET of a blob (download).
    BlobGet,
    /// Put Blob (a whole small blob).
    BlobUpload,
    /// Put Block.
    BlockUpload,
    /// Put Block List (commits the blocks).
    BlockListUpload,
    /// Delete Blob.
    BlobDelete,
    /// Anything else (list, properties, container).
    Other,
}

/// The kind of a Blob Storage request, from its method and `comp` / `restype` query.
pub fn kind(method: Method, url: &azure_core::http::Url) -> Kind {
    let mut comp = None;
    let mut restype = None;
    for (k, v) in url.query_pairs() {
        match k.as_ref() {
            "comp" => comp = Some(v.into_owned()),
            "restype" => restype = Some(v.into_owned()),
            _ => {}
        }
    }
    if restype.is_some() {
        return Kind::Other;
    }
    match (method, comp.as_deref()) {
        (Method::Get, None) => Kind::BlobGet,
        (Method::Put, None) => Kind::BlobUpload,
        (Method::Put, Some("block")) => Kind::BlockUpload,
        (Method::Put, Some("blocklist")) => Kind::BlockListUpload,
        (Method::Delete, None) => Kind::BlobDelete,
        _ => Kind::Other,
    }
}

/// The policy; one per backend, shared by every container client it builds.
#[derive(Debug)]
pub struct RequestMetrics {
    blob_get: Arc<Counter>,
    blob_upload: Arc<Counter>,
    block_upload: Arc<Counter>,
    block_list_upload: Arc<Counter>,
    blob_delete: Arc<Counter>,
    other: Arc<Counter>,
    gets: Arc<Counter>,
    puts: Arc<Counter>,
}

impl RequestMetrics {
    /// Counts into `registry` (see the module docs for the names).
    pub fn new(registry: &MetricsRegistry) -> Self {
        let c = |k: &str| registry.counter(&format!("client.azure.{k}.requests"));
        Self {
            blob_get: c("blob-get"),
            blob_upload: c("blob-upload"),
            block_upload: c("block-upload"),
            block_list_upload: c("block-list-upload"),
            blob_delete: c("blob-delete"),
            other: c("other"),
            gets: registry.counter("client.get.requests"),
            puts: registry.counter("client.put.requests"),
        }
    }

    fn count(&self, k: Kind) {
        let (c, class) = match k {
            Kind::BlobGet => (&self.blob_get, Some(&self.gets)),
            Kind::BlobUpload => (&self.blob_upload, Some(&self.puts)),
            Kind::BlockUpload => (&self.block_upload, Some(&self.puts)),
            Kind::BlockListUpload => (&self.block_list_upload, Some(&self.puts)),
            Kind::BlobDelete => (&self.blob_delete, None),
            Kind::Other => (&self.other, None),
        };
        c.inc();
        if let Some(class) = class {
            class.inc();
        }
    }
}

#[async_trait]
impl Policy for RequestMetrics {
    async fn send(
        &self,
        ctx: &Context,
        request: &mut Request,
        next: &[Arc<dyn Policy>],
    ) -> PolicyResult {
        self.count(kind(request.method(), request.url()));
        match next.split_first() {
            Some((policy, rest)) => policy.send(ctx, request, rest).await,
            // The SDK's pipeline always ends in its transport policy.
            None => Err(azure_core::Error::with_message(
                azure_core::error::ErrorKind::Other,
                "request-metrics policy is the last in the pipeline",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_kinds() {
        let u = |s: &str| azure_core::http::Url::parse(s).expect("url");
        let b = "http://h/acct/c/blob";
        assert_eq!(kind(Method::Get, &u(b)), Kind::BlobGet);
        assert_eq!(kind(Method::Put, &u(b)), Kind::BlobUpload);
        assert_eq!(
            kind(Method::Put, &u(&format!("{b}?comp=block&blockid=x"))),
            Kind::BlockUpload
        );
        assert_eq!(
            kind(Method::Put, &u(&format!("{b}?comp=blocklist"))),
            Kind::BlockListUpload
        );
        assert_eq!(kind(Method::Delete, &u(b)), Kind::BlobDelete);
        assert_eq!(kind(Method::Head, &u(b)), Kind::Other);
        assert_eq!(
            kind(
                Method::Get,
                &u("http://h/acct/c?restype=container&comp=list")
            ),
            Kind::Other
        );
        assert_eq!(
            kind(Method::Put, &u("http://h/acct/c?restype=container")),
            Kind::Other
        );
    }
}
