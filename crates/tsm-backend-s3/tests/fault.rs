//! Fault test with the real server: MinIO is stopped in the middle of a multipart upload,
//! then started again. Its own test binary, because it stops the shared server (cargo runs
//! test binaries one after another).
//!
//! Environment (besides `common`'s): `TSM_TEST_S3_STOP_CMD` and `TSM_TEST_S3_START_CMD`,
//! shell commands that stop the server keeping its data and start it again (30-s3.sh sets
//! them to `scripts/services/minio.sh pause` / `start`). Missing -> the test fails.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use common::{PART, backend, body, data, get, pending_uploads};
use futures::StreamExt;
use tsm_storage::{BackendError, ObjectKey, StorageBackend};

fn run(var: &str) {
    let cmd = std::env::var(var)
        .unwrap_or_else(|_| panic!("{var} is not set: run via scripts/test.d/30-s3.sh"));
    let status = std::process::Command::new("bash")
        .arg("-c")
        .arg(&cmd)
        .status()
        .unwrap_or_else(|e| panic!("{var}: cannot run `{cmd}`: {e}"));
    assert!(status.success(), "{var}: `{cmd}` failed: {status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_stopped_during_multipart_upload() {
    let b = backend(
        "fault",
        &[
            ("s3.multipart.upload.parts.in.flight", "1"),
            // Bound the SDK's retries so the failure comes quickly once the server is gone.
            ("s3.api.call.timeout", "20000"),
        ],
    )
    .await;
    let k = ObjectKey::plain("t-0/00000000000000000042-fault.log");
    let bytes = Arc::new(data(3 * PART + 77, 7));

    // Body: two whole parts, then (when the uploader asks for more, i.e. after part 1 is
    // stored and while part 2 is in flight: one part in flight, the next one read) the
    // server is stopped, then the rest.
    let stopped = Arc::new(AtomicBool::new(false));
    let head = vec![
        Ok(Bytes::copy_from_slice(&bytes[..PART])),
        Ok(Bytes::copy_from_slice(&bytes[PART..2 * PART])),
    ];
    let rest = Bytes::copy_from_slice(&bytes[2 * PART..]);
    let flag = stopped.clone();
    let tail = futures::stream::once(async move {
        tokio::task::spawn_blocking(|| run("TSM_TEST_S3_STOP_CMD"))
            .await
            .expect("stop command");
        flag.store(true, Ordering::SeqCst);
        Ok::<_, BackendError>(rest)
    });
    let stream = futures::stream::iter(head).chain(tail).boxed();

    let result = b.upload(&k, stream, Some(bytes.len() as u64)).await;
    assert!(stopped.load(Ordering::SeqCst), "the server was not stopped");
    let err = result.expect_err("upload must fail while the server is down");
    let msg = err.to_string();
    assert!(msg.contains(k.as_str()), "error must name the key: {msg}");
    assert!(
        msg.contains("s3 "),
        "error must name the S3 operation: {msg}"
    );
    assert!(
        msg.contains(b.bucket()),
        "error must name the bucket: {msg}"
    );
    eprintln!("upload failed as expected: {msg}");

    run("TSM_TEST_S3_START_CMD");

    // Nothing visible under the key.
    let err = b.fetch(&k, None).await.err().expect("no object");
    assert!(err.is_not_found(), "{err}");
    // The abort could not reach the stopped server, so the interrupted upload may still be
    // pending (MinIO may also have dropped it on restart). Clean it, as a lifecycle rule
    // would, then check that the next upload works.
    let pending = pending_uploads(&b).await;
    eprintln!(
        "{} interrupted multipart upload(s) pending after restart",
        pending.len()
    );
    for id in pending {
        b.sdk_client()
            .abort_multipart_upload()
            .bucket(b.bucket())
            .key(k.as_str())
            .upload_id(id)
            .send()
            .await
            .unwrap();
    }

    let n = b
        .upload(&k, body(&bytes, 999_983), Some(bytes.len() as u64))
        .await
        .expect("upload after restart");
    assert_eq!(n, bytes.len() as u64);
    assert_eq!(get(&b, &k).await, *bytes);
    assert!(pending_uploads(&b).await.is_empty());
}
