//! The commands against a real S3 service (MinIO, started by scripts/test.d/40-cli.sh):
//! segments written by the engine over tsm-backend-s3, then ls, inspect, fetch, verify,
//! rekey, delete through the `tsm` binary with `storage.backend.class=s3`.
//!
//! `#[ignore]`d in plain `cargo test` (no service there); 40-cli.sh runs it with
//! `--ignored` after starting MinIO. Environment: `TSM_TEST_S3_ENDPOINT`,
//! `TSM_TEST_S3_ACCESS_KEY`, `TSM_TEST_S3_SECRET_KEY`, `TSM_TEST_S3_REGION`
//! (`scripts/services/minio.sh env`). Without the endpoint the test fails.

#![cfg(feature = "s3")]

use std::collections::BTreeMap;

use tsm_core::StorageConfig;

use crate::util::World;

fn server() -> BTreeMap<String, String> {
    let endpoint = std::env::var("TSM_TEST_S3_ENDPOINT").unwrap_or_else(|_| {
        panic!(
            "TSM_TEST_S3_ENDPOINT is not set: run scripts/test.d/40-cli.sh (starts MinIO), or \
             `eval $(scripts/services/minio.sh env)` after `minio.sh start`"
        )
    });
    let var = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
    let mut m = BTreeMap::new();
    m.insert("s3.endpoint.url".to_string(), endpoint);
    m.insert("s3.region".into(), var("TSM_TEST_S3_REGION", "us-east-1"));
    m.insert("s3.path.style.access.enabled".into(), "true".into());
    m.insert(
        "aws.access.key.id".into(),
        var("TSM_TEST_S3_ACCESS_KEY", "tsm-minio"),
    );
    m.insert(
        "aws.secret.access.key".into(),
        var("TSM_TEST_S3_SECRET_KEY", "tsm-minio-secret"),
    );
    m
}

#[test]
#[ignore = "needs MinIO: run by scripts/test.d/40-cli.sh (cargo test -- --ignored)"]
fn commands_against_minio() {
    let mut settings = server();
    let bucket = format!("tsm-cli-{}", std::process::id());
    settings.insert("s3.bucket.name".into(), bucket.clone());
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let b =
            tsm_backend_s3::S3Backend::from_storage_config(&StorageConfig::new(settings.clone()))
                .await
                .expect("S3 backend");
        b.sdk_client()
            .create_bucket()
            .bucket(&bucket)
            .send()
            .await
            .unwrap_or_else(|e| panic!("create bucket {bucket}: {e:?}"));
    });
    let mut w = World::new(true);
    w.props.remove("storage.root");
    w.props.insert("storage.backend.class".into(), "s3".into());
    for (k, v) in &settings {
        w.props.insert(format!("storage.{k}"), v.clone());
    }
    w.write_properties();
    let a = w.write_segment_with(&tsm_backend_s3::KIND, "s3topic", 0, 0, 60);
    let b = w.write_segment_with(&tsm_backend_s3::KIND, "s3topic", 1, 100, 20);

    let ls = w.tsm(&["--json", "ls"]).expect_code(0).json();
    assert_eq!(ls["segments"].as_array().map(Vec::len), Some(2), "{ls}");
    let i = w
        .tsm(&["--json", "inspect", &a.main_path])
        .expect_code(0)
        .json();
    assert_eq!(i["manifest"]["keyPairId"], "k1");
    let out = w.path("restored.log");
    let o = out.to_str().expect("utf-8");
    w.tsm(&["fetch", &a.main_path, "-o", o]).expect_code(0);
    assert!(
        std::fs::read(&out).expect("read") == a.log,
        "whole segment differs"
    );
    w.tsm(&["fetch", &b.main_path, "--range", "10-2000", "-o", o])
        .expect_code(0);
    assert!(
        std::fs::read(&out).expect("read") == b.log[10..=2000],
        "range differs"
    );
    w.tsm(&["verify"]).expect_code(0);
    // A remote bucket: the download is estimated on stderr before the first GET (no
    // question: stdin is not a terminal), and what it took is printed after.
    let r = w.tsm(&["--json", "verify", "-j", "2"]).expect_code(0);
    let v = r.json();
    assert!(
        r.stderr.contains("2 segment(s) in S3(") && r.stderr.contains("to download"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("downloaded"), "{}", r.stderr);
    assert_eq!(v["estimate"]["bytes"], v["downloaded"]["bytes"], "{v}");
    let (est, got) = (
        v["estimate"]["getRequests"].as_u64().expect("estimate"),
        v["downloaded"]["getRequests"].as_u64().expect("count"),
    );
    assert!(got > 0 && est.abs_diff(got) <= got / 4, "{v}");
    let v = w
        .tsm(&[
            "--json",
            "verify",
            "--segments",
            &b.meta.segment_id.to_string(),
        ])
        .expect_code(0)
        .json();
    assert_eq!(v["checked"], 1, "{v}");

    let r = w
        .tsm(&["--json", "rekey", "--to", "k2", "--limit", "1"])
        .expect_code(0)
        .json();
    assert_eq!(r["rewritten"], 1, "{r}");
    let r = w
        .tsm(&["--json", "rekey", "--to", "k2"])
        .expect_code(0)
        .json();
    assert_eq!(r["rewritten"], 1, "{r}");
    w.props.remove("encryption.key.pairs.k1.public.key.file");
    w.props.remove("encryption.key.pairs.k1.private.key.file");
    w.props.insert("encryption.key.pairs".into(), "k2".into());
    w.props.insert("encryption.key.pair.id".into(), "k2".into());
    w.write_properties();
    w.tsm(&["verify"]).expect_code(0);

    // The batched delete with Content-MD5 too (the Java plugin's legacy MD5 switch).
    w.props
        .insert("storage.s3.legacy.md5.plugin.enabled".into(), "true".into());
    w.write_properties();
    w.tsm(&["delete", &a.main_path]).expect_code(0);
    w.tsm(&["delete", &b.meta.segment_id.to_string()])
        .expect_code(0);
    let ls = w.tsm(&["--json", "ls"]).expect_code(0).json();
    assert_eq!(ls["segments"].as_array().map(Vec::len), Some(0), "{ls}");
}
