//! Fetch laziness and the manifest copy writes (issue 3 "The engine"): only chunks
//! overlapping the range are downloaded, adjacent chunks are coalesced into one GET of
//! bounded size, dropping the stream stops downloads, and the manifest has the spec's
//! fields (docs/object-format.md "Manifest").

use crate::engine_support::*;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use tsm_core::engine::CompressionMode;
use tsm_core::{ObjectKey, RemoteStorageManager};

fn downloaded(engine: &RemoteStorageManager) -> u64 {
    engine
        .metrics()
        .counters
        .get("bytes.downloaded")
        .copied()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_fetch_downloads_only_overlapping_chunks() {
    let world = World::new();
    let mut opts = options(1000, CompressionMode::Off, None);
    opts.max_get_bytes = 3000;
    opts.first_read_bytes = 3000;
    opts.get_part_bytes = 3000;
    // A plain segment without chunk digests, as the Java plugin writes them.
    opts.write_integrity = false;
    let engine = world.engine(opts.clone());
    let seg = segment(&world.path("s"), Rng::new(50).bytes(100_000), false, 50);
    engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy");
    check_range(&engine, &seg, 0, Some(0), "warm manifest").await;

    // Such a segment is read at exact ranges: 10 bytes inside chunk 50 download 10 bytes.
    let before = downloaded(&engine);
    check_range(&engine, &seg, 50_100, Some(50_109), "inside one chunk").await;
    assert_eq!(downloaded(&engine) - before, 10);

    // Across chunks 10..=14: exactly the range, in GETs of at most 3000 bytes.
    let before = downloaded(&engine);
    check_range(&engine, &seg, 10_500, Some(14_500), "five chunks").await;
    assert_eq!(downloaded(&engine) - before, 4001);

    // With chunk digests (tsm writes them) every chunk read is read whole and checked:
    // 10 bytes inside chunk 50 download chunk 50, and nothing else.
    opts.write_integrity = true;
    let digested = world.engine(opts);
    let seg2 = segment(&world.path("d"), Rng::new(51).bytes(100_000), false, 51);
    digested
        .copy_log_segment_data(&seg2.metadata, &seg2.data)
        .await
        .expect("copy");
    check_range(&digested, &seg2, 0, Some(0), "warm manifest").await;
    let before = downloaded(&digested);
    check_range(
        &digested,
        &seg2,
        50_100,
        Some(50_109),
        "inside one digested chunk",
    )
    .await;
    read_ahead_idle(&digested).await;
    assert_eq!(downloaded(&digested) - before, 1000);

    // Drop a whole-segment stream after its first item: the rest is never downloaded.
    let before = downloaded(&engine);
    let mut stream = engine
        .fetch_log_segment(&seg.metadata, 0, None)
        .await
        .expect("fetch");
    let first: Bytes = stream.next().await.expect("an item").expect("bytes");
    assert_eq!(&first[..], &seg.log[..first.len()]);
    drop(stream);
    let after = downloaded(&engine) - before;
    assert!(
        after <= 3000,
        "downloaded {after} bytes for one item of a dropped stream"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_writes_the_spec_manifest_fields() {
    let world = World::new();
    let ring = key_ring(world.dir.path(), "k1", 0);
    for (compression, encrypt, txn) in [
        (CompressionMode::Off, false, false),
        (CompressionMode::Off, true, true),
        (CompressionMode::On, true, false),
    ] {
        let engine = world.engine(options(700, compression, encrypt.then(|| ring.clone())));
        let seg = segment(&world.path("s"), Rng::new(51).bytes(2000), txn, 51);
        engine
            .copy_log_segment_data(&seg.metadata, &seg.data)
            .await
            .expect("copy");
        let key = world
            .keys()
            .await
            .into_iter()
            .find(|k| k.ends_with(".rsm-manifest"))
            .expect("manifest");
        let s = world
            .backend
            .fetch(&ObjectKey::plain(&key), None)
            .await
            .expect("get");
        let parts: Vec<Bytes> = s.try_collect().await.expect("read");
        let m: serde_json::Value = serde_json::from_slice(&parts.concat()).expect("json");
        let what = format!("{compression:?} encrypt={encrypt} txn={txn}: {m}");
        assert_eq!(m["version"], "1", "{what}");
        assert_eq!(
            m["compression"],
            compression == CompressionMode::On,
            "{what}"
        );
        let ci = &m["chunkIndex"];
        assert_eq!(ci["originalChunkSize"], 700, "{what}");
        assert_eq!(ci["originalFileSize"], 2000, "{what}");
        if compression == CompressionMode::On {
            assert_eq!(ci["type"], "variable", "{what}");
            assert!(ci["transformedChunks"].is_string(), "{what}");
        } else {
            let overhead = if encrypt { 28 } else { 0 };
            assert_eq!(ci["type"], "fixed", "{what}");
            assert_eq!(ci["transformedChunkSize"], 700 + overhead, "{what}");
            assert_eq!(ci["finalTransformedChunkSize"], 600 + overhead, "{what}");
        }
        let si = &m["segmentIndexes"];
        for f in ["offset", "timestamp", "producerSnapshot", "leaderEpoch"] {
            assert!(
                si[f]["position"].is_u64() && si[f]["size"].is_u64(),
                "{what}"
            );
        }
        assert_eq!(si["transaction"].is_null(), !txn, "{what}");
        if encrypt {
            let dk = m["encryption"]["dataKey"].as_str().expect("dataKey");
            assert!(
                dk.starts_with("k1:") && dk.matches(':').count() == 1,
                "{what}"
            );
            assert!(m["encryption"]["aad"].is_string(), "{what}");
        } else {
            assert!(m.get("encryption").is_none(), "{what}");
        }
        let md = &m["remoteLogSegmentMetadata"];
        let tip = &md["remoteLogSegmentId"]["topicIdPartition"];
        assert_eq!(tip["topicId"], "MWJ6FHTfRYy67jzwZdeqSQ", "{what}");
        assert_eq!(tip["topicPartition"]["topic"], "topic", "{what}");
        assert_eq!(tip["topicPartition"]["partition"], 7, "{what}");
        assert_eq!(
            md["remoteLogSegmentId"]["id"],
            seg.metadata.segment_id.to_string(),
            "{what}"
        );
        assert_eq!(md["startOffset"], 1000, "{what}");
        assert_eq!(md["segmentLeaderEpochs"]["3"], 1500, "{what}");
        engine
            .delete_log_segment_data(&seg.metadata)
            .await
            .expect("delete");
    }
}

/// The broker's read (issue 8): `fetchLogSegment(start)` without an end, read about one
/// chunk's worth, close. Whatever the transforms, and with or without the chunk cache
/// (`prefetch.max.size` 0), that downloads the one chunk read (two when the read crosses a
/// chunk boundary), not `max_get_bytes` and not the pipeline's `max_in_flight` chunks
/// ahead (the read path ramps both up from one chunk).
///
/// Paused clock: each `sleep` after a dropped stream returns only once the runtime has
/// nothing left to run (tokio auto-advances a paused clock when idle, and not while a
/// `spawn_blocking` task, e.g. a filesystem read, is running), so a wrongly started
/// read-ahead has finished and shows in the counter however slow the machine is.
#[tokio::test(start_paused = true)]
async fn engine_open_ended_read_of_one_chunk_downloads_one_chunk() {
    let world = World::new();
    let ring = key_ring(world.dir.path(), "k1", 0);
    for (compression, encrypt) in [
        (CompressionMode::Off, false),
        (CompressionMode::On, false),
        (CompressionMode::Off, true),
        (CompressionMode::On, true),
    ] {
        for cached in [false, true] {
            let mut opts = options(1000, compression, encrypt.then(|| ring.clone()));
            opts.max_get_bytes = 64 * 1024;
            opts.max_in_flight = 8;
            // The broker's read at this scale: plain segments' first read is half a
            // chunk, the next GETs as big.
            opts.first_read_bytes = 500;
            opts.get_part_bytes = 500;
            let registry = tsm_core::metrics::MetricsRegistry::new();
            let cache = cached.then(|| {
                tsm_core::cache::ChunkCache::memory(
                    tsm_core::cache::Bound::Bytes(1 << 20),
                    None,
                    &registry,
                )
            });
            let engine = RemoteStorageManager::with_registry(world.backend.clone(), opts, registry)
                .expect("engine options")
                .with_chunk_cache(cache);
            let log = record_batches(400, 0, 52);
            let seg = segment(&world.path("s"), log, false, 52);
            engine
                .copy_log_segment_data(&seg.metadata, &seg.data)
                .await
                .expect("copy");
            let what = format!("compression {compression:?} encrypt {encrypt} cached {cached}");
            check_range(&engine, &seg, 0, Some(0), "warm manifest").await;
            let before = downloaded(&engine);
            let mut stream = engine
                .fetch_log_segment(&seg.metadata, 20_500, None)
                .await
                .expect("fetch");
            let first: Bytes = stream.next().await.expect("an item").expect("bytes");
            assert_eq!(&first[..], &seg.log[20_500..21_000], "{what}");
            drop(stream);
            // Let a wrongly started read-ahead run to its end (paused clock: see above).
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            let got = downloaded(&engine) - before;
            // One stored chunk: at most 1000 bytes + zstd frame overhead + 28 (AES-GCM).
            assert!(got > 0 && got <= 1100, "{what}: downloaded {got} bytes");
            let one = got;

            // 1000 bytes crossing a chunk boundary: the two chunks holding them.
            let before = downloaded(&engine);
            let mut stream = engine
                .fetch_log_segment(&seg.metadata, 30_500, None)
                .await
                .expect("fetch");
            let mut got_bytes = Vec::new();
            while got_bytes.len() < 1000 {
                let b: Bytes = stream.next().await.expect("an item").expect("bytes");
                got_bytes.extend_from_slice(&b);
            }
            assert_eq!(&got_bytes[..1000], &seg.log[30_500..31_500], "{what}");
            drop(stream);
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            let got = downloaded(&engine) - before;
            // Two stored chunks (sizes vary a little under compression), never three.
            assert!(
                got > one && got <= one * 13 / 5,
                "{what}: crossing read downloaded {got} bytes, the one-chunk read {one}"
            );
        }
    }
}
