//! Delete / overwrite against what the engine caches (issue 18), made deterministic with a
//! backend that holds chosen GETs until the test releases them (`tsm_storage::gate`):
//! - a stream opened before an overwrite whose own chunk GET (not a read-ahead load) is in
//!   flight across it never leaves the old chunk for streams opened after it;
//! - a manifest GET in flight across an overwrite never leaves the old manifest for
//!   fetches after it;
//! - an overwrite after the manifest left the manifest cache still drops the segment's
//!   cached chunks (they are never served again).

mod engine_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use engine_support::*;
use futures::StreamExt;
use tsm_core::cache::{Bound, ChunkCache};
use tsm_core::engine::{CompressionMode, EngineOptions};
use tsm_core::metrics::MetricsRegistry;
use tsm_core::{RemoteStorageManager, StorageBackend};
use tsm_storage::gate::GatedBackend;

const CHUNK: u32 = 1024;

/// An engine with a memory chunk cache and no prefetch over `world`'s backend behind a
/// gate that holds every GET whose key ends with `suffix` while `holding` is set.
fn gated_engine(
    world: &World,
    suffix: &'static str,
    holding: Arc<AtomicBool>,
    tweak: impl FnOnce(&mut EngineOptions),
) -> (RemoteStorageManager, Arc<GatedBackend>) {
    let gate = Arc::new(GatedBackend::new(world.backend.clone(), move |key, _| {
        holding.load(Ordering::SeqCst) && key.as_str().ends_with(suffix)
    }));
    let registry = MetricsRegistry::new();
    let cache = ChunkCache::memory(Bound::Bytes(1 << 20), None, &registry);
    let mut opts = options(CHUNK, CompressionMode::Off, None);
    opts.prefetch_max_size = 0;
    opts.read_ahead_bytes = 0;
    tweak(&mut opts);
    let backend: Arc<dyn StorageBackend> = gate.clone();
    let engine =
        RemoteStorageManager::with_registry(backend, opts, registry).with_chunk_cache(Some(cache));
    (engine, gate)
}

#[tokio::test]
async fn a_streams_own_chunk_get_across_an_overwrite_never_caches_the_old_chunk() {
    let world = World::new();
    let holding = Arc::new(AtomicBool::new(false));
    let (engine, gate) = gated_engine(&world, ".log", holding.clone(), |_| {});
    let engine = Arc::new(engine);
    let old = Rng::new(1).bytes(4 * CHUNK as usize);
    let new = Rng::new(2).bytes(4 * CHUNK as usize);
    let v1 = segment(&world.path("v1"), old.clone(), false, 1);
    let v2 = segment(&world.path("v2"), new.clone(), false, 2);
    let meta = v1.metadata.clone();
    engine
        .copy_log_segment_data(&meta, &v1.data)
        .await
        .expect("copy v1");
    let chunk0 = 0..u64::from(CHUNK);

    // S1 (opened before the overwrite) loads chunk 0 itself; its GET is held with the old
    // bytes.
    holding.store(true, Ordering::SeqCst);
    let mut s1 = engine
        .fetch_log_segment(&meta, 0, Some(chunk0.end - 1))
        .await
        .expect("open s1");
    let s1 = tokio::spawn(async move { s1.next().await });
    let stale = gate.next_held().await;
    holding.store(false, Ordering::SeqCst);

    // The segment is overwritten (same metadata, same keys, new bytes) while it is held.
    engine
        .copy_log_segment_data(&meta, &v2.data)
        .await
        .expect("copy v2");

    // S1's load ends now with the old bytes (S1 opened before the overwrite: it may get
    // them).
    stale.release().wait().await;
    let first = s1
        .await
        .expect("s1 task")
        .expect("s1 item")
        .expect("s1 chunk 0");
    assert_eq!(&first[..], &old[..CHUNK as usize]);

    // A stream opened after the overwrite gets the new chunk 0.
    let got = read_all(&engine, &meta, chunk0.start, Some(chunk0.end - 1))
        .await
        .expect("read after overwrite");
    assert!(
        got == new[..CHUNK as usize],
        "a stream opened after the overwrite got the old segment's chunk 0"
    );
    assert!(engine.shutdown(Duration::from_secs(30)).await);
}

