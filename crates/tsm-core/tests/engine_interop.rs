//! Interoperability with the on-bucket format written by other implementations
//! (docs/object-format.md): its example manifest and test vector parse, and segments
//! whose objects are assembled by hand from the spec (not by the engine's copy) are read
//! back byte-for-byte: no transform (fixed index), encryption only (fixed, chunk + 28),
//! compression only (variable index from the chunk-size codec).

use crate::engine_support::*;
use bytes::Bytes;
use futures::{StreamExt, stream};
use tsm_codec::{ChunkIndex, compression, sizes_codec};
use tsm_core::engine::CompressionMode;
use tsm_core::manifest::{ChunkIndexJson, SegmentManifest};
use tsm_core::object_keys::SegmentKeys;
use tsm_core::{IndexType, ObjectKey};
use tsm_crypto::{Aad, ChunkCipher, DataKey};

/// The manifest example of docs/object-format.md "Manifest", with real base64 in `encryption`.
const SPEC_MANIFEST: &str = r#"{"version":"1",
 "chunkIndex":{"type":"fixed","originalChunkSize":100,"originalFileSize":1000,
               "transformedChunkSize":110,"finalTransformedChunkSize":110},
 "segmentIndexes":{"offset":{"position":0,"size":1},"timestamp":{"position":1,"size":1},
                   "producerSnapshot":{"position":2,"size":1},"leaderEpoch":{"position":3,"size":1},
                   "transaction":{"position":4,"size":1}},
 "compression":false,
 "encryption":{"dataKey":"key1:AAAA","aad":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="},
 "remoteLogSegmentMetadata":{"remoteLogSegmentId":{"topicIdPartition":{"topicId":"MWJ6FHTfRYy67jzwZdeqSQ",
   "topicPartition":{"topic":"topic","partition":7}},"id":"tqimKeZwStOEOwRzT3L5oQ"},
   "startOffset":1234,"endOffset":2000,"maxTimestampMs":0,"brokerId":0,"eventTimestampMs":0,
   "segmentLeaderEpochs":{"0":1234}}}"#;

#[test]
fn engine_interop_spec_manifest_example_parses() {
    let m = SegmentManifest::from_json(SPEC_MANIFEST.as_bytes()).expect("spec example parses");
    assert_eq!(m.version, "1");
    assert!(!m.compression);
    assert_eq!(
        m.chunk_index,
        ChunkIndexJson::Fixed {
            original_chunk_size: 100,
            original_file_size: 1000,
            transformed_chunk_size: 110,
            final_transformed_chunk_size: 110
        }
    );
    let idx = m.segment_indexes;
    assert_eq!((idx.leader_epoch.position, idx.leader_epoch.size), (3, 1));
    assert_eq!(idx.get(IndexType::Transaction).map(|e| e.position), Some(4));
    assert_eq!(
        m.encryption.as_ref().map(|e| e.data_key.as_str()),
        Some("key1:AAAA")
    );
    let index = ChunkIndex::fixed(100, 1000, 110, 110).expect("index");
    assert_eq!(index.chunk_count(), 10);
    assert_eq!(index.transformed_file_size(), 1100);
    // Writing it back keeps the spec's field names and order.
    let text = String::from_utf8(m.to_json()).expect("utf8");
    let order: Vec<usize> = [
        "\"version\"",
        "\"chunkIndex\"",
        "\"segmentIndexes\"",
        "\"compression\"",
        "\"encryption\"",
        "\"remoteLogSegmentMetadata\"",
    ]
    .iter()
    .map(|f| {
        text.find(f)
            .unwrap_or_else(|| panic!("{f} missing in {text}"))
    })
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
}

#[test]
fn engine_interop_spec_test_vector_variable_index() {
    // docs/object-format.md "`transformedChunks`: chunk-size codec": [10,20,30] as written
    // by the Java plugin.
    let json = r#"{"version":"1","chunkIndex":{"type":"variable","originalChunkSize":20,
        "originalFileSize":50,"transformedChunks":"KLUv/SAPeQAAAAAAAwAAAAoBAAoAAAAe"},
        "segmentIndexes":{"offset":{"position":0,"size":0},"timestamp":{"position":0,"size":0},
        "producerSnapshot":{"position":0,"size":0},"leaderEpoch":{"position":0,"size":0},
        "transaction":null},"compression":true}"#;
    let m = SegmentManifest::from_json(json.as_bytes()).expect("parses");
    let ChunkIndexJson::Variable {
        transformed_chunks, ..
    } = &m.chunk_index
    else {
        panic!("variable expected");
    };
    assert_eq!(
        sizes_codec::decode_manifest_string(transformed_chunks).expect("vector"),
        vec![10, 20, 30]
    );
    let index =
        ChunkIndex::variable_from_manifest_string(20, 50, transformed_chunks).expect("index");
    let starts: Vec<u64> = (0..3)
        .map(|i| index.chunk(i).expect("chunk").transformed_start)
        .collect();
    assert_eq!(starts, vec![0, 10, 30]);
}

