//! The segment manifest (`.rsm-manifest`), JSON v1, byte-compatible with the Java plugin.
//!
//! Source: docs/object-format.md "Manifest". Written by copy (last, as the commit marker),
//! read by fetch, fetchIndex and tools. Field names are the spec's, byte for byte.
//! Reading accepts every variant the spec allows: `version` `"1"` (a JSON number `1` is
//! tolerated), `chunkIndex.type` `fixed` or `variable`, `encryption` absent or `null`,
//! `segmentIndexes.transaction` absent or `null`, `remoteLogSegmentMetadata` absent or any
//! JSON (ignored), unknown fields ignored. The manifest is not encrypted; the `dataKey` it
//! holds is RSA-wrapped.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use tsm_codec::ChunkIndex;

use crate::{IndexType, ObjectKey, RemoteLogSegmentMetadata, RsmError};

pub mod bounds;
pub mod integrity;

/// The only manifest version this crate writes and reads.
pub const MANIFEST_VERSION: &str = "1";

/// A parsed `.rsm-manifest` (docs/object-format.md "Manifest").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SegmentManifest {
    /// Always `"1"` (a string).
    #[serde(serialize_with = "write_version", deserialize_with = "read_version")]
    pub version: String,
    /// Where each chunk of `.log` lives.
    pub chunk_index: ChunkIndexJson,
    /// Where each index lives in `.indexes` (stored bytes).
    pub segment_indexes: SegmentIndexes,
    /// True when every `.log` chunk is a zstd frame.
    pub compression: bool,
    /// The wrapped data key and AAD; absent when not encrypted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption: Option<EncryptionJson>,
    /// Informational copy of the broker's metadata (see [`metadata_json`]); ignored on read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_log_segment_metadata: Option<serde_json::Value>,
}

fn write_version<S: Serializer>(v: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(v)
}

fn read_version<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    let text = match &v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        other => other.to_string(),
    };
    if text == MANIFEST_VERSION {
        Ok(text)
    } else {
        Err(serde::de::Error::custom(format!(
            "unsupported manifest version {v}; this reader knows \"1\""
        )))
    }
}

/// `chunkIndex`: `{"type":"fixed",...}` or `{"type":"variable",...}`. Sizes in bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub enum ChunkIndexJson {
    /// Every transformed chunk has the same size except the last (no transform, or
    /// encryption only).
    Fixed {
        /// `chunk.size` at copy time.
        original_chunk_size: u32,
        /// Size of the original `.log` file.
        original_file_size: u64,
        /// Stored size of every chunk but the last.
        transformed_chunk_size: u32,
        /// Stored size of the last chunk.
        final_transformed_chunk_size: u32,
    },
    /// One stored size per chunk (compression on).
    Variable {
        /// `chunk.size` at copy time.
        original_chunk_size: u32,
        /// Size of the original `.log` file.
        original_file_size: u64,
        /// `base64(zstd_frame(codec bytes))` of every chunk's stored size, last included
        /// (docs/object-format.md "`transformedChunks`: chunk-size codec").
        transformed_chunks: String,
    },
}

impl ChunkIndexJson {
    /// Size of the original `.log` file (bytes).
    pub fn original_file_size(&self) -> u64 {
        match self {
            Self::Fixed {
                original_file_size, ..
            }
            | Self::Variable {
                original_file_size, ..
            } => *original_file_size,
        }
    }

    /// `chunk.size` at copy time (bytes).
    pub fn original_chunk_size(&self) -> u32 {
        match self {
            Self::Fixed {
                original_chunk_size,
                ..
            }
            | Self::Variable {
                original_chunk_size,
                ..
            } => *original_chunk_size,
        }
    }
}

/// One index's place in `.indexes`, in stored (post-encryption) bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentIndexJson {
    /// Offset in `.indexes` (bytes).
    pub position: u64,
    /// Stored size (bytes); 0 for an empty index.
    pub size: u64,
}

