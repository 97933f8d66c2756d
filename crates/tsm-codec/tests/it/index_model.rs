//! ChunkIndex lookups agree with a naive model (a list of per-chunk spans built by loops).

use proptest::prelude::*;
use tsm_codec::{ChunkIndex, ChunkSpan, chunking};

/// Naive model: walk the file chunk by chunk.
fn model(chunk_size: u32, file_size: u64, transformed: &[u64]) -> Vec<ChunkSpan> {
    let mut spans = Vec::new();
    let (mut o, mut t, mut i) = (0u64, 0u64, 0usize);
    while o < file_size {
        let len = u64::from(chunk_size).min(file_size - o);
        spans.push(ChunkSpan {
            index: i as u64,
            original_start: o,
            original_len: len,
            transformed_start: t,
            transformed_len: transformed[i],
        });
        o += len;
        t += transformed[i];
        i += 1;
    }
    spans
}

fn check(index: &ChunkIndex, spans: &[ChunkSpan], pairs: &[(u64, u64)]) {
    let file_size = index.original_file_size();
    assert_eq!(index.chunk_count(), spans.len() as u64);
    assert_eq!(
        index.chunk_count(),
        chunking::chunk_count(file_size, index.original_chunk_size())
    );
    let total: u64 = spans.iter().map(|s| s.transformed_len).sum();
    assert_eq!(index.transformed_file_size(), total);
    for s in spans {
        assert_eq!(index.chunk(s.index), Some(*s));
        assert_eq!(index.transformed_len(s.index), Some(s.transformed_len));
    }
    assert_eq!(index.chunk(spans.len() as u64), None);
    assert_eq!(index.spans(0..u64::MAX).collect::<Vec<_>>(), spans);
    let sizes: Vec<u64> = index.transformed_sizes().map(u64::from).collect();
    assert_eq!(
        sizes,
        spans.iter().map(|s| s.transformed_len).collect::<Vec<_>>()
    );
    // Original offset -> chunk, for every offset and one past the end: the model is a
    // table filled byte by byte from the spans.
    let mut owner = vec![None; file_size as usize + 1];
    let mut stored_owner = vec![None; total as usize + 1];
    for s in spans {
        for off in s.original_range() {
            owner[off as usize] = Some(s.index);
        }
        for off in s.transformed_range() {
            stored_owner[off as usize] = Some(s.index);
        }
    }
    for (off, want) in owner.iter().enumerate() {
        assert_eq!(index.chunk_for_offset(off as u64), *want, "offset {off}");
    }
    for (off, want) in stored_owner.iter().enumerate() {
        assert_eq!(
            index.chunk_for_transformed_offset(off as u64),
            *want,
            "stored offset {off}"
        );
    }
    // Inclusive ranges -> chunks, and chunks -> one contiguous stored range.
    for &(a, b) in pairs {
        let want = if a > b || b >= file_size {
            None
        } else {
            let covering: Vec<u64> = spans
                .iter()
                .filter(|s| s.original_start <= b && a < s.original_start + s.original_len)
                .map(|s| s.index)
                .collect();
            Some(covering[0]..covering[covering.len() - 1] + 1)
        };
        let got = index.chunks_for_range(a, b);
        assert_eq!(got, want, "range {a}..={b}");
        if let Some(chunks) = got {
            let first = &spans[chunks.start as usize];
            let last = &spans[chunks.end as usize - 1];
            assert_eq!(
                index.transformed_range(chunks),
                Some(first.transformed_start..last.transformed_start + last.transformed_len)
            );
        }
    }
    assert_eq!(index.transformed_range(0..0), None);
    assert_eq!(index.transformed_range(0..spans.len() as u64 + 1), None);
}

