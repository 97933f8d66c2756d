//! `RsmConfig::from_props`: defaults, aliases, and errors naming key, value and what is
//! allowed, for every kind of invalid value.

use std::collections::BTreeMap;
use std::time::Duration;

use tsm_core::config::{
    BackendKind, CONFIG_KEYS, ChunkCacheKind, ConfigError, ConfigKeyDoc, CustomMetadataField,
    KeyFiles, RsmConfig,
};
use tsm_storage::filesystem::KIND as FS;

static SECRET_KIND: BackendKind = BackendKind {
    name: "s3",
    aliases: &["io.aiven.kafka.tieredstorage.storage.s3.S3Storage"],
    keys: &[ConfigKeyDoc {
        name: "storage.aws.secret.access.key",
        default: "",
        doc: "secret",
        secret: true,
    }],
    build: |_| Box::pin(async { Err(ConfigError::new("storage.x", "y", "z")) }),
    validate: |_| Ok(()),
    upload_buffer_bytes: |_| Ok(0),
};

const KINDS: &[&BackendKind] = &[&FS, &SECRET_KIND];

fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    let mut m: BTreeMap<String, String> = [
        ("storage.backend.class", "filesystem"),
        ("storage.root", "/tmp/x"),
        ("chunk.size", "4194304"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for (k, v) in pairs {
        if v.is_empty() {
            m.remove(*k);
        } else {
            m.insert(k.to_string(), v.to_string());
        }
    }
    m
}

fn ok(pairs: &[(&str, &str)]) -> RsmConfig {
    RsmConfig::from_props(props(pairs), KINDS).unwrap_or_else(|e| panic!("{pairs:?}: {e}"))
}

fn err(pairs: &[(&str, &str)]) -> ConfigError {
    match RsmConfig::from_props(props(pairs), KINDS) {
        Err(e) => e,
        Ok(c) => panic!("{pairs:?} accepted: {c:?}"),
    }
}

#[test]
fn defaults_match_the_java_plugin() {
    let c = ok(&[("broker.id", "3")]);
    assert_eq!(c.backend.name, "filesystem");
    assert_eq!(c.storage.get("root"), Some("/tmp/x"));
    assert_eq!(c.chunk_size, 4_194_304);
    assert!(!c.compression_enabled && !c.compression_heuristic_enabled);
    assert!(c.encryption.is_none());
    assert_eq!(c.key_prefix, "");
    assert!(!c.key_prefix_mask);
    assert!(c.custom_metadata_fields.is_empty());
    assert_eq!(c.upload_rate_limit_bytes_per_second, None);
    assert_eq!(c.chunk_cache.kind, None);
    assert_eq!(
        c.chunk_cache.retention,
        Some(Duration::from_millis(600_000))
    );
    assert_eq!(c.chunk_cache.prefetch_max_size, 0);
    assert_eq!(c.manifest_cache.max_entries, Some(1000));
    assert_eq!(
        c.manifest_cache.retention,
        Some(Duration::from_millis(3_600_000))
    );
    assert_eq!(c.indexes_cache.size_bytes, Some(10_485_760));
    assert_eq!(
        c.indexes_cache.retention,
        Some(Duration::from_millis(600_000))
    );
    assert_eq!(c.indexes_cache.get_timeout, Duration::from_secs(10));
    assert_eq!(c.broker_id, Some(3));
    assert_eq!(
        c.reads.read_ahead_plain, None,
        "tsm.fetch.read.ahead.plain=auto"
    );
}

/// The request-cost knob reaches the engine: the broker's 1 MiB read split into 256 KiB
/// GETs by default, one GET at 1 MiB (`engine_reads::plain_ranges_download_exactly_the_bytes_asked`
/// checks the split itself).
#[test]
fn the_sub_range_size_reaches_the_engine() {
    let default = tsm_core::engine::EngineOptions::from_config(&ok(&[])).expect("options");
    assert_eq!(default.min_sub_range_bytes, 256 * 1024);
    let c = ok(&[("tsm.fetch.sub.range.min.bytes", "1048576")]);
    assert_eq!(c.reads.min_sub_range_bytes, 1 << 20);
    let o = tsm_core::engine::EngineOptions::from_config(&c).expect("options");
    assert_eq!(o.min_sub_range_bytes, 1 << 20);
}

#[test]
fn key_prefixes_that_leave_the_tree_are_refused_at_configure() {
    for bad in ["../", "tiered/../../", "/abs/", "./x"] {
        let e = err(&[("key.prefix", bad)]);
        assert_eq!(e.key, "key.prefix", "{bad}: {e}");
    }
    assert_eq!(
        ok(&[("key.prefix", "tiered/a..b/")]).key_prefix,
        "tiered/a..b/"
    );
}

#[test]
fn plaintext_reads_under_encryption_default_to_refused() {
    assert!(ok(&[]).encryption.is_none());
    let e = err(&[("tsm.encryption.plaintext.reads", "maybe")]);
    assert_eq!(e.key, "tsm.encryption.plaintext.reads", "{e}");
}

#[test]
fn read_ahead_of_plain_segments_is_auto_true_or_false() {
    for (value, want) in [
        ("auto", None),
        (" AUTO ", None),
        ("true", Some(true)),
        ("False", Some(false)),
    ] {
        let c = ok(&[("tsm.fetch.read.ahead.plain", value)]);
        assert_eq!(c.reads.read_ahead_plain, want, "{value:?}");
    }
}

#[test]
fn full_configuration_parses() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().display().to_string();
    let c = ok(&[
        (
            "storage.backend.class",
            "io.aiven.kafka.tieredstorage.storage.filesystem.FileSystemStorage",
        ),
        ("compression.enabled", "TRUE"),
        ("compression.heuristic.enabled", " true "),
        ("encryption.enabled", "true"),
        ("encryption.key.pair.id", "k2"),
        ("encryption.key.pairs", "k1, k2"),
        ("encryption.key.pairs.k1.public.key.file", "/keys/k1.pub"),
        ("encryption.key.pairs.k1.private.key.file", "/keys/k1.key"),
        ("encryption.key.pairs.k2.public.key.file", "/keys/k2.pub"),
        ("encryption.key.pairs.k2.private.key.file", "/keys/k2.key"),
        ("key.prefix", "tenant/"),
        ("key.prefix.mask", "true"),
        (
            "custom.metadata.fields.include",
            "OBJECT_KEY,REMOTE_SIZE,OBJECT_KEY",
        ),
        ("upload.rate.limit.bytes.per.second", "1048576"),
        (
            "fetch.chunk.cache.class",
            "io.aiven.kafka.tieredstorage.fetch.cache.DiskChunkCache",
        ),
        ("fetch.chunk.cache.path", &path),
        ("fetch.chunk.cache.size", "1073741824"),
        ("fetch.chunk.cache.retention.ms", "-1"),
        ("fetch.chunk.cache.prefetch.max.size", "8388608"),
        ("fetch.manifest.cache.size", "0"),
        ("fetch.indexes.cache.retention.ms", "5"),
        ("metrics.recording.level", "DEBUG"),
        ("segment.format", "kafka"),
    ]);
    assert!(c.compression_enabled && c.compression_heuristic_enabled);
    let enc = c.encryption.expect("encryption");
    assert_eq!(enc.active_key_pair_id, "k2");
    assert_eq!(enc.key_pairs.len(), 2);
    assert_eq!(
        enc.key_pairs[1].private_key_file.to_str(),
        Some("/keys/k2.key")
    );
    assert_eq!(c.key_prefix, "tenant/");
    assert_eq!(
        c.custom_metadata_fields,
        vec![
            CustomMetadataField::RemoteSize,
            CustomMetadataField::ObjectKey
        ]
    );
    assert_eq!(c.upload_rate_limit_bytes_per_second, Some(1_048_576));
    assert_eq!(
        c.chunk_cache.kind,
        Some(ChunkCacheKind::Disk {
            path: dir.path().to_path_buf()
        })
    );
    assert_eq!(c.chunk_cache.size_bytes, Some(1 << 30));
    assert_eq!(c.chunk_cache.retention, None);
    assert_eq!(c.chunk_cache.prefetch_max_size, 8_388_608);
    assert_eq!(c.manifest_cache.max_entries, Some(0));
    assert_eq!(c.indexes_cache.retention, Some(Duration::from_millis(5)));
    let mem = ok(&[
        ("fetch.chunk.cache.class", "memory"),
        ("fetch.chunk.cache.size", "1000"),
    ]);
    assert_eq!(mem.chunk_cache.kind, Some(ChunkCacheKind::Memory));
    assert_eq!(mem.chunk_cache.size_bytes, Some(1000));
}

