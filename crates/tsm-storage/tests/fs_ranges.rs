//! Property test: every inclusive range on objects of awkward sizes reads exactly what a
//! model of the contract says (clamped end, InvalidRange when start >= size), on the
//! filesystem and in-memory backends.

use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use proptest::prelude::*;
use tsm_storage::contract::pattern;
use tsm_storage::filesystem::{FilesystemBackend, READ_BUFFER_SIZE};
use tsm_storage::memory::MemoryBackend;
use tsm_storage::{BackendError, ByteRange, ObjectKey, StorageBackend};

const SIZES: &[u64] = &[
    0,
    1,
    2,
    17,
    4096,
    READ_BUFFER_SIZE as u64,
    READ_BUFFER_SIZE as u64 + 1,
    200_001,
];

struct Fixture {
    rt: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
    backends: Vec<Arc<dyn StorageBackend>>,
}

fn fixture() -> Fixture {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("dir");
    let fs: Arc<dyn StorageBackend> = Arc::new(FilesystemBackend::new(dir.path()).expect("fs"));
    let mem: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
    let backends = vec![fs, mem];
    rt.block_on(async {
        for b in &backends {
            for (i, size) in SIZES.iter().enumerate() {
                let data = pattern(i as u64, 0, *size as usize);
                let body = futures::stream::once(async move { Ok(data) }).boxed();
                b.upload(&key(i), body, Some(*size)).await.expect("upload");
            }
        }
    });
    Fixture {
        rt,
        _dir: dir,
        backends,
    }
}

fn key(i: usize) -> ObjectKey {
    ObjectKey::plain(format!("ranges/obj-{i}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn ranges_follow_the_model(obj in 0..SIZES.len(), start in 0u64..250_000, len in 0u64..150_000, huge_end in any::<bool>()) {
        thread_local!(static FX: Fixture = fixture());
        let size = SIZES[obj];
        let end = if huge_end { u64::MAX } else { start.saturating_add(len) };
        let range = ByteRange::new(start, end).expect("end >= start");
        FX.with(|fx| {
            for b in &fx.backends {
                let got = fx.rt.block_on(async {
                    match b.fetch(&key(obj), Some(range)).await {
                        Ok(s) => s.try_collect::<Vec<Bytes>>().await.map(|v| v.concat()),
                        Err(e) => Err(e),
                    }
                });
                if start >= size {
                    let is_invalid = matches!(got, Err(BackendError::InvalidRange { .. }));
                    prop_assert!(is_invalid, "{b}: {range} on {size} bytes");
                } else {
                    let last = end.min(size - 1);
                    let want = pattern(obj as u64, start, (last - start + 1) as usize);
                    prop_assert_eq!(got.expect("read"), want.to_vec(), "{}: {} on {} bytes", b, range, size);
                }
            }
            Ok(())
        })?;
    }
}
