//! Segment integrity: tsm's own manifest fields that let a reader tell that the objects it
//! reads are the ones copy wrote for this very segment.
//!
//! # What is recorded (at copy)
//! Under `remoteLogSegmentMetadata.tsmIntegrity` of the manifest ([`FIELD`]): the
//! segment's identity (topic id, partition, segment id, start and end offset), a digest
//! of every stored `.log` chunk and of every index's stored bytes in `.indexes` ([`unit_digest`]:
//! xxh3-64, or for a unit that checks its own content, an AES-GCM one or a zstd frame with a
//! content checksum, its tail token: tsm-codec's `digest`), and, when the segment is
//! encrypted, an HMAC-SHA256 under a key derived from the segment's data key (tsm-crypto's
//! [`SegmentMac`]) over the
//! canonical input of [`SegmentIntegrity::seal`]: identity, original file and chunk size,
//! compression and encryption flags, every stored chunk size and digest, every index's
//! presence, position, size and digest.
//!
//! Why inside `remoteLogSegmentMetadata`: the Java plugin (1.x) reads manifests with
//! Jackson's defaults, which refuse unknown fields, but it declares that object write-only
//! and skips it whole when reading. Fields there keep every segment tsm writes readable by
//! the Java plugin (tests/interop, step 65 of scripts/test.sh).
//!
//! # What is checked (on read)
//! - [`SegmentIntegrity::from_manifest`], when the manifest is loaded: the field's shape and
//!   sizes (bounded before decoding: at most [`MAX_INTEGRITY_CHUNKS`] digests), one digest
//!   per chunk of the chunk index and one per index present, a MAC exactly when the
//!   segment is encrypted, and the MAC itself ([`SegmentIntegrity::verify`]).
//! - [`SegmentIntegrity::check_identity`], on every call: the identity recorded is the one
//!   the broker asked for (a segment's objects copied over another's keys are refused).
//! - Each stored chunk and index against its digest before it is restored or served
//!   (the engine's read path).
//!
//! A manifest without the field (written by the Java plugin or an older tsm), or with a
//! version this reader does not know, is read as before and counted; `tsm.integrity.required`
//! refuses it. What each mode protects against (a MAC needs the data key; digests alone
//! stop corruption and mistakes, not a writer who recomputes them) is in docs/security.md.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use tsm_codec::ChunkIndex;
use tsm_codec::digest::{self, DIGEST_LEN, DIGEST_NAME};
use tsm_crypto::{MAC_LEN, SegmentMac};

use super::SegmentManifest;
use crate::segment::KafkaUuid;
use crate::{IndexType, ObjectKey, RemoteLogSegmentMetadata, RsmError};

/// The field of `remoteLogSegmentMetadata` that holds the integrity data.
pub const FIELD: &str = "tsmIntegrity";

/// The version of the integrity fields this crate writes and checks.
pub const INTEGRITY_VERSION: u32 = 1;

/// Most chunks a segment may have for copy to record its integrity (one 8-byte digest each:
/// 16 MiB of digests, about 22 MiB of base64, within the 32 MiB a manifest may have). A
/// 2 GiB segment in chunks of 1 KiB; smaller chunks are not sensible and such a segment is
/// written without integrity fields (with a WARN naming `chunk.size`).
pub const MAX_INTEGRITY_CHUNKS: u64 = 1 << 21;

/// Domain separation of the MAC input: the version is part of what is authenticated.
const MAC_DOMAIN: &[u8] = b"tsm.segment.integrity.v1\0";

/// Who a segment's objects belong to: the fields of `RemoteLogSegmentMetadata` that name
/// the segment (KIP-405). `end_offset` is `None` when the caller does not know it (the
/// operator tool reads segments from their keys alone).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentIdentity {
    /// `remoteLogSegmentId().topicIdPartition().topicId()`.
    pub topic_id: KafkaUuid,
    /// Partition number.
    pub partition: i32,
    /// `remoteLogSegmentId().id()`.
    pub segment_id: KafkaUuid,
    /// First offset of the segment.
    pub start_offset: i64,
    /// Last offset of the segment (inclusive).
    pub end_offset: i64,
}

