//! chunk -> transform -> index -> detransform of any inclusive byte range returns exactly
//! the original bytes, for none / zstd / AES / zstd+AES.

use proptest::prelude::*;

use crate::kafka;
use crate::support::{MODES, Mode, Transform, read_range, write};

/// Test data: incompressible, repetitive text, or Kafka batches.
fn data(kind: u8, len: usize, seed: u64) -> Vec<u8> {
    match kind {
        0 => kafka::random_bytes(len, seed),
        1 => b"the quick brown fox jumps over the lazy dog. "
            .iter()
            .copied()
            .cycle()
            .take(len)
            .collect(),
        _ => kafka::kafka_segment(len, seed),
    }
}

fn mode() -> impl Strategy<Value = Mode> {
    prop::sample::select(MODES.to_vec())
}

/// (chunk size >= 1, data length) with at most ~4096 chunks per case, lengths up to 2 MiB.
fn chunk_and_len() -> impl Strategy<Value = (u32, usize)> {
    let chunk = prop_oneof![1u32..=64, 1u32..=70_000, 1u32..=(4 << 20)];
    let len = prop_oneof![6 => 0usize..=64 * 1024, 2 => 0usize..=512 * 1024, 1 => 0usize..=2 << 20];
    (chunk, len).prop_map(|(c, l)| (c, l.min(c as usize * 4096)))
}

fn check_ranges(t: &Transform, original: &[u8], chunk_size: u32, ranges: &[(u64, u64)]) {
    let (stored, index) = write(t, original, chunk_size);
    assert_eq!(index.original_file_size(), original.len() as u64);
    assert_eq!(index.transformed_file_size(), stored.len() as u64);
    let n = original.len() as u64;
    if n == 0 {
        assert_eq!(index.chunk_count(), 0);
        assert!(stored.is_empty());
        assert_eq!(index.chunks_for_range(0, 0), None);
        return;
    }
    for &(a, b) in ranges {
        let (start, end) = (a % n, b % n);
        let (start, end) = (start.min(end), start.max(end));
        let got = read_range(t, &stored, &index, start, end);
        assert!(
            got == original[start as usize..=end as usize],
            "{:?}: range {start}..={end} of {n} bytes, chunk {chunk_size}",
            t.mode
        );
    }
    // The whole segment, the first and the last byte.
    assert!(read_range(t, &stored, &index, 0, n - 1) == original);
    assert_eq!(read_range(t, &stored, &index, 0, 0), [original[0]]);
    assert_eq!(
        read_range(t, &stored, &index, n - 1, n - 1),
        [original[n as usize - 1]]
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn any_range_round_trips(
        (chunk_size, len) in chunk_and_len(),
        kind in 0u8..3,
        seed in any::<u64>(),
        mode in mode(),
        ranges in prop::collection::vec((any::<u64>(), any::<u64>()), 1..5),
    ) {
        let original = data(kind, len, seed);
        check_ranges(&Transform::new(mode), &original, chunk_size, &ranges);
    }
}

/// Boundary sizes 0, 1, k*chunk-1, k*chunk, k*chunk+1, every mode, every range for the
/// small ones.
#[test]
fn boundary_sizes_every_mode() {
    for mode in MODES {
        let t = Transform::new(mode);
        for chunk in [1u32, 2, 7, 1000] {
            let mut sizes = vec![0usize, 1];
            for k in 1..=3usize {
                let kc = k * chunk as usize;
                sizes.extend([kc - 1, kc, kc + 1]);
            }
            for len in sizes {
                let original = data(2, len, len as u64);
                let ranges: Vec<(u64, u64)> = if len <= 24 {
                    (0..len as u64)
                        .flat_map(|a| (a..len as u64).map(move |b| (a, b)))
                        .collect()
                } else {
                    let c = u64::from(chunk);
                    vec![
                        (0, c - 1),
                        (c - 1, c),
                        (c, c),
                        (c + 1, len as u64 - 1),
                        (1, len as u64 - 2),
                    ]
                };
                check_ranges(&t, &original, chunk, &ranges);
            }
        }
    }
}

/// Stored chunks are what the format says: zstd frames with content size, AES overhead 28.
#[test]
fn stored_layout_matches_the_format() {
    let original = data(2, 10_000, 1);
    let (stored, index) = write(&Transform::new(Mode::Aes), &original, 3000);
    assert_eq!(stored.len(), 10_000 + 4 * 28);
    let f = index.fixed_sizes().expect("fixed");
    assert_eq!(
        (f.transformed_chunk_size, f.final_transformed_chunk_size),
        (3028, 1028)
    );
    let (stored, index) = write(&Transform::new(Mode::None), &original, 3000);
    assert_eq!(stored, original);
    assert!(index.is_fixed());
    let (stored, index) = write(&Transform::new(Mode::Zstd), &original, 3000);
    assert!(!index.is_fixed());
    for span in index.spans(0..index.chunk_count()) {
        let frame = &stored[span.transformed_start as usize..span.transformed_range().end as usize];
        assert_eq!(&frame[..4], [0x28, 0xb5, 0x2f, 0xfd], "zstd magic");
    }
}

/// A flipped bit in a stored chunk is an error naming the chunk for AES modes.
#[test]
fn tampering_is_detected_with_aes() {
    let original = data(2, 5000, 2);
    for mode in [Mode::Aes, Mode::ZstdAes] {
        let t = Transform::new(mode);
        let (mut stored, index) = write(&t, &original, 1000);
        let span = index.chunk(3).expect("chunk 3");
        stored[span.transformed_start as usize + 20] ^= 1;
        let piece = &stored[span.transformed_start as usize..span.transformed_range().end as usize];
        let err = t
            .reverse(3, piece, span.original_len as usize)
            .expect_err("tampered");
        assert!(format!("{err:?}").contains('3'), "{err:?}");
    }
}
