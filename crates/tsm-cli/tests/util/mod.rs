//! Shared test helpers: a temp "bucket" (filesystem backend), RSA key pairs generated at
//! test time (never committed), a properties file the `tsm` binary reads, segments (Kafka
//! log and index bytes from `tsm-kafka-log`) written by the engine itself (`RemoteStorageManager::copy_log_segment_data`), and a
//! runner for the `tsm` binary.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use bytes::Bytes;
use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
use tsm_core::{KafkaUuid, LogSegmentData, RemoteLogSegmentMetadata, RemoteStorageManager};
use tsm_kafka_log::files::{
    AbortedTxn, empty_producer_snapshot, leader_epoch_checkpoint, transaction_index,
};
use tsm_kafka_log::{BatchBuilder, INDEX_INTERVAL_BYTES, SegmentWriter, WrittenSegment};

/// PEM texts of one generated 2048-bit RSA key pair.
pub(crate) struct PemPair {
    pub public: String,
    pub private: String,
}

fn generate_pair() -> PemPair {
    let key = rsa::PrivateKey::new(&mut getrandom::SysRng, 2048).expect("RSA key generation");
    PemPair {
        public: key
            .to_public_key()
            .to_public_key_pem(LineEnding::LF)
            .expect("encode SPKI"),
        private: key
            .to_pkcs8_pem(LineEnding::LF)
            .expect("encode PKCS#8")
            .to_string(),
    }
}

/// Key pair `n` (0 or 1), generated once per test binary (slow in debug builds).
pub(crate) fn pem_pair(n: usize) -> &'static PemPair {
    static PAIRS: [OnceLock<PemPair>; 2] = [OnceLock::new(), OnceLock::new()];
    PAIRS[n].get_or_init(generate_pair)
}

/// Kafka v2 record batches (valid CRC32C, real records): `count` batches of 1-5 records
/// from offset `base`, about `payload_len` value bytes per batch.
pub(crate) fn batches(count: usize, base: i64, payload_len: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut offset = base;
    for b in 0..count {
        let records = 1 + b % 5;
        let ts = 1_700_000_000_000i64 + b as i64;
        let mut batch = BatchBuilder::new(offset, ts);
        for r in 0..records {
            let value: Vec<u8> = (0..(payload_len / records).max(1))
                .map(|i| b"abcdefgh"[(i + b + r) % 8])
                .collect();
            batch.push(ts, None, &value);
        }
        offset = batch.last_offset() + 1;
        out.extend_from_slice(&batch.finish().expect("record batch"));
    }
    out
}

/// The `.log`, `.index` and `.timeindex` of a segment of `batches(count, base, 150)`,
/// indexed as the broker does (`index.interval.bytes` 4096).
pub(crate) fn segment_files(count: usize, base: i64) -> WrittenSegment<Vec<u8>> {
    let log = batches(count, base, 150);
    let mut w = SegmentWriter::new(Vec::new(), base, INDEX_INTERVAL_BYTES);
    for (at, h) in tsm_kafka_log::batches(&log) {
        w.append(&log[at..at + h.size]).expect("append batch");
    }
    w.finish().expect("segment")
}

/// A temp dir with `bucket/`, `keys/`, `segments/` and `tsm.properties`.
pub(crate) struct World {
    pub dir: tempfile::TempDir,
    /// Plugin properties (without `rsm.config.`), as written to the properties file.
    pub props: BTreeMap<String, String>,
}

/// One segment written by the engine, with its original files.
pub(crate) struct Written {
    pub meta: RemoteLogSegmentMetadata,
    pub log: Vec<u8>,
    pub offset_index: Vec<u8>,
    pub time_index: Vec<u8>,
    pub txn_index: Option<Vec<u8>>,
    /// `<topic>-<topicId>/<partition>/<startOffset:020>-<segmentId>`
    pub main_path: String,
}

impl World {
    /// Filesystem backend, `chunk.size` 1000, zstd on, encryption with key pairs k1
    /// (active) and k2 on the ring when `encrypted`.
    pub(crate) fn new(encrypted: bool) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        for d in ["bucket", "keys", "segments"] {
            std::fs::create_dir_all(dir.path().join(d)).expect("mkdir");
        }
        let mut props = BTreeMap::new();
        props.insert("storage.backend.class".into(), "filesystem".into());
        props.insert(
            "storage.root".into(),
            dir.path().join("bucket").display().to_string(),
        );
        props.insert("chunk.size".into(), "1000".into());
        props.insert("compression.enabled".into(), "true".into());
        props.insert("key.prefix".into(), "tiered/".into());
        let w = Self { dir, props };
        let mut w = w;
        if encrypted {
            for (n, id) in ["k1", "k2"].iter().enumerate() {
                let (public, private) = w.write_pair(id, n);
                w.props.insert(
                    format!("encryption.key.pairs.{id}.public.key.file"),
                    public.display().to_string(),
                );
                w.props.insert(
                    format!("encryption.key.pairs.{id}.private.key.file"),
                    private.display().to_string(),
                );
            }
            w.props.insert("encryption.enabled".into(), "true".into());
            w.props.insert("encryption.key.pair.id".into(), "k1".into());
            w.props
                .insert("encryption.key.pairs".into(), "k1,k2".into());
        }
        w.write_properties();
        w
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn write_pair(&self, id: &str, n: usize) -> (PathBuf, PathBuf) {
        let pair = pem_pair(n);
        let public = self.path(&format!("keys/{id}-public.pem"));
        let private = self.path(&format!("keys/{id}-private.pem"));
        std::fs::write(&public, &pair.public).expect("write public PEM");
        std::fs::write(&private, &pair.private).expect("write private PEM");
        (public, private)
    }

