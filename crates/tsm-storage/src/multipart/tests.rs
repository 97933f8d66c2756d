//! Unit tests of the writer against a small in-crate upload that records every call (a
//! test of our own cutting, bounding and clean-up, not a stand-in for a cloud: the S3 and
//! Azure crates run the same writer against MinIO and Azurite).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use proptest::prelude::*;

use super::*;
use crate::{ByteStream, compensation};

/// What the recording store was asked, and what the writer held.
#[derive(Default, Debug)]
struct Record {
    whole: Option<Bytes>,
    starts: u32,
    parts: BTreeMap<u32, Bytes>,
    completed: Option<Vec<u32>>,
    aborts: u32,
    in_flight: usize,
    max_in_flight: usize,
    /// Bytes the body handed out.
    pulled: u64,
    /// Bytes of parts whose request finished (their buffers are released).
    released: u64,
    /// Most bytes held (`pulled - released`) when the writer took another body item.
    max_held: u64,
}

/// How the recording store behaves.
#[derive(Clone, Default)]
struct Behaviour {
    fail_part: Option<u32>,
    panic_part: Option<u32>,
    /// This part's request never answers.
    hang_part: Option<u32>,
    /// No part's request ever answers.
    hang_all: bool,
    fail_start: bool,
    fail_complete: bool,
    /// `abort` is `None` (as for Azure's staged blocks).
    no_abort: bool,
    /// Scheduler yields of part `i`: `(i * seed) % 4`, so parts finish out of order.
    seed: u32,
}

#[derive(Clone)]
struct Store {
    key: ObjectKey,
    limits: PartLimits,
    how: Behaviour,
    rec: Arc<Mutex<Record>>,
}

fn lock(rec: &Mutex<Record>) -> MutexGuard<'_, Record> {
    rec.lock().unwrap_or_else(|p| p.into_inner())
}

impl Store {
    fn new(part_size: usize, parts_in_flight: usize, max_parts: u32) -> Self {
        Self {
            key: ObjectKey::plain("t/0/seg.log"),
            limits: PartLimits {
                part_size,
                parts_in_flight,
                max_parts,
            },
            how: Behaviour::default(),
            rec: Arc::default(),
        }
    }

    fn with(mut self, how: Behaviour) -> Self {
        self.how = how;
        self
    }

    fn record(&self) -> MutexGuard<'_, Record> {
        lock(&self.rec)
    }

    /// `body` as a stream of `items`-sized items that counts what the writer takes; with
    /// `yields` it gives the part tasks a turn before every item.
    fn body(&self, body: &[u8], items: &[usize], yields: bool) -> ByteStream {
        let mut chunks = Vec::new();
        let mut at = 0;
        let mut sizes = items.iter().cycle();
        while at < body.len() {
            let n = sizes.next().copied().unwrap_or(1).min(body.len() - at);
            chunks.push(Bytes::copy_from_slice(&body[at..at + n]));
            at += n;
        }
        let rec = self.rec.clone();
        futures::stream::iter(chunks)
            .then(move |item| {
                let rec = rec.clone();
                async move {
                    if yields {
                        tokio::task::yield_now().await;
                    }
                    let mut r = lock(&rec);
                    let held = r.pulled - r.released;
                    r.max_held = r.max_held.max(held);
                    r.pulled += item.len() as u64;
                    Ok(item)
                }
            })
            .boxed()
    }
}

fn failure(key: &ObjectKey, what: &str) -> BackendError {
    BackendError::Other {
        key: key.clone(),
        detail: what.to_string(),
        source: None,
    }
}

#[async_trait]
impl MultipartTarget for Store {
    type Upload = Store;

    fn key(&self) -> &ObjectKey {
        &self.key
    }

    fn limits(&self) -> PartLimits {
        self.limits
    }

    fn too_many_parts(&self, size: Option<u64>) -> BackendError {
        failure(&self.key, &format!("too many parts (size {size:?})"))
    }

    async fn put_whole(&self, data: Bytes) -> Result<(), BackendError> {
        self.record().whole = Some(data);
        Ok(())
    }

    async fn start(&self) -> Result<Store, BackendError> {
        if self.how.fail_start {
            return Err(failure(&self.key, "start refused"));
        }
        self.record().starts += 1;
        Ok(self.clone())
    }
}

#[async_trait]
impl MultipartUpload for Store {
    type Part = u32;

    fn put_part(&self, index: u32, data: Bytes) -> PartFuture<u32> {
        {
            let mut r = self.record();
            r.in_flight += 1;
            r.max_in_flight = r.max_in_flight.max(r.in_flight);
        }
        let (rec, key, how) = (self.rec.clone(), self.key.clone(), self.how.clone());
        Box::pin(async move {
            for _ in 0..(index.wrapping_mul(how.seed) % 4) {
                tokio::task::yield_now().await;
            }
            if how.hang_all || how.hang_part == Some(index) {
                futures::future::pending::<()>().await;
            }
            assert_ne!(how.panic_part, Some(index), "part task panics");
            let mut r = lock(&rec);
            r.in_flight -= 1;
            r.released += data.len() as u64;
            if how.fail_part == Some(index) {
                return Err(failure(&key, &format!("part #{} refused", index + 1)));
            }
            r.parts.insert(index, data);
            Ok(index)
        })
    }

