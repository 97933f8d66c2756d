//! The copy's reads of the broker's segment file: each chunk job reads its own byte range
//! (positional reads, in parallel). A segment file that shrinks or grows while it is copied
//! is refused with an error naming the file, in every transform mode, and nothing is left
//! in the store; an unchanged file round-trips in every mode (the jobs' reads cover it
//! exactly, whatever the chunk count).

use std::path::PathBuf;
use std::sync::Arc;

use crate::engine_support::*;
use async_trait::async_trait;
use tsm_core::engine::CompressionMode;
use tsm_core::{
    BackendError, ByteRange, ByteStream, ObjectKey, RemoteStorageManager, StorageBackend,
};
use tsm_storage::ListStream;

/// How the test changes the segment file when the `.log` upload starts (before its body is
/// polled, so before the first chunk is read).
#[derive(Clone, Copy, Debug)]
enum Change {
    Shrink,
    Grow,
}

/// Delegates to the filesystem backend; changes `file` when a `.log` upload begins.
#[derive(Debug)]
struct ChangesSource {
    inner: Arc<dyn StorageBackend>,
    file: PathBuf,
    change: Change,
}

impl std::fmt::Display for ChangesSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ChangesSource({})", self.inner)
    }
}

#[async_trait]
impl StorageBackend for ChangesSource {
    async fn upload(
        &self,
        key: &ObjectKey,
        body: ByteStream,
        size: Option<u64>,
    ) -> Result<u64, BackendError> {
        if key.as_str().ends_with(".log") {
            let len = std::fs::metadata(&self.file).expect("segment file").len();
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&self.file)
                .expect("open segment file");
            match self.change {
                Change::Shrink => f.set_len(len / 2).expect("truncate"),
                Change::Grow => f.set_len(len + 10).expect("extend"),
            }
        }
        self.inner.upload(key, body, size).await
    }

    async fn fetch(
        &self,
        key: &ObjectKey,
        range: Option<ByteRange>,
    ) -> Result<ByteStream, BackendError> {
        self.inner.fetch(key, range).await
    }

    async fn delete(&self, keys: &[ObjectKey]) -> Result<(), BackendError> {
        self.inner.delete(keys).await
    }

    fn list(&self, prefix: &ObjectKey) -> ListStream {
        self.inner.list(prefix)
    }

    fn upload_buffer_bytes(&self) -> u64 {
        self.inner.upload_buffer_bytes()
    }

    fn reads_are_local(&self) -> bool {
        self.inner.reads_are_local()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_copy_refuses_a_segment_file_that_changes() {
    let world = World::new();
    let ring = key_ring(world.dir.path(), "k1", 0);
    for change in [Change::Shrink, Change::Grow] {
        for (compression, encrypt) in [
            (CompressionMode::Off, false),
            (CompressionMode::On, false),
            (CompressionMode::Off, true),
            (CompressionMode::On, true),
        ] {
            let seg = segment(&world.path("s"), Rng::new(3).bytes(10_000), false, 3);
            let backend = Arc::new(ChangesSource {
                inner: world.backend.clone(),
                file: seg.data.log_segment.clone(),
                change,
            });
            let engine = RemoteStorageManager::new(
                backend,
                options(1024, compression, encrypt.then(|| ring.clone())),
            )
            .expect("engine options");
            let what = format!("{change:?} {compression:?} encrypt={encrypt}");
            let e = engine
                .copy_log_segment_data(&seg.metadata, &seg.data)
                .await
                .expect_err(&what);
            let msg = e.to_string();
            assert!(msg.contains("changed while it was copied"), "{what}: {msg}");
            assert!(
                msg.contains(&seg.data.log_segment.display().to_string()),
                "{what}: the error names the file: {msg}"
            );
            assert!(
                world.keys().await.is_empty(),
                "{what}: left behind {:?}",
                world.keys().await
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_copy_reads_every_byte_in_every_mode() {
    let world = World::new();
    let ring = key_ring(world.dir.path(), "k1", 0);
    // 0 bytes, under one chunk, exactly one, one and a bit, many (chunk 1024).
    for len in [0usize, 1, 1023, 1024, 1025, 20 * 1024 + 7] {
        for (compression, encrypt) in [
            (CompressionMode::Off, false),
            (CompressionMode::On, false),
            (CompressionMode::Off, true),
            (CompressionMode::On, true),
        ] {
            let log = Rng::new(len as u64).bytes(len);
            let seg = segment(&world.path("s"), log.clone(), false, 5);
            let engine = world.engine(options(1024, compression, encrypt.then(|| ring.clone())));
            engine
                .copy_log_segment_data(&seg.metadata, &seg.data)
                .await
                .expect("copy");
            let back = if len == 0 {
                Vec::new()
            } else {
                read_all(&engine, &seg.metadata, 0, None)
                    .await
                    .expect("read")
            };
            assert_eq!(back, log, "{len} bytes, {compression:?}, encrypt={encrypt}");
            engine
                .delete_log_segment_data(&seg.metadata)
                .await
                .expect("delete");
        }
    }
}
