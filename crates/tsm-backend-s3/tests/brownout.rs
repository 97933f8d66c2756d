//! Brown-out tests: the engine (`RemoteStorageManager` over the S3 backend, configured from
//! `rsm.config.*` keys as the broker does) talks to MinIO through Toxiproxy, which injects
//! one fault ("toxic") at a time between them:
//!
//! | toxic | where | what the engine sees |
//! |---|---|---|
//! | `latency` 5 s | responses | the store did the work, its answer comes 2.5 x the deadline late |
//! | `timeout` 0 | requests | a black hole: the connection stays open, nothing arrives |
//! | `reset_peer` 0 | requests | every connection is reset when the request is sent |
//! | `limit_data` | responses (copy: the request body) | the connection is closed mid-way: 64 KiB into a GET, 1 MiB into an upload, 100 bytes into a delete's answer |
//! | `bandwidth` 4 KB/s | both ways | a link that still moves, far too slowly |
//!
//! For each toxic and each call (copy of a 6 MiB segment, a multipart upload; fetch of a
//! segment uploaded before the toxic, without and with the memory chunk cache; fetchIndex
//! on an engine with cold caches; delete):
//!
//! - the call ends within 3 x the deadline with an error that `is_transient()`; a call
//!   still running then fails the test as "hung";
//! - once the toxic is removed, the same call on the same engine succeeds (fetches return
//!   the original bytes, so nothing half-loaded was cached; a copy is retried under a new
//!   segment id, as the broker does);
//! - nothing is left behind, within [`CLEANUP_WAIT`] for the engine's spawned compensations:
//!   every segment in the bucket has all of `.log`, `.indexes` and `.rsm-manifest` or none
//!   of them, a failed copy's objects are gone, and no multipart upload is incomplete
//!   (listed directly on MinIO, not through the proxy).
//!
//! One exception: a delete under the 4 KB/s link moves about 1 KB and may finish within
//! its deadline; success is correct there.
//!
//! Plus: a copy whose future is dropped mid-upload, and `shutdown` with a copy in flight,
//! leave no object and no incomplete multipart upload. A copy over a congested link
//! (1 MB/s per connection upstream, parts taking 2.5 x the idle deadline) succeeds: slow
//! is not stalled. And the read path on the issue's
//! slow link (20 ms latency, 80 MB/s per connection): a lagging consumer keeps
//! `tsm.fetch.gets.in.flight` GETs in flight, counted by a wrapper of the backend.
//!
//! Deadlines: `tsm.storage.get.first.byte.timeout.ms`, `tsm.storage.get.idle.timeout.ms`,
//! `tsm.storage.upload.timeout.ms`, `tsm.storage.delete.timeout.ms` and the cache-load
//! bounds `fetch.{manifest,indexes,chunk}.cache.get.timeout.ms` are all [`DEADLINE`]; the
//! SDK's own `storage.s3.api.call.timeout` / `storage.s3.api.call.attempt.timeout` are left
//! unset: the engine's deadlines are what is under test. The `latency` toxic is lifted by
//! replacing the proxy (see [`Proxy::replace`]), the others by removing the toxic.
//!
//! Environment: `TSM_TEST_TOXIPROXY_URL` (`scripts/services/toxiproxy.sh env`) and the
//! `TSM_TEST_S3_*` variables of `common` (MinIO). Both must be on 127.0.0.1. Missing, the
//! tests FAIL. `scripts/test.d/33-brownout.sh` starts both servers and runs this file
//! (step 30, which has MinIO only, runs the crate's other test files).

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use serde_json::{Value, json};
use tsm_backend_s3::S3Backend;
use tsm_core::{IndexType, KafkaUuid, RemoteLogSegmentMetadata, RemoteStorageManager, RsmError};
use tsm_storage::config::StorageConfig;
use tsm_storage::{ObjectKey, StorageBackend};

use common::segment::{Segment, segment, with_new_id};

/// Every engine deadline of these tests.
const DEADLINE_MS: u64 = 2000;
const DEADLINE: Duration = Duration::from_millis(DEADLINE_MS);
/// The `latency` toxic: well past the deadline.
const LATENCY_MS: u64 = 5 * DEADLINE_MS / 2;
/// A call still running this long after the toxic was added is "hung".
const HUNG: Duration = Duration::from_millis(3 * DEADLINE_MS);
/// How long spawned compensations get to clean up once the store is healthy again.
const CLEANUP_WAIT: Duration = Duration::from_secs(10);
/// `chunk.size`.
const CHUNK: usize = 1 << 20;
/// The multipart part size (`storage.s3.multipart.upload.part.size`, the S3 minimum).
const PART: usize = common::PART;
/// A segment copied under a toxic: more than one part, so the `.log` is a multipart upload.
const COPY_SIZE: usize = PART + CHUNK + 4321;
/// A segment fetched under a toxic: four chunks.
const FETCH_SIZE: usize = 3 * CHUNK + 12_345;
/// `key.prefix` of the engines.
const KEY_PREFIX: &str = "brownout/";

