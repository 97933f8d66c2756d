//! Engine failure paths over the filesystem backend (issue 3 "Tests"): corrupted
//! manifest, truncated object, tampered chunk, unknown key-pair id, missing objects,
//! failed copy cleanup, custom metadata (overrides, size limit), close, concurrency, and
//! `configure` from the broker's properties.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::engine_support::*;
use bytes::Bytes;
use futures::TryStreamExt;
use tsm_core::custom_metadata::CustomMetadata;
use tsm_core::engine::CompressionMode;
use tsm_core::{IndexType, ObjectKey, RsmError};

async fn key_ending(world: &World, suffix: &str) -> String {
    world
        .keys()
        .await
        .into_iter()
        .find(|k| k.ends_with(suffix))
        .unwrap_or_else(|| panic!("no object ending in {suffix}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_corrupted_manifest_is_a_clear_error() {
    let world = World::new();
    let engine = world.engine(options(1024, CompressionMode::On, None));
    let seg = segment(&world.path("s"), Rng::new(1).bytes(5000), true, 1);
    engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy");
    let manifest = key_ending(&world, ".rsm-manifest").await;
    put(
        &world,
        &manifest,
        b"{\"version\":\"1\",\"chunkIndex\":".to_vec(),
    )
    .await;
    let e = read_all(&engine, &seg.metadata, 0, None)
        .await
        .expect_err("corrupt");
    match &e {
        RsmError::Corrupt { object, detail } => {
            assert!(object.ends_with(".rsm-manifest"), "{e}");
            assert!(detail.contains("manifest"), "{e}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    // An unknown version is named.
    put(&world, &manifest, br#"{"version":"9"}"#.to_vec()).await;
    let e = engine
        .fetch_index(&seg.metadata, IndexType::Offset)
        .await
        .expect_err("v9");
    assert!(e.to_string().contains("version"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_truncated_objects_are_clear_errors() {
    let world = World::new();
    for compression in [CompressionMode::Off, CompressionMode::On] {
        let engine = world.engine(options(1000, compression, None));
        let seg = segment(&world.path("s"), Rng::new(2).bytes(4500), true, 2);
        engine
            .copy_log_segment_data(&seg.metadata, &seg.data)
            .await
            .expect("copy");
        let log = key_ending(&world, ".log").await;
        let mut bytes = get(&world, &log).await;
        bytes.truncate(bytes.len() - 3);
        put(&world, &log, bytes).await;
        // The first chunks are still readable; the last one is reported truncated.
        check_range(&engine, &seg, 0, Some(999), "truncated .log, first chunk").await;
        let e = read_all(&engine, &seg.metadata, 4000, None)
            .await
            .expect_err("truncated");
        let text = e.to_string();
        assert!(matches!(e, RsmError::Corrupt { .. }), "{text}");
        assert!(
            text.contains("truncated") && text.contains(".log") && text.contains("needs bytes 4"),
            "{text}"
        );

        let indexes = key_ending(&world, ".indexes").await;
        let mut bytes = get(&world, &indexes).await;
        bytes.truncate(bytes.len() - 1);
        put(&world, &indexes, bytes).await;
        let e = engine
            .fetch_index(&seg.metadata, IndexType::Transaction)
            .await
            .expect_err("truncated index");
        assert!(
            e.to_string().contains("truncated") && e.to_string().contains("TRANSACTION"),
            "{e}"
        );
        engine
            .delete_log_segment_data(&seg.metadata)
            .await
            .expect("delete");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_tampered_chunk_names_object_and_chunk() {
    let world = World::new();
    let ring = key_ring(world.dir.path(), "k1", 0);
    for compression in [CompressionMode::Off, CompressionMode::On] {
        // Without chunk digests (the Java plugin's segments), AES-GCM is what notices;
        // with them the digest does first (`engine_integrity.rs`).
        let mut opts = options(1000, compression, Some(ring.clone()));
        opts.write_integrity = false;
        let engine = world.engine(opts);
        let seg = segment(&world.path("s"), record_batches(30, 0, 3), true, 3);
        engine
            .copy_log_segment_data(&seg.metadata, &seg.data)
            .await
            .expect("copy");
        let log = key_ending(&world, ".log").await;
        let mut bytes = get(&world, &log).await;
        let last = bytes.len() - 20;
        bytes[last] ^= 0x40; // inside the last chunk's ciphertext or tag
        put(&world, &log, bytes).await;
        check_range(&engine, &seg, 0, Some(10), "untouched first chunk").await;
        let n = seg.log.len() as u64;
        let e = read_all(&engine, &seg.metadata, n - 1, None)
            .await
            .expect_err("tampered");
        let text = e.to_string();
        let last_chunk = (n - 1) / 1000;
        assert!(matches!(e, RsmError::Corrupt { .. }), "{text}");
        assert!(
            text.contains(&format!("chunk {last_chunk}")) && text.contains(".log"),
            "{text}"
        );
        assert!(text.contains("authentication"), "{text}");

        let indexes = key_ending(&world, ".indexes").await;
        let mut bytes = get(&world, &indexes).await;
        bytes[0] ^= 1; // OFFSET index's IV
        put(&world, &indexes, bytes).await;
        let e = engine
            .fetch_index(&seg.metadata, IndexType::Offset)
            .await
            .expect_err("tampered index");
        assert!(e.to_string().contains("OFFSET"), "{e}");
        engine
            .delete_log_segment_data(&seg.metadata)
            .await
            .expect("delete");
    }
    // Without encryption, a corrupted zstd frame is caught by decompression.
    let engine = world.engine(options(1000, CompressionMode::On, None));
    let seg = segment(&world.path("s"), record_batches(30, 0, 4), true, 4);
    engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy");
    let log = key_ending(&world, ".log").await;
    let mut bytes = get(&world, &log).await;
    for b in bytes.iter_mut().take(12) {
        *b = 0xff; // the first frame's magic number and header
    }
    put(&world, &log, bytes).await;
    let e = read_all(&engine, &seg.metadata, 0, Some(5))
        .await
        .expect_err("bad frame");
    assert!(e.to_string().contains("chunk 0"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_unknown_key_pair_id_is_named() {
    let world = World::new();
    let writer = world.engine(options(
        512,
        CompressionMode::Off,
        Some(key_ring(world.dir.path(), "old-key", 0)),
    ));
    let seg = segment(&world.path("s"), Rng::new(5).bytes(2000), false, 5);
    writer
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy");
    let reader = world.engine(options(
        512,
        CompressionMode::Off,
        Some(key_ring(world.dir.path(), "new-key", 1)),
    ));
    let e = read_all(&reader, &seg.metadata, 0, None)
        .await
        .expect_err("unknown id");
    assert!(matches!(e, RsmError::Crypto(_)), "{e}");
    assert!(e.to_string().contains("old-key"), "{e}");
    let e = reader
        .fetch_index(&seg.metadata, IndexType::Offset)
        .await
        .expect_err("unknown id");
    assert!(e.to_string().contains("old-key"), "{e}");
    // No encryption configured at all: also named.
    let plain = world.engine(options(512, CompressionMode::Off, None));
    let e = read_all(&plain, &seg.metadata, 0, None)
        .await
        .expect_err("not configured");
    assert!(
        e.to_string().contains("old-key") && e.to_string().contains("encryption"),
        "{e}"
    );
    // The writer still reads it; delete works for anyone.
    check_range(&writer, &seg, 0, None, "writer").await;
    plain
        .delete_log_segment_data(&seg.metadata)
        .await
        .expect("delete");
    assert!(world.keys().await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_missing_objects_are_not_found_and_delete_is_idempotent() {
    let world = World::new();
    let engine = world.engine(options(100, CompressionMode::Off, None));
    let seg = segment(&world.path("s"), Rng::new(6).bytes(1000), false, 6);
    // Never copied.
    let e = read_all(&engine, &seg.metadata, 0, None)
        .await
        .expect_err("missing");
    assert!(e.is_not_found(), "{e}");
    let e = engine
        .fetch_index(&seg.metadata, IndexType::Timestamp)
        .await
        .expect_err("missing");
    assert!(e.is_not_found(), "{e}");
    engine
        .delete_log_segment_data(&seg.metadata)
        .await
        .expect("delete of nothing");

    // Manifest present, .log missing.
    engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy");
    let log = key_ending(&world, ".log").await;
    world
        .backend
        .delete(&[ObjectKey::plain(log)])
        .await
        .expect("remove .log");
    let e = read_all(&engine, &seg.metadata, 0, None)
        .await
        .expect_err(".log missing");
    assert!(e.is_not_found(), "{e}");
    // No transaction index in this segment.
    let e = engine
        .fetch_index(&seg.metadata, IndexType::Transaction)
        .await
        .expect_err("no txn");
    assert!(
        e.is_not_found() && e.to_string().contains("TRANSACTION"),
        "{e}"
    );
    // Manifest missing, other objects present: delete still removes everything.
    let manifest = key_ending(&world, ".rsm-manifest").await;
    world
        .backend
        .delete(&[ObjectKey::plain(manifest)])
        .await
        .expect("remove manifest");
    engine
        .delete_log_segment_data(&seg.metadata)
        .await
        .expect("delete");
    engine
        .delete_log_segment_data(&seg.metadata)
        .await
        .expect("delete again");
    assert!(world.keys().await.is_empty(), "{:?}", world.keys().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_failed_copy_deletes_what_it_wrote() {
    let world = World::new();
    let engine = world.engine(options(100, CompressionMode::On, None));
    let mut seg = segment(&world.path("s"), Rng::new(7).bytes(1000), true, 7);
    // The .log uploads, then the time index cannot be read.
    seg.data.time_index = world.path("does-not-exist.timeindex");
    let e = engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect_err("missing index file");
    assert!(e.to_string().contains("does-not-exist.timeindex"), "{e}");
    assert!(
        world.keys().await.is_empty(),
        "left behind: {:?}",
        world.keys().await
    );
    let m = engine.metrics();
    assert_eq!(m.counters.get("copy.errors"), Some(&1), "{m:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_custom_metadata_overrides_keys_for_reads_and_delete() {
    use tsm_core::config::CustomMetadataField;
    let world = World::new();
    let mut opts = options(64, CompressionMode::Off, None);
    opts.key_prefix = "old/".into();
    opts.custom_metadata_fields = CustomMetadataField::ALL.to_vec();
    let writer = world.engine(opts.clone());
    let mut seg = segment(&world.path("s"), Rng::new(8).bytes(700), true, 8);
    let custom = writer
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy")
        .expect("custom metadata");
    assert!(custom.len() <= 128, "{} bytes", custom.len());
    let decoded = CustomMetadata::decode(&custom).expect("decodes");
    assert_eq!(decoded.object_prefix.as_deref(), Some("old/"));
    let stored: u64 = {
        let mut total = 0;
        for k in world.keys().await {
            total += get(&world, &k).await.len() as u64;
        }
        total
    };
    assert_eq!(decoded.remote_size, Some(stored as i64));
    // Point object_key somewhere else to prove it is used: move the objects.
    let mut moved = decoded.clone();
    let moved_key = format!("moved/here-{}", seg.metadata.segment_id);
    moved.object_key = Some(moved_key.clone());
    for k in world.keys().await {
        let bytes = get(&world, &k).await;
        let suffix = &k[k.rfind('.').expect("suffix")..];
        put(&world, &format!("old/{moved_key}{suffix}"), bytes).await;
        world
            .backend
            .delete(&[ObjectKey::plain(k)])
            .await
            .expect("delete original");
    }
    seg.metadata.custom_metadata = Some(moved.encode());
    opts.key_prefix = "new/".into();
    let reader = world.engine(opts);
    check_range(&reader, &seg, 0, None, "override").await;
    check_indexes(&reader, &seg, "override").await;
    // Overrides that leave the tree or name another segment are refused, for reads and
    // deletes alike, before anything is addressed.
    let original = seg.metadata.custom_metadata.clone();
    for (prefix, key) in [
        (Some("../"), Some(moved_key.clone())),
        (Some("/etc/"), Some(moved_key.clone())),
        (
            None,
            Some(format!("{moved_key}/../x-{}", seg.metadata.segment_id)),
        ),
        (
            None,
            Some("t-AAAAAAAAAAAAAAAAAAAAAA/0/00000000000000000000-other".to_string()),
        ),
    ] {
        let mut forged = moved.clone();
        if let Some(p) = prefix {
            forged.object_prefix = Some(p.into());
        }
        forged.object_key = key;
        seg.metadata.custom_metadata = Some(forged.encode());
        let e = read_all(&reader, &seg.metadata, 0, None)
            .await
            .expect_err("forged custom metadata");
        assert!(matches!(e, RsmError::InvalidArgument(_)), "{e:?}");
        assert!(e.to_string().contains("custom metadata"), "{e}");
        let e = reader
            .delete_log_segment_data(&seg.metadata)
            .await
            .expect_err("forged custom metadata");
        assert!(matches!(e, RsmError::InvalidArgument(_)), "{e:?}");
    }
    assert_eq!(
        world.keys().await.len(),
        3,
        "a refused delete removed objects"
    );
    seg.metadata.custom_metadata = original;
    reader
        .delete_log_segment_data(&seg.metadata)
        .await
        .expect("delete");
    assert!(world.keys().await.is_empty(), "{:?}", world.keys().await);
}

/// A manifest from a hostile bucket writer: a `fixed` chunk index of chunk size 1 and a
/// file size of 2^62 (2^62 chunks), and one within the count bound (2^24 chunks) whose
/// objects do not hold them. fetch, fetchIndex and delete each end within 10 s (delete
/// used to walk every chunk of a cached manifest to drop it from the caches).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_hostile_chunk_counts_end_fast() {
    let world = World::new();
    let engine = Arc::new(world.engine(options(1024, CompressionMode::Off, None)));
    for (chunk, file, expect_corrupt) in [(1u64, 1u64 << 62, true), (128, 1 << 31, false)] {
        let seg = segment(
            &world.path(&format!("s{chunk}")),
            Rng::new(4).bytes(5000),
            false,
            4,
        );
        engine
            .copy_log_segment_data(&seg.metadata, &seg.data)
            .await
            .expect("copy");
        let manifest = key_ending(&world, ".rsm-manifest").await;
        let text = String::from_utf8(get(&world, &manifest).await).expect("utf8");
        let start = text.find(r#""chunkIndex":{"#).expect("chunkIndex") + 13;
        let end = start + text[start..].find('}').expect("end");
        let hostile = format!(
            "{}{{\"type\":\"fixed\",\"originalChunkSize\":{chunk},\"originalFileSize\":{file},\
             \"transformedChunkSize\":{chunk},\"finalTransformedChunkSize\":{chunk}}}{}",
            &text[..start],
            &text[end + 1..]
        );
        put(&world, &manifest, hostile.into_bytes()).await;
        let ten = std::time::Duration::from_secs(10);
        let r = tokio::time::timeout(ten, read_all(&engine, &seg.metadata, 0, Some(4096)))
            .await
            .expect("fetch ends within 10 s");
        if expect_corrupt {
            let e = r.expect_err("hostile chunk count");
            assert!(matches!(e, RsmError::Corrupt { .. }), "{e:?}");
            assert!(e.to_string().contains("chunkIndex"), "{e}");
        }
        let _ = tokio::time::timeout(ten, engine.fetch_index(&seg.metadata, IndexType::Offset))
            .await
            .expect("fetchIndex ends within 10 s");
        // In its own task: a call that never yields cannot be timed out from within.
        let (e, m) = (engine.clone(), seg.metadata.clone());
        let delete = tokio::spawn(async move { e.delete_log_segment_data(&m).await });
        tokio::time::timeout(ten, delete)
            .await
            .expect("delete ends within 10 s")
            .expect("delete task")
            .expect("delete");
        assert!(world.keys().await.is_empty(), "{:?}", world.keys().await);
    }
}

/// With encryption on, a plaintext segment planted at an encrypted segment's keys is
/// refused (not served as that segment) unless `tsm.encryption.plaintext.reads` allows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_plaintext_segment_at_encrypted_keys_is_refused() {
    let world = World::new();
    let ring = key_ring(world.dir.path(), "k1", 1);
    let encrypted = world.engine(options(1024, CompressionMode::Off, Some(ring.clone())));
    let plain = world.engine(options(1024, CompressionMode::Off, None));
    let seg = segment(&world.path("s"), Rng::new(6).bytes(5000), false, 6);
    encrypted
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("encrypted copy");
    encrypted
        .delete_log_segment_data(&seg.metadata)
        .await
        .expect("delete");
    plain
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("plaintext copy at the same keys");
    let e = read_all(&encrypted, &seg.metadata, 0, None)
        .await
        .expect_err("plaintext under encryption");
    assert!(matches!(e, RsmError::Corrupt { .. }), "{e:?}");
    assert!(
        e.to_string().contains("tsm.encryption.plaintext.reads"),
        "{e}"
    );
    let e = encrypted
        .fetch_index(&seg.metadata, IndexType::Offset)
        .await
        .expect_err("plaintext index under encryption");
    assert!(matches!(e, RsmError::Corrupt { .. }), "{e:?}");
    let mut opts = options(1024, CompressionMode::Off, Some(ring));
    opts.plaintext_reads = true;
    let migrating = world.engine(opts);
    check_range(&migrating, &seg, 0, None, "plaintext reads allowed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_custom_metadata_over_the_limit_is_refused_before_upload() {
    use tsm_core::config::CustomMetadataField;
    let world = World::new();
    let mut opts = options(64, CompressionMode::Off, None);
    opts.key_prefix = format!("{}/", "p".repeat(100));
    opts.custom_metadata_fields = vec![
        CustomMetadataField::ObjectPrefix,
        CustomMetadataField::ObjectKey,
    ];
    let engine = world.engine(opts);
    let seg = segment(&world.path("s"), Rng::new(9).bytes(10), false, 9);
    let e = engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect_err("too big");
    assert!(matches!(e, RsmError::InvalidArgument(_)), "{e}");
    assert!(
        e.to_string().contains("128") && e.to_string().contains("custom metadata"),
        "{e}"
    );
    assert!(world.keys().await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_close_fails_new_calls_and_lets_streams_finish() {
    let world = World::new();
    let mut opts = options(100, CompressionMode::On, None);
    opts.max_get_bytes = 150; // one chunk per GET: the stream keeps fetching after close
    let engine = world.engine(opts);
    let seg = segment(&world.path("s"), Rng::new(10).bytes(3000), true, 10);
    engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy");
    let stream = engine
        .fetch_log_segment(&seg.metadata, 0, None)
        .await
        .expect("fetch");
    engine.close();
    engine.close();
    assert!(engine.is_closed());
    let parts: Vec<Bytes> = stream
        .try_collect()
        .await
        .expect("in-flight stream finishes");
    assert_eq!(parts.concat(), seg.log);
    for r in [
        read_all(&engine, &seg.metadata, 0, None).await.map(|_| ()),
        engine
            .fetch_index(&seg.metadata, IndexType::Offset)
            .await
            .map(|_| ()),
        engine.delete_log_segment_data(&seg.metadata).await,
        engine
            .copy_log_segment_data(&seg.metadata, &seg.data)
            .await
            .map(|_| ()),
    ] {
        assert!(matches!(r, Err(RsmError::Closed)), "{r:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_concurrent_calls_share_one_engine() {
    let world = World::new();
    let engine = Arc::new(world.engine(options(256, CompressionMode::On, None)));
    let segs: Vec<Arc<Segment>> = (0..4)
        .map(|i| {
            Arc::new(segment(
                &world.path("s"),
                Rng::new(20 + i).bytes(5000),
                i % 2 == 0,
                20 + i,
            ))
        })
        .collect();
    let copies = segs.iter().map(|s| {
        let (engine, s) = (engine.clone(), s.clone());
        tokio::spawn(async move { engine.copy_log_segment_data(&s.metadata, &s.data).await })
    });
    for c in futures::future::join_all(copies).await {
        c.expect("task").expect("copy");
    }
    let mut reads = Vec::new();
    for i in 0..16u64 {
        let (engine, s) = (engine.clone(), segs[(i % 4) as usize].clone());
        reads.push(tokio::spawn(async move {
            let start = i * 97 % 5000;
            check_range(&engine, &s, start, Some(start + 700), "concurrent").await;
            check_indexes(&engine, &s, "concurrent").await;
        }));
    }
    for r in futures::future::join_all(reads).await {
        r.expect("reader task");
    }
    let m = engine.metrics();
    assert_eq!(m.counters.get("copy.count"), Some(&4));
    assert_eq!(m.counters.get("fetch.count"), Some(&16));
    assert!(
        m.counters.get("cache.manifest.hits").copied().unwrap_or(0) > 0,
        "{m:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_configure_from_broker_properties() {
    let world = World::new();
    let (public, private) = write_pair(world.dir.path(), "k1", 0);
    let root = world.path("bucket");
    let props: BTreeMap<String, String> = [
        ("storage.backend.class", "filesystem".to_string()),
        ("storage.root", root.display().to_string()),
        ("chunk.size", "333".to_string()),
        ("compression.enabled", "true".to_string()),
        ("encryption.enabled", "true".to_string()),
        ("encryption.key.pair.id", "k1".to_string()),
        ("encryption.key.pairs", "k1".to_string()),
        (
            "encryption.key.pairs.k1.public.key.file",
            public.display().to_string(),
        ),
        (
            "encryption.key.pairs.k1.private.key.file",
            private.display().to_string(),
        ),
        ("key.prefix", "tiered/".to_string()),
        ("custom.metadata.fields.include", "REMOTE_SIZE".to_string()),
        ("upload.rate.limit.bytes.per.second", "1048576".to_string()),
        ("broker.id", "1".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let engine =
        tsm_core::RemoteStorageManager::configure(props, &[&tsm_storage::filesystem::KIND])
            .await
            .expect("configure");
    assert_eq!(engine.options().chunk_size, 333);
    let seg = segment(&world.path("s"), record_batches(20, 0, 11), true, 11);
    let custom = engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy")
        .expect("REMOTE_SIZE configured");
    assert!(
        CustomMetadata::decode(&custom)
            .expect("decodes")
            .remote_size
            .is_some()
    );
    assert!(
        world
            .keys()
            .await
            .iter()
            .all(|k| k.starts_with("tiered/topic-"))
    );
    check_range(&engine, &seg, 10, Some(2000), "configured").await;
    check_indexes(&engine, &seg, "configured").await;
    let m = engine.metrics();
    assert!(
        m.counters.get("bytes.uploaded").copied().unwrap_or(0) > 0,
        "{m:?}"
    );
    // An invalid value names the key.
    let bad: BTreeMap<String, String> = [
        (
            "storage.backend.class".to_string(),
            "filesystem".to_string(),
        ),
        ("chunk.size".to_string(), "zero".to_string()),
    ]
    .into_iter()
    .collect();
    let e = tsm_core::RemoteStorageManager::configure(bad, &[&tsm_storage::filesystem::KIND])
        .await
        .expect_err("bad chunk.size");
    assert!(e.to_string().contains("chunk.size"), "{e}");
}
