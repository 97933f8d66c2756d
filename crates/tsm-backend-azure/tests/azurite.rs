//! Azure-specific behaviour against real Azurite: every auth mode that works without
//! Entra ID, block uploads at block boundaries, the 50,000-block refusal, Azurite's range
//! deviations, and errors that name the container, status and code without secrets.

mod common;

use std::collections::BTreeMap;

use common::{BLOCK, backend, body, build, container_name, data, get, read_all, server};
use futures::StreamExt;
use tsm_backend_azure::config::{AZURITE_ACCOUNT, AZURITE_KEY};
use tsm_backend_azure::sas::{AccountKey, blob_account_sas};
use tsm_storage::{ByteRange, ObjectKey, StorageBackend};

fn endpoint(s: &BTreeMap<String, String>) -> String {
    s["azure.endpoint.url"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn block_boundaries_round_trip() {
    let b = backend("blocks", &[]).await;
    for (i, n) in [BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK, 3 * BLOCK + 7]
        .into_iter()
        .enumerate()
    {
        let key = ObjectKey::plain(format!("b/{n}.log"));
        let d = data(n, i as u8);
        for (item, size) in [(7777, None), (BLOCK, Some(n as u64)), (3 * BLOCK, None)] {
            let stored = b.upload(&key, body(&d, item), size).await.expect("upload");
            assert_eq!(stored, n as u64, "{key} item {item}");
            assert_eq!(get(&b, &key).await, d, "{key} item {item}");
        }
        let r = ByteRange::new(BLOCK as u64 - 3, BLOCK as u64 + 2).expect("range");
        let got = read_all(b.fetch(&key, Some(r)).await.expect("ranged")).await;
        let end = (BLOCK + 3).min(n);
        assert_eq!(got, d[BLOCK - 3..end], "{key} {r}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_more_than_50000_blocks_before_reading() {
    let b = backend("refuse", &[]).await;
    let key = ObjectKey::plain("huge.log");
    let poisoned = futures::stream::once(async {
        panic!("the body must not be read when the upload is refused")
    })
    .boxed();
    let size = 50_000 * BLOCK as u64 + 1;
    let err = b
        .upload(&key, poisoned, Some(size))
        .await
        .expect_err("refused");
    let msg = err.to_string();
    assert!(
        msg.contains("50001 blocks") && msg.contains("huge.log"),
        "{msg}"
    );
    assert!(msg.contains("storage.azure.upload.block.size"), "{msg}");
    let e = b
        .fetch(&key, None)
        .await
        .err()
        .expect("nothing stored under the refused key");
    assert!(e.is_not_found(), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azurite_range_deviations_guarded() {
    let b = backend("ranges", &[]).await;
    let empty = ObjectKey::plain("empty.log");
    b.upload(&empty, body(&[], 1), Some(0))
        .await
        .expect("upload empty");
    assert!(get(&b, &empty).await.is_empty());
    for (s, e) in [(0, 0), (0, 10), (5, 9)] {
        let r = ByteRange::new(s, e).expect("range");
        let err = b.fetch(&empty, Some(r)).await.err().expect("invalid");
        assert!(
            matches!(err, tsm_storage::BackendError::InvalidRange { .. }),
            "{r} on 0 bytes: {err}"
        );
    }
    let key = ObjectKey::plain("ten.log");
    b.upload(&key, body(b"0123456789", 3), None)
        .await
        .expect("upload");
    for (s, e) in [(10, 10), (10, 20), (11, 11)] {
        let r = ByteRange::new(s, e).expect("range");
        let err = b.fetch(&key, Some(r)).await.err().expect("invalid");
        assert!(
            matches!(err, tsm_storage::BackendError::InvalidRange { .. }),
            "{r} on 10 bytes: {err}"
        );
    }
    let r = ByteRange::new(9, 100).expect("range");
    assert_eq!(
        read_all(b.fetch(&key, Some(r)).await.expect("last")).await,
        b"9"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_string_and_sas_token_auth() {
    let settings = server();
    let ep = endpoint(&settings);
    let container = container_name("auth");
    // Connection string with AccountKey (creates the container).
    let cs = format!(
        "DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};\
         BlobEndpoint={ep};"
    );
    let mut m = BTreeMap::new();
    m.insert("azure.container.name".to_string(), container.clone());
    m.insert("azure.connection.string".to_string(), cs);
    m.insert("azure.max.retries".to_string(), "0".to_string());
    let by_cs = build(m);
    by_cs.client().create_container().await.expect("create");
    let key = ObjectKey::plain("auth/a.log");
    by_cs
        .upload(&key, body(b"hello", 2), Some(5))
        .await
        .expect("upload with connection string");

    // A SAS token (derived here with the key, as an operator would paste one), no account
    // name: endpoint + token only.
    let akey = AccountKey::from_base64(AZURITE_KEY).expect("key");
    let (token, _) = blob_account_sas(
        AZURITE_ACCOUNT,
        &akey,
        time::OffsetDateTime::now_utc(),
        true,
    );
    let mut m = BTreeMap::new();
    m.insert("azure.container.name".to_string(), container.clone());
    m.insert("azure.endpoint.url".to_string(), ep.clone());
    m.insert(
        "azure.sas.token".to_string(),
        format!("?{}", token.as_str()),
    );
    m.insert("azure.max.retries".to_string(), "0".to_string());
    let by_sas = build(m);
    assert_eq!(get(&by_sas, &key).await, b"hello");
    let listed: Vec<_> = by_sas
        .list(&ObjectKey::plain("auth/"))
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .map(|r| r.expect("list"))
        .collect();
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].key.as_str(), listed[0].size), ("auth/a.log", 5));
    by_sas
        .delete(std::slice::from_ref(&key))
        .await
        .expect("delete");
    by_sas
        .delete(std::slice::from_ref(&key))
        .await
        .expect("delete again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_name_container_status_and_hide_secrets() {
    let mut settings = server();
    // Missing container.
    settings.insert("azure.container.name".into(), container_name("missing"));
    let b = build(settings.clone());
    let key = ObjectKey::new("secret-prefix/", "x.log", true);
    let err = b
        .upload(&key, body(b"abc", 3), Some(3))
        .await
        .expect_err("no container");
    let msg = err.to_string();
    assert!(msg.contains(b.container()) && msg.contains("404"), "{msg}");
    assert!(msg.contains("ContainerNotFound"), "{msg}");
    assert!(!msg.contains("secret-prefix"), "{msg}");
    let err = b.fetch(&key, None).await.err().expect("no container");
    assert!(
        !err.is_not_found(),
        "a missing container is not a missing object: {err}"
    );

    // Wrong key: 403, no signature in the message or its sources.
    let created = backend("wrongkey", &[]).await;
    settings.insert(
        "azure.container.name".into(),
        created.container().to_string(),
    );
    settings.insert(
        "azure.account.key".into(),
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="
            .into(),
    );
    let bad = build(settings);
    let err = bad
        .upload(&key, body(b"abc", 3), Some(3))
        .await
        .expect_err("bad key");
    let mut chain = String::new();
    let mut src: Option<&dyn std::error::Error> = Some(&err);
    while let Some(s) = src {
        chain.push_str(&s.to_string());
        chain.push('\n');
        src = s.source();
    }
    assert!(chain.contains("403"), "{chain}");
    assert!(
        !chain.contains("sig=") || chain.contains("sig=<redacted>"),
        "{chain}"
    );
    assert!(!err.is_transient(), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_follows_pages() {
    let b = backend("paging", &[]).await;
    let keys: Vec<ObjectKey> = (0..23)
        .map(|i| ObjectKey::plain(format!("p/{i:03}.log")))
        .collect();
    futures::stream::iter(&keys)
        .for_each_concurrent(8, |k| {
            let b = &b;
            async move {
                b.upload(k, body(b"x", 1), Some(1)).await.expect("upload");
            }
        })
        .await;
    b.upload(&ObjectKey::plain("q/other.log"), body(b"y", 1), Some(1))
        .await
        .expect("upload");
    let mut listed: Vec<String> = b
        .client()
        .list_paged(&ObjectKey::plain("p/"), Some(5))
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .map(|r| r.expect("list").key)
        .collect();
    listed.sort();
    let want: Vec<String> = keys.iter().map(|k| k.as_str().to_string()).collect();
    assert_eq!(listed, want, "5 pages of at most 5");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_block_upload_leaves_previous_state() {
    let b = backend("failblocks", &[]).await;
    let failing = |key: &ObjectKey, n: usize| {
        let head = body(&data(n, 9), 10_000);
        let key = key.clone();
        let tail = futures::stream::once(async move {
            Err(tsm_storage::BackendError::Other {
                key,
                detail: "injected body failure".into(),
                source: None,
            })
        });
        head.chain(tail).boxed()
    };
    // An existing blob survives a failed multi-block replacement.
    let key = ObjectKey::plain("f/existing.log");
    let old = data(2 * BLOCK + 5, 1);
    b.upload(&key, body(&old, 4096), None)
        .await
        .expect("upload");
    let n = 3 * BLOCK + BLOCK / 2; // 3 blocks staged before the failure
    let err = b
        .upload(&key, failing(&key, n), None)
        .await
        .expect_err("fails");
    assert!(err.to_string().contains("injected"), "{err}");
    assert_eq!(get(&b, &key).await, old);
    // A new name stays absent, and its staged blocks are not listed.
    let fresh = ObjectKey::plain("f/new.log");
    b.upload(&fresh, failing(&fresh, n), None)
        .await
        .expect_err("fails");
    assert!(
        b.fetch(&fresh, None)
            .await
            .err()
            .expect("absent")
            .is_not_found()
    );
    let listed: Vec<String> = b
        .list(&ObjectKey::plain("f/"))
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .map(|r| r.expect("list").key)
        .collect();
    assert_eq!(listed, vec!["f/existing.log".to_string()]);
    // The name is still usable afterwards (stale uncommitted blocks do not interfere).
    let d = data(2 * BLOCK + 1, 3);
    b.upload(&fresh, body(&d, 50_000), None)
        .await
        .expect("upload");
    assert_eq!(get(&b, &fresh).await, d);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_block_uploads_to_one_name_never_mix() {
    let b = backend("samename", &[]).await;
    let key = ObjectKey::plain("same.log");
    let a = data(4 * BLOCK + 11, 21);
    let c = data(3 * BLOCK + 99, 42);
    let (ra, rc) = tokio::join!(
        b.upload(&key, body(&a, 30_000), None),
        b.upload(&key, body(&c, 70_000), None)
    );
    // Azure (and Azurite) discard all uncommitted blocks of a blob when a block list is
    // committed, so the later commit may fail with InvalidBlockList: transient, never a mix.
    for r in [&ra, &rc] {
        if let Err(e) = r {
            assert!(
                e.is_transient() && e.to_string().contains("InvalidBlockList"),
                "{e}"
            );
        }
    }
    assert!(ra.is_ok() || rc.is_ok(), "one upload must win");
    let got = get(&b, &key).await;
    assert!(
        got == a || got == c,
        "a mix of two uploads ({} bytes)",
        got.len()
    );
}

/// Ranged reads against the contract model on blobs of a few sizes, around block
/// boundaries: `end` past the last byte is clamped, `start >= size` is InvalidRange.
#[test]
fn ranged_reads_match_the_model() {
    use proptest::prelude::*;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let b = rt.block_on(backend("prop", &[]));
    let sizes = [0usize, 1, BLOCK, 2 * BLOCK + 3];
    let blobs: Vec<(ObjectKey, Vec<u8>)> = sizes
        .iter()
        .map(|&n| {
            let key = ObjectKey::plain(format!("prop/{n}.log"));
            let d = data(n, 77);
            rt.block_on(b.upload(&key, body(&d, 33_333), None))
                .expect("upload");
            (key, d)
        })
        .collect();
    let max = 2 * BLOCK as u64 + 10;
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(64));
    runner
        .run(&(0..blobs.len(), 0..max, 0..max + 5), |(i, start, len)| {
            let (key, d) = &blobs[i];
            let r = ByteRange::new(start, start + len).expect("range");
            let got = rt.block_on(async {
                match b.fetch(key, Some(r)).await {
                    Ok(s) => Ok(read_all(s).await),
                    Err(e) => Err(e),
                }
            });
            let size = d.len() as u64;
            match got {
                Ok(bytes) => {
                    prop_assert!(start < size, "{r} on {size} bytes read {}", bytes.len());
                    let end = r.end.min(size - 1) as usize;
                    prop_assert_eq!(&bytes[..], &d[start as usize..=end], "{}", r);
                }
                Err(e) => prop_assert!(
                    start >= size && matches!(e, tsm_storage::BackendError::InvalidRange { .. }),
                    "{r} on {size} bytes: {e}"
                ),
            }
            Ok(())
        })
        .expect("ranged reads follow the contract");
}

/// Requests per body size, counted by the backend's metrics: up to and including one
/// block is one Put Blob (exactly one block used to be staged and committed); more is one
/// Put Block per block and one Put Block List. A body shorter than its declared size fails
/// before the commit and leaves nothing under the name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_block_is_one_put_and_a_size_mismatch_commits_nothing() {
    let mut settings = server();
    settings.insert("azure.container.name".into(), container_name("requests"));
    let registry = tsm_storage::metrics::MetricsRegistry::new();
    let b = tsm_backend_azure::AzureBackend::from_storage_config(
        &tsm_storage::config::StorageConfig::new(settings).with_metrics(&registry),
    )
    .expect("build");
    b.client().create_container().await.expect("container");
    let count = |kind: &str| {
        registry
            .snapshot()
            .counter(&format!("client.azure.{kind}.requests"))
    };
    let one = ObjectKey::plain("r/one.log");
    let d = data(BLOCK, 5);
    b.upload(&one, body(&d, 7777), None).await.expect("upload");
    assert_eq!(get(&b, &one).await, d);
    assert_eq!(
        (
            count("blob-upload"),
            count("block-upload"),
            count("block-list-upload")
        ),
        (1, 0, 0)
    );
    let two = ObjectKey::plain("r/two.log");
    let d = data(BLOCK + 1, 6);
    b.upload(&two, body(&d, 7777), Some(d.len() as u64))
        .await
        .expect("upload");
    assert_eq!(get(&b, &two).await, d);
    assert_eq!(
        (
            count("blob-upload"),
            count("block-upload"),
            count("block-list-upload")
        ),
        (1, 2, 1)
    );

    let short = ObjectKey::plain("r/short.log");
    let d = data(2 * BLOCK + 9, 7);
    let err = b
        .upload(&short, body(&d, 7777), Some(d.len() as u64 + 1))
        .await
        .expect_err("size mismatch");
    let msg = err.to_string();
    assert!(
        msg.contains("size was given as") && msg.contains("r/short.log"),
        "{msg}"
    );
    assert_eq!(count("block-list-upload"), 1, "no commit");
    assert!(
        b.fetch(&short, None)
            .await
            .err()
            .expect("absent")
            .is_not_found()
    );
}