// ---- environment ---------------------------------------------------------------------

struct Env {
    /// Toxiproxy's API, `http://127.0.0.1:PORT`.
    toxiproxy: String,
    /// MinIO's settings (`storage.` stripped), direct endpoint.
    s3: BTreeMap<String, String>,
    /// MinIO's `host:port`: the proxies' upstream.
    upstream: String,
}

/// `host:port` of `http://host:port[/...]`.
fn host_port(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split('/').next().unwrap_or(rest).to_string()
}

/// These tests only ever talk to servers on this machine.
fn assert_loopback(what: &str, host_port: &str) {
    let host = host_port.rsplit_once(':').map_or(host_port, |(h, _)| h);
    assert!(
        host == "localhost" || host == "[::1]" || host.starts_with("127."),
        "{what} ({host_port}) is not on the loopback interface: the brown-out tests only send \
         traffic to 127.0.0.1"
    );
}

/// The servers; anything missing fails the test.
fn env() -> Env {
    let toxiproxy = std::env::var("TSM_TEST_TOXIPROXY_URL").unwrap_or_else(|_| {
        panic!(
            "TSM_TEST_TOXIPROXY_URL is not set: run scripts/test.d/33-brownout.sh, or start \
             scripts/services/toxiproxy.sh and scripts/services/minio.sh and eval their `env` \
             output"
        )
    });
    let s3 = common::server();
    let upstream = host_port(&s3["s3.endpoint.url"]);
    assert_loopback("TSM_TEST_TOXIPROXY_URL", &host_port(&toxiproxy));
    assert_loopback("TSM_TEST_S3_ENDPOINT", &upstream);
    Env {
        toxiproxy: toxiproxy.trim_end_matches('/').to_string(),
        s3,
        upstream,
    }
}

/// A name no other test of this or an earlier run uses.
fn unique(what: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "tsm-{what}-{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

// ---- Toxiproxy -----------------------------------------------------------------------

/// One proxy in front of MinIO (`listen 127.0.0.1:0`: Toxiproxy picks a free port), deleted
/// on drop, panics included (its connections close with it).
struct Proxy {
    http: reqwest::Client,
    api: String,
    name: String,
    /// `host:port` the proxy listens on.
    listen: String,
}

impl Proxy {
    async fn create(env: &Env, test: &str) -> Self {
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("HTTP client for the Toxiproxy API");
        let mut proxy = Self {
            http,
            api: env.toxiproxy.clone(),
            name: unique(test),
            listen: "127.0.0.1:0".into(),
        };
        proxy.listen = proxy.post_proxy(&env.upstream).await;
        assert_loopback("the proxy", &proxy.listen);
        proxy
    }

    /// Creates the proxy on `self.listen`; returns the address it listens on.
    async fn post_proxy(&self, upstream: &str) -> String {
        let resp = self
            .http
            .post(format!("{}/proxies", self.api))
            .json(&json!({
                "name": self.name,
                "listen": self.listen,
                "upstream": upstream,
                "enabled": true,
            }))
            .send()
            .await
            .unwrap_or_else(|e| panic!("Toxiproxy API {}: create proxy: {e}", self.api));
        let status = resp.status();
        let text = resp
            .text()
            .await
            .expect("Toxiproxy API: create proxy answer");
        assert_eq!(status.as_u16(), 201, "create proxy {}: {text}", self.name);
        let body: Value = serde_json::from_str(&text).expect("Toxiproxy API: proxy JSON");
        body["listen"]
            .as_str()
            .unwrap_or_else(|| panic!("create proxy {}: no listen address in {text}", self.name))
            .to_string()
    }

    /// Replaces the proxy, toxics and connections included, by a clean one on the same
    /// address. For the `latency` toxic: Toxiproxy removes a toxic by flushing the data it
    /// holds back, and when the client has gone that waits 5 s per packet (the API gives
    /// up with 503 after 25 s); deleting the proxy closes its connections at once.
    async fn replace(&self, upstream: &str) {
        let resp = self
            .http
            .delete(format!("{}/proxies/{}", self.api, self.name))
            .send()
            .await
            .unwrap_or_else(|e| panic!("Toxiproxy API: delete proxy {}: {e}", self.name));
        assert!(
            resp.status().is_success(),
            "delete proxy {}: {}",
            self.name,
            resp.status()
        );
        let listen = self.post_proxy(upstream).await;
        assert_eq!(listen, self.listen, "the replaced proxy moved");
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.listen)
    }

    async fn add(&self, toxics: &[Value]) {
        for t in toxics {
            let resp = self
                .http
                .post(format!("{}/proxies/{}/toxics", self.api, self.name))
                .json(t)
                .send()
                .await
                .unwrap_or_else(|e| panic!("Toxiproxy API: add toxic {t}: {e}"));
            let status = resp.status();
            let text = resp.text().await.unwrap_or_default();
            assert!(status.is_success(), "add toxic {t}: {status} {text}");
        }
    }

    async fn remove(&self, toxics: &[Value]) {
        for t in toxics {
            let name = t["name"].as_str().expect("toxic name");
            let resp = self
                .http
                .delete(format!("{}/proxies/{}/toxics/{name}", self.api, self.name))
                .send()
                .await
                .unwrap_or_else(|e| panic!("Toxiproxy API: remove toxic {name}: {e}"));
            let status = resp.status();
            assert!(status.is_success(), "remove toxic {name}: {status}");
        }
    }
}

