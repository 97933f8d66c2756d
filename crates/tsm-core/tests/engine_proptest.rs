//! Property test: for segments copied with every transform (compression on/off, encryption
//! on/off) and awkward chunk sizes, ANY inclusive fetch range (end possibly past the
//! segment) returns exactly the original bytes. One copy per configuration; proptest picks
//! the segment size, chunk size and ranges.

use crate::engine_support::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use tsm_core::engine::CompressionMode;

#[test]
fn engine_any_range_round_trips() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let world = World::new();
    let ring = key_ring(world.dir.path(), "k1", 0);
    let mut runner = TestRunner::new(Config {
        cases: 48,
        ..Config::default()
    });
    let strategy = (
        0usize..20_000,
        1u32..3000,
        any::<bool>(),
        any::<bool>(),
        proptest::collection::vec((any::<u64>(), 0u64..5000), 1..6),
        any::<u64>(),
    );
    runner
        .run(
            &strategy,
            |(size, chunk, compress, encrypt, ranges, seed)| {
                rt.block_on(async {
                    let mode = if compress {
                        CompressionMode::On
                    } else {
                        CompressionMode::Off
                    };
                    let mut opts = options(chunk, mode, encrypt.then(|| ring.clone()));
                    opts.max_get_bytes = 4096;
                    let engine = world.engine(opts);
                    let seg = segment(
                        &world.path("s"),
                        crate::engine_support::Rng::new(seed).bytes(size),
                        seed % 2 == 0,
                        seed,
                    );
                    engine
                        .copy_log_segment_data(&seg.metadata, &seg.data)
                        .await
                        .expect("copy");
                    let what =
                        format!("size={size} chunk={chunk} compress={compress} encrypt={encrypt}");
                    if size == 0 {
                        check_range(&engine, &seg, 0, None, &what).await;
                    }
                    for (s, len) in ranges {
                        if size > 0 {
                            let start = s % size as u64;
                            check_range(&engine, &seg, start, Some(start + len), &what).await;
                        }
                    }
                    check_indexes(&engine, &seg, &what).await;
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