#[tokio::test]
async fn a_manifest_get_across_an_overwrite_never_caches_the_old_manifest() {
    let world = World::new();
    let holding = Arc::new(AtomicBool::new(false));
    let (engine, gate) = gated_engine(&world, ".rsm-manifest", holding.clone(), |_| {});
    let engine = Arc::new(engine);
    // The new segment is shorter: the old manifest would read past its end.
    let old = Rng::new(3).bytes(4 * CHUNK as usize);
    let new = Rng::new(4).bytes(2 * CHUNK as usize);
    let v1 = segment(&world.path("v1"), old.clone(), false, 3);
    let v2 = segment(&world.path("v2"), new.clone(), false, 4);
    let meta = v1.metadata.clone();
    engine
        .copy_log_segment_data(&meta, &v1.data)
        .await
        .expect("copy v1");

    // A fetch opened before the overwrite: its manifest GET is held with the old manifest.
    holding.store(true, Ordering::SeqCst);
    let opening = {
        let (engine, meta) = (engine.clone(), meta.clone());
        tokio::spawn(async move { read_all(&engine, &meta, 0, Some(0)).await })
    };
    let stale = gate.next_held().await;
    holding.store(false, Ordering::SeqCst);
    engine
        .copy_log_segment_data(&meta, &v2.data)
        .await
        .expect("copy v2");
    stale.release().wait().await;
    // Whatever the early fetch got (it opened before the overwrite), it is over.
    let _ = opening.await.expect("early fetch task");

    // A fetch after the overwrite reads the new segment, whole, by its new manifest.
    let got = match read_all(&engine, &meta, 0, None).await {
        Ok(got) => got,
        Err(e) => panic!("a fetch after the overwrite failed (the old manifest?): {e}"),
    };
    assert!(
        got == new,
        "a fetch after the overwrite used the old manifest ({} bytes, want {})",
        got.len(),
        new.len()
    );
    assert!(engine.shutdown(Duration::from_secs(30)).await);
}

#[tokio::test]
async fn an_overwrite_after_the_manifest_expired_drops_the_old_chunks() {
    let world = World::new();
    let holding = Arc::new(AtomicBool::new(false));
    let ttl = Duration::from_millis(50);
    let (engine, _gate) = gated_engine(&world, ".log", holding, |o| {
        o.manifest_cache_ttl = Some(ttl);
    });
    let old = Rng::new(5).bytes(4 * CHUNK as usize);
    let new = Rng::new(6).bytes(4 * CHUNK as usize);
    let v1 = segment(&world.path("v1"), old.clone(), false, 5);
    let v2 = segment(&world.path("v2"), new.clone(), false, 6);
    let meta = &v1.metadata;
    engine
        .copy_log_segment_data(meta, &v1.data)
        .await
        .expect("copy v1");
    let end = Some(u64::from(CHUNK) - 1);
    let got = read_all(&engine, meta, 0, end).await.expect("read v1");
    assert!(got == old[..CHUNK as usize], "v1 chunk 0");

    // The manifest leaves the cache (its TTL passed; chunk 0 stays cached).
    tokio::time::sleep(ttl * 4).await;
    engine
        .copy_log_segment_data(meta, &v2.data)
        .await
        .expect("copy v2");
    let got = read_all(&engine, meta, 0, end).await.expect("read v2");
    assert!(
        got == new[..CHUNK as usize],
        "a stream opened after the overwrite got the old segment's chunk 0"
    );
    assert!(engine.shutdown(Duration::from_secs(30)).await);
}
