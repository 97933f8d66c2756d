//! Segment integrity over the filesystem backend (`manifest/integrity.rs`): what a writer
//! of the bucket does to a segment's objects, in every mode (plain, zstd, aes, zstd+aes),
//! is an error naming the object, never wrong bytes: a flipped bit, two chunks swapped, a
//! chunk dropped, the size shrunk, another segment's objects at this segment's keys, an
//! index changed or moved, the MAC stripped. Segments without integrity data (the Java
//! plugin's) read as before, are counted, and are refused under `tsm.integrity.required`.

use crate::engine_support::*;
use tsm_codec::ChunkIndex;
use tsm_core::engine::{CompressionMode, EngineOptions};
use tsm_core::manifest::{ChunkIndexJson, SegmentManifest};
use tsm_core::{IndexType, KafkaUuid, ObjectKey, RemoteStorageManager, RsmError};

const CHUNK: u32 = 1024;

/// One mode of the format: compression and encryption on or off.
#[derive(Clone, Copy, Debug)]
struct Mode {
    zstd: bool,
    aes: bool,
}

const MODES: [Mode; 4] = [
    Mode {
        zstd: false,
        aes: false,
    },
    Mode {
        zstd: true,
        aes: false,
    },
    Mode {
        zstd: false,
        aes: true,
    },
    Mode {
        zstd: true,
        aes: true,
    },
];

/// A world with one engine per mode's options, sharing the key ring.
struct Bench {
    world: World,
    ring: std::sync::Arc<tsm_crypto::KeyRing>,
}

impl Bench {
    fn new() -> Self {
        let world = World::new();
        let ring = key_ring(world.dir.path(), "k1", 1);
        Self { world, ring }
    }

    fn options(&self, mode: Mode) -> EngineOptions {
        let compression = if mode.zstd {
            CompressionMode::On
        } else {
            CompressionMode::Off
        };
        options(CHUNK, compression, mode.aes.then(|| self.ring.clone()))
    }

    /// A fresh engine (nothing cached) of `mode`.
    fn engine(&self, mode: Mode) -> RemoteStorageManager {
        self.world.engine(self.options(mode))
    }

    /// Copies a new segment of `mode` (several chunks, compressible) and returns it with
    /// its three object keys (log, indexes, manifest).
    async fn copy(&self, mode: Mode, seed: u64) -> (Segment, [String; 3]) {
        let log = record_batches(60, 0, seed);
        assert!(log.len() > 4 * CHUNK as usize, "{} bytes", log.len());
        let seg = segment(&self.world.path("s"), log, true, seed);
        self.engine(mode)
            .copy_log_segment_data(&seg.metadata, &seg.data)
            .await
            .expect("copy");
        let keys = self.keys_of(&seg).await;
        (seg, keys)
    }

    async fn keys_of(&self, seg: &Segment) -> [String; 3] {
        let id = seg.metadata.segment_id.to_string();
        let all = self.world.keys().await;
        let find = |suffix: &str| {
            all.iter()
                .find(|k| k.contains(&id) && k.ends_with(suffix))
                .cloned()
                .unwrap_or_else(|| panic!("no {suffix} object of {id} in {all:?}"))
        };
        [find(".log"), find(".indexes"), find(".rsm-manifest")]
    }
}

fn parse_manifest(bytes: &[u8]) -> SegmentManifest {
    SegmentManifest::from_json(bytes).expect("manifest parses")
}

/// A read of the whole segment that must fail as corrupt data, with `words` in the error;
/// a read that returns bytes must return the right ones (never wrong bytes).
async fn refused(engine: &RemoteStorageManager, seg: &Segment, words: &str, what: &str) {
    match read_all(engine, &seg.metadata, 0, None).await {
        Ok(got) => {
            assert_eq!(got, seg.log, "{what}: wrong bytes served");
            panic!("{what}: read succeeded, expected an error with {words:?}");
        }
        Err(e) => {
            assert!(matches!(e, RsmError::Corrupt { .. }), "{what}: {e:?}");
            assert!(e.to_string().contains(words), "{what}: {e}");
        }
    }
}

fn failures(engine: &RemoteStorageManager) -> u64 {
    engine.metrics().counter("integrity.failures")
}

