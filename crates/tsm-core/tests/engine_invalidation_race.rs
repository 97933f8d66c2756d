//! Delete / overwrite against what the engine caches (issue 18), made deterministic with a
//! backend that holds chosen GETs until the test releases them (`tsm_storage::gate`):
//! - a stream opened before an overwrite whose own chunk GET (not a read-ahead load) is in
//!   flight across it never leaves the old chunk for streams opened after it;
//! - a manifest GET in flight across an overwrite never leaves the old manifest for
//!   fetches after it;
//! - an overwrite after the manifest left the manifest cache still drops the segment's
//!   cached chunks (they are never served again).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::engine_support::*;
use futures::StreamExt;
use tsm_core::engine::EngineOptions;
use tsm_core::{LogSegmentData, RemoteLogSegmentMetadata, RemoteStorageManager};
use tsm_storage::gate::GatedBackend;
use tsm_storage::{ByteRange, ObjectKey};

const CHUNK: u32 = 1024;

/// A segment copied (`old` bytes) and its next version (`new` bytes, same metadata, so the
/// same keys) ready to be copied over it, through an engine ([`gated_engine`]) whose gate
/// holds the GETs of keys ending with the given suffix while `holding` is set.
struct Overwrite {
    engine: Arc<RemoteStorageManager>,
    gate: Arc<GatedBackend>,
    holding: Arc<AtomicBool>,
    meta: RemoteLogSegmentMetadata,
    old: Vec<u8>,
    new: Vec<u8>,
    v2: LogSegmentData,
    _world: World,
}

impl Overwrite {
    /// `old` is 4 chunks of seed `seed`, `new` `new_chunks` chunks of seed `seed + 1`.
    async fn new(
        suffix: &'static str,
        seed: u64,
        new_chunks: usize,
        tweak: impl FnOnce(&mut EngineOptions),
    ) -> Self {
        let world = World::new();
        let holding = Arc::new(AtomicBool::new(false));
        let held = holding.clone();
        let holds = move |key: &ObjectKey, _: Option<ByteRange>| {
            held.load(Ordering::SeqCst) && key.as_str().ends_with(suffix)
        };
        let (engine, gate) = gated_engine(&world, CHUNK, holds, tweak);
        let old = Rng::new(seed).bytes(4 * CHUNK as usize);
        let new = Rng::new(seed + 1).bytes(new_chunks * CHUNK as usize);
        let v1 = segment(&world.path("v1"), old.clone(), false, seed);
        let v2 = segment(&world.path("v2"), new.clone(), false, seed + 1);
        engine
            .copy_log_segment_data(&v1.metadata, &v1.data)
            .await
            .expect("copy v1");
        Self {
            engine: Arc::new(engine),
            gate,
            holding,
            meta: v1.metadata,
            old,
            new,
            v2: v2.data,
            _world: world,
        }
    }

    /// Copies the new version over the old one.
    async fn overwrite(&self) {
        self.engine
            .copy_log_segment_data(&self.meta, &self.v2)
            .await
            .expect("copy v2");
    }
}

#[tokio::test]
async fn a_streams_own_chunk_get_across_an_overwrite_never_caches_the_old_chunk() {
    let w = Overwrite::new(".log", 1, 4, |_| {}).await;
    let chunk0 = 0..u64::from(CHUNK);

    // S1 (opened before the overwrite) loads chunk 0 itself; its GET is held with the old
    // bytes.
    w.holding.store(true, Ordering::SeqCst);
    let mut s1 = w
        .engine
        .fetch_log_segment(&w.meta, 0, Some(chunk0.end - 1))
        .await
        .expect("open s1");
    let s1 = tokio::spawn(async move { s1.next().await });
    let stale = w.gate.next_held().await;
    w.holding.store(false, Ordering::SeqCst);

    // The segment is overwritten while it is held.
    w.overwrite().await;

    // S1's load ends now with the old bytes (S1 opened before the overwrite: it may get
    // them).
    stale.release().wait().await;
    let first = s1
        .await
        .expect("s1 task")
        .expect("s1 item")
        .expect("s1 chunk 0");
    assert_eq!(&first[..], &w.old[..CHUNK as usize]);

    // A stream opened after the overwrite gets the new chunk 0.
    let got = read_all(&w.engine, &w.meta, chunk0.start, Some(chunk0.end - 1))
        .await
        .expect("read after overwrite");
    assert!(
        got == w.new[..CHUNK as usize],
        "a stream opened after the overwrite got the old segment's chunk 0"
    );
    assert!(w.engine.shutdown(Duration::from_secs(30)).await);
}

#[tokio::test]
async fn a_manifest_get_across_an_overwrite_never_caches_the_old_manifest() {
    // The new segment is shorter: the old manifest would read past its end.
    let w = Overwrite::new(".rsm-manifest", 3, 2, |_| {}).await;

    // A fetch opened before the overwrite: its manifest GET is held with the old manifest.
    w.holding.store(true, Ordering::SeqCst);
    let opening = {
        let (engine, meta) = (w.engine.clone(), w.meta.clone());
        tokio::spawn(async move { read_all(&engine, &meta, 0, Some(0)).await })
    };
    let stale = w.gate.next_held().await;
    w.holding.store(false, Ordering::SeqCst);
    w.overwrite().await;
    stale.release().wait().await;
    // Whatever the early fetch got (it opened before the overwrite), it is over.
    let _ = opening.await.expect("early fetch task");

    // A fetch after the overwrite reads the new segment, whole, by its new manifest.
    let got = match read_all(&w.engine, &w.meta, 0, None).await {
        Ok(got) => got,
        Err(e) => panic!("a fetch after the overwrite failed (the old manifest?): {e}"),
    };
    assert!(
        got == w.new,
        "a fetch after the overwrite used the old manifest ({} bytes, want {})",
        got.len(),
        w.new.len()
    );
    assert!(w.engine.shutdown(Duration::from_secs(30)).await);
}

#[tokio::test]
async fn an_overwrite_after_the_manifest_expired_drops_the_old_chunks() {
    let ttl = Duration::from_millis(50);
    let w = Overwrite::new(".log", 5, 4, |o| o.manifest_cache_ttl = Some(ttl)).await;
    let end = Some(u64::from(CHUNK) - 1);
    let got = read_all(&w.engine, &w.meta, 0, end).await.expect("read v1");
    assert!(got == w.old[..CHUNK as usize], "v1 chunk 0");

    // The manifest leaves the cache (its TTL passed; chunk 0 stays cached).
    tokio::time::sleep(ttl * 4).await;
    w.overwrite().await;
    let got = read_all(&w.engine, &w.meta, 0, end).await.expect("read v2");
    assert!(
        got == w.new[..CHUNK as usize],
        "a stream opened after the overwrite got the old segment's chunk 0"
    );
    assert!(w.engine.shutdown(Duration::from_secs(30)).await);
}