impl SegmentIdentity {
    /// The identity of the segment `m` names.
    pub fn of(m: &RemoteLogSegmentMetadata) -> Self {
        Self {
            topic_id: m.topic_id,
            partition: m.partition,
            segment_id: m.segment_id,
            start_offset: m.start_offset,
            end_offset: m.end_offset,
        }
    }

    fn feed(&self, mac: &mut impl FnMut(&[u8])) {
        mac(&self.topic_id.to_bytes());
        mac(&self.partition.to_be_bytes());
        mac(&self.segment_id.to_bytes());
        mac(&self.start_offset.to_be_bytes());
        mac(&self.end_offset.to_be_bytes());
    }
}

impl std::fmt::Display for SegmentIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "topic id {} partition {} segment {} ",
            self.topic_id, self.partition, self.segment_id
        )?;
        if self.end_offset < self.start_offset {
            // The caller does not know the end offset (see `check_identity`).
            write!(f, "(start offset {})", self.start_offset)
        } else {
            write!(f, "(offsets {}..={})", self.start_offset, self.end_offset)
        }
    }
}

/// A segment's integrity data, parsed and checked for shape (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentIntegrity {
    /// Whom the objects were written for.
    pub identity: SegmentIdentity,
    /// xxh3-64 of each stored `.log` chunk, in chunk order.
    pub chunk_digests: Vec<u64>,
    /// xxh3-64 of each index's stored bytes, in [`IndexType::ALL`] order; `None` for an
    /// index the segment does not have (the transaction index).
    pub index_digests: [Option<u64>; 5],
    /// HMAC-SHA256 of the canonical input ([`SegmentIntegrity::seal`]); present exactly
    /// when the segment is encrypted.
    pub mac: Option<[u8; MAC_LEN]>,
    /// The digests of units that check their own content (see [`unit_digest`]) are their
    /// tail tokens rather than xxh3-64 (what tsm writes).
    pub tail_tokens: bool,
}

/// What a digest is recorded for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A stored `.log` chunk.
    Chunk,
    /// One index's stored bytes in `.indexes`.
    Index,
}

/// The digest recorded for the stored `unit` of a segment stored with `compressed` and
/// `encrypted` (the manifest's flags), with `tail_tokens` as the integrity data says: for a
/// unit that checks its own content, an AES-GCM chunk or index (its tag) or a zstd chunk
/// (its frame's content checksum), the tail token (tsm-codec's `digest::tail_token`: its
/// last 8 stored bytes, no hashing); otherwise xxh3-64 of its stored bytes.
pub fn unit_digest(
    tail_tokens: bool,
    unit: Unit,
    compressed: bool,
    encrypted: bool,
    stored: &[u8],
) -> u64 {
    if tail_tokens && self_checked(unit, compressed, encrypted) {
        digest::tail_token(stored)
    } else {
        digest::chunk_digest(stored)
    }
}

fn self_checked(unit: Unit, compressed: bool, encrypted: bool) -> bool {
    encrypted || (unit == Unit::Chunk && compressed)
}

/// `tsmIntegrity` as JSON. Digests: the chunk list as base64 (standard, padded) of
/// 8-byte big-endian digests; each index's as 16 lowercase hex digits or `null`.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct IntegrityJson {
    version: u32,
    digest: String,
    topic_id: String,
    partition: i32,
    segment_id: String,
    start_offset: i64,
    end_offset: i64,
    chunk_digests: String,
    index_digests: IndexDigestsJson,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mac: Option<String>,
    #[serde(default)]
    tail_tokens: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct IndexDigestsJson {
    offset: Option<String>,
    timestamp: Option<String>,
    producer_snapshot: Option<String>,
    leader_epoch: Option<String>,
    transaction: Option<String>,
}

/// Only the version, read first: a version this reader does not know is not an error.
#[derive(Deserialize)]
struct VersionOnly {
    version: serde_json::Value,
}

fn corrupt(key: &ObjectKey, detail: String) -> RsmError {
    RsmError::Corrupt {
        object: key.to_string(),
        detail: format!("remoteLogSegmentMetadata.{FIELD}: {detail}"),
    }
}

fn hex(d: u64) -> String {
    format!("{d:016x}")
}

