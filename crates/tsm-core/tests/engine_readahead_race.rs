//! Read-ahead against delete / overwrite and shutdown (issue 18), made deterministic with
//! a backend that holds chosen GETs until the test releases them
//! (`tsm_storage::gate`):
//! - a read-ahead load whose segment is overwritten while its GET is in flight never
//!   serves its (old) chunk to a stream opened after the overwrite, even when a new
//!   read-ahead of the same chunk has started meanwhile;
//! - `shutdown` cancels the read-ahead loads in flight and waits until they are gone.

use std::sync::Arc;
use std::time::Duration;

use crate::engine_support::*;
use futures::StreamExt;
use tsm_core::RemoteStorageManager;
use tsm_storage::gate::GatedBackend;
use tsm_storage::{ByteRange, ObjectKey};

const CHUNK: u32 = 1024;

/// [`gated_engine`] holding every GET of a `.log` object starting at chunk 1 (plain
/// segments: stored = original offsets). A fetch of chunks 0..=1 reads chunk 0 itself and
/// reads chunk 1 ahead.
fn engine_holding_chunk_1(world: &World) -> (RemoteStorageManager, Arc<GatedBackend>) {
    let holds = |key: &ObjectKey, range: Option<ByteRange>| {
        key.as_str().ends_with(".log") && range.is_some_and(|r| r.start == u64::from(CHUNK))
    };
    gated_engine(world, CHUNK, holds, |_| {})
}

#[tokio::test]
async fn a_read_ahead_load_of_an_overwritten_segment_never_serves_its_old_chunk() {
    let world = World::new();
    let (engine, gate) = engine_holding_chunk_1(&world);
    let old = Rng::new(1).bytes(4 * CHUNK as usize);
    let new = Rng::new(2).bytes(4 * CHUNK as usize);
    let v1 = segment(&world.path("v1"), old.clone(), false, 1);
    let v2 = segment(&world.path("v2"), new.clone(), false, 2);
    let meta = &v1.metadata;
    engine
        .copy_log_segment_data(meta, &v1.data)
        .await
        .expect("copy v1");
    let chunk1 = u64::from(CHUNK)..2 * u64::from(CHUNK);
    let want = |b: &[u8]| b[chunk1.start as usize..chunk1.end as usize].to_vec();

    // S1 reads chunk 0; its read-ahead of chunk 1 is held with the old bytes.
    let mut s1 = engine
        .fetch_log_segment(meta, 0, Some(chunk1.end - 1))
        .await
        .expect("open s1");
    let first = s1.next().await.expect("s1 item").expect("s1 chunk 0");
    assert_eq!(&first[..], &old[..CHUNK as usize]);
    let stale = gate.next_held().await;

    // The segment is overwritten (same metadata, same keys, new bytes).
    engine
        .copy_log_segment_data(meta, &v2.data)
        .await
        .expect("copy v2");

    // S2, opened after the overwrite, starts its own read-ahead of chunk 1 (held too).
    let mut s2 = engine
        .fetch_log_segment(meta, 0, Some(chunk1.end - 1))
        .await
        .expect("open s2");
    let first = s2.next().await.expect("s2 item").expect("s2 chunk 0");
    assert_eq!(&first[..], &new[..CHUNK as usize]);
    // S2 started its read-ahead of chunk 1 before reading chunk 0: a load of its own, not
    // the old one's (the same key would mean the overwrite did not end the generation).
    assert_eq!(
        engine.read_ahead_loads(),
        2,
        "S2 did not start its own read-ahead of chunk 1"
    );
    let fresh = gate.next_held().await;

    // The old load ends now, with the old bytes.
    stale.release().wait().await;

    // A stream opened after the overwrite gets chunk 1 of the new segment: the old load
    // must neither have cached its chunk nor taken the new load's place. (Its first poll
    // runs to a cache hit if the stale chunk was stored; otherwise it waits on the new
    // load, released below.)
    let s3 = read_all(&engine, meta, chunk1.start, Some(chunk1.end - 1));
    tokio::pin!(s3);
    let early = tokio::select! {
        biased;
        r = &mut s3 => Some(r),
        () = tokio::task::yield_now() => None,
    };
    if let Some(r) = early {
        assert!(
            r.expect("s3") == want(&new),
            "a stream opened after the overwrite got the old segment's chunk 1"
        );
    }
    let _ = fresh.release();
    let got = s3.await.expect("s3");
    assert!(
        got == want(&new),
        "a stream opened after the overwrite got the old segment's chunk 1"
    );
    drop((s1, s2));
    assert!(engine.shutdown(Duration::from_secs(30)).await);
}

#[tokio::test]
async fn shutdown_cancels_read_ahead_loads_in_flight_and_waits_for_them() {
    let world = World::new();
    let (engine, gate) = engine_holding_chunk_1(&world);
    let log = Rng::new(3).bytes(4 * CHUNK as usize);
    let seg = segment(&world.path("s"), log.clone(), false, 3);
    engine
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy");
    let mut s = engine
        .fetch_log_segment(&seg.metadata, 0, Some(2 * u64::from(CHUNK) - 1))
        .await
        .expect("open");
    let first = s.next().await.expect("item").expect("chunk 0");
    assert_eq!(&first[..], &log[..CHUNK as usize]);
    // The read-ahead of chunk 1 is in flight, held at the gate (never released).
    let mut held = gate.next_held().await;
    assert_eq!(engine.read_ahead_loads(), 1);

    assert!(
        engine.shutdown(Duration::from_secs(30)).await,
        "shutdown reported work left"
    );
    assert_eq!(
        engine.read_ahead_loads(),
        0,
        "shutdown returned with a read-ahead load still in flight"
    );
    // Its GET was dropped (cancelled), not left running on the runtime.
    held.gone().await;
    drop(s);
}