/// The Java plugin reads `-1` as an unbounded cache; tsm refuses it for every cache size
/// (memory and disk chunk caches, manifests, indexes), naming the key: an unbounded cache
/// can take all of the broker's memory. Retentions keep `-1` (forever: the size bounds them).
#[test]
fn unbounded_cache_sizes_are_refused_naming_the_key() {
    for (class, key) in [
        (Some("memory"), "fetch.chunk.cache.size"),
        (
            Some("io.aiven.kafka.tieredstorage.fetch.cache.DiskChunkCache"),
            "fetch.chunk.cache.size",
        ),
        (None, "fetch.manifest.cache.size"),
        (None, "fetch.indexes.cache.size"),
    ] {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().display().to_string();
        let mut pairs = vec![(key, "-1")];
        if let Some(class) = class {
            pairs.push(("fetch.chunk.cache.class", class));
            pairs.push(("fetch.chunk.cache.path", &path));
        }
        let e = err(&pairs);
        assert_eq!(e.key, key, "{e}");
        assert_eq!(e.value, "-1", "{e}");
        assert!(e.allowed.contains("-1 (unbounded"), "{e}");
        assert!(e.allowed.contains("is refused"), "{e}");
    }
    let c = ok(&[
        ("fetch.manifest.cache.retention.ms", "-1"),
        ("fetch.indexes.cache.retention.ms", "-1"),
    ]);
    assert_eq!(c.manifest_cache.retention, None);
    assert_eq!(c.manifest_cache.max_entries, Some(1000));
    assert_eq!(c.indexes_cache.size_bytes, Some(10_485_760));
}