/// `segmentIndexes`, in storage order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SegmentIndexes {
    /// OFFSET (`.index`).
    pub offset: SegmentIndexJson,
    /// TIMESTAMP (`.timeindex`).
    pub timestamp: SegmentIndexJson,
    /// PRODUCER_SNAPSHOT (`.snapshot`).
    pub producer_snapshot: SegmentIndexJson,
    /// LEADER_EPOCH (checkpoint bytes).
    pub leader_epoch: SegmentIndexJson,
    /// TRANSACTION (`.txnindex`); written as `null` when the segment had none.
    #[serde(default)]
    pub transaction: Option<SegmentIndexJson>,
}

impl SegmentIndexes {
    /// The entry for `index`; `None` only for a missing transaction index.
    pub fn get(&self, index: IndexType) -> Option<SegmentIndexJson> {
        match index {
            IndexType::Offset => Some(self.offset),
            IndexType::Timestamp => Some(self.timestamp),
            IndexType::ProducerSnapshot => Some(self.producer_snapshot),
            IndexType::LeaderEpoch => Some(self.leader_epoch),
            IndexType::Transaction => self.transaction,
        }
    }

    /// Total stored bytes of `.indexes` according to the entries (end of the last one).
    pub fn stored_len(&self) -> u64 {
        IndexType::ALL
            .into_iter()
            .filter_map(|t| self.get(t))
            .map(|e| e.position.saturating_add(e.size))
            .max()
            .unwrap_or(0)
    }
}

/// `encryption`: the RSA-wrapped data key and the AAD.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EncryptionJson {
    /// `<keyPairId>:<base64 of the RSA-OAEP-wrapped 32-byte AES key>`.
    pub data_key: String,
    /// Base64 (standard, padded) of the 32-byte AAD.
    pub aad: String,
}

impl std::fmt::Debug for EncryptionJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The wrapped key is safe to show, but keep logs short: the key-pair id only.
        let id = self.data_key.split(':').next().unwrap_or("");
        f.debug_struct("EncryptionJson")
            .field("key_pair_id", &id)
            .finish_non_exhaustive()
    }
}

impl SegmentManifest {
    /// The codec chunk index described by `chunkIndex` (docs/object-format.md "Manifest":
    /// fixed, or variable with `transformedChunks` decoded); `key` is the manifest's key,
    /// named in the [`RsmError::Corrupt`] error when the chunk table is invalid.
    ///
    /// The fields are checked against [`bounds`] first (before the index is built), and
    /// the built index against the manifest's flags ([`bounds::check_chunk_index`]).
    pub fn chunk_index(&self, key: &ObjectKey) -> Result<ChunkIndex, RsmError> {
        bounds::check_chunk_index_fields(
            key,
            self.chunk_index.original_chunk_size(),
            self.chunk_index.original_file_size(),
        )?;
        let r = match &self.chunk_index {
            ChunkIndexJson::Fixed {
                original_chunk_size,
                original_file_size,
                transformed_chunk_size,
                final_transformed_chunk_size,
            } => ChunkIndex::fixed(
                *original_chunk_size,
                *original_file_size,
                *transformed_chunk_size,
                *final_transformed_chunk_size,
            ),
            ChunkIndexJson::Variable {
                original_chunk_size,
                original_file_size,
                transformed_chunks,
            } => ChunkIndex::variable_from_manifest_string(
                *original_chunk_size,
                *original_file_size,
                transformed_chunks,
            ),
        };
        let index = r.map_err(|e| RsmError::Corrupt {
            object: key.to_string(),
            detail: format!("invalid chunkIndex: {e}"),
        })?;
        bounds::check_chunk_index(key, self, &index)?;
        Ok(index)
    }

    /// Parses manifest bytes; the error text says what is wrong (serde_json's message with
    /// line and column).
    pub fn from_json(bytes: &[u8]) -> Result<Self, String> {
        let m: Self = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        if m.chunk_index.original_chunk_size() == 0 {
            return Err("chunkIndex.originalChunkSize is 0".into());
        }
        if let Some(enc) = &m.encryption {
            if enc.data_key.matches(':').count() != 1 {
                return Err(
                    "encryption.dataKey must be <keyPairId>:<base64> with exactly one ':'".into(),
                );
            }
        }
        Ok(m)
    }

