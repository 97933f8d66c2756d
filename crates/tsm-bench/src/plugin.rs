//! The plugin configuration of each benchmark mode, as the broker would pass it
//! (`rsm.config.` stripped), the run's RSA key pair, and the segment metadata of a
//! generated segment set. The JVM harness (bench/jvm) uses the same keys and values.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
use serde::{Deserialize, Serialize};
use tsm_core::{KafkaUuid, LogSegmentData, RemoteLogSegmentMetadata};

use crate::datagen::{DataKind, SegmentFiles, SegmentInfo};

/// `chunk.size` of every mode: 4 MiB.
pub const CHUNK_SIZE: u64 = 4 * 1024 * 1024;
/// Chunk cache size of the cached sequential fetch (`fetch.chunk.cache.size`), bytes.
pub const CHUNK_CACHE_BYTES: u64 = 64 * 1024 * 1024;
/// Prefetch of the cached sequential fetch (`fetch.chunk.cache.prefetch.max.size`): two
/// chunks ahead, bytes.
pub const PREFETCH_BYTES: u64 = 2 * CHUNK_SIZE;
/// Key pair id on the key ring.
pub const KEY_PAIR_ID: &str = "bench";
/// Bucket of the Rust harness on MinIO.
pub const S3_BUCKET: &str = "tsm-bench-rust";

/// The transform a copy applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    /// No compression, no encryption.
    #[serde(rename = "plain")]
    Plain,
    /// zstd level 3 per chunk (heuristic off).
    #[serde(rename = "zstd")]
    Zstd,
    /// AES-256-GCM per chunk, data key wrapped with RSA.
    #[serde(rename = "aes")]
    Aes,
    /// zstd, then AES.
    #[serde(rename = "zstd+aes")]
    ZstdAes,
}

impl Mode {
    /// All modes, in report order.
    pub const ALL: [Mode; 4] = [Mode::Plain, Mode::Zstd, Mode::Aes, Mode::ZstdAes];

    /// The results' `mode` string.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Plain => "plain",
            Mode::Zstd => "zstd",
            Mode::Aes => "aes",
            Mode::ZstdAes => "zstd+aes",
        }
    }

    /// Parses [`Mode::name`].
    pub fn parse(s: &str) -> Option<Self> {
        Mode::ALL.into_iter().find(|m| m.name() == s)
    }

    fn compress(self) -> bool {
        matches!(self, Mode::Zstd | Mode::ZstdAes)
    }

    fn encrypt(self) -> bool {
        matches!(self, Mode::Aes | Mode::ZstdAes)
    }
}

/// Which store the plugin writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// `storage.backend.class=filesystem`, `storage.root` under the work dir.
    Filesystem,
    /// `storage.backend.class=s3` on MinIO (`TSM_TEST_S3_*` from
    /// `scripts/services/minio.sh env`), bucket [`S3_BUCKET`].
    S3,
}

impl Backend {
    /// The results' `backend` string.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Filesystem => "filesystem",
            Backend::S3 => "s3",
        }
    }
}

/// Paths of the run's RSA key pair (PEM: SPKI public, PKCS#8 private).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KeyFiles {
    /// Public key file.
    pub public: PathBuf,
    /// Private key file (mode 0600).
    pub private: PathBuf,
}

impl KeyFiles {
    /// The pair under `work/keys/`, generated (RSA 2048) when missing.
    pub fn ensure(work: &Path) -> Result<Self> {
        let dir = work.join("keys");
        let files = Self {
            public: dir.join(format!("{KEY_PAIR_ID}-public.pem")),
            private: dir.join(format!("{KEY_PAIR_ID}-private.pem")),
        };
        if files.public.exists() && files.private.exists() {
            return Ok(files);
        }
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let key = rsa::PrivateKey::new(&mut getrandom::SysRng, 2048)
            .context("generating the RSA 2048 key pair")?;
        let public = key
            .to_public_key()
            .to_public_key_pem(LineEnding::LF)
            .context("encoding the public key")?;
        // Zeroized on drop.
        let private = key
            .to_pkcs8_pem(LineEnding::LF)
            .context("encoding the private key")?;
        write_private(&files.private, private.as_bytes())?;
        std::fs::write(&files.public, public)
            .with_context(|| format!("writing {}", files.public.display()))?;
        Ok(files)
    }
}

fn write_private(path: &Path, pem: &[u8]) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    f.write_all(pem)
        .with_context(|| format!("writing {}", path.display()))
}