#[test]
fn backend_aliases_of_each_kind() {
    assert_eq!(ok(&[("storage.backend.class", "S3")]).backend.name, "s3");
    assert_eq!(
        ok(&[(
            "storage.backend.class",
            "io.aiven.kafka.tieredstorage.storage.s3.S3Storage"
        )])
        .backend
        .name,
        "s3"
    );
    let e = err(&[("storage.backend.class", "gcs")]);
    assert_eq!(e.key, "storage.backend.class");
    assert_eq!(e.value, "gcs");
    assert!(e.allowed.contains("filesystem, s3"), "{e}");
    assert_eq!(err(&[("storage.backend.class", "")]).value, "<missing>");
}

/// One invalid-value case: (overrides, key named, value shown, text in "allowed").
type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str, &'a str);

/// Every invalid value.
#[test]
fn every_invalid_value_names_key_value_and_allowed() {
    let cases: &[Case<'_>] = &[
        (&[("chunk.size", "")], "chunk.size", "<missing>", "required"),
        (
            &[("chunk.size", "0")],
            "chunk.size",
            "0",
            "from 1 to 1073741823",
        ),
        (
            &[("chunk.size", "1073741824")],
            "chunk.size",
            "1073741824",
            "from 1",
        ),
        (&[("chunk.size", "4MiB")], "chunk.size", "4MiB", "integer"),
        (
            &[("tsm.fetch.sub.range.min.bytes", "1000")],
            "tsm.fetch.sub.range.min.bytes",
            "1000",
            "from 1024 to 2147483647",
        ),
        (
            &[("tsm.fetch.read.ahead.plain", "sometimes")],
            "tsm.fetch.read.ahead.plain",
            "sometimes",
            "auto, true or false",
        ),
        (
            &[("compression.enabled", "yes")],
            "compression.enabled",
            "yes",
            "true or false",
        ),
        (
            &[("compression.heuristic.enabled", "true")],
            "compression.heuristic.enabled",
            "true",
            "compression.enabled=true",
        ),
        (
            &[("encryption.enabled", "1")],
            "encryption.enabled",
            "1",
            "true or false",
        ),
        (
            &[("encryption.enabled", "true")],
            "encryption.key.pair.id",
            "<missing>",
            "required",
        ),
        (
            &[
                ("encryption.enabled", "true"),
                ("encryption.key.pair.id", "a"),
            ],
            "encryption.key.pairs",
            "<missing>",
            "comma-separated",
        ),
        (
            &[
                ("encryption.enabled", "true"),
                ("encryption.key.pair.id", "a"),
                ("encryption.key.pairs", "a"),
            ],
            "encryption.key.pairs.a.public.key.file",
            "<missing>",
            "required",
        ),
        (
            &[
                ("encryption.enabled", "true"),
                ("encryption.key.pair.id", "a:b"),
                ("encryption.key.pairs", "a:b"),
            ],
            "encryption.key.pairs",
            "a:b",
            "without ':'",
        ),
        (
            &[
                ("encryption.enabled", "true"),
                ("encryption.key.pair.id", "z"),
                ("encryption.key.pairs", "a"),
                ("encryption.key.pairs.a.public.key.file", "p"),
                ("encryption.key.pairs.a.private.key.file", "q"),
            ],
            "encryption.key.pair.id",
            "z",
            "one of the ids",
        ),
        (
            &[("key.prefix.mask", "maybe")],
            "key.prefix.mask",
            "maybe",
            "true or false",
        ),
        (
            &[("custom.metadata.fields.include", "REMOTE_SIZE,SIZE")],
            "custom.metadata.fields.include",
            "REMOTE_SIZE,SIZE",
            "REMOTE_SIZE, OBJECT_PREFIX, OBJECT_KEY",
        ),
        (
            &[("upload.rate.limit.bytes.per.second", "1000")],
            "upload.rate.limit.bytes.per.second",
            "1000",
            "from 1048576",
        ),
        (
            &[("upload.rate.limit.bytes.per.second", "-1")],
            "upload.rate.limit.bytes.per.second",
            "-1",
            "from 1048576",
        ),
        (
            &[("fetch.chunk.cache.class", "redis")],
            "fetch.chunk.cache.class",
            "redis",
            "memory, disk",
        ),
        (
            &[("fetch.chunk.cache.class", "memory")],
            "fetch.chunk.cache.size",
            "<missing>",
            "required",
        ),
        (
            &[
                ("fetch.chunk.cache.class", "disk"),
                ("fetch.chunk.cache.size", "1"),
            ],
            "fetch.chunk.cache.path",
            "<missing>",
            "required",
        ),
        (
            &[
                ("fetch.chunk.cache.class", "disk"),
                ("fetch.chunk.cache.size", "1"),
                ("fetch.chunk.cache.path", "/nonexistent/tsm"),
            ],
            "fetch.chunk.cache.path",
            "/nonexistent/tsm",
            "existing directory",
        ),
        (
            &[("fetch.chunk.cache.size", "-2")],
            "fetch.chunk.cache.size",
            "-2",
            "an integer from 0",
        ),
        (
            &[("fetch.chunk.cache.retention.ms", "soon")],
            "fetch.chunk.cache.retention.ms",
            "soon",
            "-1",
        ),
        (
            &[("fetch.chunk.cache.prefetch.max.size", "-1")],
            "fetch.chunk.cache.prefetch.max.size",
            "-1",
            "from 0 to 2147483647",
        ),
        (
            &[("fetch.chunk.cache.get.timeout.ms", "0")],
            "fetch.chunk.cache.get.timeout.ms",
            "0",
            "from 1",
        ),
        (
            &[("fetch.chunk.cache.thread.pool.size", "2000")],
            "fetch.chunk.cache.thread.pool.size",
            "2000",
            "from 0 to 1024",
        ),
        (
            &[("fetch.manifest.cache.size", "x")],
            "fetch.manifest.cache.size",
            "x",
            "an integer from 0",
        ),
        (
            &[("fetch.manifest.cache.retention.ms", "-5")],
            "fetch.manifest.cache.retention.ms",
            "-5",
            "-1",
        ),
        (
            &[("fetch.indexes.cache.size", "1.5")],
            "fetch.indexes.cache.size",
            "1.5",
            "an integer from 0",
        ),
        (
            &[("fetch.indexes.cache.get.timeout.ms", "-1")],
            "fetch.indexes.cache.get.timeout.ms",
            "-1",
            "from 1",
        ),
        (
            &[("segment.format", "iceberg")],
            "segment.format",
            "iceberg",
            "kafka",
        ),
        (
            &[("metrics.recording.level", "WARN")],
            "metrics.recording.level",
            "WARN",
            "INFO, DEBUG or TRACE",
        ),
        (
            &[("metrics.num.samples", "0")],
            "metrics.num.samples",
            "0",
            "from 1",
        ),
        (&[("broker.id", "one")], "broker.id", "one", "integer"),
    ];
    for (pairs, key, value, allowed) in cases {
        let e = err(pairs);
        assert_eq!(e.key, *key, "{pairs:?}: {e}");
        assert_eq!(e.value, *value, "{pairs:?}: {e}");
        assert!(e.allowed.contains(allowed), "{pairs:?}: {e}");
        let msg = e.to_string();
        assert!(msg.contains(key) && msg.contains(value), "{msg}");
    }
}