fn parse_hex(key: &ObjectKey, field: &str, s: &str) -> Result<u64, RsmError> {
    if s.len() != 16 {
        return Err(corrupt(key, format!("{field}: {s:?} is not 16 hex digits")));
    }
    u64::from_str_radix(s, 16)
        .map_err(|_| corrupt(key, format!("{field}: {s:?} is not 16 hex digits")))
}

/// The parts of a manifest the MAC covers besides the integrity data itself.
struct Covered<'a> {
    manifest: &'a SegmentManifest,
    index: &'a ChunkIndex,
}

impl SegmentIntegrity {
    /// The integrity data of a segment being copied: `identity`, the digests of its stored
    /// chunks and indexes (`index_digests` in [`IndexType::ALL`] order), no MAC yet.
    pub fn new(
        identity: SegmentIdentity,
        chunk_digests: Vec<u64>,
        index_digests: [Option<u64>; 5],
    ) -> Self {
        Self {
            identity,
            chunk_digests,
            index_digests,
            mac: None,
            tail_tokens: true,
        }
    }

    /// Checks the stored bytes of `unit` number `n` (a chunk number, or the index's place in
    /// [`IndexType::ALL`]) of a segment stored with `compressed` and `encrypted` against
    /// the digest recorded for it (`expected`). `Err` holds what to report: the digests, or
    /// a zstd chunk without the content checksum a tail token relies on.
    pub fn check_unit(
        &self,
        unit: Unit,
        compressed: bool,
        encrypted: bool,
        expected: u64,
        stored: &[u8],
    ) -> Result<(), String> {
        let tail = self.tail_tokens && self_checked(unit, compressed, encrypted);
        if tail && !encrypted && !digest::zstd_frame_has_checksum(stored) {
            return Err(
                "a zstd frame without the content checksum its digest relies on (changed in \
                 the store)"
                    .to_string(),
            );
        }
        let found = unit_digest(self.tail_tokens, unit, compressed, encrypted, stored);
        if found == expected {
            Ok(())
        } else {
            let kind = if tail { "tail token" } else { DIGEST_NAME };
            Err(format!(
                "stored bytes do not match the digest recorded at copy ({kind} {} expected, {} \
                 found): changed, swapped or truncated in the store",
                hex(expected),
                hex(found)
            ))
        }
    }

    /// The digest recorded for stored chunk `n`.
    pub fn chunk_digest(&self, n: u64) -> Option<u64> {
        usize::try_from(n)
            .ok()
            .and_then(|i| self.chunk_digests.get(i).copied())
    }

    /// The digest recorded for `index`'s stored bytes.
    pub fn index_digest(&self, index: IndexType) -> Option<u64> {
        IndexType::ALL
            .iter()
            .position(|t| *t == index)
            .and_then(|i| self.index_digests[i])
    }

    /// Computes the MAC of an encrypted segment under `mac` (its data key's) over the
    /// canonical input; `manifest` is the manifest being written (its `chunkIndex`,
    /// `segmentIndexes` and flags) and `index` its chunk index.
    pub fn seal(&mut self, manifest: &SegmentManifest, index: &ChunkIndex, mac: &SegmentMac) {
        let mut input = mac.start();
        self.feed(&Covered { manifest, index }, &mut |b: &[u8]| {
            input.update(b)
        });
        self.mac = Some(input.finish());
    }

    /// The canonical MAC input, big-endian throughout: domain, identity, original file
    /// size (u64), chunk size (u32), compression, encryption and tail-token flags (u8 each), chunk
    /// count (u64), per chunk its stored size and digest (u64 each), per index in
    /// [`IndexType::ALL`] order a presence byte, position, size and digest (u64 each).
    fn feed(&self, c: &Covered<'_>, mac: &mut impl FnMut(&[u8])) {
        mac(MAC_DOMAIN);
        self.identity.feed(mac);
        mac(&c.index.original_file_size().to_be_bytes());
        mac(&c.index.original_chunk_size().to_be_bytes());
        mac(&[
            u8::from(c.manifest.compression),
            u8::from(c.manifest.encryption.is_some()),
            u8::from(self.tail_tokens),
        ]);
        mac(&c.index.chunk_count().to_be_bytes());
        for (size, d) in c.index.transformed_sizes().zip(&self.chunk_digests) {
            mac(&u64::from(size).to_be_bytes());
            mac(&d.to_be_bytes());
        }
        for (t, d) in IndexType::ALL.iter().zip(self.index_digests) {
            match c.manifest.segment_indexes.get(*t) {
                Some(e) => {
                    mac(&[1]);
                    mac(&e.position.to_be_bytes());
                    mac(&e.size.to_be_bytes());
                    mac(&d.unwrap_or(0).to_be_bytes());
                }
                None => mac(&[0]),
            }
        }
    }

