//! Cache behaviour: single-flight loads, failed and cancelled loads never cached, bounds,
//! TTL, and the disk chunk cache's directory rules. Memory and disk chunk caches run the
//! same single-flight tests.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use tsm_core::cache::{
    AsyncCache, Bound, ChunkCache, ChunkKey, DISK_CACHE_DIR, DISK_CACHE_MARKER, DISK_FALLBACK_BYTES,
};
use tsm_core::config::{ChunkCacheConfig, ChunkCacheKind};
use tsm_core::metrics::MetricsRegistry;

fn chunk(i: u64) -> Bytes {
    Bytes::from(vec![i as u8; 1000])
}

/// 8 concurrent readers of chunk 3 of one object, the load held open until all have
/// started; what each got, and how many loads ran.
async fn eight_readers(cache: &ChunkCache) -> (Vec<Result<Bytes, String>>, u64) {
    let loads = Arc::new(AtomicU64::new(0));
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let key = ChunkKey::new("t/0/a.log", 3);
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (cache, loads, gate, key) =
                (cache.clone(), loads.clone(), gate.clone(), key.clone());
            tokio::spawn(async move {
                cache
                    .get_or_load(key, async move {
                        loads.fetch_add(1, Ordering::SeqCst);
                        let _permit = gate.acquire().await.map_err(|e| e.to_string())?;
                        Ok::<_, String>(chunk(3))
                    })
                    .await
            })
        })
        .collect();
    // Let every task reach the cache before the load may finish.
    while loads.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    gate.add_permits(8);
    let mut got = Vec::new();
    for t in tasks {
        got.push(t.await.expect("task"));
    }
    (got, loads.load(Ordering::SeqCst))
}

/// 8 concurrent readers of one key: one load, every reader gets its bytes.
async fn eight_readers_one_load(cache: ChunkCache) {
    let (got, loads) = eight_readers(&cache).await;
    for g in got {
        assert_eq!(g.expect("load"), chunk(3));
    }
    assert_eq!(loads, 1, "concurrent readers caused several loads");
}

/// A failed load (seen by all concurrent readers) is not cached; the retry loads again.
async fn failed_load_then_retry(cache: ChunkCache) {
    let key = ChunkKey::new("t/0/b.log", 0);
    let loads = Arc::new(AtomicU64::new(0));
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (cache, loads, gate, key) =
                (cache.clone(), loads.clone(), gate.clone(), key.clone());
            tokio::spawn(async move {
                cache
                    .get_or_load(key, async move {
                        loads.fetch_add(1, Ordering::SeqCst);
                        let _p = gate.acquire().await.map_err(|e| e.to_string())?;
                        Err::<Bytes, String>("download of chunk 0 failed".to_string())
                    })
                    .await
            })
        })
        .collect();
    while loads.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    gate.add_permits(8);
    for t in tasks {
        let e = t.await.expect("task").expect_err("must fail");
        assert!(e.contains("chunk 0 failed"), "{e}");
    }
    // Late readers that arrived after the failure may have run their own loader (also
    // failing); what matters is that nothing was cached:
    let n = loads.load(Ordering::SeqCst);
    let got = cache
        .get_or_load(key.clone(), async { Ok::<_, String>(chunk(7)) })
        .await
        .expect("retry");
    assert_eq!(got, chunk(7));
    let again = cache
        .get_or_load(key, async { Err::<Bytes, String>("must not run".into()) })
        .await
        .expect("cached now");
    assert_eq!(again, chunk(7));
    assert!(n >= 1);
}