/// Hand-assembles a segment's three objects from the spec and checks the engine reads them.
async fn hand_built(encrypt: bool, compress: bool) {
    let world = World::new();
    let ring = key_ring(world.dir.path(), "k1", 0);
    let mut opts = options(100, CompressionMode::Off, Some(ring.clone()));
    // The same engine reads the plaintext variants: segments tiered before encryption.
    opts.plaintext_reads = true;
    let engine = world.engine(opts.clone());
    let seg = segment(&world.path("s"), record_batches(10, 0, 30), true, 30);
    let keys = SegmentKeys::for_copy(&seg.metadata, &opts.key_prefix, false);

    let key = DataKey::generate().expect("dek");
    let aad = Aad::generate().expect("aad");
    let cipher = ChunkCipher::new(&key, &aad);
    let mut log = Vec::new();
    let mut sizes = Vec::new();
    for chunk in seg.log.chunks(100) {
        let mut stored = chunk.to_vec();
        if compress {
            stored = compression::compress_chunk(&stored, 3).expect("zstd");
        }
        if encrypt {
            stored = cipher.encrypt(&stored).expect("encrypt");
        }
        sizes.push(stored.len() as u32);
        log.extend_from_slice(&stored);
    }
    let mut indexes = Vec::new();
    let mut entries = Vec::new();
    for t in IndexType::ALL {
        let plain = &seg.indexes[t.java_name()];
        let stored = if encrypt && !plain.is_empty() {
            cipher.encrypt(plain).expect("encrypt index")
        } else {
            plain.clone()
        };
        entries.push(format!(
            r#""{}":{{"position":{},"size":{}}}"#,
            match t {
                IndexType::Offset => "offset",
                IndexType::Timestamp => "timestamp",
                IndexType::ProducerSnapshot => "producerSnapshot",
                IndexType::LeaderEpoch => "leaderEpoch",
                IndexType::Transaction => "transaction",
            },
            indexes.len(),
            stored.len()
        ));
        indexes.extend_from_slice(&stored);
    }
    let n = seg.log.len();
    let last = n - (n - 1) / 100 * 100;
    let chunk_index = if compress {
        format!(
            r#"{{"type":"variable","originalChunkSize":100,"originalFileSize":{n},"transformedChunks":"{}"}}"#,
            sizes_codec::encode_manifest_string(&sizes, 3).expect("sizes")
        )
    } else {
        let overhead = if encrypt { 28 } else { 0 };
        format!(
            r#"{{"type":"fixed","originalChunkSize":100,"originalFileSize":{n},"transformedChunkSize":{},"finalTransformedChunkSize":{}}}"#,
            100 + overhead,
            last + overhead
        )
    };
    let encryption = if encrypt {
        format!(
            r#","encryption":{{"dataKey":"{}","aad":"{}"}}"#,
            ring.wrap(&key).expect("wrap"),
            aad.to_base64()
        )
    } else {
        String::new()
    };
    let manifest = format!(
        r#"{{"version":"1","chunkIndex":{chunk_index},"segmentIndexes":{{{}}},"compression":{compress}{encryption}}}"#,
        entries.join(",")
    );
    for (k, bytes) in [
        (&keys.log, log),
        (&keys.indexes, indexes),
        (&keys.manifest, manifest.into_bytes()),
    ] {
        let len = bytes.len() as u64;
        world
            .backend
            .upload(
                &ObjectKey::plain(k.as_str()),
                stream::once(async move { Ok(Bytes::from(bytes)) }).boxed(),
                Some(len),
            )
            .await
            .expect("upload");
    }
    let what = format!("hand-built encrypt={encrypt} compress={compress}");
    for (s, e) in [
        (0, None),
        (99, Some(100)),
        (150, Some(1234)),
        (n as u64 - 1, None),
    ] {
        check_range(&engine, &seg, s, e, &what).await;
    }
    check_indexes(&engine, &seg, &what).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_interop_reads_hand_built_segments() {
    hand_built(false, false).await;
    hand_built(true, false).await;
    hand_built(false, true).await;
    hand_built(true, true).await;
}