    /// Checks this data against the manifest it came with (`key`: the manifest's key,
    /// named in errors) and its chunk `index`: one digest per chunk, one per index
    /// present and none for an index absent, a MAC exactly when the segment is encrypted,
    /// and the MAC under `mac` (the segment's, from its data key) when it is.
    ///
    /// # Errors
    /// [`RsmError::Corrupt`] naming the manifest and what does not match.
    pub fn verify(
        &self,
        key: &ObjectKey,
        manifest: &SegmentManifest,
        index: &ChunkIndex,
        mac: Option<&SegmentMac>,
    ) -> Result<(), RsmError> {
        if self.chunk_digests.len() as u64 != index.chunk_count() {
            return Err(corrupt(
                key,
                format!(
                    "{} chunk digests for the {} chunks of chunkIndex (chunks dropped or added?)",
                    self.chunk_digests.len(),
                    index.chunk_count()
                ),
            ));
        }
        for (t, d) in IndexType::ALL.iter().zip(self.index_digests) {
            let present = manifest.segment_indexes.get(*t).is_some();
            if present != d.is_some() {
                return Err(corrupt(
                    key,
                    format!(
                        "indexDigests.{}: {} for an index segmentIndexes {}",
                        json_index_name(*t),
                        if d.is_some() { "a digest" } else { "no digest" },
                        if present { "lists" } else { "does not list" }
                    ),
                ));
            }
        }
        match (&self.mac, mac, manifest.encryption.is_some()) {
            (None, _, true) => Err(corrupt(
                key,
                "no MAC on an encrypted segment (tsm always writes one: the field was edited)"
                    .into(),
            )),
            (Some(_), _, false) => Err(corrupt(
                key,
                "a MAC on a segment stored without encryption (its encryption was removed?)".into(),
            )),
            (Some(_), None, true) => Err(RsmError::Internal(format!(
                "{key}: an encrypted segment's integrity checked without its data key"
            ))),
            (Some(tag), Some(mac), true) => {
                let mut input = mac.start();
                self.feed(&Covered { manifest, index }, &mut |b: &[u8]| {
                    input.update(b)
                });
                input.verify(tag).map_err(|_| {
                    corrupt(
                        key,
                        format!(
                            "MAC does not match: the manifest's chunk table, sizes, flags or \
                             digests were changed, or these objects were written for another \
                             segment (recorded: {})",
                            self.identity
                        ),
                    )
                })
            }
            (None, _, false) => Ok(()),
        }
    }

    /// Checks that the objects were written for the segment `asked` names (topic id,
    /// partition, segment id, start offset; the end offset when `asked` knows it, i.e.
    /// `end_offset >= start_offset`). `key`: the manifest's key, named in errors.
    ///
    /// # Errors
    /// [`RsmError::Corrupt`] naming both identities.
    pub fn check_identity(
        &self,
        key: &ObjectKey,
        asked: &RemoteLogSegmentMetadata,
    ) -> Result<(), RsmError> {
        let want = SegmentIdentity::of(asked);
        let have = &self.identity;
        let same = have.topic_id == want.topic_id
            && have.partition == want.partition
            && have.segment_id == want.segment_id
            && have.start_offset == want.start_offset
            && (want.end_offset < want.start_offset || have.end_offset == want.end_offset);
        if same {
            return Ok(());
        }
        Err(corrupt(
            key,
            format!(
                "the objects were written for {have}, not for the segment asked for, {want} \
                 (objects copied over another segment's keys?)"
            ),
        ))
    }

