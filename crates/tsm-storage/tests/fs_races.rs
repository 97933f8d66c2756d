//! Filesystem backend under concurrent uploads and deletes sharing directories: deletes
//! prune empty directories while uploads create them, and every upload must still land.

use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use tsm_storage::filesystem::FilesystemBackend;
use tsm_storage::{ObjectKey, StorageBackend};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn uploads_and_deletes_in_shared_directories() {
    let dir = tempfile::tempdir().expect("dir");
    let b = Arc::new(FilesystemBackend::new(dir.path()).expect("backend"));
    let rounds = 40;
    let tasks: Vec<_> = (0..8)
        .map(|t| {
            let b = b.clone();
            tokio::spawn(async move {
                for r in 0..rounds {
                    // Two tasks share each directory; each deletes its own key right away,
                    // pruning the directory the other is writing into.
                    let key = ObjectKey::plain(format!("topic/{}/seg-{t}-{r}.log", t % 4));
                    let data = Bytes::from(format!("{t}-{r}").into_bytes());
                    let d = data.clone();
                    b.upload(
                        &key,
                        futures::stream::once(async move { Ok(d) }).boxed(),
                        None,
                    )
                    .await
                    .unwrap_or_else(|e| panic!("upload {key}: {e}"));
                    let got: Vec<Bytes> = b
                        .fetch(&key, None)
                        .await
                        .unwrap_or_else(|e| panic!("fetch {key}: {e}"))
                        .try_collect()
                        .await
                        .unwrap_or_else(|e| panic!("read {key}: {e}"));
                    assert_eq!(got.concat(), data.to_vec());
                    b.delete(std::slice::from_ref(&key))
                        .await
                        .unwrap_or_else(|e| panic!("delete {key}: {e}"));
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("task");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).expect("read").collect();
    assert!(left.is_empty(), "{left:?}");
}