/// Every mode reads back byte-identical with its integrity checked: no segment counts as
/// unverified, no check fails, and the manifest holds the tsm-only field inside
/// `remoteLogSegmentMetadata` (the only place the Java plugin ignores).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn integrity_is_written_and_checked_in_every_mode() {
    let b = Bench::new();
    for mode in MODES {
        let (seg, [_, _, manifest]) = b.copy(mode, 1).await;
        let m: serde_json::Value =
            serde_json::from_slice(&get(&b.world, &manifest).await).expect("json");
        let i = &m["remoteLogSegmentMetadata"]["tsmIntegrity"];
        assert_eq!(i["version"], 1, "{mode:?}: {m}");
        assert_eq!(i["digest"], "xxh3-64", "{mode:?}");
        assert_eq!(i["mac"].is_string(), mode.aes, "{mode:?}: {i}");
        assert!(
            m.get("tsmIntegrity").is_none(),
            "{mode:?}: top level stays v1"
        );
        let engine = b.engine(mode);
        check_range(&engine, &seg, 0, None, &format!("{mode:?}")).await;
        check_range(&engine, &seg, 1500, Some(3000), &format!("{mode:?} range")).await;
        check_indexes(&engine, &seg, &format!("{mode:?}")).await;
        let m = engine.metrics();
        assert_eq!(m.counter("integrity.unverified"), 0, "{mode:?}");
        assert_eq!(m.counter("integrity.failures"), 0, "{mode:?}");
    }
}

/// A flipped bit anywhere in a stored chunk is an error in every mode, plain included
/// (plain segments had no check before integrity data: now their chunk digest), naming the
/// chunk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_bit_is_an_error_in_every_mode() {
    let b = Bench::new();
    for mode in MODES {
        let (seg, [log, _, _]) = b.copy(mode, 2).await;
        let mut bytes = get(&b.world, &log).await;
        let at = bytes.len() / 2;
        bytes[at] ^= 0x10;
        put(&b.world, &log, bytes).await;
        let engine = b.engine(mode);
        // Plain: the chunk's digest. AES-GCM and zstd chunks check their own content (their
        // digest is their tail token, which a flip mid-chunk leaves alone).
        let words = match (mode.zstd, mode.aes) {
            (_, true) => "AES-GCM authentication failed",
            (true, false) => "zstd",
            (false, false) => "do not match the digest",
        };
        refused(&engine, &seg, words, &format!("{mode:?} bit flip")).await;
        if !mode.zstd && !mode.aes {
            assert!(failures(&engine) >= 1, "{mode:?}");
        }
        // A range in a chunk left alone still reads.
        check_range(
            &engine,
            &seg,
            0,
            Some(100),
            &format!("{mode:?} untouched chunk"),
        )
        .await;
    }
}

/// Two chunks of equal stored size swapped in `.log` (plain and aes: fixed-size chunks;
/// each AES chunk still authenticates on its own): the digests catch the swap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swapped_chunks_are_an_error() {
    let b = Bench::new();
    for mode in MODES.into_iter().filter(|m| !m.zstd) {
        let (seg, [log, _, _]) = b.copy(mode, 3).await;
        let bytes = get(&b.world, &log).await;
        let stored = CHUNK as usize + if mode.aes { 28 } else { 0 };
        let mut swapped = bytes.clone();
        swapped[..stored].copy_from_slice(&bytes[stored..2 * stored]);
        swapped[stored..2 * stored].copy_from_slice(&bytes[..stored]);
        put(&b.world, &log, swapped).await;
        refused(
            &b.engine(mode),
            &seg,
            "chunk 0 (original bytes 0-1023",
            &format!("{mode:?} swap"),
        )
        .await;
    }
}