    async fn complete(&self, parts: Vec<u32>) -> Result<(), BackendError> {
        if self.how.fail_complete {
            return Err(failure(&self.key, "complete refused"));
        }
        self.record().completed = Some(parts);
        Ok(())
    }

    fn abort(&self) -> Option<Abort> {
        if self.how.no_abort {
            return None;
        }
        let rec = self.rec.clone();
        Some(Abort {
            what: format!("abort of {}", self.key),
            work: Box::pin(async move { lock(&rec).aborts += 1 }),
        })
    }
}

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime")
}

proptest! {
    /// Any item sizes x part size x parts in flight: the parts concatenate to the body,
    /// each exactly the part size but the last; a body of at most one part is one
    /// request; never more than `parts_in_flight` parts run; and the writer never holds
    /// `buffer_bytes` (bytes taken from the body and not yet released, each time it takes
    /// another item, i.e. besides the item it is cutting).
    #[test]
    fn parts_concatenate_to_the_body_within_the_bound(
        len in 0usize..300,
        items in proptest::collection::vec(1usize..80, 1..6),
        part_size in 1usize..40,
        in_flight in 1usize..5,
        size_known in any::<bool>(),
        yields in any::<bool>(),
        seed in 0u32..7,
    ) {
        let store = Store::new(part_size, in_flight, 1_000).with(Behaviour { seed, ..Default::default() });
        let body = data(len);
        let size = size_known.then_some(len as u64);
        let stored = rt().block_on(upload(&store, store.body(&body, &items, yields), size)).expect("upload");
        prop_assert_eq!(stored, len as u64);
        let r = store.record();
        if len <= part_size {
            prop_assert_eq!(r.whole.as_deref(), Some(&body[..]));
            prop_assert_eq!(r.starts, 0);
            prop_assert!(r.parts.is_empty());
        } else {
            prop_assert!(r.whole.is_none());
            prop_assert_eq!(r.starts, 1);
            let n = len.div_ceil(part_size) as u32;
            prop_assert_eq!(r.completed.clone(), Some((0..n).collect::<Vec<_>>()));
            let joined: Vec<u8> = r.parts.values().flat_map(|p| p.iter().copied()).collect();
            prop_assert_eq!(joined, body);
            for (i, p) in &r.parts {
                if *i + 1 < n {
                    prop_assert_eq!(p.len(), part_size, "part #{}", i + 1);
                } else {
                    prop_assert!(!p.is_empty() && p.len() <= part_size);
                }
            }
            prop_assert_eq!(r.aborts, 0);
        }
        prop_assert!(r.max_in_flight <= in_flight, "{} in flight", r.max_in_flight);
        prop_assert!(r.max_held < store.limits.buffer_bytes(), "held {} of {}", r.max_held, store.limits.buffer_bytes());
    }
}

/// With parts that never finish, reading stops at `parts_in_flight` parts plus the one
/// being filled: the writer holds exactly `buffer_bytes` and reads no further. Dropping
/// the upload then spawns its abort as a compensation.
#[tokio::test]
async fn reading_stops_at_the_buffer_bound_and_a_dropped_upload_is_aborted() {
    let store = Store::new(10, 3, 1_000).with(Behaviour {
        hang_all: true,
        ..Default::default()
    });
    assert_eq!(store.limits.buffer_bytes(), 40);
    let body = store.body(&data(200), &[1], true);
    let s = store.clone();
    let task = tokio::spawn(async move { upload(&s, body, None).await });
    // By condition: 3 parts in flight and the 4th filled, i.e. 40 bytes taken.
    loop {
        {
            let r = store.record();
            assert!(r.pulled <= 40, "read past the bound: {} bytes", r.pulled);
            assert!(r.in_flight <= 3, "{} parts in flight", r.in_flight);
            if r.in_flight == 3 && r.pulled == 40 {
                break;
            }
        }
        assert!(!task.is_finished(), "upload ended");
        tokio::task::yield_now().await;
    }
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert_eq!(store.record().pulled, 40, "read no further than the bound");
    assert_eq!(store.record().aborts, 0);
    task.abort();
    assert!(task.await.expect_err("cancelled").is_cancelled());
    assert!(compensation::wait_idle(Duration::from_secs(10)).await);
    let r = store.record();
    assert_eq!(r.aborts, 1, "the dropped upload is aborted");
    assert!(r.completed.is_none());
}

#[tokio::test]
async fn one_part_or_less_is_one_request() {
    for (len, size) in [
        (0, Some(0)),
        (0, None),
        (7, None),
        (10, Some(10)),
        (10, None),
    ] {
        let store = Store::new(10, 2, 1_000);
        let body = data(len);
        let n = upload(&store, store.body(&body, &[3], false), size)
            .await
            .expect("upload");
        assert_eq!(n, len as u64);
        let r = store.record();
        assert_eq!(r.whole.as_deref(), Some(&body[..]), "{len} bytes");
        assert_eq!(r.starts, 0, "{len} bytes: no multipart upload");
    }
}