impl Drop for Proxy {
    /// Best effort, blocking (a drop cannot await, and the test's runtime may be going
    /// away): a bare HTTP/1.1 DELETE on the loopback API.
    fn drop(&mut self) {
        let hp = host_port(&self.api);
        let Ok(mut s) = std::net::TcpStream::connect(hp.as_str()) else {
            return;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
        let req = format!(
            "DELETE /proxies/{} HTTP/1.1\r\nHost: {hp}\r\nConnection: close\r\n\r\n",
            self.name
        );
        if s.write_all(req.as_bytes()).is_ok() {
            let mut answer = Vec::new();
            let _ = s.read_to_end(&mut answer);
        }
    }
}

fn toxic(name: &str, kind: &str, stream: &str, attributes: Value) -> Value {
    json!({
        "name": name,
        "type": kind,
        "stream": stream,
        "toxicity": 1.0,
        "attributes": attributes,
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Toxic {
    Latency,
    Timeout,
    ResetPeer,
    LimitData,
    Bandwidth,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    Copy,
    Fetch,
    CachedFetch,
    FetchIndex,
    Delete,
}

/// The toxics of `t` for `call` (see the table in the module docs).
fn toxics(t: Toxic, call: Call) -> Vec<Value> {
    match t {
        Toxic::Latency => vec![toxic(
            "late",
            "latency",
            "downstream",
            json!({ "latency": LATENCY_MS, "jitter": 0 }),
        )],
        Toxic::Timeout => vec![toxic(
            "black-hole",
            "timeout",
            "upstream",
            json!({ "timeout": 0 }),
        )],
        Toxic::ResetPeer => vec![toxic(
            "reset",
            "reset_peer",
            "upstream",
            json!({ "timeout": 0 }),
        )],
        Toxic::LimitData => match call {
            // A copy's answers are a few hundred bytes: cut the upload body instead.
            Call::Copy => vec![toxic(
                "cut-request",
                "limit_data",
                "upstream",
                json!({ "bytes": 1 << 20 }),
            )],
            Call::Delete => vec![toxic(
                "cut-answer",
                "limit_data",
                "downstream",
                json!({ "bytes": 100 }),
            )],
            _ => vec![toxic(
                "cut-body",
                "limit_data",
                "downstream",
                json!({ "bytes": 64 * 1024 }),
            )],
        },
        Toxic::Bandwidth => vec![
            toxic("slow-up", "bandwidth", "upstream", json!({ "rate": 4 })),
            toxic("slow-down", "bandwidth", "downstream", json!({ "rate": 4 })),
        ],
    }
}

/// True when the call may legitimately finish within its deadline under the toxic.
fn may_succeed(t: Toxic, call: Call) -> bool {
    t == Toxic::Bandwidth && call == Call::Delete
}

// ---- segments ------------------------------------------------------------------------

async fn read_segment(
    engine: &RemoteStorageManager,
    meta: &RemoteLogSegmentMetadata,
    start: u64,
    end: Option<u64>,
) -> Result<Vec<u8>, RsmError> {
    let mut stream = Box::pin(engine.fetch_log_segment(meta, start, end)).await?;
    let mut out = Vec::new();
    while let Some(item) = stream.next().await {
        out.extend_from_slice(&item?);
    }
    Ok(out)
}

/// Runs `call` on `seg`; a fetch that succeeds must return the original bytes.
async fn run_call(
    call: Call,
    engine: &RemoteStorageManager,
    seg: &Segment,
) -> Result<(), RsmError> {
    match call {
        Call::Copy => Box::pin(engine.copy_log_segment_data(&seg.metadata, &seg.data))
            .await
            .map(|_| ()),
        Call::Fetch | Call::CachedFetch => {
            let got = Box::pin(read_segment(engine, &seg.metadata, 0, None)).await?;
            assert!(
                got == seg.log,
                "fetch returned {} bytes that differ from the segment's {} (first difference \
                 at {:?})",
                got.len(),
                seg.log.len(),
                got.iter().zip(&seg.log).position(|(a, b)| a != b)
            );
            Ok(())
        }
        Call::FetchIndex => {
            let got = Box::pin(engine.fetch_index(&seg.metadata, IndexType::Offset)).await?;
            assert!(
                got[..] == seg.offset_index[..],
                "fetchIndex OFFSET returned {} bytes that differ from the index's {}",
                got.len(),
                seg.offset_index.len()
            );
            Ok(())
        }
        Call::Delete => Box::pin(engine.delete_log_segment_data(&seg.metadata)).await,
    }
}

// ---- the bucket, the engines ---------------------------------------------------------

/// One test's bucket, proxy, and temp dir of segment files.
struct World {
    env: Env,
    bucket: String,
    /// A backend straight to MinIO (not proxied): checks see the store's real state.
    direct: S3Backend,
    proxy: Proxy,
    dir: tempfile::TempDir,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Route {
    /// Through the proxy: the engine under test.
    Proxied,
    /// Straight to MinIO: uploads made before a toxic is added.
    Direct,
}

impl World {
    async fn new(test: &str) -> Self {
        let env = env();
        let bucket = common::bucket_name(test);
        common::create_bucket(&env.s3, &bucket).await;
        let mut settings = env.s3.clone();
        settings.insert("s3.bucket.name".into(), bucket.clone());
        let direct = S3Backend::from_storage_config(&StorageConfig::new(settings))
            .await
            .expect("backend straight to MinIO");
        let proxy = Proxy::create(&env, test).await;
        Self {
            env,
            bucket,
            direct,
            proxy,
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// The broker's `rsm.config.*` map (prefix stripped) for an engine over the bucket.
    fn props(&self, route: Route, extra: &[(&str, &str)]) -> BTreeMap<String, String> {
        let mut p = BTreeMap::new();
        for (k, v) in &self.env.s3 {
            p.insert(format!("storage.{k}"), v.clone());
        }
        let endpoint = match route {
            Route::Proxied => self.proxy.endpoint(),
            Route::Direct => self.env.s3["s3.endpoint.url"].clone(),
        };
        let deadline = DEADLINE_MS.to_string();
        for (k, v) in [
            ("storage.backend.class", "s3"),
            ("storage.s3.endpoint.url", endpoint.as_str()),
            ("storage.s3.bucket.name", self.bucket.as_str()),
            ("storage.s3.multipart.upload.part.size", "5242880"),
            ("storage.s3.multipart.upload.parts.in.flight", "2"),
            ("chunk.size", "1048576"),
            ("key.prefix", KEY_PREFIX),
            ("tsm.storage.get.first.byte.timeout.ms", deadline.as_str()),
            ("tsm.storage.get.idle.timeout.ms", deadline.as_str()),
            ("tsm.storage.get.timeout.ms", deadline.as_str()),
            ("tsm.storage.upload.timeout.ms", deadline.as_str()),
            ("tsm.storage.delete.timeout.ms", deadline.as_str()),
            // The cache-load bounds are deadlines of the engine too.
            ("fetch.manifest.cache.get.timeout.ms", deadline.as_str()),
            ("fetch.indexes.cache.get.timeout.ms", deadline.as_str()),
            ("fetch.chunk.cache.get.timeout.ms", deadline.as_str()),
            ("tsm.memory.budget.bytes", "268435456"),
            ("tsm.close.timeout.ms", "10000"),
        ] {
            p.insert(k.to_string(), v.to_string());
        }
        for (k, v) in extra {
            p.insert(k.to_string(), v.to_string());
        }
        assert!(
            !p.keys().any(|k| k.contains("api.call")),
            "the SDK's own timeouts must stay unset"
        );
        p
    }

    async fn engine(&self, route: Route, extra: &[(&str, &str)]) -> RemoteStorageManager {
        Box::pin(RemoteStorageManager::configure(
            self.props(route, extra),
            &[&tsm_backend_s3::KIND],
        ))
        .await
        .unwrap_or_else(|e| panic!("configure the engine: {e}"))
    }

    /// Every key in the bucket, read straight from MinIO.
    async fn keys(&self) -> Vec<String> {
        self.direct
            .list(&ObjectKey::plain(""))
            .map_ok(|m| m.key)
            .try_collect()
            .await
            .expect("list the bucket on MinIO")
    }

    /// What is left behind: orphan objects, objects of `gone` (a segment id whose copy
    /// failed or was dropped), incomplete multipart uploads. Empty when clean.
    async fn leftovers(&self, gone: Option<KafkaUuid>) -> Vec<String> {
        let keys = self.keys().await;
        let mut problems = Vec::new();
        let mut segments: BTreeMap<&str, [bool; 3]> = BTreeMap::new();
        for k in &keys {
            let (stem, i) = if let Some(s) = k.strip_suffix(".log") {
                (s, 0)
            } else if let Some(s) = k.strip_suffix(".indexes") {
                (s, 1)
            } else if let Some(s) = k.strip_suffix(".rsm-manifest") {
                (s, 2)
            } else {
                problems.push(format!("unexpected object {k}"));
                continue;
            };
            segments.entry(stem).or_default()[i] = true;
        }
        for (stem, [log, indexes, manifest]) in segments {
            if (log || indexes) && !manifest {
                problems.push(format!(
                    "orphan: {stem}{}{} without .rsm-manifest",
                    if log { " .log" } else { "" },
                    if indexes { " .indexes" } else { "" }
                ));
            }
        }
        if let Some(id) = gone {
            let id = id.to_string();
            for k in keys.iter().filter(|k| k.contains(&id)) {
                problems.push(format!("{k}: left by the failed or dropped copy"));
            }
        }
        for u in self.multipart_uploads().await {
            problems.push(format!(
                "incomplete multipart upload of {} (upload id {})",
                u.key().unwrap_or("?"),
                u.upload_id().unwrap_or("?")
            ));
        }
        problems
    }

    /// The bucket's incomplete multipart uploads, straight from MinIO.
    async fn multipart_uploads(&self) -> Vec<aws_sdk_s3::types::MultipartUpload> {
        self.direct
            .sdk_client()
            .list_multipart_uploads()
            .bucket(&self.bucket)
            .send()
            .await
            .expect("ListMultipartUploads on MinIO")
            .uploads()
            .to_vec()
    }

    /// Waits up to [`CLEANUP_WAIT`] until nothing is left behind.
    async fn assert_clean(&self, gone: Option<KafkaUuid>, what: &str) {
        let until = Instant::now() + CLEANUP_WAIT;
        loop {
            let problems = self.leftovers(gone).await;
            if problems.is_empty() {
                return;
            }
            if Instant::now() >= until {
                panic!(
                    "{what}: still left behind after {CLEANUP_WAIT:?}:\n  {}",
                    problems.join("\n  ")
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Waits until a multipart upload exists on MinIO (the copy is mid-upload).
    async fn wait_for_multipart_upload<T>(&self, task: &tokio::task::JoinHandle<T>) {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            if !self.multipart_uploads().await.is_empty() {
                return;
            }
            assert!(
                !task.is_finished(),
                "the copy ended before its upload began"
            );
            assert!(
                Instant::now() < until,
                "no multipart upload began within 10 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

// ---- the toxic x call matrix ---------------------------------------------------------

async fn brownout(t: Toxic, call: Call) {
    let test = format!("{t:?}-{call:?}").to_lowercase();
    let w = World::new(&test).await;
    let cache: &[(&str, &str)] = match call {
        Call::CachedFetch => &[
            ("fetch.chunk.cache.class", "memory"),
            ("fetch.chunk.cache.size", "67108864"),
        ],
        _ => &[],
    };
    let engine = w.engine(Route::Proxied, cache).await;
    let seed = 7 + t as u64 * 10 + call as u64;
    let seg = if call == Call::Copy {
        segment(w.dir.path(), "brownout", COPY_SIZE, seed)
    } else {
        let seg = segment(w.dir.path(), "brownout", FETCH_SIZE, seed);
        let setup = w.engine(Route::Direct, &[]).await;
        Box::pin(setup.copy_log_segment_data(&seg.metadata, &seg.data))
            .await
            .unwrap_or_else(|e| panic!("{test}: copy before the toxic: {e}"));
        if matches!(call, Call::Fetch | Call::CachedFetch) {
            // The manifest (and with the cache chunk 0) is loaded before the toxic: the
            // toxic hits the chunk GETs. fetchIndex runs cold: manifest and index GETs.
            let first = read_segment(&engine, &seg.metadata, 0, Some(0))
                .await
                .unwrap_or_else(|e| panic!("{test}: fetch before the toxic: {e}"));
            assert_eq!(first, seg.log[..1]);
        }
        seg
    };

    let toxics = toxics(t, call);
    w.proxy.add(&toxics).await;
    let started = Instant::now();
    let outcome = tokio::time::timeout(HUNG, run_call(call, &engine, &seg)).await;
    let took = started.elapsed();
    let removing = Instant::now();
    if t == Toxic::Latency {
        w.proxy.replace(&w.env.upstream).await;
    } else {
        w.proxy.remove(&toxics).await;
    }
    eprintln!("{test}: toxic removed in {:?}", removing.elapsed());
    let failed = match outcome {
        Err(_) => panic!(
            "{test}: hung: {call:?} still running {HUNG:?} after the {t:?} toxic was added \
             (deadlines {DEADLINE:?})"
        ),
        Ok(Err(e)) => {
            assert!(
                e.is_transient(),
                "{test}: {call:?} failed after {took:?} with an error that is not transient: \
                 {e} ({e:?})"
            );
            eprintln!("{test}: {call:?} failed after {took:?} as expected: {e}");
            true
        }
        Ok(Ok(())) => {
            assert!(
                may_succeed(t, call),
                "{test}: {call:?} succeeded after {took:?} under the {t:?} toxic; expected a \
                 transient error within {HUNG:?}"
            );
            eprintln!("{test}: {call:?} succeeded after {took:?} (allowed for this toxic)");
            false
        }
    };

    // The store is healthy again: nothing may stay behind.
    let gone = (call == Call::Copy && failed).then_some(seg.metadata.segment_id);
    w.assert_clean(gone, &format!("{test}: after the failed call"))
        .await;

    // The same call succeeds now (a copy: the broker's retry, under a new segment id).
    let seg = if call == Call::Copy {
        with_new_id(&seg)
    } else {
        seg
    };
    tokio::time::timeout(HUNG, run_call(call, &engine, &seg))
        .await
        .unwrap_or_else(|_| panic!("{test}: hung: {call:?} after the toxic was removed"))
        .unwrap_or_else(|e| panic!("{test}: {call:?} failed after the toxic was removed: {e}"));
    match call {
        Call::Copy => {
            run_call(Call::Fetch, &engine, &seg)
                .await
                .unwrap_or_else(|e| panic!("{test}: fetch of the copied segment: {e}"));
            run_call(Call::FetchIndex, &engine, &seg)
                .await
                .unwrap_or_else(|e| panic!("{test}: fetchIndex of the copied segment: {e}"));
        }
        Call::Delete => {
            let id = seg.metadata.segment_id.to_string();
            let left: Vec<_> = w
                .keys()
                .await
                .into_iter()
                .filter(|k| k.contains(&id))
                .collect();
            assert!(left.is_empty(), "{test}: delete left {left:?}");
        }
        _ => {}
    }
    let problems = w.leftovers(None).await;
    assert!(
        problems.is_empty(),
        "{test}: left behind at the end:\n  {}",
        problems.join("\n  ")
    );
}

macro_rules! brownout_tests {
    ($($name:ident: $toxic:ident, $call:ident;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            // Boxed, as are the engine's futures inside: debug-build futures are large
            // and the test thread's stack is not.
            Box::pin(brownout(Toxic::$toxic, Call::$call)).await;
        }
    )*};
}

brownout_tests! {
    latency_copy: Latency, Copy;
    latency_fetch: Latency, Fetch;
    latency_cached_fetch: Latency, CachedFetch;
    latency_fetch_index: Latency, FetchIndex;
    latency_delete: Latency, Delete;
    timeout_copy: Timeout, Copy;
    timeout_fetch: Timeout, Fetch;
    timeout_cached_fetch: Timeout, CachedFetch;
    timeout_fetch_index: Timeout, FetchIndex;
    timeout_delete: Timeout, Delete;
    reset_peer_copy: ResetPeer, Copy;
    reset_peer_fetch: ResetPeer, Fetch;
    reset_peer_cached_fetch: ResetPeer, CachedFetch;
    reset_peer_fetch_index: ResetPeer, FetchIndex;
    reset_peer_delete: ResetPeer, Delete;
    limit_data_copy: LimitData, Copy;
    limit_data_fetch: LimitData, Fetch;
    limit_data_cached_fetch: LimitData, CachedFetch;
    limit_data_fetch_index: LimitData, FetchIndex;
    limit_data_delete: LimitData, Delete;
    bandwidth_copy: Bandwidth, Copy;
    bandwidth_fetch: Bandwidth, Fetch;
    bandwidth_cached_fetch: Bandwidth, CachedFetch;
    bandwidth_fetch_index: Bandwidth, FetchIndex;
    bandwidth_delete: Bandwidth, Delete;
}

// ---- cancellation and shutdown -------------------------------------------------------

/// A copy mid-upload on a 4 KB/s link, with deadlines long enough that only the test
/// ends it; returns the world, the engine, the segment and the running copy.
async fn copy_in_flight(
    test: &str,
) -> (
    World,
    Arc<RemoteStorageManager>,
    Segment,
    tokio::task::JoinHandle<Result<Option<Vec<u8>>, RsmError>>,
) {
    let w = World::new(test).await;
    let engine = Arc::new(
        w.engine(
            Route::Proxied,
            &[
                ("tsm.storage.upload.timeout.ms", "120000"),
                ("tsm.storage.get.idle.timeout.ms", "120000"),
            ],
        )
        .await,
    );
    let seg = segment(w.dir.path(), "brownout", COPY_SIZE, 99);
    w.proxy
        .add(&[toxic(
            "slow-up",
            "bandwidth",
            "upstream",
            json!({ "rate": 4 }),
        )])
        .await;
    let task = tokio::spawn({
        let engine = engine.clone();
        let meta = seg.metadata.clone();
        let data = seg.data.clone();
        async move { Box::pin(engine.copy_log_segment_data(&meta, &data)).await }
    });
    w.wait_for_multipart_upload(&task).await;
    (w, engine, seg, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_copy_leaves_nothing() {
    let (w, _engine, seg, task) = copy_in_flight("dropped-copy").await;
    // The broker's thread gives up on the copy: its future is dropped mid-upload.
    task.abort();
    let _ = task.await;
    w.assert_clean(
        Some(seg.metadata.segment_id),
        "after the copy future was dropped mid-upload",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_with_a_copy_in_flight_leaves_nothing() {
    let (w, engine, seg, task) = copy_in_flight("shutdown").await;
    engine.close();
    let refused = engine.delete_log_segment_data(&seg.metadata).await;
    assert!(
        matches!(refused, Err(RsmError::Closed)),
        "a call after close: {refused:?}"
    );
    task.abort();
    let _ = task.await;
    let started = Instant::now();
    // Not asserted: shutdown also waits for other tests' compensations (the count is per
    // process), which may still be running at their own deadline. The bucket is what counts.
    let idle = tokio::time::timeout(
        Duration::from_secs(20),
        engine.shutdown(Duration::from_secs(10)),
    )
    .await
    .unwrap_or_else(|_| panic!("hung: shutdown(10 s) still running after 20 s"));
    eprintln!("shutdown returned {idle} after {:?}", started.elapsed());
    // Shutdown waited for the compensations: no polling here.
    let problems = w.leftovers(Some(seg.metadata.segment_id)).await;
    assert!(
        problems.is_empty(),
        "left behind when shutdown returned:\n  {}",
        problems.join("\n  ")
    );
}

// ---- slow is not stalled ---------------------------------------------------------------

/// A congested upload link (1 MB/s per connection, upstream) under a 2 s idle deadline:
/// each 5 MiB part takes about 5 s to send, so the multipart writer waits longer than the
/// idle bound for a free part slot while bytes flow the whole time. The copy succeeds
/// (the S3 backend reports each body frame sent as progress), its bytes read back
/// exactly, nothing is left behind. A store that takes nothing still fails at the idle
/// bound: the `timeout` toxic's copy case above.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_over_a_slow_link_is_not_stalled() {
    let w = World::new("slow-link").await;
    let engine = w
        .engine(
            Route::Proxied,
            &[("tsm.storage.upload.timeout.ms", "120000")],
        )
        .await;
    let seg = segment(w.dir.path(), "brownout", 2 * PART + 2 * CHUNK, 55);
    w.proxy
        .add(&[toxic(
            "congested-up",
            "bandwidth",
            "upstream",
            json!({ "rate": 1000 }),
        )])
        .await;
    let started = Instant::now();
    Box::pin(engine.copy_log_segment_data(&seg.metadata, &seg.data))
        .await
        .unwrap_or_else(|e| {
            panic!(
                "copy over the slow link failed after {:?}: {e}",
                started.elapsed()
            )
        });
    let took = started.elapsed();
    assert!(
        took > 2 * DEADLINE,
        "the link was not slow enough to test anything: {took:?}"
    );
    let direct = w.engine(Route::Direct, &[]).await;
    let back = read_segment(&direct, &seg.metadata, 0, None)
        .await
        .expect("read back");
    assert!(back == seg.log, "the copied bytes differ");
    w.assert_clean(None, "after the slow copy").await;
}

// ---- parallel ranged GETs over a slow link -------------------------------------------

/// Counts the `.log` GETs open at once (from the call until its body ends or is dropped).
struct ConcurrentGets {
    inner: Arc<dyn StorageBackend>,
    open: Arc<std::sync::atomic::AtomicUsize>,
    max: Arc<std::sync::atomic::AtomicUsize>,
}

impl std::fmt::Debug for ConcurrentGets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ConcurrentGets")
    }
}

impl std::fmt::Display for ConcurrentGets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.inner, f)
    }
}

/// One open GET; closes on drop.
struct OpenGet(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for OpenGet {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl StorageBackend for ConcurrentGets {
    async fn upload(
        &self,
        key: &ObjectKey,
        body: tsm_storage::ByteStream,
        size: Option<u64>,
    ) -> Result<u64, tsm_storage::BackendError> {
        self.inner.upload(key, body, size).await
    }

    async fn fetch(
        &self,
        key: &ObjectKey,
        range: Option<tsm_storage::ByteRange>,
    ) -> Result<tsm_storage::ByteStream, tsm_storage::BackendError> {
        if !key.as_str().ends_with(".log") {
            return self.inner.fetch(key, range).await;
        }
        let n = self.open.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(n, Ordering::SeqCst);
        let open = OpenGet(self.open.clone());
        let body = self.inner.fetch(key, range).await?;
        Ok(body
            .map(move |item| {
                let _open = &open;
                item
            })
            .boxed())
    }

    async fn delete(&self, keys: &[ObjectKey]) -> Result<(), tsm_storage::BackendError> {
        self.inner.delete(keys).await
    }

    fn list(&self, prefix: &ObjectKey) -> tsm_storage::ListStream {
        self.inner.list(prefix)
    }

    fn upload_buffer_bytes(&self) -> u64 {
        self.inner.upload_buffer_bytes()
    }

    fn reads_are_local(&self) -> bool {
        self.inner.reads_are_local()
    }
}

/// The link: MinIO behind 20 ms of latency and 80 MB/s per connection. A lagging
/// consumer reads a plain 24 MiB segment in the broker's 1 MiB fetches: its first read
/// goes out as 4 sub-range GETs at once, then read-ahead keeps 10 chunk GETs in flight
/// (`tsm.fetch.gets.in.flight`); every byte arrives in order, each stored byte is
/// downloaded about once. Counts GETs open at once (not time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lagging_consumer_keeps_several_gets_in_flight() {
    let w = World::new("parallel-gets").await;
    let seg = segment(w.dir.path(), "brownout", 24 << 20, 77);
    // A plain segment without chunk digests (as the Java plugin writes them): read at exact
    // ranges, whose GETs this test counts. (With digests a plain segment is read in whole
    // chunks, as transformed ones are: tsm-core's engine_reads tests.)
    let mut writer = tsm_core::engine::EngineOptions::new(CHUNK as u32);
    writer.key_prefix = KEY_PREFIX.into();
    writer.write_integrity = false;
    let direct =
        RemoteStorageManager::new(Arc::new(w.direct.clone()), writer).expect("engine options");
    Box::pin(direct.copy_log_segment_data(&seg.metadata, &seg.data))
        .await
        .expect("copy straight to MinIO");
    w.proxy
        .add(&[
            toxic(
                "rtt",
                "latency",
                "downstream",
                json!({ "latency": 20, "jitter": 0 }),
            ),
            toxic("link", "bandwidth", "downstream", json!({ "rate": 80_000 })),
        ])
        .await;
    let mut settings = w.env.s3.clone();
    settings.insert("s3.endpoint.url".into(), w.proxy.endpoint());
    settings.insert("s3.bucket.name".into(), w.bucket.clone());
    let s3 = S3Backend::from_storage_config(&StorageConfig::new(settings))
        .await
        .expect("backend through the proxy");
    let (open, max) = (
        Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        Arc::new(std::sync::atomic::AtomicUsize::new(0)),
    );
    let counting = Arc::new(ConcurrentGets {
        inner: Arc::new(s3),
        open: open.clone(),
        max: max.clone(),
    });
    let registry = tsm_core::metrics::MetricsRegistry::new();
    let backend = tsm_storage::layers::layered(counting, None, &registry);
    let mut opts = tsm_core::engine::EngineOptions::new(CHUNK as u32);
    opts.key_prefix = KEY_PREFIX.into();
    let engine =
        RemoteStorageManager::with_registry(backend, opts, registry).expect("engine options");

    // The first fetch: 1 MiB in 4 sub-range GETs issued together.
    let mut start = 0usize;
    let mut first = true;
    while start < seg.log.len() {
        let mut s = Box::pin(engine.fetch_log_segment(&seg.metadata, start as u64, None))
            .await
            .expect("fetch");
        let mut got = Vec::new();
        while got.len() < CHUNK {
            match s.next().await {
                Some(b) => got.extend_from_slice(&b.expect("bytes")),
                None => break,
            }
        }
        drop(s);
        got.truncate(CHUNK);
        assert!(
            got[..] == seg.log[start..start + got.len()],
            "bytes at {start} differ"
        );
        if first {
            assert_eq!(
                max.load(Ordering::SeqCst),
                4,
                "the first read's sub-range GETs were not in flight together"
            );
            first = false;
        }
        // The broker's next fetch starts a partial batch before this one's end.
        start = if start + got.len() == seg.log.len() {
            seg.log.len()
        } else {
            start + got.len() - 1000
        };
    }
    let until = Instant::now() + Duration::from_secs(60);
    while engine.read_ahead_loads() > 0 {
        assert!(
            Instant::now() < until,
            "read-ahead still running after 60 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let m = engine.metrics();
    let (gets, down) = (
        m.counter("backend.fetch.requests"),
        m.counter("bytes.downloaded"),
    );
    let most = max.load(Ordering::SeqCst);
    eprintln!(
        "{} bytes: {gets} GETs, {down} bytes downloaded, at most {most} .log GETs at once",
        seg.log.len()
    );
    assert!(
        most >= tsm_core::engine::DEFAULT_GETS_IN_FLIGHT,
        "read-ahead kept at most {most} GETs in flight"
    );
    assert!(
        down as f64 <= 1.05 * seg.log.len() as f64,
        "downloaded {down} for a {} byte segment",
        seg.log.len()
    );
    assert_eq!(open.load(Ordering::SeqCst), 0, "GETs left open");
    assert_eq!(engine.memory_in_use(), 0, "budget back");
}