/// The manifest edited to describe fewer bytes: the last chunk dropped (sizes kept
/// consistent; on an encrypted segment its digest dropped too, as a careful writer would)
/// or the size shrunk inside the last chunk. Encrypted: the MAC does not match. Plain or
/// zstd: the digest count or the last chunk's digest does not. (A writer who rewrites
/// the digests of a segment without encryption is not stopped: docs/security.md.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_chunk_or_shrunk_size_is_an_error() {
    let b = Bench::new();
    for mode in MODES {
        for drop_whole_chunk in [true, false] {
            let (seg, [log, _, manifest]) = b.copy(mode, 4).await;
            let mut m = parse_manifest(&get(&b.world, &manifest).await);
            let index = m
                .chunk_index(&ObjectKey::plain(manifest.as_str()))
                .expect("index");
            let n = index.chunk_count();
            let last = index.chunk(n - 1).expect("last chunk");
            let cut = if drop_whole_chunk {
                last.original_len
            } else {
                last.original_len.min(10)
            };
            let size = index.original_file_size() - cut;
            let shrunk = shrink(&index, size, cut, mode);
            m.chunk_index = match (&m.chunk_index, &shrunk) {
                (ChunkIndexJson::Fixed { .. }, s) => ChunkIndexJson::Fixed {
                    original_chunk_size: CHUNK,
                    original_file_size: size,
                    transformed_chunk_size: index.chunk(0).expect("chunk 0").transformed_len as u32,
                    final_transformed_chunk_size: s
                        .chunk(s.chunk_count() - 1)
                        .expect("last")
                        .transformed_len as u32,
                },
                (ChunkIndexJson::Variable { .. }, s) => ChunkIndexJson::Variable {
                    original_chunk_size: CHUNK,
                    original_file_size: size,
                    transformed_chunks: s.transformed_chunks_manifest_string(3).expect("codec"),
                },
            };
            let mut json: serde_json::Value = serde_json::from_slice(&m.to_json()).expect("json");
            if drop_whole_chunk && mode.aes {
                // A careful writer drops the chunk's digest too.
                let i = &mut json["remoteLogSegmentMetadata"]["tsmIntegrity"];
                let digests = i["chunkDigests"].as_str().expect("digests").to_string();
                let mut packed = base64_decode(&digests);
                packed.truncate(packed.len() - 8);
                i["chunkDigests"] = base64_encode(&packed).into();
            }
            put(
                &b.world,
                &manifest,
                serde_json::to_vec(&json).expect("json"),
            )
            .await;
            if drop_whole_chunk {
                // The .log cut to match, so sizes agree everywhere.
                let bytes = get(&b.world, &log).await;
                put(
                    &b.world,
                    &log,
                    bytes[..last.transformed_start as usize].to_vec(),
                )
                .await;
            }
            let words = match (mode.aes, drop_whole_chunk) {
                (true, _) => "MAC does not match",
                (false, true) => "chunk digests for the",
                (false, false) => "do not match the digest",
            };
            let what = format!("{mode:?}, whole chunk dropped: {drop_whole_chunk}");
            let engine = b.engine(mode);
            refused(&engine, &seg, words, &what).await;
            // fetchIndex of the same segment is refused too when the manifest fails.
            if mode.aes || drop_whole_chunk {
                let e = engine
                    .fetch_index(&seg.metadata, IndexType::Offset)
                    .await
                    .expect_err(&what);
                assert!(e.to_string().contains(words), "{what}: {e}");
            }
        }
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .expect("base64")
}

fn base64_encode(b: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// The chunk index of the first `size` original bytes of `index` (its last chunk `cut`
/// bytes shorter, or gone when `cut` is its whole length), stored sizes as the mode
/// stores them.
fn shrink(index: &ChunkIndex, size: u64, cut: u64, mode: Mode) -> ChunkIndex {
    let mut builder = tsm_codec::ChunkIndexBuilder::new(CHUNK).expect("builder");
    let n = index.chunk_count();
    for i in 0..n {
        let c = index.chunk(i).expect("chunk");
        if i == n - 1 {
            if cut < c.original_len {
                builder
                    .push(c.original_len - cut, (c.transformed_len - cut) as u32)
                    .expect("push");
            }
        } else {
            builder
                .push(c.original_len, c.transformed_len as u32)
                .expect("push");
        }
    }
    assert_eq!(builder.original_file_size(), size);
    if mode.zstd {
        builder.build_variable().expect("variable")
    } else {
        let full = CHUNK + if mode.aes { 28 } else { 0 };
        builder.build_fixed(full).expect("fixed")
    }
}

/// Another segment's objects (another topic id and partition) copied over this segment's
/// keys are refused in every mode: the recorded identity is not the one asked for. With
/// the recorded identity edited to match, an encrypted segment's MAC no longer verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_segments_objects_at_these_keys_are_refused() {
    let b = Bench::new();
    for mode in MODES {
        let (victim, victim_keys) = b.copy(mode, 5).await;
        let other_log = record_batches(60, 0, 55);
        let mut other = segment(&b.world.path("o"), other_log, true, 55);
        other.metadata.topic_id = KafkaUuid { msb: 77, lsb: 78 };
        other.metadata.topic = "other-topic".into();
        other.metadata.partition = 3;
        b.engine(mode)
            .copy_log_segment_data(&other.metadata, &other.data)
            .await
            .expect("copy other");
        let other_keys = b.keys_of(&other).await;
        for (from, to) in other_keys.iter().zip(&victim_keys) {
            let bytes = get(&b.world, from).await;
            put(&b.world, to, bytes).await;
        }
        let what = format!("{mode:?} substituted");
        let engine = b.engine(mode);
        refused(&engine, &victim, "not for the segment asked for", &what).await;
        let e = engine
            .fetch_index(&victim.metadata, IndexType::Offset)
            .await
            .expect_err(&what);
        assert!(
            e.to_string().contains("not for the segment asked for"),
            "{what}: {e}"
        );
        // The recorded identity edited to the victim's.
        let manifest = &victim_keys[2];
        let mut m: serde_json::Value =
            serde_json::from_slice(&get(&b.world, manifest).await).expect("json");
        let i = &mut m["remoteLogSegmentMetadata"]["tsmIntegrity"];
        i["topicId"] = victim.metadata.topic_id.to_string().into();
        i["partition"] = victim.metadata.partition.into();
        i["segmentId"] = victim.metadata.segment_id.to_string().into();
        put(&b.world, manifest, serde_json::to_vec(&m).expect("json")).await;
        let engine = b.engine(mode);
        if mode.aes {
            refused(
                &engine,
                &victim,
                "MAC does not match",
                &format!("{what}, edited"),
            )
            .await;
        } else {
            // Without a key nothing stops a writer who rewrites the identity too: the
            // bytes served are the other segment's (docs/security.md says so).
            let got = read_all(&engine, &victim.metadata, 0, None)
                .await
                .expect("plain substitution with a rewritten identity reads");
            assert_eq!(got, other.log, "{what}");
        }
    }
}