    /// Compact UTF-8 JSON, fields in the spec's order.
    pub fn to_json(&self) -> Vec<u8> {
        // Serializing plain structs and serde_json::Value to a Vec cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// The informational `remoteLogSegmentMetadata` object (docs/object-format.md "Manifest"):
/// `remoteLogSegmentId{topicIdPartition{topicId, topicPartition{topic, partition}}, id}`,
/// `startOffset`, `endOffset`, `maxTimestampMs`, `brokerId`, `eventTimestampMs`,
/// `segmentLeaderEpochs{"epoch":offset}`.
pub fn metadata_json(m: &RemoteLogSegmentMetadata) -> serde_json::Value {
    let epochs: serde_json::Map<String, serde_json::Value> = m
        .segment_leader_epochs
        .iter()
        .map(|(e, o)| (e.to_string(), serde_json::Value::from(*o)))
        .collect();
    serde_json::json!({
        "remoteLogSegmentId": {
            "topicIdPartition": {
                "topicId": m.topic_id.to_string(),
                "topicPartition": {"topic": m.topic, "partition": m.partition},
            },
            "id": m.segment_id.to_string(),
        },
        "startOffset": m.start_offset,
        "endOffset": m.end_offset,
        "maxTimestampMs": m.max_timestamp_ms,
        "brokerId": m.broker_id,
        "eventTimestampMs": m.event_timestamp_ms,
        "segmentLeaderEpochs": epochs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = r#"{"version":"1",
     "chunkIndex":{"type":"fixed","originalChunkSize":100,"originalFileSize":1000,
                   "transformedChunkSize":110,"finalTransformedChunkSize":110},
     "segmentIndexes":{"offset":{"position":0,"size":1},"timestamp":{"position":1,"size":1},
                       "producerSnapshot":{"position":2,"size":1},"leaderEpoch":{"position":3,"size":1},
                       "transaction":{"position":4,"size":1}},
     "compression":false,
     "encryption":{"dataKey":"k1:AAAA","aad":"BBBB"},
     "remoteLogSegmentMetadata":{"anything":[1,2]}}"#;

    #[test]
    fn parses_and_rewrites_the_spec_example() {
        let m = SegmentManifest::from_json(SPEC.as_bytes()).expect("parses");
        assert_eq!(m.chunk_index.original_file_size(), 1000);
        assert_eq!(m.segment_indexes.stored_len(), 5);
        let again = SegmentManifest::from_json(&m.to_json()).expect("round trip");
        assert_eq!(again, m);
        let text = String::from_utf8(m.to_json()).expect("utf8");
        assert!(
            text.starts_with(
                r#"{"version":"1","chunkIndex":{"type":"fixed","originalChunkSize":100"#
            ),
            "{text}"
        );
    }

    #[test]
    fn accepts_variants_and_rejects_bad_versions() {
        let v = r#"{"version":1,"chunkIndex":{"type":"variable","originalChunkSize":4,"originalFileSize":0,"transformedChunks":"x"},
          "segmentIndexes":{"offset":{"position":0,"size":0},"timestamp":{"position":0,"size":0},
          "producerSnapshot":{"position":0,"size":0},"leaderEpoch":{"position":0,"size":0}},
          "compression":true,"encryption":null,"extra":true}"#;
        let m = SegmentManifest::from_json(v.as_bytes()).expect("variant parses");
        assert!(m.encryption.is_none());
        assert!(m.segment_indexes.transaction.is_none());
        let text = String::from_utf8(m.to_json()).expect("utf8");
        assert!(text.contains(r#""transaction":null"#), "{text}");
        assert!(!text.contains("encryption"), "{text}");
        let bad = SPEC.replace(r#""version":"1""#, r#""version":"2""#);
        let e = SegmentManifest::from_json(bad.as_bytes()).unwrap_err();
        assert!(e.contains("version"), "{e}");
        assert!(SegmentManifest::from_json(b"{").is_err());
    }
}
