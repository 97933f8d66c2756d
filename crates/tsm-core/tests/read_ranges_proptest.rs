//! Property tests of the read path's range arithmetic (`engine/ranges.rs`) and of in-order
//! reassembly of parallel sub-range GETs (`engine/window.rs`, `engine/cached.rs`):
//! - `split` covers its range exactly, contiguously, in order, in at most `n` sub-ranges
//!   of at least `min` bytes (unless the range is shorter);
//! - a plain plan covers exactly the asked range: eager parts first (the first read),
//!   then parts of at most `part_bytes`;
//! - a chunk plan covers the stored span of its chunks exactly: the first chunk's
//!   sub-ranges, then GETs of whole chunks of at most `part_bytes` (or one chunk);
//! - reassembly: whatever the GETs in flight, sub-range sizes and transforms, a series of
//!   the broker's fetches (open-ended, some continuing the previous one, some random)
//!   returns exactly the segment's bytes.

use std::sync::Arc;

use crate::engine_support::*;
use futures::StreamExt;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use tsm_codec::ChunkIndex;
use tsm_core::engine::CompressionMode;
use tsm_core::engine::ranges::{PlanSizes, chunk_plan, plain_plan, split};
use tsm_storage::ByteRange;

fn contiguous(parts: &[ByteRange], start: u64, last: u64) -> Result<(), TestCaseError> {
    prop_assert!(!parts.is_empty());
    prop_assert_eq!(parts[0].start, start);
    prop_assert_eq!(parts[parts.len() - 1].end, last);
    for w in parts.windows(2) {
        prop_assert_eq!(w[0].end + 1, w[1].start);
    }
    Ok(())
}

fn sizes() -> impl Strategy<Value = PlanSizes> {
    (1u64..5000, 1u64..5000, 1usize..10, 1u64..2000).prop_map(
        |(first_read, part_bytes, max_parts, min_part)| PlanSizes {
            first_read,
            part_bytes,
            max_parts,
            min_part,
        },
    )
}

proptest! {
    #[test]
    fn split_covers_exactly(start in 0u64..1 << 40, len in 1u64..100_000, n in 1usize..16, min in 1u64..50_000) {
        let r = ByteRange { start, end: start + len - 1 };
        let parts = split(r, n, min);
        contiguous(&parts, r.start, r.end)?;
        prop_assert!(parts.len() <= n);
        if len >= min {
            prop_assert!(parts.iter().all(|p| p.len() >= min));
        } else {
            prop_assert_eq!(parts.len(), 1);
        }
        let (lo, hi) = parts.iter().fold((u64::MAX, 0), |(lo, hi), p| (lo.min(p.len()), hi.max(p.len())));
        prop_assert!(hi - lo <= 1);
    }

    #[test]
    fn plain_plan_covers_the_asked_range(start in 0u64..1 << 32, len in 1u64..50_000, s in sizes()) {
        let last = start + len - 1;
        let plan: Vec<_> = plain_plan(start, last, s).collect();
        let ranges: Vec<_> = plan.iter().map(|p| p.range).collect();
        contiguous(&ranges, start, last)?;
        let eager: Vec<_> = plan.iter().take_while(|p| p.eager).collect();
        prop_assert!(plan[eager.len()..].iter().all(|p| !p.eager));
        prop_assert_eq!(eager.iter().map(|p| p.range.len()).sum::<u64>(), len.min(s.first_read));
        prop_assert!(eager.len() <= s.max_parts);
        prop_assert!(plan[eager.len()..].iter().all(|p| p.range.len() <= s.part_bytes));
    }

    #[test]
    fn chunk_plan_covers_the_stored_span(
        stored in proptest::collection::vec(1u32..3000, 1..40),
        from in any::<prop::sample::Index>(),
        count in 1u64..40,
        s in sizes(),
    ) {
        let chunk = 1000u32;
        let n = stored.len() as u64;
        let size = (n - 1) * u64::from(chunk) + 1;
        let index = Arc::new(ChunkIndex::variable(chunk, size, stored.clone()).expect("index"));
        let a = from.index(stored.len()) as u64;
        let b = (a + count).min(n);
        let plan: Vec<_> = chunk_plan(index.clone(), a..b, s).collect();
        let ranges: Vec<_> = plan.iter().map(|p| p.range).collect();
        let first = index.chunk(a).expect("chunk");
        let lastc = index.chunk(b - 1).expect("chunk");
        contiguous(&ranges, first.transformed_start, lastc.transformed_start + lastc.transformed_len - 1)?;
        let eager: Vec<_> = plan.iter().take_while(|p| p.eager).collect();
        prop_assert_eq!(eager.iter().map(|p| p.range.len()).sum::<u64>(), first.transformed_len);
        let starts: Vec<u64> = (a..b).map(|i| index.chunk(i).expect("chunk").transformed_start).collect();
        for p in &plan[eager.len()..] {
            // Whole chunks: starts at a chunk, ends right before one (or at the span's end).
            prop_assert!(starts.contains(&p.range.start));
            prop_assert!(starts.contains(&(p.range.end + 1)) || p.range.end == lastc.transformed_start + lastc.transformed_len - 1);
            let one = index
                .chunk_for_transformed_offset(p.range.start)
                .and_then(|i| index.chunk(i))
                .map(|c| c.transformed_len);
            prop_assert!(p.range.len() <= s.part_bytes || Some(p.range.len()) == one);
        }
    }
}