/// An index changed in `.indexes`, or two index entries swapped in the manifest, is an
/// error naming the index.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_or_moved_index_is_an_error() {
    let b = Bench::new();
    for mode in MODES {
        let (seg, [_, indexes, _]) = b.copy(mode, 6).await;
        let mut bytes = get(&b.world, &indexes).await;
        bytes[3] ^= 1;
        put(&b.world, &indexes, bytes).await;
        let e = b
            .engine(mode)
            .fetch_index(&seg.metadata, IndexType::Offset)
            .await
            .expect_err("changed index");
        assert!(e.to_string().contains("OFFSET index"), "{mode:?}: {e}");
        let words = if mode.aes {
            "AES-GCM authentication failed"
        } else {
            "do not match the digest"
        };
        assert!(e.to_string().contains(words), "{mode:?}: {e}");

        let (seg, [_, _, manifest2]) = b.copy(mode, 7).await;
        let mut m = parse_manifest(&get(&b.world, &manifest2).await);
        let idx = &mut m.segment_indexes;
        std::mem::swap(&mut idx.offset, &mut idx.producer_snapshot);
        put(&b.world, &manifest2, m.to_json()).await;
        let e = b
            .engine(mode)
            .fetch_index(&seg.metadata, IndexType::Offset)
            .await
            .expect_err("moved index");
        let words = if mode.aes {
            "MAC does not match"
        } else {
            "do not match the digest"
        };
        assert!(e.to_string().contains(words), "{mode:?}: {e}");
    }
}

/// An encrypted segment whose MAC was removed (so it would pass as unauthenticated) is
/// refused; one whose integrity field was removed entirely reads as a Java-plugin segment,
/// counted as unverified, and is refused under `tsm.integrity.required`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stripped_integrity_is_refused_or_counted() {
    let b = Bench::new();
    let mode = MODES[3];
    let (seg, [_, _, manifest]) = b.copy(mode, 8).await;
    let original = get(&b.world, &manifest).await;
    let mut m: serde_json::Value = serde_json::from_slice(&original).expect("json");
    let fields = m["remoteLogSegmentMetadata"]["tsmIntegrity"]
        .as_object_mut()
        .expect("integrity object");
    fields.remove("mac");
    put(&b.world, &manifest, serde_json::to_vec(&m).expect("json")).await;
    refused(
        &b.engine(mode),
        &seg,
        "no MAC on an encrypted segment",
        "MAC stripped",
    )
    .await;

    let mut m: serde_json::Value = serde_json::from_slice(&original).expect("json");
    m["remoteLogSegmentMetadata"]
        .as_object_mut()
        .expect("metadata object")
        .remove("tsmIntegrity");
    put(&b.world, &manifest, serde_json::to_vec(&m).expect("json")).await;
    let engine = b.engine(mode);
    check_range(&engine, &seg, 0, None, "no integrity data").await;
    check_indexes(&engine, &seg, "no integrity data").await;
    assert_eq!(engine.metrics().counter("integrity.unverified"), 1);
    let mut opts = b.options(mode);
    opts.integrity_required = true;
    let strict = b.world.engine(opts);
    refused(&strict, &seg, "tsm.integrity.required=true", "required").await;
}

/// A copy that records no integrity data (the engine option benchmarks use) writes a
/// manifest exactly as the Java plugin's shape, which reads unverified.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_without_integrity_reads_unverified() {
    let b = Bench::new();
    let mut opts = b.options(MODES[0]);
    opts.write_integrity = false;
    let seg = segment(&b.world.path("s"), record_batches(20, 0, 9), false, 9);
    b.world
        .engine(opts)
        .copy_log_segment_data(&seg.metadata, &seg.data)
        .await
        .expect("copy");
    let [_, _, manifest] = b.keys_of(&seg).await;
    let m: serde_json::Value =
        serde_json::from_slice(&get(&b.world, &manifest).await).expect("json");
    assert!(
        m["remoteLogSegmentMetadata"].get("tsmIntegrity").is_none(),
        "{m}"
    );
    let engine = b.engine(MODES[0]);
    check_range(&engine, &seg, 0, None, "unverified").await;
    assert_eq!(engine.metrics().counter("integrity.unverified"), 1);
}
