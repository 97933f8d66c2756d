//! `.rsm-manifest` bytes from the bucket: parse, build the chunk table (with its bounds),
//! walk the first chunks and the index entries, read and check the integrity data
//! (`tsm_core::manifest::integrity`, with a fixed MAC key). Must never panic, hang or
//! allocate past the bounds of `tsm_core::manifest::bounds` and `integrity`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tsm_core::IndexType;
use tsm_core::ObjectKey;
use tsm_core::manifest::integrity::{MAX_INTEGRITY_CHUNKS, SegmentIntegrity};
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
    let integrity = SegmentIntegrity::from_manifest(&key, &m);
    if let Ok(Some(i)) = &integrity {
        assert!(i.chunk_digests.len() as u64 <= MAX_INTEGRITY_CHUNKS);
    }
    if let Ok(index) = m.chunk_index(&key) {
        if let Ok(Some(i)) = &integrity {
            let dek = tsm_crypto::DataKey::from_bytes(&[7u8; 32]).expect("32 bytes");
            let mac = tsm_crypto::SegmentMac::new(&dek);
            let _ = i.verify(&key, &m, &index, Some(&mac));
        }
        assert!(index.chunk_count() <= bounds::MAX_CHUNK_COUNT);
        let n = index.chunk_count().min(64);
        for span in index.spans(0..n) {
            assert!(span.transformed_range().end <= index.transformed_file_size());
        }
        let _ = index.chunk_for_offset(index.original_file_size().saturating_sub(1));
        let _ = m.to_json();
    }
});
