//! `.rsm-manifest` bytes from the bucket: parse, build the chunk table (with its bounds),
//! walk the first chunks and the index entries. Must never panic, hang or allocate past the
//! bounds of `tsm_core::manifest::bounds`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tsm_core::IndexType;
use tsm_core::ObjectKey;
use tsm_core::manifest::{SegmentManifest, bounds};

fuzz_target!(|data: &[u8]| {
    let Ok(m) = SegmentManifest::from_json(data) else {
        return;
    };
    let key = ObjectKey::plain("fuzz/segment.rsm-manifest");
    let _ = bounds::check_index_entries(&key, &m);
    for t in IndexType::ALL {
        let _ = m.segment_indexes.get(t);
    }
    let _ = m.segment_indexes.stored_len();
    if let Ok(index) = m.chunk_index(&key) {
        assert!(index.chunk_count() <= bounds::MAX_CHUNK_COUNT);
        let n = index.chunk_count().min(64);
        for span in index.spans(0..n) {
            assert!(span.transformed_range().end <= index.transformed_file_size());
        }
        let _ = index.chunk_for_offset(index.original_file_size().saturating_sub(1));
        let _ = m.to_json();
    }
});
