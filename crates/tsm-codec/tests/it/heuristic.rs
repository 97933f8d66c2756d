//! The compression heuristic over real-layout Kafka segments, legacy message sets and
//! garbage.

use std::io::{BufReader, Cursor};

use proptest::prelude::*;
use tsm_codec::analyze;

use crate::kafka::{self, GZIP, NONE, ZSTD};

fn decide(segment: &[u8]) -> tsm_codec::HeuristicDecision {
    analyze(Cursor::new(segment), segment.len() as u64)
}

#[test]
fn uncompressed_json_batches_are_compressed() {
    let mut rng = kafka::Rng::new(1);
    let seg: Vec<u8> = (0..20)
        .flat_map(|i| kafka::batch_v2(&mut rng, i * 50, 50, NONE))
        .collect();
    let d = decide(&seg);
    assert!(d.compress, "{}", d.reason);
    assert_eq!(
        (d.batches, d.uncompressed_bytes, d.walked_bytes),
        (20, seg.len() as u64, seg.len() as u64)
    );
}

#[test]
fn producer_compressed_batches_are_not() {
    let mut rng = kafka::Rng::new(2);
    let seg: Vec<u8> = (0..20)
        .flat_map(|i| kafka::batch_v2(&mut rng, i * 50, 50, ZSTD))
        .collect();
    let d = decide(&seg);
    assert!(!d.compress, "{}", d.reason);
    assert_eq!((d.batches, d.uncompressed_bytes), (20, 0));
}

#[test]
fn half_of_the_bytes_decides() {
    // Exactly half uncompressed: compress. Just under half: don't.
    let seg = [
        kafka::opaque_batch_v2(1000, GZIP),
        kafka::opaque_batch_v2(1000, NONE),
    ]
    .concat();
    assert!(decide(&seg).compress);
    let seg = [
        kafka::opaque_batch_v2(1001, GZIP),
        kafka::opaque_batch_v2(1000, NONE),
    ]
    .concat();
    assert!(!decide(&seg).compress);
    // The first batch alone does not decide (the Java plugin would say "compressed").
    let seg = [
        kafka::opaque_batch_v2(100, ZSTD),
        kafka::opaque_batch_v2(5000, NONE),
    ]
    .concat();
    assert!(decide(&seg).compress);
}

#[test]
fn legacy_message_sets_are_walked() {
    let v0: Vec<u8> = (0..10)
        .flat_map(|i| kafka::message_v0_v1(0, i, b"{\"a\":1}", 0))
        .collect();
    let d = decide(&v0);
    assert!(d.compress && d.batches == 10, "{d:?}");
    let v1: Vec<u8> = (0..10)
        .flat_map(|i| kafka::message_v0_v1(1, i, b"xxxxxxxxxxxxxxxx", 1))
        .collect();
    let d = decide(&v1);
    assert!(!d.compress && d.batches == 10, "{d:?}");
    // A segment mixing v1 and v2 (after a message format upgrade).
    let mut rng = kafka::Rng::new(3);
    let mixed = [v1.clone(), kafka::batch_v2(&mut rng, 10, 100, NONE)].concat();
    let d = decide(&mixed);
    assert!(d.compress && d.batches == 11, "{d:?}");
}

#[test]
fn unparseable_means_uncompressed_with_a_reason() {
    let good = kafka::opaque_batch_v2(100, NONE);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (good[..99].to_vec(), "extends past the end"),
        ([good.clone(), vec![0; 10]].concat(), "truncated"),
        ([good.clone(), good[..20].to_vec()].concat(), "truncated"),
        (vec![0xAB; 500], "magic"),
        (
            {
                let mut b = good.clone();
                b[8..12].copy_from_slice(&(-5i32).to_be_bytes());
                b
            },
            "below the minimum",
        ),
        (
            {
                let mut b = good.clone();
                b[22] = 7;
                b
            },
            "codec",
        ),
    ];
    for (seg, why) in cases {
        let d = decide(&seg);
        assert!(!d.compress, "{why}: {d:?}");
        assert!(d.reason.contains(why), "expected {why:?} in {:?}", d.reason);
        assert!(
            d.reason.contains("byte"),
            "reason names the position: {}",
            d.reason
        );
    }
    let d = decide(&[]);
    assert!(!d.compress && d.batches == 0);
    // The reader is shorter than the size claimed: an I/O error, not a panic.
    let d = analyze(Cursor::new(&good), 500);
    assert!(!d.compress && d.reason.contains("I/O"), "{d:?}");
}

#[test]
fn works_through_a_bufreader() {
    let mut rng = kafka::Rng::new(4);
    let whole: Vec<u8> = (0..30)
        .flat_map(|i| kafka::batch_v2(&mut rng, i * 20, 20, NONE))
        .collect();
    let d = analyze(
        BufReader::with_capacity(4096, Cursor::new(&whole)),
        whole.len() as u64,
    );
    assert!(d.compress && d.batches == 30, "{d:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..300), claimed in 0u64..400) {
        let _ = analyze(Cursor::new(&bytes), claimed);
        let _ = decide(&bytes);
    }

    #[test]
    fn decision_matches_byte_model(batches in prop::collection::vec((61usize..400, 0i16..5), 1..30)) {
        let seg: Vec<u8> = batches.iter().flat_map(|&(len, codec)| kafka::opaque_batch_v2(len, codec)).collect();
        let uncompressed: usize = batches.iter().filter(|b| b.1 == 0).map(|b| b.0).sum();
        let d = decide(&seg);
        prop_assert_eq!(d.batches, batches.len() as u64);
        prop_assert_eq!(d.uncompressed_bytes, uncompressed as u64);
        prop_assert_eq!(d.compress, uncompressed * 2 >= seg.len());
    }
}