#[test]
fn broker_fetch_series_reassemble_in_order() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let world = World::new();
    let ring = key_ring(world.dir.path(), "k1", 0);
    let mut runner = TestRunner::new(Config {
        cases: 32,
        ..Config::default()
    });
    let strategy = (
        1usize..60_000,
        1u32..5000,
        any::<bool>(),
        any::<bool>(),
        (1usize..9, 1u64..8000, 1u64..8000, 1u64..3000),
        proptest::collection::vec((any::<bool>(), any::<u64>(), 1usize..9000), 1..8),
        any::<u64>(),
    );
    runner
        .run(
            &strategy,
            |(size, chunk, compress, encrypt, (gets, first, part, min), reads, seed)| {
                rt.block_on(async {
                    let mode = if compress {
                        CompressionMode::On
                    } else {
                        CompressionMode::Off
                    };
                    let mut opts = options(chunk, mode, encrypt.then(|| ring.clone()));
                    opts.gets_in_flight = gets;
                    opts.first_read_bytes = first;
                    opts.get_part_bytes = part;
                    opts.min_sub_range_bytes = min;
                    opts.read_ahead_bytes = 3 * u64::from(chunk);
                    let engine = world.engine(opts);
                    let seg = segment(
                        &world.path("s"),
                        crate::engine_support::Rng::new(seed).bytes(size),
                        false,
                        seed,
                    );
                    engine
                        .copy_log_segment_data(&seg.metadata, &seg.data)
                        .await
                        .expect("copy");
                    let what = format!(
                        "size={size} chunk={chunk} compress={compress} encrypt={encrypt} \
                         gets={gets} first={first} part={part} min={min}"
                    );
                    let mut pos = 0u64;
                    for (continues, jump, want) in reads {
                        // Continue where the last read stopped (read-ahead), or jump.
                        if !continues || pos >= size as u64 {
                            pos = jump % size as u64;
                        }
                        let mut s = engine
                            .fetch_log_segment(&seg.metadata, pos, None)
                            .await
                            .expect("fetch");
                        let mut got = Vec::new();
                        while got.len() < want {
                            match s.next().await {
                                Some(b) => got.extend_from_slice(&b.expect("bytes")),
                                None => break,
                            }
                        }
                        drop(s);
                        let p = pos as usize;
                        let end = (p + got.len()).min(size);
                        assert!(
                            got.len() >= want.min(size - p) && got[..end - p] == seg.log[p..end],
                            "{what}: fetch at {pos} read {} bytes, wrong",
                            got.len()
                        );
                        pos += want.min(got.len()) as u64;
                    }
                    read_ahead_idle(&engine).await;
                    assert_eq!(engine.memory_in_use(), 0, "{what}: budget back");
                    engine
                        .delete_log_segment_data(&seg.metadata)
                        .await
                        .expect("delete");
                });
                Ok(())
            },
        )
        .expect("property holds");
}