    /// The JSON value stored under [`FIELD`].
    pub fn to_json(&self) -> serde_json::Value {
        let idx = |t| self.index_digest(t).map(hex);
        let json = IntegrityJson {
            version: INTEGRITY_VERSION,
            digest: DIGEST_NAME.to_string(),
            topic_id: self.identity.topic_id.to_string(),
            partition: self.identity.partition,
            segment_id: self.identity.segment_id.to_string(),
            start_offset: self.identity.start_offset,
            end_offset: self.identity.end_offset,
            chunk_digests: STANDARD.encode(digest::pack(&self.chunk_digests)),
            index_digests: IndexDigestsJson {
                offset: idx(IndexType::Offset),
                timestamp: idx(IndexType::Timestamp),
                producer_snapshot: idx(IndexType::ProducerSnapshot),
                leader_epoch: idx(IndexType::LeaderEpoch),
                transaction: idx(IndexType::Transaction),
            },
            mac: self.mac.map(|m| STANDARD.encode(m)),
            tail_tokens: self.tail_tokens,
        };
        // Plain strings and numbers: serializing cannot fail.
        serde_json::to_value(json).unwrap_or_default()
    }

    /// Adds this data to a manifest's `remoteLogSegmentMetadata` object.
    pub fn attach(&self, metadata: &mut serde_json::Value) {
        if let Some(obj) = metadata.as_object_mut() {
            obj.insert(FIELD.to_string(), self.to_json());
        }
    }

    /// The integrity data of `manifest` (read from the object `key`), parsed and checked
    /// for shape; `Ok(None)` when it has none, or a version this reader does not know.
    /// Sizes are checked before anything is decoded. The checks against the chunk index
    /// and the MAC are [`SegmentIntegrity::verify`]'s.
    ///
    /// # Errors
    /// [`RsmError::Corrupt`] naming the manifest and the field.
    pub fn from_manifest(
        key: &ObjectKey,
        manifest: &SegmentManifest,
    ) -> Result<Option<Self>, RsmError> {
        let Some(value) = manifest
            .remote_log_segment_metadata
            .as_ref()
            .and_then(|m| m.get(FIELD))
        else {
            return Ok(None);
        };
        let version = VersionOnly::deserialize(value)
            .map_err(|e| corrupt(key, format!("not an integrity object: {e}")))?;
        if version.version != INTEGRITY_VERSION {
            tracing::debug!(%key, version = %version.version, "integrity fields of an unknown version: not checked");
            return Ok(None);
        }
        let j = IntegrityJson::deserialize(value).map_err(|e| corrupt(key, e.to_string()))?;
        if j.digest != DIGEST_NAME {
            return Err(corrupt(
                key,
                format!("digest {:?}: this reader knows {DIGEST_NAME:?}", j.digest),
            ));
        }
        let uuid = |field: &str, s: &str| {
            KafkaUuid::parse(s)
                .ok_or_else(|| corrupt(key, format!("{field}: {s:?} is not a Kafka Uuid")))
        };
        let identity = SegmentIdentity {
            topic_id: uuid("topicId", &j.topic_id)?,
            partition: j.partition,
            segment_id: uuid("segmentId", &j.segment_id)?,
            start_offset: j.start_offset,
            end_offset: j.end_offset,
        };
        let max_b64 = (MAX_INTEGRITY_CHUNKS as usize * DIGEST_LEN).div_ceil(3) * 4;
        if j.chunk_digests.len() > max_b64 {
            return Err(corrupt(
                key,
                format!(
                    "chunkDigests: {} characters, over the {max_b64} of {MAX_INTEGRITY_CHUNKS} \
                     digests",
                    j.chunk_digests.len()
                ),
            ));
        }
        let packed = STANDARD
            .decode(&j.chunk_digests)
            .map_err(|e| corrupt(key, format!("chunkDigests: not base64: {e}")))?;
        let chunk_digests = digest::unpack(&packed).ok_or_else(|| {
            corrupt(
                key,
                format!(
                    "chunkDigests: {} bytes, not a whole number of {DIGEST_LEN}-byte digests",
                    packed.len()
                ),
            )
        })?;
        let d = &j.index_digests;
        let mut index_digests = [None; 5];
        for (slot, (name, v)) in index_digests.iter_mut().zip([
            ("offset", &d.offset),
            ("timestamp", &d.timestamp),
            ("producerSnapshot", &d.producer_snapshot),
            ("leaderEpoch", &d.leader_epoch),
            ("transaction", &d.transaction),
        ]) {
            *slot = match v {
                Some(s) => Some(parse_hex(key, &format!("indexDigests.{name}"), s)?),
                None => None,
            };
        }
        let mac = match &j.mac {
            None => None,
            Some(s) => {
                let bytes = STANDARD
                    .decode(s)
                    .map_err(|e| corrupt(key, format!("mac: not base64: {e}")))?;
                let tag: [u8; MAC_LEN] = bytes.as_slice().try_into().map_err(|_| {
                    corrupt(key, format!("mac: {} bytes, not {MAC_LEN}", bytes.len()))
                })?;
                Some(tag)
            }
        };
        Ok(Some(Self {
            identity,
            chunk_digests,
            index_digests,
            mac,
            tail_tokens: j.tail_tokens,
        }))
    }
}

