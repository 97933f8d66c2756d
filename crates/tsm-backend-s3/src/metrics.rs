//! Counts every HTTP request the SDK sends (each attempt: retries are requests) with an
//! SDK interceptor ([`Intercept`]), into the engine's registry
//! ([`tsm_storage::config::StorageConfig::metrics`]).
//!
//! Names, by S3 operation (`Metadata::name` of the SDK, kebab-cased: `put-object`,
//! `get-object`, `create-multipart-upload`, `upload-part`, `complete-multipart-upload`,
//! `abort-multipart-upload`, `delete-object`, `delete-objects`, `list-objects-v2`, ...):
//! counter `client.s3.<op>.requests` and latency `client.s3.<op>` (request sent to response
//! headers: the body of a GetObject streams afterwards). Failed attempts by class:
//! `client.s3.errors.throttling` (HTTP 429 or 503: S3's `SlowDown` is a 503),
//! `client.s3.errors.server` (other 5xx), `client.s3.errors.configured-timeout` (the
//! attempt or call timeout of `storage.s3.api.call.*timeout`), `client.s3.errors.io`
//! (connection failures, I/O timeouts), `client.s3.errors.other` (every other failed
//! attempt, 4xx included). The classes follow the AWS SDK for Java's `SdkErrorType`, which
//! the Java plugin's `s3-client-metrics` report. Also `client.get.requests` (GetObject)
//! and `client.put.requests` (PutObject, CreateMultipartUpload, UploadPart,
//! CompleteMultipartUpload), the totals of every backend.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef,
};
// The request is moved into the HTTP client when it is sent: after an attempt the context
// no longer has it, so "was it sent" is the AttemptStart mark of `read_before_transmit`.
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::{ConfigBag, Storable, StoreReplace};
use tsm_storage::metrics::{Counter, LatencyHistogram, MetricsRegistry};

/// When the current attempt's request went on the wire (kept in the request's config bag;
/// removed when the attempt ends, so an attempt that never reached the wire counts nothing).
#[derive(Debug, Clone)]
struct AttemptStart(Instant);

impl Storable for AttemptStart {
    type Storer = StoreReplace<Self>;
}

#[derive(Debug)]
struct OpMetrics {
    requests: Arc<Counter>,
    latency: Arc<LatencyHistogram>,
    /// `client.get.requests` or `client.put.requests`, when the operation is one.
    class: Option<Arc<Counter>>,
}

/// The interceptor; cheap to clone (shared state).
#[derive(Debug, Clone)]
pub struct RequestMetrics {
    registry: MetricsRegistry,
    ops: Arc<Mutex<HashMap<String, Arc<OpMetrics>>>>,
    throttling: Arc<Counter>,
    server: Arc<Counter>,
    timeout: Arc<Counter>,
    io: Arc<Counter>,
    other: Arc<Counter>,
}

/// `PutObject` -> `put-object`, `ListObjectsV2` -> `list-objects-v2`.
pub fn kebab(op: &str) -> String {
    let mut out = String::with_capacity(op.len() + 4);
    for (i, c) in op.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('-');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

impl RequestMetrics {
    /// Counts into `registry` (see the module docs for the names).
    pub fn new(registry: &MetricsRegistry) -> Self {
        let e = |c: &str| registry.counter(&format!("client.s3.errors.{c}"));
        Self {
            registry: registry.clone(),
            ops: Arc::default(),
            throttling: e("throttling"),
            server: e("server"),
            timeout: e("configured-timeout"),
            io: e("io"),
            other: e("other"),
        }
    }

    fn op(&self, name: &str) -> Arc<OpMetrics> {
        let mut ops = self.ops.lock().unwrap_or_else(PoisonError::into_inner);
        ops.entry(name.to_string())
            .or_insert_with(|| {
                let k = kebab(name);
                let class = match name {
                    "GetObject" => Some("client.get.requests"),
                    "PutObject"
                    | "CreateMultipartUpload"
                    | "UploadPart"
                    | "CompleteMultipartUpload" => Some("client.put.requests"),
                    _ => None,
                };
                Arc::new(OpMetrics {
                    requests: self.registry.counter(&format!("client.s3.{k}.requests")),
                    latency: self.registry.histogram(&format!("client.s3.{k}")),
                    class: class.map(|c| self.registry.counter(c)),
                })
            })
            .clone()
    }
}

impl Intercept for RequestMetrics {
    fn name(&self) -> &'static str {
        "tsm-request-metrics"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        cfg.interceptor_state()
            .store_put(AttemptStart(Instant::now()));
        Ok(())
    }

    fn read_after_attempt(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        // An attempt that never reached the wire (signing failed) sent no request.
        let Some(AttemptStart(started)) = cfg.load::<AttemptStart>().cloned() else {
            return Ok(());
        };
        cfg.interceptor_state().unset::<AttemptStart>();
        let name = cfg
            .load::<Metadata>()
            .map_or("Unknown", |m| m.name())
            .to_string();
        let op = self.op(&name);
        op.requests.inc();
        if let Some(c) = &op.class {
            c.inc();
        }
        op.latency.record(started.elapsed());
        let status = context.response().map(|r| r.status().as_u16());
        match context.output_or_error() {
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                let class = if matches!(status, Some(429 | 503)) {
                    &self.throttling
                } else if matches!(status, Some(500..=599)) {
                    &self.server
                } else if e.is_timeout_error() {
                    &self.timeout
                } else if e.as_connector_error().is_some() {
                    &self.io
                } else {
                    &self.other
                };
                class.inc();
            }
            None => self.other.inc(),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::kebab;

    #[test]
    fn operation_names_are_kebab_cased() {
        assert_eq!(kebab("PutObject"), "put-object");
        assert_eq!(kebab("CreateMultipartUpload"), "create-multipart-upload");
        assert_eq!(kebab("DeleteObjects"), "delete-objects");
        assert_eq!(kebab("ListObjectsV2"), "list-objects-v2");
    }
}