fn pairs(file_size: u64) -> impl Strategy<Value = Vec<(u64, u64)>> {
    prop::collection::vec((0..=file_size + 1, 0..=file_size + 1), 0..40)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

    #[test]
    fn variable_agrees_with_model(
        (chunk_size, file_size, transformed, pairs) in (1u32..=50, 0u64..=1500).prop_flat_map(|(c, f)| {
            let n = chunking::chunk_count(f, c) as usize;
            (Just(c), Just(f), prop::collection::vec(0u32..=120, n), pairs(f))
        })
    ) {
        let index = ChunkIndex::variable(chunk_size, file_size, transformed.clone()).expect("valid");
        let t: Vec<u64> = transformed.iter().map(|&v| u64::from(v)).collect();
        check(&index, &model(chunk_size, file_size, &t), &pairs);
    }

    #[test]
    fn fixed_agrees_with_model(
        (chunk_size, file_size, tcs, ftcs, pairs) in (1u32..=50, 0u64..=1500).prop_flat_map(|(c, f)| {
            (Just(c), Just(f), 1u32..=80, 0u32..=80, pairs(f))
        })
    ) {
        let index = ChunkIndex::fixed(chunk_size, file_size, tcs, ftcs).expect("valid");
        let n = chunking::chunk_count(file_size, chunk_size) as usize;
        let mut t = vec![u64::from(tcs); n];
        if let Some(last) = t.last_mut() { *last = u64::from(ftcs); }
        check(&index, &model(chunk_size, file_size, &t), &pairs);
    }

    #[test]
    fn variable_rejects_wrong_counts(chunk_size in 1u32..=50, file_size in 0u64..=1500, delta in 1usize..3, more in any::<bool>()) {
        let n = chunking::chunk_count(file_size, chunk_size) as usize;
        let wrong = if more { n + delta } else if n >= delta { n - delta } else { n + delta };
        let err = ChunkIndex::variable(chunk_size, file_size, vec![1; wrong]).expect_err("count mismatch");
        prop_assert!(matches!(err, tsm_codec::CodecError::ChunkCountMismatch { .. }), "{}", err);
    }
}

#[test]
fn constructors_validate() {
    assert!(ChunkIndex::fixed(0, 10, 1, 1).is_err());
    assert!(ChunkIndex::variable(0, 0, vec![]).is_err());
    assert!(
        ChunkIndex::fixed(1, u64::MAX, u32::MAX, u32::MAX).is_err(),
        "stored size overflows"
    );
    let empty = ChunkIndex::fixed(100, 0, 100, 0).expect("empty segment");
    assert_eq!((empty.chunk_count(), empty.transformed_file_size()), (0, 0));
    assert_eq!(empty.chunk_for_offset(0), None);
    let e =
        ChunkIndex::variable(10, 25, vec![1, 2]).expect_err("25 bytes in chunks of 10 = 3 chunks");
    let msg = e.to_string();
    assert!(
        msg.contains("2 transformed chunk sizes") && msg.contains("3 chunks"),
        "{msg}"
    );
    // A manifest string whose count disagrees with the file size.
    let s = tsm_codec::sizes_codec::encode_manifest_string(&[10, 20, 30], 3).expect("encode");
    assert!(ChunkIndex::variable_from_manifest_string(10, 25, &s).is_ok());
    assert!(ChunkIndex::variable_from_manifest_string(10, 31, &s).is_err());
    assert!(ChunkIndex::variable_from_manifest_string(10, 20, &s).is_err());
    // Debug does not dump per-chunk data.
    let big = ChunkIndex::variable(1, 10_000, vec![1; 10_000]).expect("valid");
    assert!(format!("{big:?}").len() < 300);
    assert_eq!(big.heap_bytes(), 80_000, "8 bytes per chunk");
    assert_eq!(
        ChunkIndex::fixed(1, 1 << 40, 1, 1)
            .expect("valid")
            .heap_bytes(),
        0
    );
}

#[test]
fn builder_enforces_the_chunking_rule() {
    let mut b = tsm_codec::ChunkIndexBuilder::new(10).expect("valid");
    b.push(10, 5).expect("full chunk");
    assert!(b.push(0, 5).is_err(), "empty chunk");
    assert!(b.push(11, 5).is_err(), "oversized chunk");
    b.push(3, 2).expect("short last chunk");
    assert!(b.push(3, 2).is_err(), "nothing after the short chunk");
    let index = b.clone().build_variable().expect("variable");
    assert_eq!(
        (index.original_file_size(), index.transformed_file_size()),
        (13, 7)
    );
    let err = b
        .build_fixed(10)
        .expect_err("chunk 0 is 5 stored bytes, not 10");
    assert!(err.to_string().contains("chunk 0"), "{err}");
    assert!(tsm_codec::ChunkIndexBuilder::new(0).is_err());
    let empty = tsm_codec::ChunkIndexBuilder::new(4)
        .expect("valid")
        .build_fixed(4)
        .expect("empty");
    assert_eq!(empty.chunk_count(), 0);
}