#[test]
fn unknown_keys_are_accepted_and_secrets_never_in_debug() {
    let c = ok(&[
        ("storage.backend.class", "s3"),
        ("storage.aws.secret.access.key", "SUPERSECRET"),
        ("storage.not.a.key", "v"),
        ("totally.unknown", "v"),
    ]);
    assert_eq!(c.storage.get("aws.secret.access.key"), Some("SUPERSECRET"));
    assert!(!format!("{c:?}").contains("SUPERSECRET"));
    // A backend's typed getter on a secret key never shows the value.
    let e = c
        .storage
        .get_bool("aws.secret.access.key", false)
        .expect_err("not a bool");
    assert_eq!(e.key, "storage.aws.secret.access.key");
    assert_eq!(e.value, "<redacted>");
    assert!(!e.to_string().contains("SUPERSECRET"));
}

#[test]
fn config_keys_are_unique_and_documented() {
    let mut names: Vec<&str> = CONFIG_KEYS.iter().map(|k| k.name).collect();
    names.sort();
    let n = names.len();
    names.dedup();
    assert_eq!(n, names.len(), "duplicate keys in CONFIG_KEYS");
    for k in CONFIG_KEYS {
        assert!(!k.doc.is_empty(), "{} undocumented", k.name);
    }
    for k in FS.keys {
        assert!(!k.doc.is_empty(), "storage.{} undocumented", k.name);
    }
}