/// The name of `index` in `segmentIndexes` and `indexDigests`.
fn json_index_name(t: IndexType) -> &'static str {
    match t {
        IndexType::Offset => "offset",
        IndexType::Timestamp => "timestamp",
        IndexType::ProducerSnapshot => "producerSnapshot",
        IndexType::LeaderEpoch => "leaderEpoch",
        IndexType::Transaction => "transaction",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{ChunkIndexJson, MANIFEST_VERSION, SegmentIndexJson, SegmentIndexes};
    use std::collections::BTreeMap;
    use tsm_crypto::DataKey;

    fn meta() -> RemoteLogSegmentMetadata {
        RemoteLogSegmentMetadata {
            topic_id: KafkaUuid { msb: 1, lsb: 2 },
            topic: "t".into(),
            partition: 3,
            segment_id: KafkaUuid { msb: 4, lsb: 5 },
            start_offset: 100,
            end_offset: 199,
            max_timestamp_ms: 0,
            broker_id: 0,
            event_timestamp_ms: 0,
            segment_leader_epochs: BTreeMap::new(),
            segment_size_in_bytes: 2500,
            custom_metadata: None,
        }
    }

    fn entry(position: u64, size: u64) -> SegmentIndexJson {
        SegmentIndexJson { position, size }
    }

    /// Chunks of 1000 bytes, `size` original bytes in all, stored as is or with the
    /// AES-GCM overhead.
    fn fixed(size: u64, encrypted: bool) -> ChunkIndexJson {
        let o = if encrypted { 28 } else { 0 };
        ChunkIndexJson::Fixed {
            original_chunk_size: 1000,
            original_file_size: size,
            transformed_chunk_size: 1000 + o,
            final_transformed_chunk_size: (size - 2000) as u32 + o,
        }
    }

    fn manifest(encrypted: bool) -> (SegmentManifest, ChunkIndex) {
        let m = SegmentManifest {
            version: MANIFEST_VERSION.into(),
            chunk_index: fixed(2500, encrypted),
            segment_indexes: SegmentIndexes {
                offset: entry(0, 8),
                timestamp: entry(8, 12),
                producer_snapshot: entry(20, 0),
                leader_epoch: entry(20, 4),
                transaction: None,
            },
            compression: false,
            encryption: encrypted.then(|| crate::manifest::EncryptionJson {
                data_key: "k:AAAA".into(),
                aad: "BBBB".into(),
            }),
            remote_log_segment_metadata: Some(serde_json::json!({"startOffset": 100})),
        };
        let index = m.chunk_index(&key()).expect("index");
        (m, index)
    }

    fn key() -> ObjectKey {
        ObjectKey::plain("t-x/3/00000000000000000100-y.rsm-manifest")
    }

    fn sealed(encrypted: bool, mac: &SegmentMac) -> (SegmentManifest, ChunkIndex) {
        let (mut m, index) = manifest(encrypted);
        let mut i = SegmentIntegrity::new(
            SegmentIdentity::of(&meta()),
            vec![11, 22, 33],
            [Some(1), Some(2), Some(3), Some(4), None],
        );
        if encrypted {
            i.seal(&m, &index, mac);
        }
        if let Some(md) = m.remote_log_segment_metadata.as_mut() {
            i.attach(md);
        }
        (m, index)
    }

    fn read(m: &SegmentManifest) -> Result<Option<SegmentIntegrity>, RsmError> {
        let again = SegmentManifest::from_json(&m.to_json()).expect("parses");
        SegmentIntegrity::from_manifest(&key(), &again)
    }

    #[test]
    fn round_trips_and_verifies_in_both_modes() {
        let mac = SegmentMac::new(&DataKey::from_bytes(&[7u8; 32]).expect("key"));
        for encrypted in [false, true] {
            let (m, index) = sealed(encrypted, &mac);
            let i = read(&m).expect("reads").expect("present");
            assert_eq!(i.chunk_digests, vec![11, 22, 33]);
            assert_eq!(i.index_digest(IndexType::LeaderEpoch), Some(4));
            assert_eq!(i.index_digest(IndexType::Transaction), None);
            assert_eq!(i.mac.is_some(), encrypted);
            i.verify(&key(), &m, &index, Some(&mac)).expect("verifies");
            i.check_identity(&key(), &meta()).expect("same segment");
        }
    }

    #[test]
    fn the_mac_covers_identity_sizes_flags_and_digests() {
        let mac = SegmentMac::new(&DataKey::from_bytes(&[7u8; 32]).expect("key"));
        let (m, index) = sealed(true, &mac);
        let good = read(&m).expect("reads").expect("present");
        let fails = |i: &SegmentIntegrity, m: &SegmentManifest, index: &ChunkIndex, mac| {
            let e = i.verify(&key(), m, index, Some(mac)).unwrap_err();
            assert!(e.to_string().contains("MAC does not match"), "{e}");
        };
        // Another segment's identity (objects copied over its keys).
        let mut other = good.clone();
        other.identity.segment_id = KafkaUuid { msb: 9, lsb: 9 };
        fails(&other, &m, &index, &mac);
        // Two chunks swapped in the digest list, or one changed.
        let mut swapped = good.clone();
        swapped.chunk_digests.swap(0, 1);
        fails(&swapped, &m, &index, &mac);
        // An index digest changed.
        let mut idx = good.clone();
        idx.index_digests[0] = Some(99);
        fails(&idx, &m, &index, &mac);
        // The file size shrunk within the last chunk.
        let mut shrunk = m.clone();
        shrunk.chunk_index = fixed(2400, true);
        let shrunk_index = shrunk.chunk_index(&key()).expect("index");
        fails(&good, &shrunk, &shrunk_index, &mac);
        // Compression flag flipped; an index moved.
        let mut flag = m.clone();
        flag.compression = true;
        fails(&good, &flag, &index, &mac);
        let mut moved = m.clone();
        moved.segment_indexes.leader_epoch = entry(21, 4);
        fails(&good, &moved, &index, &mac);
        // Another data key.
        let other_key = SegmentMac::new(&DataKey::from_bytes(&[8u8; 32]).expect("key"));
        fails(&good, &m, &index, &other_key);
    }

    #[test]
    fn shape_errors_name_the_field() {
        let mac = SegmentMac::new(&DataKey::from_bytes(&[7u8; 32]).expect("key"));
        let (m, index) = sealed(true, &mac);
        let good = read(&m).expect("reads").expect("present");
        // A digest list that does not match the chunk count.
        let mut dropped = good.clone();
        dropped.chunk_digests.pop();
        let e = dropped.verify(&key(), &m, &index, Some(&mac)).unwrap_err();
        assert!(
            e.to_string().contains("2 chunk digests for the 3 chunks"),
            "{e}"
        );
        // MAC stripped from an encrypted segment; encryption removed from a MACed one.
        let mut stripped = good.clone();
        stripped.mac = None;
        let e = stripped.verify(&key(), &m, &index, Some(&mac)).unwrap_err();
        assert!(
            e.to_string().contains("no MAC on an encrypted segment"),
            "{e}"
        );
        let mut plain = m.clone();
        plain.encryption = None;
        let e = good.verify(&key(), &plain, &index, None).unwrap_err();
        assert!(e.to_string().contains("without encryption"), "{e}");
        // Bad JSON inside the field.
        let edit = |f: &dyn Fn(&mut serde_json::Value)| {
            let mut m = m.clone();
            if let Some(md) = m.remote_log_segment_metadata.as_mut() {
                f(&mut md[FIELD]);
            }
            read(&m)
        };
        let e = edit(&|v| v["chunkDigests"] = "AAAA".into()).unwrap_err();
        assert!(
            e.to_string()
                .contains("tsmIntegrity: chunkDigests: 3 bytes"),
            "{e}"
        );
        let e = edit(&|v| v["indexDigests"]["offset"] = "xyz".into()).unwrap_err();
        assert!(e.to_string().contains("indexDigests.offset"), "{e}");
        let e = edit(&|v| v["digest"] = "md5".into()).unwrap_err();
        assert!(e.to_string().contains("\"md5\""), "{e}");
        let e = edit(&|v| v["extra"] = 1.into()).unwrap_err();
        assert!(e.to_string().contains("extra"), "{e}");
        let huge = "A".repeat((MAX_INTEGRITY_CHUNKS as usize * 8).div_ceil(3) * 4 + 4);
        let e = edit(&|v| v["chunkDigests"] = huge.clone().into()).unwrap_err();
        assert!(e.to_string().contains("over the"), "{e}");
        // An unknown version is no integrity data, not an error.
        assert_eq!(edit(&|v| v["version"] = 2.into()).expect("reads"), None);
        // No field at all: the Java plugin's manifests.
        let mut java = m.clone();
        java.remote_log_segment_metadata = Some(serde_json::json!({"startOffset": 1}));
        assert_eq!(read(&java).expect("reads"), None);
    }

    #[test]
    fn identity_is_checked_end_offset_only_when_known() {
        let (m, _) = sealed(
            false,
            &SegmentMac::new(&DataKey::from_bytes(&[7u8; 32]).expect("key")),
        );
        let i = read(&m).expect("reads").expect("present");
        let mut asked = meta();
        asked.partition = 4;
        let e = i.check_identity(&key(), &asked).unwrap_err();
        assert!(
            e.to_string().contains("not for the segment asked for"),
            "{e}"
        );
        let mut asked = meta();
        asked.end_offset = 150;
        assert!(i.check_identity(&key(), &asked).is_err());
        // The operator tool does not know the end offset (it passes one below the start).
        asked.end_offset = -1;
        i.check_identity(&key(), &asked)
            .expect("end offset unknown");
    }

    #[test]
    fn unit_checks_use_digests_or_tail_tokens() {
        let mut i = SegmentIntegrity::new(SegmentIdentity::of(&meta()), vec![], [None; 5]);
        // Plain chunks and unencrypted indexes: xxh3-64.
        let d = digest::chunk_digest(b"abc");
        assert_eq!(unit_digest(true, Unit::Chunk, false, false, b"abc"), d);
        assert!(i.check_unit(Unit::Chunk, false, false, d, b"abc").is_ok());
        let e = i
            .check_unit(Unit::Chunk, false, false, d, b"abd")
            .unwrap_err();
        assert!(e.contains(&hex(d)) && e.contains("xxh3-64"), "{e}");
        // Encrypted units: the tail token.
        let gcm = [7u8; 40];
        let t = digest::tail_token(&gcm);
        assert_eq!(unit_digest(true, Unit::Index, false, true, &gcm), t);
        assert!(i.check_unit(Unit::Index, false, true, t, &gcm).is_ok());
        // A zstd chunk: the tail token, only with the frame's content checksum.
        let frame = tsm_codec::compression::compress_chunk(b"chunk", 3).expect("zstd");
        let t = unit_digest(true, Unit::Chunk, true, false, &frame);
        assert_eq!(t, digest::tail_token(&frame));
        assert!(i.check_unit(Unit::Chunk, true, false, t, &frame).is_ok());
        let mut flagless = frame.clone();
        flagless[4] &= !0x04;
        let e = i
            .check_unit(Unit::Chunk, true, false, t, &flagless)
            .unwrap_err();
        assert!(e.contains("content checksum"), "{e}");
        // Integrity data written without tail tokens: xxh3 everywhere.
        i.tail_tokens = false;
        assert_eq!(
            unit_digest(false, Unit::Chunk, true, true, &gcm),
            digest::chunk_digest(&gcm)
        );
        assert!(
            i.check_unit(Unit::Chunk, true, true, digest::chunk_digest(&gcm), &gcm)
                .is_ok()
        );
    }
}
