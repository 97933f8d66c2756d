//! The ordered bounded-parallel pipeline: order, the in-flight bound, errors, panics, and a
//! full write + read of a segment through it with every transform.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt, stream};
use tsm_codec::{
    ChunkIndexBuilder, CodecError, PipelineError, chunking, ordered_transform,
    ordered_transform_ramped,
};

use crate::kafka;
use crate::support::{Error, MODES, Transform};

fn chunks(n: usize) -> impl futures::Stream<Item = Result<Bytes, CodecError>> + Send {
    stream::iter((0..n).map(|i| Ok(Bytes::from(format!("chunk-{i}")))))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keeps_order_and_bounds_in_flight() {
    for max in [0usize, 1, 2, 5] {
        let now = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let (n2, p2) = (now.clone(), peak.clone());
        let out: Vec<Bytes> = ordered_transform(chunks(40), max, move |i, b: Bytes| {
            let cur = n2.fetch_add(1, Ordering::SeqCst) + 1;
            p2.fetch_max(cur, Ordering::SeqCst);
            // Uneven work so that later chunks often finish first.
            std::thread::sleep(std::time::Duration::from_millis((i * 7 % 5) * 2));
            n2.fetch_sub(1, Ordering::SeqCst);
            Ok::<_, CodecError>(Bytes::from(format!("{i}:{}", String::from_utf8_lossy(&b))))
        })
        .try_collect()
        .await
        .expect("no errors");
        let want: Vec<Bytes> = (0..40)
            .map(|i| Bytes::from(format!("{i}:chunk-{i}")))
            .collect();
        assert_eq!(out, want, "max_in_flight {max}");
        assert!(
            peak.load(Ordering::SeqCst) <= max.max(1),
            "peak {} > {max}",
            peak.load(Ordering::SeqCst)
        );
    }
}

/// `n` chunks, counting how many the pipeline has taken from its input.
fn counted(
    n: usize,
    taken: Arc<AtomicUsize>,
) -> impl futures::Stream<Item = Result<Bytes, CodecError>> + Send {
    chunks(n).inspect(move |_| {
        taken.fetch_add(1, Ordering::SeqCst);
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ramped_window_takes_one_chunk_for_a_reader_that_stops_after_one() {
    let taken = Arc::new(AtomicUsize::new(0));
    let mut out = Box::pin(ordered_transform_ramped(
        counted(40, taken.clone()),
        8,
        |_, b| Ok::<_, CodecError>(b),
    ));
    let first = out.next().await.expect("one chunk").expect("no error");
    assert_eq!(first, Bytes::from("chunk-0"));
    // The broker's pattern: read the first chunk, close. Only that chunk was taken.
    assert_eq!(taken.load(Ordering::SeqCst), 1);
    drop(out);

    // A reader that keeps going gets everything, in order; the window doubles per chunk
    // taken (1, 2, 4, 8), so after k outputs at most 2^k chunks have been taken.
    let taken = Arc::new(AtomicUsize::new(0));
    let mut out = Box::pin(ordered_transform_ramped(
        counted(40, taken.clone()),
        8,
        |_, b| Ok::<_, CodecError>(b),
    ));
    let mut got = Vec::new();
    while let Some(b) = out.next().await {
        got.push(b.expect("no error"));
        let k = got.len();
        let bound = (k + (1usize << k.min(3))).min(40);
        assert!(
            taken.load(Ordering::SeqCst) <= bound,
            "after {k}: {taken:?}"
        );
    }
    let want: Vec<Bytes> = (0..40).map(|i| Bytes::from(format!("chunk-{i}"))).collect();
    assert_eq!(got, want);

    // The fixed window fills at once.
    let taken = Arc::new(AtomicUsize::new(0));
    let mut out = Box::pin(ordered_transform(counted(40, taken.clone()), 8, |_, b| {
        Ok::<_, CodecError>(b)
    }));
    out.next().await.expect("one chunk").expect("no error");
    assert!(taken.load(Ordering::SeqCst) >= 2, "{taken:?}");
}

#[tokio::test]
async fn empty_input_gives_empty_output() {
    let out: Vec<Bytes> = ordered_transform(chunks(0), 4, |_, b| Ok::<_, CodecError>(b))
        .try_collect()
        .await
        .expect("empty");
    assert!(out.is_empty());
}

#[tokio::test]
async fn first_error_ends_the_stream() {
    let items: Vec<_> = ordered_transform(chunks(20), 4, |i, b| {
        if i == 7 {
            Err(CodecError::ZeroChunkSize.in_chunk(i))
        } else {
            Ok(b)
        }
    })
    .collect()
    .await;
    assert_eq!(items.len(), 8);
    assert!(items[..7].iter().all(|r| r.is_ok()));
    let err = items[7].as_ref().expect_err("chunk 7 fails");
    assert!(err.to_string().starts_with("chunk 7:"), "{err}");

    // An input error is passed through in its place and ends the stream too.
    let input = stream::iter(vec![
        Ok(Bytes::from_static(b"a")),
        Err(CodecError::ZeroChunkSize),
        Ok(Bytes::from_static(b"b")),
    ]);
    let items: Vec<_> = ordered_transform(input, 2, |_, b| Ok(b)).collect().await;
    assert_eq!(items.len(), 2);
    assert!(matches!(items[1], Err(CodecError::ZeroChunkSize)));
}

#[tokio::test]
async fn a_panicking_transform_is_an_error() {
    let items: Vec<_> = ordered_transform(chunks(5), 2, |i, b| {
        if i == 3 {
            panic!("boom in chunk three");
        }
        Ok::<_, CodecError>(b)
    })
    .collect()
    .await;
    assert_eq!(items.len(), 4);
    match &items[3] {
        Err(CodecError::Pipeline(PipelineError::Panicked { index: 3, message })) => {
            assert!(message.contains("boom"), "{message}")
        }
        other => panic!("expected a panic error, got {other:?}"),
    }
}

#[test]
fn outside_a_runtime_is_an_error_not_a_panic() {
    let items: Vec<_> = futures::executor::block_on(
        ordered_transform(chunks(2), 2, |_, b| Ok::<_, CodecError>(b)).collect(),
    );
    assert!(matches!(
        items[0],
        Err(CodecError::Pipeline(PipelineError::NoRuntime { index: 0 }))
    ));
}

/// A segment goes through read_chunks -> pipeline (forward) -> index, then back through the
/// pipeline (reverse), for every mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segment_round_trip_through_the_pipeline() {
    let segment = kafka::kafka_segment(700_000, 9);
    for mode in MODES {
        for chunk_size in [1u32 << 16, 100_000] {
            let t = Arc::new(Transform::new(mode));
            let tf = t.clone();
            let input = chunking::read_chunks(&segment[..], chunk_size)
                .map_err(|e| Error::Crypto(e.to_string()));
            let stored_chunks: Vec<Bytes> = ordered_transform(input, 3, move |_, chunk| {
                Ok(Bytes::from(tf.forward(&chunk)?))
            })
            .try_collect()
            .await
            .expect("forward");
            assert_eq!(
                stored_chunks.len() as u64,
                chunking::chunk_count(segment.len() as u64, chunk_size)
            );
            let mut builder = ChunkIndexBuilder::new(chunk_size).expect("valid");
            for (i, c) in stored_chunks.iter().enumerate() {
                let orig = chunking::chunk_len(segment.len() as u64, chunk_size, i as u64)
                    .expect("exists");
                builder.push(orig, c.len() as u32).expect("push");
            }
            let index = t.build_index(builder, chunk_size);
            // Read back chunks 2.. through the pipeline, as a ranged fetch would.
            let first = 2u64;
            let spans: Vec<_> = index.spans(first..index.chunk_count()).collect();
            let tr = t.clone();
            let lens: Arc<Vec<u64>> = Arc::new(spans.iter().map(|s| s.original_len).collect());
            let input = stream::iter(
                stored_chunks[first as usize..]
                    .iter()
                    .cloned()
                    .map(Ok::<Bytes, Error>),
            );
            let back: Vec<Bytes> = ordered_transform(input, 2, move |i, stored: Bytes| {
                Ok(Bytes::from(tr.reverse(
                    first + i,
                    &stored,
                    lens[i as usize] as usize,
                )?))
            })
            .try_collect()
            .await
            .expect("reverse");
            let start = spans[0].original_start as usize;
            assert!(
                back.concat() == segment[start..],
                "{mode:?} chunk {chunk_size}"
            );
        }
    }
}

/// Dropping the output mid-way neither hangs nor panics; running transforms finish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_output_early_is_fine() {
    let done = Arc::new(AtomicUsize::new(0));
    let d2 = done.clone();
    let mut out = Box::pin(ordered_transform(chunks(100), 4, move |_, b| {
        d2.fetch_add(1, Ordering::SeqCst);
        Ok::<_, CodecError>(b)
    }));
    let first = out.next().await.expect("one item").expect("ok");
    assert_eq!(first, Bytes::from_static(b"chunk-0"));
    drop(out);
    // At most the chunks already in flight were transformed, never all 100.
    assert!(
        done.load(Ordering::SeqCst) <= 1 + 4,
        "{}",
        done.load(Ordering::SeqCst)
    );
}
