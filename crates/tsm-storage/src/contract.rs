//! The backend contract suite: one `pub async fn` per property of the
//! [`StorageBackend`] contract, each taking `&dyn StorageBackend` and
//! [`ContractOptions`], plus [`run_all`]. Every backend crate runs it against its real
//! service (MinIO, fake-gcs-server, Azurite); the filesystem and in-memory backends run it
//! under plain `cargo test`.
//!
//! Enabled by the `contract-tests` feature:
//! ```toml
//! [dev-dependencies]
//! tsm-storage = { workspace = true, features = ["contract-tests"] }
//! ```
//! ```ignore
//! let opts = ContractOptions::default().with_large_object_size(2 * part_size + 1);
//! tsm_storage::contract::run_all(&backend, &opts).await;
//! ```
//!
//! Failures panic (these are test helpers) with a message naming the property, the key
//! and the range. Every function works under [`ContractOptions::prefix`] only (unique per
//! run by default, so runs never collide) and deletes what it wrote when it passes.
//!
//! Data comes from a deterministic generator ([`pattern`]); nothing here holds the large
//! object in memory: it is uploaded from a generated stream and verified while streaming.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};

use crate::{BackendError, ByteRange, ByteStream, ObjectKey, StorageBackend};

/// Settings for a contract run. `Default` gives a unique prefix and an 8 MiB + 1 byte
/// large object; set the large size above the backend's multipart / block / resumable
/// threshold.
#[derive(Clone, Debug)]
pub struct ContractOptions {
    /// Prepended to every key the suite writes (e.g. `tsm-contract-<nanos>-<pid>-<n>/`).
    pub prefix: String,
    /// Size in bytes of the object used by [`large_object_streamed`]; make it larger than
    /// the backend's multipart part size / block size / resumable chunk size.
    pub large_object_size: u64,
    /// Number of keys [`delete_many_keys`] creates and deletes in one call (default 1001,
    /// one more than an S3 `DeleteObjects` batch).
    pub many_keys: usize,
    /// Number of concurrent uploads in [`concurrent_uploads`] (default 16).
    pub concurrency: usize,
    /// Whether the stored bytes in a [`list_by_prefix`] listing are checked against the
    /// upload sizes (default true).
    pub check_list_sizes: bool,
}

static RUN_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Default for ContractOptions {
    fn default() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let n = RUN_COUNTER.fetch_add(1, Ordering::Relaxed);
        Self {
            prefix: format!("tsm-contract-{nanos}-{}-{n}/", std::process::id()),
            large_object_size: 8 * 1024 * 1024 + 1,
            many_keys: 1001,
            concurrency: 16,
            check_list_sizes: true,
        }
    }
}

impl ContractOptions {
    /// Replaces the key prefix (keep it unique per run).
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Sets the large object's size (bytes).
    pub fn with_large_object_size(mut self, bytes: u64) -> Self {
        self.large_object_size = bytes;
        self
    }

    /// Sets how many keys [`delete_many_keys`] uses.
    pub fn with_many_keys(mut self, n: usize) -> Self {
        self.many_keys = n;
        self
    }

    /// Sets how many uploads [`concurrent_uploads`] runs at once.
    pub fn with_concurrency(mut self, n: usize) -> Self {
        self.concurrency = n;
        self
    }

    /// Whether [`list_by_prefix`] checks sizes.
    pub fn with_check_list_sizes(mut self, check: bool) -> Self {
        self.check_list_sizes = check;
        self
    }

    /// The key `<prefix><test>/<name>`.
    pub fn key(&self, test: &str, name: &str) -> ObjectKey {
        ObjectKey::new(&self.prefix, &format!("{test}/{name}"), false)
    }
}

