//! Per-chunk zstd and chunk reading, over arbitrary input.

use bytes::Bytes;
use futures::TryStreamExt;
use proptest::prelude::*;
use tsm_codec::{ChunkIndex, chunking, compression};

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn zstd_round_trips_with_exact_size(data in prop::collection::vec(any::<u8>(), 0..4096), level in prop::sample::select(vec![-3, 1, 3, 9])) {
        let frame = compression::compress_chunk(&data, level).expect("compress");
        prop_assert_eq!(compression::decompress_chunk(&frame, data.len()).expect("decompress"), data.clone());
        prop_assert!(compression::decompress_chunk(&frame, data.len() + 1).is_err());
        if !data.is_empty() {
            prop_assert!(compression::decompress_chunk(&frame, data.len() - 1).is_err());
        }
    }

    #[test]
    fn decompress_never_panics(stored in prop::collection::vec(any::<u8>(), 0..256), expected in 0usize..100_000) {
        let _ = compression::decompress_chunk(&stored, expected);
        // With a valid magic and header prefix too.
        let mut framed = vec![0x28, 0xb5, 0x2f, 0xfd];
        framed.extend_from_slice(&stored);
        let _ = compression::decompress_chunk(&framed, expected);
    }

    #[test]
    fn read_chunks_cuts_any_length(len in 0usize..20_000, chunk in 1u32..3000) {
        let data = crate::kafka::random_bytes(len, len as u64);
        let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        let chunks: Vec<Bytes> = rt.block_on(chunking::read_chunks(&data[..], chunk).try_collect()).expect("read");
        prop_assert_eq!(chunks.len() as u64, chunking::chunk_count(len as u64, chunk));
        for (i, c) in chunks.iter().enumerate() {
            prop_assert_eq!(Some(c.len() as u64), chunking::chunk_len(len as u64, chunk, i as u64));
        }
        prop_assert_eq!(chunks.concat(), data);
    }
}

/// The fixed chunk index of the example manifest in docs/object-format.md "Manifest".
#[test]
fn spec_manifest_fixed_example() {
    let index = ChunkIndex::fixed(100, 1000, 110, 110).expect("spec example");
    assert_eq!(index.chunk_count(), 10);
    assert_eq!(index.transformed_file_size(), 1100);
    let span = index.chunk(9).expect("last chunk");
    assert_eq!(
        (
            span.original_start,
            span.transformed_start,
            span.transformed_len
        ),
        (900, 990, 110)
    );
}
