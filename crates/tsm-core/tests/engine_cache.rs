//! The engine's fetch path through the chunk cache (memory and disk) with prefetch:
//! byte-exact ranges, no re-download of cached or prefetched chunks, 8 concurrent readers
//! of one chunk cause one download, a failed load is retried (issue 3 "Caches", "Tests").

use std::sync::Arc;

use crate::engine_support::*;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt, stream};
use tsm_core::cache::{Bound, ChunkCache};
use tsm_core::engine::CompressionMode;
use tsm_core::metrics::MetricsRegistry;
use tsm_core::{ObjectKey, RemoteStorageManager};

fn downloaded(engine: &RemoteStorageManager) -> u64 {
    engine
        .metrics()
        .counters
        .get("bytes.downloaded")
        .copied()
        .unwrap_or(0)
}

fn cached_engine(
    world: &World,
    chunk: u32,
    prefetch: u64,
    disk: bool,
    encrypt: bool,
) -> RemoteStorageManager {
    let registry = MetricsRegistry::new();
    let cache = if disk {
        let base = world.path("cache");
        std::fs::create_dir_all(&base).expect("cache base");
        ChunkCache::disk(&base, Bound::Bytes(1 << 20), None, &registry).expect("disk cache")
    } else {
        ChunkCache::memory(Bound::Bytes(1 << 20), None, &registry)
    };
    let ring = encrypt.then(|| key_ring(world.dir.path(), "k1", 0));
    let mut opts = options(chunk, CompressionMode::Off, ring);
    opts.prefetch_max_size = prefetch;
    // These tests pin the chunk cache's own prefetch (`fetch.chunk.cache.prefetch.max.size`);
    // sequential read-ahead is tested in engine_reads.rs.
    opts.read_ahead_bytes = 0;
    RemoteStorageManager::with_registry(world.backend.clone(), opts, registry)
        .expect("engine options")
        .with_chunk_cache(Some(cache))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_cache_serves_ranges_and_avoids_redownloads() {
    for disk in [false, true] {
        for encrypt in [false, true] {
            let world = World::new();
            let engine = cached_engine(&world, 1000, 0, disk, encrypt);
            let seg = segment(&world.path("s"), Rng::new(40).bytes(9500), true, 40);
            engine
                .copy_log_segment_data(&seg.metadata, &seg.data)
                .await
                .expect("copy");
            let what = format!("disk={disk} encrypt={encrypt}");
            for (s, e) in [
                (0, None),
                (999, Some(1000)),
                (9499, None),
                (3000, Some(5999)),
                (10, Some(20)),
            ] {
                check_range(&engine, &seg, s, e, &what).await;
            }
            let before = downloaded(&engine);
            check_range(&engine, &seg, 0, None, &what).await;
            assert_eq!(
                downloaded(&engine),
                before,
                "{what}: a cached read downloaded bytes"
            );
            let m = engine.metrics();
            assert!(
                m.counters.get("cache.chunk.hits").copied().unwrap_or(0) >= 10,
                "{what}: {m:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_cache_prefetches_the_next_chunks() {
    let world = World::new();
    let engine = cached_engine(&world, 1000, 3000, false, false);
    let seg = segment(&world.path("s"), Rng::new(41).bytes(10_000), false, 41);
    engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy");
    check_range(&engine, &seg, 0, Some(10), "first chunk").await;
    read_ahead_idle(&engine).await;
    let before = downloaded(&engine);
    // Chunks 1..=3 were prefetched with chunk 0: reading them downloads only what the
    // prefetch keeps ahead of the chunk being read, on hits too (chunks 4..=6).
    check_range(&engine, &seg, 1000, Some(3999), "prefetched").await;
    read_ahead_idle(&engine).await;
    assert_eq!(
        downloaded(&engine) - before,
        3000,
        "prefetched chunks were downloaded again, or prefetch did not run on hits"
    );
    let hits = |e: &RemoteStorageManager| e.metrics().counter("cache.chunk.hits");
    let (before, hits_before) = (downloaded(&engine), hits(&engine));
    check_range(&engine, &seg, 4000, Some(6999), "prefetched on hits").await;
    read_ahead_idle(&engine).await;
    assert!(hits(&engine) >= hits_before + 3);
    // Chunks 7..=9, the rest of the segment, prefetched now.
    assert_eq!(downloaded(&engine) - before, 3000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_cache_eight_concurrent_readers_one_download() {
    let world = World::new();
    let engine = Arc::new(cached_engine(&world, 1000, 0, false, false));
    let seg = Arc::new(segment(
        &world.path("s"),
        Rng::new(42).bytes(8000),
        false,
        42,
    ));
    engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy");
    // Warm the manifest cache with a read of another chunk.
    check_range(&engine, &seg, 7000, Some(7000), "warm").await;
    let before = downloaded(&engine);
    let readers: Vec<_> = (0..8)
        .map(|i| {
            let (engine, seg) = (engine.clone(), seg.clone());
            tokio::spawn(async move {
                check_range(&engine, &seg, i * 10, Some(i * 10 + 50), "reader").await
            })
        })
        .collect();
    for r in futures::future::join_all(readers).await {
        r.expect("reader");
    }
    assert_eq!(
        downloaded(&engine) - before,
        1000,
        "exactly one download of chunk 0"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_cache_failed_load_is_retried() {
    let world = World::new();
    let engine = cached_engine(&world, 1000, 0, false, false);
    let seg = segment(&world.path("s"), Rng::new(43).bytes(3000), false, 43);
    engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy");
    check_range(&engine, &seg, 2500, None, "warm manifest").await;
    let log = world
        .keys()
        .await
        .into_iter()
        .find(|k| k.ends_with(".log"))
        .expect("log key");
    let bytes = {
        let s = world
            .backend
            .fetch(&ObjectKey::plain(&log), None)
            .await
            .expect("get");
        let parts: Vec<Bytes> = s.try_collect().await.expect("read");
        parts.concat()
    };
    world
        .backend
        .delete(&[ObjectKey::plain(&log)])
        .await
        .expect("remove .log");
    let e = read_all(&engine, &seg.metadata, 0, Some(10))
        .await
        .expect_err("load fails");
    assert!(e.is_not_found(), "{e}");
    let len = bytes.len() as u64;
    world
        .backend
        .upload(
            &ObjectKey::plain(&log),
            stream::once(async move { Ok(Bytes::from(bytes)) }).boxed(),
            Some(len),
        )
        .await
        .expect("restore .log");
    check_range(&engine, &seg, 0, Some(10), "retry").await;
}