/// Byte `offset` of the deterministic test stream number `seed`.
pub fn pattern_byte(seed: u64, offset: u64) -> u8 {
    let x = offset
        .wrapping_add(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_mul(0x2545_F491_4F6C_DD1D);
    (x >> 56) as u8
}

/// `len` bytes of test stream `seed` starting at `offset`.
pub fn pattern(seed: u64, offset: u64, len: usize) -> Bytes {
    (0..len as u64)
        .map(|i| pattern_byte(seed, offset + i))
        .collect::<Vec<u8>>()
        .into()
}

/// A body stream of test stream `seed`, `size` bytes in items of `item` bytes, generated
/// lazily (never materialised).
pub fn pattern_stream(seed: u64, size: u64, item: usize) -> ByteStream {
    let item = item.max(1) as u64;
    futures::stream::unfold(0u64, move |off| async move {
        (off < size).then(|| {
            let n = item.min(size - off);
            (Ok(pattern(seed, off, n as usize)), off + n)
        })
    })
    .boxed()
}

/// `n` bytes of test stream `seed` as a vector (for backend tests that compare whole
/// objects).
pub fn pattern_vec(seed: u64, n: usize) -> Vec<u8> {
    pattern(seed, 0, n).to_vec()
}

/// `bytes` as a body stream of items of `item` bytes (odd sizes cross the backend's part /
/// block boundaries).
pub fn chunked_body(bytes: &[u8], item: usize) -> ByteStream {
    let items: Vec<_> = bytes
        .chunks(item.max(1))
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    futures::stream::iter(items).boxed()
}

/// Reads a fetched stream into memory (tests only: small objects).
///
/// # Panics
/// When the stream fails: the message carries the backend's error.
pub async fn read_to_vec(s: ByteStream) -> Vec<u8> {
    s.try_fold(Vec::new(), |mut v, b| async move {
        v.extend_from_slice(&b);
        Ok(v)
    })
    .await
    .unwrap_or_else(|e| panic!("reading a fetched stream: {e}"))
}

fn body(data: &Bytes) -> ByteStream {
    let data = data.clone();
    futures::stream::once(async move { Ok(data) }).boxed()
}

async fn put(b: &dyn StorageBackend, key: &ObjectKey, data: &Bytes) {
    let n = b
        .upload(key, body(data), Some(data.len() as u64))
        .await
        .unwrap_or_else(|e| panic!("{b}: upload of {key} ({} bytes) failed: {e}", data.len()));
    assert_eq!(
        n,
        data.len() as u64,
        "{b}: upload of {key} reported {n} bytes"
    );
}

async fn get(b: &dyn StorageBackend, key: &ObjectKey, range: Option<ByteRange>) -> Bytes {
    let stream = b
        .fetch(key, range)
        .await
        .unwrap_or_else(|e| panic!("{b}: fetch of {key} {range:?} failed: {e}"));
    let parts: Vec<Bytes> = stream
        .try_collect()
        .await
        .unwrap_or_else(|e| panic!("{b}: reading {key} {range:?} failed: {e}"));
    parts.concat().into()
}

async fn get_err(
    b: &dyn StorageBackend,
    key: &ObjectKey,
    range: Option<ByteRange>,
) -> BackendError {
    match b.fetch(key, range).await {
        Err(e) => e,
        Ok(stream) => match stream.try_collect::<Vec<Bytes>>().await {
            Err(e) => e,
            Ok(parts) => panic!(
                "{b}: fetch of {key} {range:?} succeeded with {} bytes, expected an error",
                parts.iter().map(Bytes::len).sum::<usize>()
            ),
        },
    }
}

fn range(start: u64, end: u64) -> ByteRange {
    ByteRange::new(start, end).unwrap_or_else(|| panic!("bad test range {start}-{end}"))
}

async fn cleanup(b: &dyn StorageBackend, keys: &[ObjectKey]) {
    b.delete(keys)
        .await
        .unwrap_or_else(|e| panic!("{b}: cleanup delete failed: {e}"));
}

/// Upload returns the size, fetch returns the bytes, delete makes the key not found.
pub async fn upload_fetch_delete(b: &dyn StorageBackend, opts: &ContractOptions) {
    let key = opts.key("upload_fetch_delete", "a.log");
    let data = pattern(1, 0, 100_000);
    put(b, &key, &data).await;
    assert_eq!(get(b, &key, None).await, data, "{b}: {key} content differs");
    cleanup(b, std::slice::from_ref(&key)).await;
    let e = get_err(b, &key, None).await;
    assert!(e.is_not_found(), "{b}: {key} after delete: {e}");
}

/// Uploading to an existing key replaces the object (shorter and longer).
pub async fn overwrite_keeps_latest(b: &dyn StorageBackend, opts: &ContractOptions) {
    let key = opts.key("overwrite_keeps_latest", "a.log");
    for (seed, len) in [(2, 5000), (3, 100), (4, 20_000)] {
        let data = pattern(seed, 0, len);
        put(b, &key, &data).await;
        assert_eq!(
            get(b, &key, None).await,
            data,
            "{b}: {key} not the latest upload"
        );
    }
    cleanup(b, &[key]).await;
}

/// Full, middle, single-byte, first-byte and last-byte ranges return exactly those bytes.
pub async fn ranged_reads(b: &dyn StorageBackend, opts: &ContractOptions) {
    let key = opts.key("ranged_reads", "a.log");
    let data = pattern(5, 0, 200_003);
    put(b, &key, &data).await;
    let last = data.len() as u64 - 1;
    for (s, e) in [
        (0, last),
        (0, 0),
        (last, last),
        (1, 1),
        (100, 70_000),
        (65_535, 65_536),
        (0, 65_536),
        (131_071, last),
    ] {
        let got = get(b, &key, Some(range(s, e))).await;
        assert_eq!(
            got,
            data.slice(s as usize..=e as usize),
            "{b}: {key} bytes {s}-{e} differ"
        );
    }
    cleanup(b, &[key]).await;
}

/// A range ending past the last byte is clamped to the object.
pub async fn range_past_end_clamped(b: &dyn StorageBackend, opts: &ContractOptions) {
    let key = opts.key("range_past_end_clamped", "a.log");
    let data = pattern(6, 0, 1000);
    put(b, &key, &data).await;
    for (s, e) in [
        (0, 1000),
        (10, 5000),
        (999, 999_999),
        (0, u64::MAX),
        (500, u64::MAX),
    ] {
        let got = get(b, &key, Some(range(s, e))).await;
        assert_eq!(
            got,
            data.slice(s as usize..),
            "{b}: {key} bytes {s}-{e} not clamped"
        );
    }
    cleanup(b, &[key]).await;
}

/// A range starting at or past the end is [`BackendError::InvalidRange`].
pub async fn range_start_past_end_invalid(b: &dyn StorageBackend, opts: &ContractOptions) {
    let key = opts.key("range_start_past_end_invalid", "a.log");
    let data = pattern(7, 0, 1000);
    put(b, &key, &data).await;
    for (s, e) in [
        (1000, 1000),
        (1000, 2000),
        (1001, 1001),
        (u64::MAX - 1, u64::MAX),
    ] {
        let err = get_err(b, &key, Some(range(s, e))).await;
        assert!(
            matches!(err, BackendError::InvalidRange { .. }),
            "{b}: {key} bytes {s}-{e}: expected InvalidRange, got {err}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains(&key.to_string()),
            "{b}: error does not name the key: {msg}"
        );
    }
    cleanup(b, &[key]).await;
}

/// A 0-byte object uploads, fetches empty, and every range on it is InvalidRange.
pub async fn zero_byte_object(b: &dyn StorageBackend, opts: &ContractOptions) {
    let key = opts.key("zero_byte_object", "empty.log");
    put(b, &key, &Bytes::new()).await;
    // Also from an empty stream with unknown size.
    let n = b
        .upload(&key, futures::stream::empty().boxed(), None)
        .await
        .unwrap_or_else(|e| panic!("{b}: empty-stream upload of {key} failed: {e}"));
    assert_eq!(n, 0, "{b}: empty upload reported {n} bytes");
    assert!(get(b, &key, None).await.is_empty(), "{b}: {key} not empty");
    for (s, e) in [(0, 0), (0, 10), (0, u64::MAX), (1, 1), (5, 9)] {
        let err = get_err(b, &key, Some(range(s, e))).await;
        assert!(
            matches!(err, BackendError::InvalidRange { .. }),
            "{b}: 0-byte {key} bytes {s}-{e}: expected InvalidRange, got {err}"
        );
    }
    cleanup(b, &[key]).await;
}

/// Fetching a missing key (with or without a range) is NotFound naming the key.
pub async fn missing_key_not_found(b: &dyn StorageBackend, opts: &ContractOptions) {
    let key = opts.key("missing_key_not_found", "never-written.log");
    for r in [None, Some(range(0, 0)), Some(range(10, 20))] {
        let err = get_err(b, &key, r).await;
        assert!(
            err.is_not_found(),
            "{b}: missing {key} {r:?}: expected NotFound, got {err}"
        );
        assert!(
            err.to_string().contains(&key.to_string()),
            "{b}: error does not name the key: {err}"
        );
    }
}

/// Deleting keys that do not exist (alone, or mixed with existing ones) succeeds.
pub async fn delete_missing_keys(b: &dyn StorageBackend, opts: &ContractOptions) {
    let missing = opts.key("delete_missing_keys", "missing.log");
    b.delete(std::slice::from_ref(&missing))
        .await
        .unwrap_or_else(|e| panic!("{b}: delete of missing {missing} failed: {e}"));
    b.delete(&[])
        .await
        .unwrap_or_else(|e| panic!("{b}: empty delete failed: {e}"));
    let present = opts.key("delete_missing_keys", "present.log");
    put(b, &present, &pattern(8, 0, 10)).await;
    b.delete(&[missing.clone(), present.clone(), missing])
        .await
        .unwrap_or_else(|e| panic!("{b}: mixed delete failed: {e}"));
    assert!(
        get_err(b, &present, None).await.is_not_found(),
        "{b}: {present} survived delete"
    );
    // Twice: idempotent.
    b.delete(std::slice::from_ref(&present))
        .await
        .unwrap_or_else(|e| panic!("{b}: second delete of {present} failed: {e}"));
}

/// One delete call with more keys than a store batch (`many_keys`, default 1001) removes
/// them all; some of the keys are missing.
pub async fn delete_many_keys(b: &dyn StorageBackend, opts: &ContractOptions) {
    let keys: Vec<ObjectKey> = (0..opts.many_keys)
        .map(|i| opts.key("delete_many_keys", &format!("k{i:05}")))
        .collect();
    let small = Bytes::from_static(b"x");
    futures::stream::iter(keys.iter().step_by(2))
        .for_each_concurrent(32, |k| {
            let small = small.clone();
            async move { put(b, k, &small).await }
        })
        .await;
    b.delete(&keys)
        .await
        .unwrap_or_else(|e| panic!("{b}: delete of {} keys failed: {e}", keys.len()));
    let prefix = ObjectKey::new(&opts.prefix, "delete_many_keys/", false);
    let left: Vec<_> = b
        .list(&prefix)
        .try_collect()
        .await
        .unwrap_or_else(|e| panic!("{b}: listing {prefix} failed: {e}"));
    assert!(
        left.is_empty(),
        "{b}: {} objects survived the delete",
        left.len()
    );
}

/// Concurrent uploads of distinct keys all land intact; concurrent uploads of one key
/// leave exactly one of the uploaded versions.
pub async fn concurrent_uploads(b: &dyn StorageBackend, opts: &ContractOptions) {
    let n = opts.concurrency.max(2);
    let keys: Vec<ObjectKey> = (0..n)
        .map(|i| opts.key("concurrent_uploads", &format!("k{i}")))
        .collect();
    futures::future::join_all(keys.iter().enumerate().map(|(i, k)| async move {
        let data = pattern(100 + i as u64, 0, 30_000 + i);
        put(b, k, &data).await;
    }))
    .await;
    for (i, k) in keys.iter().enumerate() {
        let want = pattern(100 + i as u64, 0, 30_000 + i);
        assert_eq!(
            get(b, k, None).await,
            want,
            "{b}: {k} differs after concurrent uploads"
        );
    }
    let same = opts.key("concurrent_uploads", "same");
    futures::future::join_all((0..n).map(|i| {
        let same = same.clone();
        async move {
            let data = pattern(200 + i as u64, 0, 20_000 + i);
            put(b, &same, &data).await;
        }
    }))
    .await;
    let got = get(b, &same, None).await;
    let matches_one = (0..n).any(|i| got == pattern(200 + i as u64, 0, 20_000 + i));
    assert!(
        matches_one,
        "{b}: {same} is not one of the concurrent uploads (torn write)"
    );
    let mut all = keys;
    all.push(same);
    cleanup(b, &all).await;
}

/// An object larger than the multipart/block threshold, uploaded from a generated stream
/// with unknown size (and again with known size), reads back intact, also ranged.
pub async fn large_object_streamed(b: &dyn StorageBackend, opts: &ContractOptions) {
    let key = opts.key("large_object_streamed", "big.log");
    let size = opts.large_object_size;
    for (seed, known) in [(300u64, None), (301, Some(size))] {
        let n = b
            .upload(&key, pattern_stream(seed, size, 64 * 1024 + 7), known)
            .await
            .unwrap_or_else(|e| panic!("{b}: large upload of {key} ({size} bytes) failed: {e}"));
        assert_eq!(n, size, "{b}: large upload of {key} reported {n} bytes");
        // Verify while streaming, never holding the object.
        let mut stream = b
            .fetch(&key, None)
            .await
            .unwrap_or_else(|e| panic!("{b}: fetch of {key} failed: {e}"));
        let mut off = 0u64;
        while let Some(item) = stream.next().await {
            let item = item.unwrap_or_else(|e| panic!("{b}: reading {key} at {off} failed: {e}"));
            for (i, byte) in item.iter().enumerate() {
                let at = off + i as u64;
                assert_eq!(
                    *byte,
                    pattern_byte(seed, at),
                    "{b}: {key} differs at byte {at}"
                );
            }
            off += item.len() as u64;
        }
        assert_eq!(off, size, "{b}: {key} read back {off} of {size} bytes");
        let (s, e) = (size / 2 - 1000, size / 2 + 70_000);
        let e = e.min(size - 1);
        let got = get(b, &key, Some(range(s, e))).await;
        assert_eq!(
            got,
            pattern(seed, s, (e - s + 1) as usize),
            "{b}: {key} bytes {s}-{e}"
        );
    }
    cleanup(b, &[key]).await;
}

/// A body stream failing midway fails the upload and leaves the previous object (or
/// nothing) under the key, never a partial one.
pub async fn failed_upload_not_visible(b: &dyn StorageBackend, opts: &ContractOptions) {
    let key = opts.key("failed_upload_not_visible", "a.log");
    let failing = |key: ObjectKey| {
        let head = pattern_stream(400, 100_000, 10_000);
        let tail = futures::stream::once(async move {
            Err(BackendError::Other {
                key,
                detail: "contract test: body failed on purpose".into(),
                source: None,
            })
        });
        head.chain(tail).boxed()
    };
    assert!(
        b.upload(&key, failing(key.clone()), None).await.is_err(),
        "{b}: upload of {key} with a failing body succeeded"
    );
    let err = get_err(b, &key, None).await;
    assert!(
        err.is_not_found(),
        "{b}: {key} visible after a failed upload: {err}"
    );
    let old = pattern(401, 0, 5000);
    put(b, &key, &old).await;
    assert!(
        b.upload(&key, failing(key.clone()), None).await.is_err(),
        "{b}: second failing upload of {key} succeeded"
    );
    assert_eq!(
        get(b, &key, None).await,
        old,
        "{b}: {key} changed by a failed upload"
    );
    cleanup(b, &[key]).await;
}

/// With `key.prefix.mask` on, NotFound and InvalidRange errors name the key with
/// `<prefix>` in place of the configured prefix and never show the prefix itself.
pub async fn masked_prefix_not_in_errors(b: &dyn StorageBackend, opts: &ContractOptions) {
    let masked = |name: &str| {
        ObjectKey::new(
            &opts.prefix,
            &format!("masked_prefix_not_in_errors/{name}"),
            true,
        )
    };
    let secret = opts.prefix.trim_end_matches('/');
    if secret.is_empty() {
        return; // No prefix to mask.
    }
    let missing = masked("missing.log");
    let err = get_err(b, &missing, None).await;
    assert!(err.is_not_found(), "{b}: missing {missing}: {err}");
    let msg = err.to_string();
    assert!(
        msg.contains("<prefix>/") && !msg.contains(secret),
        "{b}: NotFound error leaks the masked prefix or lacks the key: {msg}"
    );
    let key = masked("a.log");
    let data = pattern(600, 0, 10);
    put(b, &key, &data).await;
    let err = get_err(b, &key, Some(range(10, 20))).await;
    let msg = err.to_string();
    assert!(
        matches!(err, BackendError::InvalidRange { .. })
            && msg.contains("<prefix>/")
            && !msg.contains(secret),
        "{b}: InvalidRange error leaks the masked prefix or lacks the key: {msg}"
    );
    cleanup(b, &[key]).await;
}

/// `list` returns exactly the keys starting with a raw prefix (not only a directory),
/// with their sizes.
pub async fn list_by_prefix(b: &dyn StorageBackend, opts: &ContractOptions) {
    let names = ["a/1", "a/2", "a/b/3", "ab/4", "b/5"];
    let keys: Vec<ObjectKey> = names
        .iter()
        .map(|n| opts.key("list_by_prefix", n))
        .collect();
    for (i, k) in keys.iter().enumerate() {
        put(b, k, &pattern(500, 0, 10 + i)).await;
    }
    let list = |p: &str| {
        let prefix = ObjectKey::new(&opts.prefix, &format!("list_by_prefix/{p}"), false);
        async move {
            let mut got: BTreeMap<String, u64> = BTreeMap::new();
            let items: Vec<_> = b
                .list(&prefix)
                .try_collect()
                .await
                .unwrap_or_else(|e| panic!("{b}: listing {prefix} failed: {e}"));
            for m in items {
                got.insert(m.key, m.size);
            }
            got
        }
    };
    let expect = |idx: &[usize]| -> BTreeMap<String, u64> {
        idx.iter()
            .map(|&i| (keys[i].as_str().to_string(), 10 + i as u64))
            .collect()
    };
    for (p, idx) in [
        ("a/", &[0, 1, 2][..]),
        ("a", &[0, 1, 2, 3][..]),
        ("a/b", &[2][..]),
        ("", &[0, 1, 2, 3, 4][..]),
        ("c", &[][..]),
        ("a/1", &[0][..]),
    ] {
        let got = list(p).await;
        let want = expect(idx);
        if opts.check_list_sizes {
            assert_eq!(got, want, "{b}: listing prefix {p:?}");
        } else {
            assert_eq!(
                got.keys().collect::<Vec<_>>(),
                want.keys().collect::<Vec<_>>(),
                "{b}: listing prefix {p:?}"
            );
        }
    }
    cleanup(b, &keys).await;
}

/// Runs every property above, in order, panicking at the first failure.
pub async fn run_all(b: &dyn StorageBackend, opts: &ContractOptions) {
    upload_fetch_delete(b, opts).await;
    overwrite_keeps_latest(b, opts).await;
    ranged_reads(b, opts).await;
    range_past_end_clamped(b, opts).await;
    range_start_past_end_invalid(b, opts).await;
    zero_byte_object(b, opts).await;
    missing_key_not_found(b, opts).await;
    delete_missing_keys(b, opts).await;
    delete_many_keys(b, opts).await;
    concurrent_uploads(b, opts).await;
    large_object_streamed(b, opts).await;
    failed_upload_not_visible(b, opts).await;
    masked_prefix_not_in_errors(b, opts).await;
    list_by_prefix(b, opts).await;
}

#[cfg(test)]
mod tests {
    // The suite itself runs against the filesystem and memory backends in
    // tests/contract_fs.rs, from outside the crate as backend crates call it.
    use super::*;

    #[test]
    fn pattern_is_deterministic_and_offset_consistent() {
        assert_eq!(pattern(1, 10, 5), pattern(1, 0, 15).slice(10..));
        assert_ne!(pattern(1, 0, 64), pattern(2, 0, 64));
    }

    #[tokio::test]
    async fn pattern_stream_yields_exactly_size_bytes() {
        let parts: Vec<Bytes> = pattern_stream(3, 100_001, 4096)
            .try_collect()
            .await
            .unwrap();
        assert!(parts.iter().all(|p| p.len() <= 4096));
        assert_eq!(parts.concat(), pattern(3, 0, 100_001).to_vec());
        let none: Vec<Bytes> = pattern_stream(3, 0, 4096).try_collect().await.unwrap();
        assert!(none.is_empty());
    }
}