/// The plugin properties (`rsm.config.` stripped) for `mode` over `backend`; with
/// `cached`, a memory chunk cache of [`CHUNK_CACHE_BYTES`] with [`PREFETCH_BYTES`]
/// prefetch. S3 settings come from `TSM_TEST_S3_*`; a missing one is an error naming it.
/// The map holds the S3 secret: never print it.
pub fn props(
    backend: Backend,
    work: &Path,
    mode: Mode,
    keys: &KeyFiles,
    cached: bool,
) -> Result<BTreeMap<String, String>> {
    let mut p = BTreeMap::new();
    let mut set = |k: &str, v: String| {
        p.insert(k.to_string(), v);
    };
    set("broker.id", "0".into());
    set("chunk.size", CHUNK_SIZE.to_string());
    set("compression.enabled", mode.compress().to_string());
    if mode.compress() {
        set("compression.heuristic.enabled", "false".into());
    }
    set("encryption.enabled", mode.encrypt().to_string());
    if mode.encrypt() {
        set("encryption.key.pair.id", KEY_PAIR_ID.into());
        set("encryption.key.pairs", KEY_PAIR_ID.into());
        set(
            &format!("encryption.key.pairs.{KEY_PAIR_ID}.public.key.file"),
            keys.public.display().to_string(),
        );
        set(
            &format!("encryption.key.pairs.{KEY_PAIR_ID}.private.key.file"),
            keys.private.display().to_string(),
        );
    }
    if cached {
        set("fetch.chunk.cache.class", "memory".into());
        set("fetch.chunk.cache.size", CHUNK_CACHE_BYTES.to_string());
        set(
            "fetch.chunk.cache.prefetch.max.size",
            PREFETCH_BYTES.to_string(),
        );
    }
    match backend {
        Backend::Filesystem => {
            set("storage.backend.class", "filesystem".into());
            set("storage.root", work.join("storage").display().to_string());
        }
        Backend::S3 => {
            let env = |name: &str| -> Result<String> {
                std::env::var(name).with_context(|| {
                    format!(
                        "{name} is not set: run `eval \"$(scripts/services/minio.sh env)\"` first"
                    )
                })
            };
            set("storage.backend.class", "s3".into());
            set("storage.s3.bucket.name", S3_BUCKET.into());
            set("storage.s3.endpoint.url", env("TSM_TEST_S3_ENDPOINT")?);
            set(
                "storage.s3.region",
                env("TSM_TEST_S3_REGION").unwrap_or_else(|_| "us-east-1".into()),
            );
            set("storage.s3.path.style.access.enabled", "true".into());
            set("storage.aws.access.key.id", env("TSM_TEST_S3_ACCESS_KEY")?);
            set(
                "storage.aws.secret.access.key",
                env("TSM_TEST_S3_SECRET_KEY")?,
            );
        }
    }
    Ok(p)
}

/// Backend kinds linked into tsm-bench: the plugin's list (crates/tsm-backends).
pub static KINDS: &[&tsm_core::BackendKind] = tsm_backends::KINDS;

/// Creates the S3 bucket (no-op for the filesystem; an existing bucket is fine).
pub async fn ensure_bucket(backend: Backend, props: &BTreeMap<String, String>) -> Result<()> {
    match backend {
        Backend::Filesystem => Ok(()),
        #[cfg(feature = "s3")]
        Backend::S3 => {
            let storage: BTreeMap<String, String> = props
                .iter()
                .filter_map(|(k, v)| {
                    k.strip_prefix("storage.")
                        .map(|k| (k.to_string(), v.clone()))
                })
                .collect();
            let b = tsm_backend_s3::S3Backend::from_storage_config(&tsm_core::StorageConfig::new(
                storage,
            ))
            .await
            .context("building the S3 client")?;
            match b
                .sdk_client()
                .create_bucket()
                .bucket(S3_BUCKET)
                .send()
                .await
            {
                Ok(_) => Ok(()),
                Err(e) => {
                    let svc = e.as_service_error();
                    if svc.is_some_and(|s| {
                        s.is_bucket_already_owned_by_you() || s.is_bucket_already_exists()
                    }) {
                        Ok(())
                    } else {
                        Err(anyhow::Error::new(e).context(format!("creating bucket {S3_BUCKET}")))
                    }
                }
            }
        }
        #[cfg(not(feature = "s3"))]
        Backend::S3 => bail!("tsm-bench was built without the s3 feature"),
    }
}

/// Segment metadata of a generated set copied in `mode`: topic `bench-<data>`, partition
/// 0, a segment id fixed per (data, mode) so fetch cases find what the copy case wrote.
pub fn metadata(
    info: &SegmentInfo,
    data: DataKind,
    mode: Mode,
) -> Result<RemoteLogSegmentMetadata> {
    let d = DataKind::ALL.iter().position(|k| *k == data).unwrap_or(0) as i64;
    let m = Mode::ALL.iter().position(|k| *k == mode).unwrap_or(0) as i64;
    let Ok(size) = i32::try_from(info.log_bytes) else {
        bail!(
            "segment of {} bytes: Kafka segments are below 2 GiB",
            info.log_bytes
        );
    };
    Ok(RemoteLogSegmentMetadata {
        topic_id: KafkaUuid {
            msb: 0x7473_6d62_656e_6368,
            lsb: 1,
        },
        topic: format!("bench-{}", data.name()),
        partition: 0,
        segment_id: KafkaUuid {
            msb: 0x5345_474d_454e_5400 + d,
            lsb: 0x4d4f_4445 + m,
        },
        start_offset: info.base_offset,
        end_offset: info.end_offset,
        max_timestamp_ms: info.max_timestamp_ms,
        broker_id: 0,
        event_timestamp_ms: info.max_timestamp_ms,
        segment_leader_epochs: BTreeMap::from([(0, info.base_offset)]),
        segment_size_in_bytes: size,
        custom_metadata: None,
    })
}

/// The broker's view of the set's files (no transaction index).
pub fn segment_data(files: &SegmentFiles) -> Result<LogSegmentData> {
    let epochs = std::fs::read(&files.leader_epoch)
        .with_context(|| format!("reading {}", files.leader_epoch.display()))?;
    Ok(LogSegmentData {
        log_segment: files.log.clone(),
        offset_index: files.offset_index.clone(),
        time_index: files.time_index.clone(),
        transaction_index: None,
        producer_snapshot_index: files.producer_snapshot.clone(),
        leader_epoch_index: Bytes::from(epochs),
    })
}