/// Kafka 4.4 KRaft brokers pass `node.id` (and no `broker.id`): it is a known key, and
/// it names the broker. Found by the real-broker test (a warning on every start).
#[test]
fn node_id_is_a_known_key() {
    let mut p = props(&[]);
    p.remove("broker.id");
    p.insert("node.id".into(), "7".into());
    let c = RsmConfig::from_props(p, KINDS).expect("valid");
    assert_eq!(c.broker_id, Some(7));
    assert!(tsm_core::config::names::is_core_key("node.id"));
    let e = err(&[("node.id", "seven")]);
    assert_eq!(e.key, "node.id");
    // Both set (Kafka 4.x passes both): node.id names the broker (KAFKA-18628).
    let mut p = props(&[]);
    p.insert("broker.id".into(), "1".into());
    p.insert("node.id".into(), "7".into());
    let c = RsmConfig::from_props(p, KINDS).expect("valid");
    assert_eq!(c.broker_id, Some(7));
}

/// Backend keys are documented with their full name (`storage.s3.bucket.name`) and read
/// without `storage.`; a documented key must not be reported unknown, and a secret one
/// must be redacted in errors. (The docs once printed `storage.storage.s3...`.)
#[test]
fn backend_keys_are_full_names_and_secrets_are_redacted() {
    let c = ok(&[
        ("storage.backend.class", "s3"),
        ("storage.aws.secret.access.key", "hunter2"),
    ]);
    assert_eq!(c.backend.name, "s3");
    assert_eq!(SECRET_KIND.keys[0].storage_key(), "aws.secret.access.key");
    let e = c
        .storage
        .get_u64("aws.secret.access.key", 0, 0, 1)
        .expect_err("not a number");
    assert_eq!(e.key, "storage.aws.secret.access.key");
    assert!(!e.to_string().contains("hunter2"), "{e}");
}

#[test]
fn check_reports_every_problem_and_from_props_the_first() {
    use tsm_core::config::{ConfigProblem, check};
    let p = props(&[
        ("chunk.size", "0"),
        ("compression.heuristic.enabled", "maybe"),
        ("encryption.enabled", "true"),
        ("encryption.key.pairs", "k1"),
        ("fetch.chunk.cache.class", "memory"),
        ("tsm.jni.worker.threads", "-1"),
        ("tsm.jni.native.dir", "/opt/native"),
        ("chunk.sise", "1"),
        ("storage.rooot", "/x"),
    ]);
    let problems = check(&p, KINDS, KeyFiles::Read);
    let keys: Vec<&str> = problems.iter().map(ConfigProblem::key).collect();
    assert_eq!(
        keys,
        [
            "chunk.sise",
            "storage.rooot",
            "chunk.size",
            "compression.heuristic.enabled",
            "encryption.key.pair.id",
            "encryption.key.pairs.k1.public.key.file",
            "encryption.key.pairs.k1.private.key.file",
            "fetch.chunk.cache.size",
            "tsm.jni.worker.threads",
        ],
        "{problems:#?}"
    );
    match &problems[0] {
        ConfigProblem::Unknown(u) => assert_eq!(u.did_you_mean, Some("chunk.size")),
        other => panic!("{other:?}"),
    }
    match &problems[1] {
        ConfigProblem::Unknown(u) => {
            assert_eq!(u.did_you_mean, Some("storage.root"));
            assert_eq!(u.backend, Some("filesystem"));
        }
        other => panic!("{other:?}"),
    }
    // The engine stops at the first invalid value, the same one.
    assert_eq!(
        RsmConfig::from_props(p, KINDS).map(|_| ()).unwrap_err().key,
        "chunk.size"
    );
    // A configuration the engine accepts has no problem (JNI keys are known).
    assert!(
        check(
            &props(&[("tsm.jni.worker.threads", "2")]),
            KINDS,
            KeyFiles::Read
        )
        .is_empty()
    );
}