    /// Writes `tsm.properties` as a broker's server.properties would hold them.
    pub(crate) fn write_properties(&self) {
        let mut text = String::from("broker.id=0\nlog.dirs=/var/kafka\n");
        for (k, v) in &self.props {
            text.push_str(&format!("rsm.config.{k}={v}\n"));
        }
        std::fs::write(self.path("tsm.properties"), text).expect("write properties");
    }

    /// The file path of object `key` (relative to the backend root).
    pub(crate) fn object(&self, key: &str) -> PathBuf {
        self.path("bucket").join(key)
    }

    /// Writes one segment through the engine (as the broker plugin does).
    pub(crate) fn write_segment(
        &self,
        topic: &str,
        partition: i32,
        start: i64,
        batches_n: usize,
    ) -> Written {
        let fs = &tsm_storage::filesystem::KIND;
        self.write_segment_with(fs, topic, partition, start, batches_n)
    }

    /// Writes one segment through the engine over backend `kind`.
    pub(crate) fn write_segment_with(
        &self,
        kind: &'static tsm_core::BackendKind,
        topic: &str,
        partition: i32,
        start: i64,
        batches_n: usize,
    ) -> Written {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let rsm = rt
            .block_on(RemoteStorageManager::configure(self.props.clone(), &[kind]))
            .expect("engine");
        let seg = segment_files(batches_n, start);
        let (log, offset_index, time_index) = (seg.log, seg.offset_index, seg.time_index);
        let seg_dir = self.path(&format!("segments/{topic}-{partition}-{start}"));
        std::fs::create_dir_all(&seg_dir).expect("mkdir");
        let base = format!("{start:020}");
        let txn_index = (partition == 0).then(|| {
            let aborted = |i: i64| AbortedTxn {
                producer_id: 7 + i,
                first_offset: start + 10 * i,
                last_offset: start + 10 * i + 5,
                last_stable_offset: start + 10 * i + 6,
            };
            transaction_index(&[aborted(0), aborted(1)])
        });
        let file = |ext: &str, bytes: &[u8]| {
            let p = seg_dir.join(format!("{base}.{ext}"));
            std::fs::write(&p, bytes).expect("write segment file");
            p
        };
        let data = LogSegmentData {
            log_segment: file("log", &log),
            offset_index: file("index", &offset_index),
            time_index: file("timeindex", &time_index),
            transaction_index: txn_index.as_deref().map(|t| file("txnindex", t)),
            producer_snapshot_index: file("snapshot", &empty_producer_snapshot()),
            leader_epoch_index: Bytes::from(leader_epoch_checkpoint(&[(0, start)])),
        };
        let seed = (partition as i64) << 32 | start;
        // The broker's end offset: the last offset of the last batch.
        let end_offset = tsm_kafka_log::batches(&log)
            .last()
            .map_or(start, |(_, h)| h.last_offset());
        let meta = RemoteLogSegmentMetadata {
            topic_id: KafkaUuid {
                msb: 0x1234_5678,
                lsb: 42,
            },
            topic: topic.into(),
            partition,
            segment_id: KafkaUuid {
                msb: seed + 1,
                lsb: seed.wrapping_mul(31) + 7,
            },
            start_offset: start,
            end_offset,
            max_timestamp_ms: 1_700_000_000_000,
            broker_id: 0,
            event_timestamp_ms: 1_700_000_000_000,
            segment_leader_epochs: BTreeMap::from([(0, start)]),
            segment_size_in_bytes: log.len() as i32,
            custom_metadata: None,
        };
        rt.block_on(rsm.copy_log_segment_data(&meta, &data))
            .expect("engine copy");
        let main_path = tsm_core::object_keys::main_path(&meta);
        Written {
            meta,
            log,
            offset_index,
            time_index,
            txn_index,
            main_path,
        }
    }

    /// Runs `tsm --config <tsm.properties> <args>`.
    pub(crate) fn tsm(&self, args: &[&str]) -> Run {
        let cfg = self.path("tsm.properties");
        let mut all = vec!["--config", cfg.to_str().expect("utf-8 path"), "--quiet"];
        all.extend_from_slice(args);
        tsm(&all)
    }
}

/// The outcome of one `tsm` run.
pub(crate) struct Run {
    pub code: i32,
    /// stdout bytes as written (binary for `fetch -o -`).
    pub raw: Vec<u8>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts exit code `code`, showing the output otherwise.
    pub(crate) fn expect_code(self, code: i32) -> Self {
        assert_eq!(
            self.code, code,
            "exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// stdout as JSON.
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }
}

/// Runs the `tsm` binary with `args`.
pub(crate) fn tsm(args: &[&str]) -> Run {
    let out: Output = Command::new(env!("CARGO_BIN_EXE_tsm"))
        .args(args)
        .env_remove("TSM_CONFIG")
        .output()
        .expect("run tsm");
    Run {
        code: out.status.code().unwrap_or(-1),
        raw: out.stdout.clone(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Path of a file in the repository (from the crate dir).
pub(crate) fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}