/// A load whose caller is cancelled is not cached; a waiting reader takes over, and a
/// later call loads normally.
async fn cancelled_load_not_cached(cache: ChunkCache) {
    let key = ChunkKey::new("t/0/c.log", 1);
    let started = Arc::new(tokio::sync::Notify::new());
    let s2 = started.clone();
    let (c1, k1) = (cache.clone(), key.clone());
    let stuck = tokio::spawn(async move {
        c1.get_or_load(k1, async move {
            s2.notify_one();
            std::future::pending::<()>().await;
            Ok::<_, String>(chunk(0))
        })
        .await
    });
    started.notified().await;
    let (c2, k2) = (cache.clone(), key.clone());
    let waiter = tokio::spawn(async move {
        c2.get_or_load(k2, async { Ok::<_, String>(chunk(2)) })
            .await
    });
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    stuck.abort();
    assert!(stuck.await.expect_err("aborted").is_cancelled());
    assert_eq!(
        waiter.await.expect("task").expect("waiter loads itself"),
        chunk(2)
    );
    let got = cache
        .get_or_load(key, async { Err::<Bytes, String>("must be cached".into()) })
        .await
        .expect("cached");
    assert_eq!(got, chunk(2));
}

fn memory_cache() -> ChunkCache {
    ChunkCache::memory(Bound::Bytes(1 << 20), None, &MetricsRegistry::new())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_eight_readers_one_load() {
    eight_readers_one_load(memory_cache()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_failed_load_then_retry() {
    failed_load_then_retry(memory_cache()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_cancelled_load_not_cached() {
    cancelled_load_not_cached(memory_cache()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disk_eight_readers_one_load() {
    let dir = tempfile::tempdir().expect("dir");
    let c = ChunkCache::disk(
        dir.path(),
        Bound::Bytes(1 << 20),
        None,
        &MetricsRegistry::new(),
    )
    .expect("disk cache");
    eight_readers_one_load(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disk_failed_load_then_retry() {
    let dir = tempfile::tempdir().expect("dir");
    let c = ChunkCache::disk(
        dir.path(),
        Bound::Bytes(1 << 20),
        None,
        &MetricsRegistry::new(),
    )
    .expect("disk cache");
    failed_load_then_retry(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disk_cancelled_load_not_cached() {
    let dir = tempfile::tempdir().expect("dir");
    let c = ChunkCache::disk(
        dir.path(),
        Bound::Bytes(1 << 20),
        None,
        &MetricsRegistry::new(),
    )
    .expect("disk cache");
    cancelled_load_not_cached(c).await;
}

fn files(dir: &std::path::Path, suffix: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(suffix))
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn disk_cache_owns_only_its_files() {
    let base = tempfile::tempdir().expect("dir");
    std::fs::write(base.path().join("operator.txt"), b"keep").expect("write");
    let registry = MetricsRegistry::new();
    let cfg = ChunkCacheConfig {
        kind: Some(ChunkCacheKind::Disk {
            path: base.path().to_path_buf(),
        }),
        size_bytes: Some(3000),
        retention: None,
        prefetch_max_size: 0,
        get_timeout: Duration::from_secs(10),
        thread_pool_size: 0,
    };
    let cache = ChunkCache::from_config(&cfg, &registry)
        .expect("cfg")
        .expect("some");
    let own = base.path().join(DISK_CACHE_DIR);
    assert_eq!(cache.disk_dir(), Some(own.as_path()));
    assert!(own.join(DISK_CACHE_MARKER).is_file());
    for i in 0..10 {
        let got = cache
            .get_or_load(
                ChunkKey::new("o", i),
                async move { Ok::<_, String>(chunk(i)) },
            )
            .await
            .expect("load");
        assert_eq!(got, chunk(i));
    }
    cache.run_pending_tasks().await;
    assert!(cache.weighted_size() <= 3000, "{}", cache.weighted_size());
    // Evicted entries' files are gone; at most the bound's worth remain.
    assert!(
        files(&own, ".chunk").len() <= 3,
        "{:?}",
        files(&own, ".chunk")
    );
    assert!(registry.snapshot().counter("cache.chunk.evictions") >= 7);
    // A file someone else put in our directory, and a leftover of ours.
    std::fs::write(own.join("not-ours.bin"), b"x").expect("write");
    std::fs::write(own.join("deadbeef-1.chunk"), b"old").expect("write");
    drop(cache);
    // Restart: our leftovers go, everything else stays.
    let cache = ChunkCache::from_config(&cfg, &registry)
        .expect("cfg")
        .expect("some");
    assert!(files(&own, ".chunk").is_empty());
    assert!(own.join("not-ours.bin").is_file());
    assert!(base.path().join("operator.txt").is_file());
    // Hits read the file back.
    let k = ChunkKey::new("o", 42);
    cache
        .get_or_load(k.clone(), async { Ok::<_, String>(chunk(42)) })
        .await
        .expect("load");
    let hit = cache
        .get_or_load(k.clone(), async { Err::<Bytes, String>("must hit".into()) })
        .await
        .expect("hit");
    assert_eq!(hit, chunk(42));
    // A cached file removed behind our back: reloaded.
    for f in files(&own, ".chunk") {
        std::fs::remove_file(own.join(f)).expect("rm");
    }
    let again = cache
        .get_or_load(k, async { Ok::<_, String>(chunk(43)) })
        .await
        .expect("reload");
    assert_eq!(again, chunk(43));
}

/// The files hold plaintext: private modes; a second live instance on the same path gets a
/// directory of its own and never wipes the first one's files; purge by object.
#[tokio::test]
async fn disk_cache_is_private_per_instance_and_purges_objects() {
    use std::os::unix::fs::PermissionsExt;
    let base = tempfile::tempdir().expect("dir");
    let registry = MetricsRegistry::new();
    let first = ChunkCache::disk(base.path(), Bound::Unbounded, None, &registry).expect("first");
    let own = first.disk_dir().expect("disk").to_path_buf();
    let mode =
        |p: &std::path::Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&own), 0o700, "cache directory mode");
    for i in 0..3 {
        first
            .get_or_load(ChunkKey::new("seg.log", i), async move {
                Ok::<_, String>(chunk(i))
            })
            .await
            .expect("load");
    }
    let names = files(&own, ".chunk");
    assert_eq!(names.len(), 3, "{names:?}");
    for n in &names {
        assert_eq!(mode(&own.join(n)), 0o600, "{n}");
    }
    // Second instance, same path, first still alive.
    let second = ChunkCache::disk(base.path(), Bound::Unbounded, None, &registry).expect("second");
    let other = second.disk_dir().expect("disk").to_path_buf();
    assert_ne!(other, own);
    assert_eq!(
        files(&own, ".chunk"),
        names,
        "the second instance wiped the first's files"
    );
    // Purge one object's chunks: files go, a read loads again.
    first.invalidate_object("seg.log", 0, 3).await;
    first.run_pending_tasks().await;
    assert!(
        files(&own, ".chunk").is_empty(),
        "{:?}",
        files(&own, ".chunk")
    );
    let got = first
        .get_or_load(ChunkKey::new("seg.log", 0), async {
            Ok::<_, String>(chunk(9))
        })
        .await
        .expect("reload");
    assert_eq!(got, chunk(9));
    // Once the first is gone, a restart reuses (and cleans) the first directory.
    drop(first);
    let third = ChunkCache::disk(base.path(), Bound::Unbounded, None, &registry).expect("third");
    assert_eq!(third.disk_dir(), Some(own.as_path()));
    assert!(files(&own, ".chunk").is_empty());
}

#[test]
fn disk_cache_refuses_a_directory_without_marker() {
    let base = tempfile::tempdir().expect("dir");
    let own = base.path().join(DISK_CACHE_DIR);
    std::fs::create_dir(&own).expect("mkdir");
    std::fs::write(own.join("precious.chunk"), b"x").expect("write");
    let err = ChunkCache::disk(base.path(), Bound::Unbounded, None, &MetricsRegistry::new())
        .expect_err("must refuse");
    assert!(err.to_string().contains("marker"), "{err}");
    assert!(own.join("precious.chunk").is_file());
}

#[tokio::test]
async fn async_cache_entry_bound_ttl_and_metrics() {
    let registry = MetricsRegistry::new();
    let cache: AsyncCache<u64, Arc<String>> = AsyncCache::builder("manifest")
        .bound(Bound::Entries(5))
        .metrics(&registry)
        .build();
    for i in 0..50u64 {
        cache
            .get_or_load(i, async move { Ok::<_, String>(Arc::new(i.to_string())) })
            .await
            .expect("load");
    }
    cache.run_pending_tasks().await;
    assert!(cache.entry_count() <= 5, "{}", cache.entry_count());
    let s = registry.snapshot();
    assert_eq!(s.counter("cache.manifest.loads"), 50);
    assert_eq!(s.counter("cache.manifest.misses"), 50);
    assert!(s.counter("cache.manifest.evictions") >= 45);

    // Within its TTL an entry is a hit. The TTL is long enough that no stall of a loaded
    // machine between the load and the lookup can expire it (a 20 ms TTL here once made
    // this assertion depend on the scheduler).
    let long: AsyncCache<u64, u64> = AsyncCache::builder("ttl_long")
        .ttl(Some(Duration::from_secs(600)))
        .metrics(&registry)
        .build();
    long.get_or_load(1, async { Ok::<_, String>(1) })
        .await
        .expect("load");
    assert_eq!(
        long.get_or_load(1, async { Ok::<_, String>(2) }).await,
        Ok(1)
    );
    assert_eq!(registry.snapshot().counter("cache.ttl_long.hits"), 1);

    let ttl: AsyncCache<u64, u64> = AsyncCache::builder("ttl")
        .ttl(Some(Duration::from_millis(20)))
        .metrics(&registry)
        .build();
    ttl.get_or_load(1, async { Ok::<_, String>(1) })
        .await
        .expect("load");
    // The entry was written before this instant (moka stamps it with the same monotonic
    // std clock; its clock cannot be paused like tokio's).
    let expires_by = std::time::Instant::now() + Duration::from_millis(20);
    // Wait for the expiry itself, not a guessed margin: until the TTL has passed since then.
    while std::time::Instant::now() < expires_by {
        tokio::time::sleep_until(tokio::time::Instant::from_std(expires_by)).await;
    }
    // Expired after (at least) its TTL: loaded again.
    assert_eq!(
        ttl.get_or_load(1, async { Ok::<_, String>(3) }).await,
        Ok(3)
    );
    assert_eq!(registry.snapshot().counter("cache.ttl.hits"), 0);
}

#[tokio::test]
async fn memory_chunk_cache_bounded_in_bytes_and_prefetch_insert() {
    let registry = MetricsRegistry::new();
    let cache = ChunkCache::memory(Bound::Bytes(3000), None, &registry);
    for i in 0..10 {
        cache.insert(ChunkKey::new("o", i), chunk(i)).await;
    }
    cache.run_pending_tasks().await;
    assert!(cache.weighted_size() <= 3000, "{}", cache.weighted_size());
    assert!(cache.disk_dir().is_none());
    let k = ChunkKey::new("p", 0);
    cache.insert(k.clone(), chunk(5)).await;
    assert!(cache.contains(&k));
    let got = cache
        .get_or_load(k, async {
            Err::<Bytes, String>("prefetched, must hit".into())
        })
        .await
        .expect("hit");
    assert_eq!(got, chunk(5));
    assert!(registry.snapshot().counter("cache.chunk.hits") >= 1);
}

#[tokio::test]
async fn disk_chunk_cache_prefetch_insert_and_replace() {
    let base = tempfile::tempdir().expect("dir");
    let cache = ChunkCache::disk(base.path(), Bound::Unbounded, None, &MetricsRegistry::new())
        .expect("disk cache");
    let own = base.path().join(DISK_CACHE_DIR);
    let k = ChunkKey::new("p", 0);
    cache.insert(k.clone(), chunk(1)).await;
    cache.insert(k.clone(), chunk(2)).await; // replaces: the old file goes
    cache.run_pending_tasks().await;
    assert!(cache.contains(&k));
    assert_eq!(
        files(&own, ".chunk").len(),
        1,
        "{:?}",
        files(&own, ".chunk")
    );
    let got = cache
        .get_or_load(k, async { Err::<Bytes, String>("must hit".into()) })
        .await
        .expect("hit");
    assert_eq!(got, chunk(2));
}

#[test]
fn no_chunk_cache_when_class_unset() {
    let cfg = ChunkCacheConfig {
        kind: None,
        size_bytes: None,
        retention: None,
        prefetch_max_size: 0,
        get_timeout: Duration::from_secs(10),
        thread_pool_size: 0,
    };
    assert!(
        ChunkCache::from_config(&cfg, &MetricsRegistry::new())
            .expect("ok")
            .is_none()
    );
}

/// A disk cache whose files cannot be written (here: its directory is gone, as on a full
/// or failed disk) keeps at most DISK_FALLBACK_BYTES of chunks in memory, not its disk-sized
/// bound; every load still returns its bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disk_cache_that_cannot_write_keeps_little_in_memory() {
    let dir = tempfile::tempdir().expect("dir");
    let c = ChunkCache::disk(
        dir.path(),
        Bound::Bytes(1 << 30),
        None,
        &MetricsRegistry::new(),
    )
    .expect("disk cache");
    let own = c.disk_dir().expect("disk dir").to_path_buf();
    std::fs::remove_dir_all(&own).expect("remove the cache directory");
    let mib = 1usize << 20;
    for i in 0..64u64 {
        let want = Bytes::from(vec![i as u8; mib]);
        let w = want.clone();
        let got = c
            .get_or_load(
                ChunkKey::new("t/0/x.log", i),
                async move { Ok::<_, String>(w) },
            )
            .await
            .expect("load");
        assert_eq!(got, want, "chunk {i}");
        c.insert(ChunkKey::new("t/0/y.log", i), want).await;
    }
    c.run_pending_tasks().await;
    assert!(
        c.fallback_bytes() <= DISK_FALLBACK_BYTES,
        "{}",
        c.fallback_bytes()
    );
    assert!(
        c.weighted_size() <= DISK_FALLBACK_BYTES,
        "{}",
        c.weighted_size()
    );
    assert!(c.fallback_bytes() > 0, "the fallback was used");
}

/// Found in review (issue 30): when a disk cache cannot write a chunk file and its
/// in-memory fallback is full, the caller that loaded the chunk got its bytes but the
/// callers waiting on that same load got a `ChunkCacheError` (a failed broker fetch for a
/// chunk that had downloaded fine). Now every waiter gets the loaded bytes, one load.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_of_a_load_that_cannot_be_cached_get_its_bytes() {
    let dir = tempfile::tempdir().expect("dir");
    let cache = ChunkCache::disk(
        dir.path(),
        Bound::Bytes(1 << 30),
        None,
        &MetricsRegistry::new(),
    )
    .expect("disk cache");
    let own = cache.disk_dir().expect("disk dir").to_path_buf();
    std::fs::remove_dir_all(&own).expect("remove the cache directory");
    // Fill the in-memory fallback: from here on nothing can be cached.
    let mib = 1usize << 20;
    for i in 0..=(DISK_FALLBACK_BYTES as usize / mib) as u64 {
        let b = Bytes::from(vec![i as u8; mib]);
        cache
            .get_or_load(ChunkKey::new("t/0/fill.log", i), async move {
                Ok::<_, String>(b)
            })
            .await
            .expect("fill");
    }
    assert_eq!(cache.fallback_bytes(), DISK_FALLBACK_BYTES);
    // Eight readers of one chunk: each gets its bytes. Nothing is cached, so a reader that
    // reaches the cache after a load ended runs its own: at least one must have joined
    // another's load for the test to say anything.
    let (got, loads) = eight_readers(&cache).await;
    for g in got {
        match g {
            Ok(b) => assert!(b == chunk(3), "a waiter got other bytes"),
            Err(e) => panic!("a waiter got an error for a chunk that loaded: {e}"),
        }
    }
    assert!(loads < 8, "no reader joined a load ({loads} loads)");
    assert_eq!(
        cache.fallback_bytes(),
        DISK_FALLBACK_BYTES,
        "nothing more kept"
    );
}
