//! Slow is not stalled, on Azure: uploads through a congested link (Toxiproxy's
//! `bandwidth` toxic on the upstream, in front of Azurite) report progress while their
//! blocks are on the way, so the engine's upload idle deadline
//! (`tsm.storage.get.idle.timeout.ms`, which reads `tsm_storage::progress`) sees a slow
//! link, not a dead store. Before, only a
//! finished block counted: a default 25 MiB block slower than the 30 s idle bound failed
//! every copy at under ~850 KB/s per connection while bytes flowed the whole time.
//!
//! Needs Azurite (`common`) and Toxiproxy (`TSM_TEST_TOXIPROXY_URL`, the API on loopback):
//! `scripts/test.sh 32` starts both. The proxy and its toxic are made here through the API
//! (with curl, a prerequisite of the test scripts) and deleted at the end.

mod common;

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{body, build, container_name, data, get, server};
use tsm_storage::progress::{self, UploadProgress};
use tsm_storage::{ObjectKey, StorageBackend};

/// Toxiproxy's bandwidth unit is KB/s (1000 bytes): 200 KB/s per connection.
const RATE_KBPS: u64 = 200;
/// Blocks of 512 KiB: each takes about 2.6 s on the link.
const BLOCK: usize = 512 * 1024;

fn toxiproxy() -> String {
    std::env::var("TSM_TEST_TOXIPROXY_URL").unwrap_or_else(|_| {
        panic!(
            "TSM_TEST_TOXIPROXY_URL is not set: run scripts/test.sh 32 (starts Azurite and \
             Toxiproxy), or `scripts/services/toxiproxy.sh start` and eval its `env`"
        )
    })
}

/// `curl -sf` with `args`; its stdout. Panics naming the call when it fails.
fn curl(args: &[&str]) -> String {
    let out = Command::new("curl")
        .args(["-sS", "-f"])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run curl ({e}): it is a prerequisite of the tests"));
    assert!(
        out.status.success(),
        "curl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A proxy to Azurite with the slow upstream; deleted on drop.
struct SlowProxy {
    api: String,
    name: String,
    /// `host:port` it listens on.
    listen: String,
}

impl SlowProxy {
    fn new(upstream: &str) -> Self {
        let api = toxiproxy();
        let name = container_name("slow-link");
        let created = curl(&[
            "-X",
            "POST",
            &format!("{api}/proxies"),
            "-d",
            &format!(r#"{{"name":"{name}","listen":"127.0.0.1:0","upstream":"{upstream}"}}"#),
        ]);
        let listen = created
            .split("\"listen\":\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap_or_else(|| panic!("no listen address in {created}"))
            .to_string();
        curl(&[
            "-X",
            "POST",
            &format!("{api}/proxies/{name}/toxics"),
            "-d",
            &format!(
                r#"{{"name":"slow-up","type":"bandwidth","stream":"upstream","attributes":{{"rate":{RATE_KBPS}}}}}"#
            ),
        ]);
        Self { api, name, listen }
    }
}

impl Drop for SlowProxy {
    fn drop(&mut self) {
        let _ = Command::new("curl")
            .args(["-sS", "-X", "DELETE"])
            .arg(format!("{}/proxies/{}", self.api, self.name))
            .output();
    }
}

/// `http://host:port/path` -> (`host:port`, `/path`).
fn split_endpoint(url: &str) -> (String, String) {
    let rest = url.split("://").nth(1).unwrap_or(url);
    match rest.find('/') {
        Some(i) => (rest[..i].to_string(), rest[i..].to_string()),
        None => (rest.to_string(), String::new()),
    }
}

/// Uploads `bytes` under `key` inside an upload progress scope (as the engine's deadline
/// wrapper runs every upload), sampling how long the store was seen idle; returns the
/// longest idleness seen and the upload's time.
async fn watched_upload(
    b: &Arc<dyn StorageBackend>,
    key: &ObjectKey,
    bytes: &[u8],
) -> (Duration, Duration) {
    let p = Arc::new(UploadProgress::new());
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (p, done) = (p.clone(), done.clone());
        tokio::spawn(async move {
            let mut worst = Duration::ZERO;
            while !done.load(Ordering::SeqCst) {
                worst = worst.max(p.idle_for());
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            worst
        })
    };
    let started = Instant::now();
    let stored = progress::scope(
        p.clone(),
        b.upload(key, body(bytes, 64 * 1024), Some(bytes.len() as u64)),
    )
    .await
    .unwrap_or_else(|e| panic!("upload of {key} over the slow link: {e}"));
    let took = started.elapsed();
    done.store(true, Ordering::SeqCst);
    assert_eq!(stored, bytes.len() as u64);
    (sampler.await.expect("sampler"), took)
}

/// A Put Blob (one block's worth) and a Put Block upload (two blocks, one connection
/// each) over 200 KB/s per connection: each takes seconds, yet the store is never seen
/// idle for more than a fraction of one block's time; the bytes read back exactly.
/// Without progress per frame the idleness seen grows to a whole block's time (checked:
/// with the blocks sent as plain bytes this test fails on the idleness).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_over_a_slow_link_report_progress_while_blocks_are_sent() {
    let direct = server();
    let (upstream, path) = split_endpoint(&direct["azure.endpoint.url"]);
    let proxy = SlowProxy::new(&upstream);
    let container = container_name("slow-link");
    let block = BLOCK.to_string();
    let settings = |endpoint: String| {
        let mut s = direct.clone();
        s.insert("azure.endpoint.url".into(), endpoint);
        s.insert("azure.container.name".into(), container.clone());
        s.insert("azure.upload.block.size".into(), block.clone());
        s.insert("azure.upload.blocks.in.flight".into(), "2".into());
        s
    };
    let fast = build(settings(direct["azure.endpoint.url"].clone()));
    fast.client()
        .create_container()
        .await
        .unwrap_or_else(|e| panic!("create container {container}: {e}"));
    let slow: Arc<dyn StorageBackend> =
        Arc::new(build(settings(format!("http://{}{path}", proxy.listen))));
    // Time of one block on the link, at the toxic's rate.
    let block_time = Duration::from_secs_f64(BLOCK as f64 / (RATE_KBPS * 1000) as f64);
    for (name, len) in [
        ("one-block.log", BLOCK),
        ("two-blocks.log", BLOCK + BLOCK / 2),
    ] {
        let key = ObjectKey::plain(name);
        let bytes = data(len, len as u8);
        let (worst_idle, took) = watched_upload(&slow, &key, &bytes).await;
        assert!(
            took > block_time / 2,
            "{name}: the link was not slow enough to test anything ({took:?})"
        );
        assert!(
            worst_idle < block_time / 3,
            "{name}: the store was seen idle for {worst_idle:?} while a block took \
             {block_time:?} on the link (upload {took:?}): blocks do not report progress"
        );
        assert!(get(&fast, &key).await == bytes, "{name}: bytes differ");
    }
    drop(proxy);
}
