//! Object keys of a segment's three objects (docs/object-format.md "Objects per segment"):
//!
//! ```text
//! <key.prefix><topic>-<topicId>/<partition>/<startOffset:020>-<segmentId>.log
//! <key.prefix><topic>-<topicId>/<partition>/<startOffset:020>-<segmentId>.indexes
//! <key.prefix><topic>-<topicId>/<partition>/<startOffset:020>-<segmentId>.rsm-manifest
//! ```
//!
//! `key.prefix` is prepended verbatim. When a segment's KIP-917 custom metadata carries
//! `object_prefix` / `object_key`, they replace the configured prefix / the main path, for
//! all three objects (reads and delete), so a segment stays reachable after `key.prefix`
//! changes.

use crate::RemoteLogSegmentMetadata;
use crate::custom_metadata::CustomMetadata;
use tsm_storage::ObjectKey;

/// Suffix of the transformed segment object.
pub const LOG_SUFFIX: &str = ".log";
/// Suffix of the concatenated indexes object.
pub const INDEXES_SUFFIX: &str = ".indexes";
/// Suffix of the manifest (written last; the commit marker).
pub const MANIFEST_SUFFIX: &str = ".rsm-manifest";

/// The main path of a segment: `<topic>-<topicId>/<partition>/<startOffset:020>-<segmentId>`
/// (no prefix, no suffix). A negative start offset (never produced by Kafka) is written as
/// Java's `%020d` would: `-` followed by 19 digits.
pub fn main_path(metadata: &RemoteLogSegmentMetadata) -> String {
    format!(
        "{}-{}/{}/{:020}-{}",
        metadata.topic,
        metadata.topic_id,
        metadata.partition,
        metadata.start_offset,
        metadata.segment_id
    )
}

/// Checks a key prefix (`key.prefix`, or a segment's custom-metadata `object_prefix`):
/// no NUL, no leading `/`, and no `.` or `..` between slashes, so that no prefix can name
/// keys outside the bucket's tree on any backend (the filesystem backend maps keys to
/// paths). Returns what is wrong.
pub fn check_prefix(prefix: &str) -> Result<(), String> {
    if prefix.contains('\0') {
        return Err("contains a NUL byte".into());
    }
    if prefix.starts_with('/') {
        return Err("starts with '/'".into());
    }
    if prefix.split('/').any(|part| part == "." || part == "..") {
        return Err("has a '.' or '..' path component".into());
    }
    Ok(())
}

/// The three keys of one segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentKeys {
    /// The prefix used (configured or from custom metadata).
    pub prefix: String,
    /// The main path used (computed or from custom metadata).
    pub main_path: String,
    /// `.log`
    pub log: ObjectKey,
    /// `.indexes`
    pub indexes: ObjectKey,
    /// `.rsm-manifest`
    pub manifest: ObjectKey,
}

impl SegmentKeys {
    /// Keys under `prefix` + `main_path`; `mask_prefix` (`key.prefix.mask`) hides the prefix
    /// in `Display`.
    pub fn new(prefix: &str, main_path: &str, mask_prefix: bool) -> Self {
        let key =
            |suffix: &str| ObjectKey::new(prefix, &format!("{main_path}{suffix}"), mask_prefix);
        Self {
            prefix: prefix.to_string(),
            main_path: main_path.to_string(),
            log: key(LOG_SUFFIX),
            indexes: key(INDEXES_SUFFIX),
            manifest: key(MANIFEST_SUFFIX),
        }
    }

    /// Keys for writing a segment: the configured prefix and the computed main path.
    pub fn for_copy(metadata: &RemoteLogSegmentMetadata, prefix: &str, mask_prefix: bool) -> Self {
        Self::new(prefix, &main_path(metadata), mask_prefix)
    }

    /// Keys for reading or deleting a segment: `custom`'s `object_prefix` / `object_key`
    /// override the configured prefix / computed main path when present.
    pub fn for_read(
        metadata: &RemoteLogSegmentMetadata,
        custom: Option<&CustomMetadata>,
        prefix: &str,
        mask_prefix: bool,
    ) -> Self {
        let prefix = custom
            .and_then(|c| c.object_prefix.as_deref())
            .unwrap_or(prefix);
        let main = match custom.and_then(|c| c.object_key.as_deref()) {
            Some(k) => k.to_string(),
            None => main_path(metadata),
        };
        Self::new(prefix, &main, mask_prefix)
    }

    /// All three keys, manifest last.
    pub fn all(&self) -> [ObjectKey; 3] {
        [
            self.log.clone(),
            self.indexes.clone(),
            self.manifest.clone(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KafkaUuid;
    use std::collections::BTreeMap;

    fn meta() -> RemoteLogSegmentMetadata {
        RemoteLogSegmentMetadata {
            topic_id: KafkaUuid::parse("MWJ6FHTfRYy67jzwZdeqSQ").expect("uuid"),
            topic: "topic".into(),
            partition: 7,
            segment_id: KafkaUuid::parse("tqimKeZwStOEOwRzT3L5oQ").expect("uuid"),
            start_offset: 1234,
            end_offset: 2000,
            max_timestamp_ms: 0,
            broker_id: 0,
            event_timestamp_ms: 0,
            segment_leader_epochs: BTreeMap::new(),
            segment_size_in_bytes: 0,
            custom_metadata: None,
        }
    }

    #[test]
    fn matches_the_spec_example() {
        let k = SegmentKeys::for_copy(&meta(), "p/", false);
        assert_eq!(
            k.log.as_str(),
            "p/topic-MWJ6FHTfRYy67jzwZdeqSQ/7/00000000000000001234-tqimKeZwStOEOwRzT3L5oQ.log"
        );
        assert!(
            k.indexes
                .as_str()
                .ends_with("-tqimKeZwStOEOwRzT3L5oQ.indexes")
        );
        assert!(
            k.manifest
                .as_str()
                .ends_with("-tqimKeZwStOEOwRzT3L5oQ.rsm-manifest")
        );
    }

    #[test]
    fn custom_metadata_overrides_prefix_and_path() {
        let c = CustomMetadata {
            remote_size: None,
            object_prefix: Some("old/".into()),
            object_key: Some("a/b/c".into()),
        };
        let k = SegmentKeys::for_read(&meta(), Some(&c), "new/", true);
        assert_eq!(k.manifest.as_str(), "old/a/b/c.rsm-manifest");
        assert_eq!(k.log.to_string(), "<prefix>/a/b/c.log");
        let only_prefix = CustomMetadata {
            object_prefix: Some("old/".into()),
            ..Default::default()
        };
        let k = SegmentKeys::for_read(&meta(), Some(&only_prefix), "new/", false);
        assert!(k.log.as_str().starts_with("old/topic-"));
    }

    #[test]
    fn prefixes_that_leave_the_tree_are_refused() {
        for ok in ["", "tiered/", "a/b/", "a..b/", "..a/", "cluster-1"] {
            assert!(check_prefix(ok).is_ok(), "{ok}");
        }
        for bad in [
            "../", "a/../b/", "./x", "a/./", "/abs/", "a\0b", "..", "a/..",
        ] {
            assert!(check_prefix(bad).is_err(), "{bad:?}");
        }
    }
}