#[tokio::test]
async fn too_many_parts_with_a_known_size_is_refused_before_reading() {
    let store = Store::new(10, 2, 5);
    let poisoned = futures::stream::once(async {
        panic!("the body must not be read when the upload is refused")
    })
    .boxed();
    let e = upload(&store, poisoned, Some(51))
        .await
        .expect_err("refused");
    assert!(
        e.to_string().contains("too many parts (size Some(51))"),
        "{e}"
    );
    assert_eq!(store.record().starts, 0);
    // 50 bytes are 5 parts: allowed.
    let n = upload(&store, store.body(&data(50), &[7], false), Some(50))
        .await
        .expect("5 parts");
    assert_eq!(n, 50);
}

#[tokio::test]
async fn too_many_parts_while_reading_is_aborted() {
    let store = Store::new(10, 2, 5);
    let e = upload(&store, store.body(&data(51), &[7], false), None)
        .await
        .expect_err("refused");
    assert!(e.to_string().contains("too many parts (size None)"), "{e}");
    let r = store.record();
    assert_eq!((r.starts, r.aborts), (1, 1));
    assert!(r.completed.is_none());
    assert!(r.parts.len() <= 5, "{} parts put", r.parts.len());
}

#[tokio::test]
async fn every_failure_aborts_and_keeps_its_error() {
    let failing_body = |store: &Store| {
        let key = store.key.clone();
        store
            .body(&data(35), &[5], false)
            .chain(futures::stream::once(async move {
                Err(failure(&key, "source file vanished"))
            }))
            .boxed()
    };
    let cases: Vec<(&str, Behaviour, Option<u64>)> = vec![
        ("source file vanished", Behaviour::default(), None),
        (
            "part #2 refused",
            Behaviour {
                fail_part: Some(1),
                ..Default::default()
            },
            None,
        ),
        (
            "upload task of part #3 failed",
            Behaviour {
                panic_part: Some(2),
                ..Default::default()
            },
            None,
        ),
        (
            "complete refused",
            Behaviour {
                fail_complete: true,
                ..Default::default()
            },
            None,
        ),
        (
            "upload body has 35 bytes but its size was given as 36",
            Behaviour::default(),
            Some(36),
        ),
    ];
    for (want, how, size) in cases {
        let store = Store::new(10, 2, 1_000).with(how.clone());
        let body = if want == "source file vanished" {
            failing_body(&store)
        } else {
            store.body(&data(35), &[5], false)
        };
        let e = upload(&store, body, size).await.expect_err(want);
        let text = e.to_string();
        assert!(text.contains(want), "{want}: {text}");
        assert!(text.contains("t/0/seg.log"), "names the key: {text}");
        let r = store.record();
        assert_eq!((r.starts, r.aborts), (1, 1), "{want}: aborted once");
        if !how.fail_complete {
            assert!(r.completed.is_none(), "{want}");
        }
    }
}

#[tokio::test]
async fn a_size_mismatch_of_one_part_is_refused_before_the_request() {
    let store = Store::new(10, 2, 1_000);
    let e = upload(&store, store.body(&data(4), &[4], false), Some(5))
        .await
        .expect_err("mismatch");
    assert!(e.to_string().contains("4 bytes"), "{e}");
    assert!(store.record().whole.is_none());
}

#[tokio::test]
async fn a_failed_start_is_the_stores_to_clean() {
    let store = Store::new(10, 2, 1_000).with(Behaviour {
        fail_start: true,
        ..Default::default()
    });
    let e = upload(&store, store.body(&data(25), &[5], false), None)
        .await
        .expect_err("start");
    assert!(e.to_string().contains("start refused"), "{e}");
    assert_eq!(store.record().aborts, 0);
}

#[tokio::test]
async fn a_store_that_cannot_abort_gets_no_abort() {
    let store = Store::new(10, 2, 1_000).with(Behaviour {
        fail_part: Some(0),
        no_abort: true,
        ..Default::default()
    });
    let e = upload(&store, store.body(&data(25), &[5], false), None)
        .await
        .expect_err("part");
    assert!(e.to_string().contains("part #1 refused"), "{e}");
    assert_eq!(store.record().aborts, 0);
}

#[test]
fn limits() {
    let l = PartLimits {
        part_size: 10,
        parts_in_flight: 4,
        max_parts: 3,
    };
    assert_eq!(l.buffer_bytes(), 50);
    assert_eq!(
        (l.parts_for(0), l.parts_for(10), l.parts_for(11)),
        (0, 1, 2)
    );
    let zero = PartLimits {
        part_size: 0,
        parts_in_flight: 0,
        max_parts: 1,
    };
    assert_eq!(zero.normalized().part_size, 1);
    assert_eq!(zero.buffer_bytes(), 2);
}
