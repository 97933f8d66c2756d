//! `tsm config check FILE`: exit 0 for a file the plugin accepts, exit 2 with one line per
//! problem naming the key otherwise; bare and `rsm.config.`-prefixed keys; secrets never
//! echoed; nothing contacted (an S3 endpoint nobody listens on is fine).

use crate::util::{World, tsm};

fn check(text: &str) -> (crate::util::Run, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("check.properties");
    std::fs::write(&file, text).expect("write properties");
    let run = tsm(&["config", "check", file.to_str().expect("utf-8 path")]);
    (run, dir)
}

/// The problem lines of a report (after the first line, which says what was read).
fn problems(run: &crate::util::Run) -> Vec<&str> {
    run.stdout
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with("ok:"))
        .collect()
}

#[test]
fn a_broker_file_the_plugin_accepts_passes() {
    // The same file every other command reads (encrypted: key files are read and parsed).
    let w = World::new(true);
    let file = w.path("tsm.properties");
    let run = tsm(&["config", "check", file.to_str().expect("utf-8 path")]).expect_code(0);
    assert!(
        run.stdout.contains("keys with the rsm.config. prefix"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("ok: every key is known"),
        "{}",
        run.stdout
    );
    assert!(problems(&run).is_empty(), "{}", run.stdout);
}

#[test]
fn bare_keys_with_jni_keys_and_an_s3_backend_pass_without_contacting_the_store() {
    let (run, _d) = check(
        "storage.backend.class=s3\nstorage.s3.bucket.name=b\nstorage.s3.region=eu-west-1\n\
         storage.s3.endpoint.url=http://127.0.0.1:9\nstorage.aws.access.key.id=AKIDCHECK\n\
         storage.aws.secret.access.key=s3cr3t-never-printed\nchunk.size=4194304\n\
         tsm.jni.worker.threads=4\ntsm.jni.native.dir=/opt/tsm/native\nbroker.id=3\n",
    );
    let run = run.expect_code(0);
    assert!(
        run.stdout
            .contains("10 bare keys (as the plugin receives them)"),
        "{}",
        run.stdout
    );
}

#[test]
fn every_problem_is_reported_naming_its_key() {
    let (run, _d) = check(
        "broker.id=1\nlog.dirs=/var/kafka\n\
         rsm.config.storage.backend.class=s3\n\
         rsm.config.storage.s3.bucket.nam=b\n\
         rsm.config.storage.aws.secret.access.key=s3cr3t-never-printed\n\
         rsm.config.chunk.size=abc\n\
         rsm.config.compresion.enabled=true\n\
         rsm.config.fetch.manifest.cache.size=-5\n\
         rsm.config.tsm.jni.worker.threads=999\n\
         chunk.size=5\n",
    );
    let run = run.expect_code(2);
    let lines = problems(&run);
    let expect = [
        "chunk.size: a plugin key without the rsm.config. prefix",
        "rsm.config.compresion.enabled: unknown key: did you mean rsm.config.compression.enabled?",
        "rsm.config.storage.s3.bucket.nam: unknown key of backend s3: did you mean rsm.config.storage.s3.bucket.name?",
        "rsm.config.chunk.size: invalid value abc: an integer from 1 to 1073741823",
        "rsm.config.fetch.manifest.cache.size: invalid value -5:",
        "rsm.config.tsm.jni.worker.threads: invalid value 999: an integer from 0 to 256",
        // The backend's own validation: its first problem.
        "rsm.config.storage.s3.bucket.name: missing: required",
    ];
    for e in expect {
        assert!(
            lines.iter().any(|l| l.starts_with(e)),
            "no line starting {e:?} in\n{}",
            run.stdout
        );
    }
    assert_eq!(lines.len(), expect.len(), "{}", run.stdout);
    assert!(
        run.stdout.contains("keys with the rsm.config. prefix")
            && run.stdout.contains("3 other keys"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains("7 configuration problems"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stdout.contains("s3cr3t") && !run.stderr.contains("s3cr3t"),
        "a value was echoed:\n{}\n{}",
        run.stdout,
        run.stderr
    );
}

#[test]
fn a_secret_value_in_an_error_is_redacted() {
    // An invalid secret value: the backend's error names the key, not the value.
    let (run, _d) = check(
        "storage.backend.class=azure\nstorage.azure.container.name=c\n\
         storage.azure.account.name=acct\nstorage.azure.account.key=not*base64*s3cr3t\n\
         chunk.size=1024\n",
    );
    let run = run.expect_code(2);
    assert!(
        run.stdout
            .contains("storage.azure.account.key: invalid value <redacted>"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("s3cr3t"), "{}", run.stdout);
}

#[test]
fn unreadable_key_files_and_json_output() {
    let (run, _d) = check(
        "storage.backend.class=filesystem\nstorage.root=/tmp\nchunk.size=1024\n\
         encryption.enabled=true\nencryption.key.pair.id=k1\nencryption.key.pairs=k1,k2\n\
         encryption.key.pairs.k1.public.key.file=/nonexistent/k1-public.pem\n\
         encryption.key.pairs.k1.private.key.file=/nonexistent/k1-private.pem\n",
    );
    let run = run.expect_code(2);
    let lines = problems(&run);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("encryption.key.pairs.k2.public.key.file: missing"))
            && lines
                .iter()
                .any(|l| l.starts_with("encryption.key.pairs.k2.private.key.file: missing")),
        "{}",
        run.stdout
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("bad.properties");
    std::fs::write(&file, "storage.backend.class=filesystem\nchunk.size=0\n").expect("write");
    let run = tsm(&["--json", "config", "check", file.to_str().expect("utf-8")]).expect_code(2);
    let v = run.json();
    assert_eq!(v["style"], "bare");
    let keys: Vec<&str> = v["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter_map(|p| p["key"].as_str())
        .collect();
    assert_eq!(keys, ["chunk.size", "storage.root"], "{v}");
}

#[test]
fn skip_key_files_checks_a_manifest_away_from_the_broker() {
    // A Kubernetes manifest's config names files of a Secret mounted only in the pod.
    let text = "rsm.config.storage.backend.class=filesystem\nrsm.config.storage.root=/tmp\n\
         rsm.config.chunk.size=4194304\n\
         rsm.config.encryption.enabled=true\nrsm.config.encryption.key.pair.id=k1\n\
         rsm.config.encryption.key.pairs=k1\n\
         rsm.config.encryption.key.pairs.k1.public.key.file=/mnt/absent/k1-public.pem\n\
         rsm.config.encryption.key.pairs.k1.private.key.file=/mnt/absent/k1-private.pem\n";
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("rsm.properties");
    std::fs::write(&file, text).expect("write");
    let path = file.to_str().expect("utf-8");
    // By default the files are read, as configure does: absent files are problems.
    let run = tsm(&["config", "check", path]).expect_code(2);
    assert!(
        run.stdout
            .contains("rsm.config.encryption.key.pairs.k1.public.key.file: invalid value"),
        "{}",
        run.stdout
    );
    // Skipped, the rest still passes...
    tsm(&["config", "check", "--skip-key-files", path]).expect_code(0);
    // ...and a pair that names no file is still a problem.
    let without = text.replace(
        "rsm.config.encryption.key.pairs.k1.private.key.file=/mnt/absent/k1-private.pem\n",
        "",
    );
    std::fs::write(&file, without).expect("write");
    let run = tsm(&["config", "check", "--skip-key-files", path]).expect_code(2);
    assert!(
        run.stdout
            .contains("rsm.config.encryption.key.pairs.k1.private.key.file: missing"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_missing_file_is_a_usage_error() {
    let run = tsm(&["config", "check", "/nonexistent/server.properties"]).expect_code(2);
    assert!(
        run.stderr.contains("/nonexistent/server.properties"),
        "{}",
        run.stderr
    );
}

/// Every key of the Java plugin's S3 configuration is accepted: the credentials provider
/// class (mapped to the Rust SDK's provider, shown as set, not masked) and the legacy MD5
/// switch; a provider class tsm cannot map is a problem naming the key and the classes it
/// takes.
#[test]
fn the_java_plugins_s3_keys_pass_and_an_unknown_provider_class_is_named() {
    let base = "rsm.config.storage.backend.class=io.aiven.kafka.tieredstorage.storage.s3.S3Storage\n\
                rsm.config.storage.s3.bucket.name=b\nrsm.config.storage.s3.region=eu-west-1\n\
                rsm.config.chunk.size=4194304\nrsm.config.storage.s3.legacy.md5.plugin.enabled=true\n";
    let class = "software.amazon.awssdk.auth.credentials.WebIdentityTokenFileCredentialsProvider";
    let (run, dir) = check(&format!(
        "{base}rsm.config.storage.aws.credentials.provider.class={class}\n"
    ));
    let run = run.expect_code(0);
    assert!(problems(&run).is_empty(), "{}", run.stdout);
    let file = dir.path().join("check.properties");
    let v = tsm(&["--json", "config", "check", file.to_str().expect("utf-8")])
        .expect_code(0)
        .json();
    assert_eq!(
        v["effective"]["storage.aws.credentials.provider.class"], class,
        "{v}"
    );
    assert_eq!(
        v["effective"]["storage.s3.legacy.md5.plugin.enabled"],
        "true"
    );

    let (run, _d) = check(&format!(
        "{base}rsm.config.storage.aws.credentials.provider.class=com.example.VaultProvider\n"
    ));
    let run = run.expect_code(2);
    let lines = problems(&run);
    assert_eq!(lines.len(), 1, "{}", run.stdout);
    assert!(
        lines[0].starts_with("rsm.config.storage.aws.credentials.provider.class: invalid value com.example.VaultProvider")
            && lines[0].contains("DefaultCredentialsProvider")
            && lines[0].contains("WebIdentityTokenFileCredentialsProvider"),
        "{}",
        run.stdout
    );
}

/// The S3 keys of `bare_keys_...` above, with `extra` lines.
fn s3_file(extra: &str) -> String {
    format!(
        "storage.backend.class=s3\nstorage.s3.bucket.name=b\nstorage.s3.region=eu-west-1\n\
         storage.s3.endpoint.url=http://127.0.0.1:9\nstorage.aws.access.key.id=AKIDCHECK\n\
         storage.aws.secret.access.key=s3cr3t-never-printed\nchunk.size=4194304\n{extra}"
    )
}

/// Found by trying: a budget the broker's `configure` refuses (one S3 copy with the Java
/// plugin's 25 MiB parts does not fit 256 MiB beside the read-ahead store and the reads)
/// passed `config check` and failed only at broker start. The check now plans the pools
/// as `configure` does, with the backend's part buffers computed from its keys.
#[test]
fn a_memory_budget_the_broker_would_refuse_is_reported_naming_the_key() {
    let (run, _d) = check(&s3_file(
        "tsm.memory.budget.bytes=268435456\ntsm.max.in.flight=2\n",
    ));
    let run = run.expect_code(2);
    let lines = problems(&run);
    assert_eq!(lines.len(), 1, "{}", run.stdout);
    assert!(
        lines[0].starts_with(
            "tsm.memory.budget.bytes: invalid value 268435456: leaves 0 MiB for reads"
        ),
        "{}",
        run.stdout
    );
    assert!(
        !lines[0].contains("this machine's default"),
        "{}",
        run.stdout
    );

    // The backend's own keys count: 5 MiB parts leave room for reads.
    let (run, _d) = check(&s3_file(
        "tsm.memory.budget.bytes=268435456\ntsm.max.in.flight=2\n\
         storage.s3.multipart.upload.part.size=5242880\n",
    ));
    run.expect_code(0);

    // A copies' pool too small for one copy names its own key; without tsm.max.in.flight
    // the message says the plan used this machine's core count.
    let (run, _d) = check(&s3_file("tsm.memory.copy.bytes=1048576\n"));
    let run = run.expect_code(2);
    let lines = problems(&run);
    assert_eq!(lines.len(), 1, "{}", run.stdout);
    assert!(
        lines[0].starts_with(
            "tsm.memory.copy.bytes: invalid value 1048576: the copies' pool cannot hold one copy"
        ),
        "{}",
        run.stdout
    );
    assert!(lines[0].contains("tsm.max.in.flight = "), "{}", run.stdout);
    assert!(
        lines[0].contains("this machine's default"),
        "{}",
        run.stdout
    );
}
