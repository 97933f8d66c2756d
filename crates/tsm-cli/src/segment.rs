//! Finding segments in the bucket: object keys are parsed back into the fields they were
//! made from (object-format-v1 "Objects per segment":
//! `<key.prefix><topic>-<topicId>/<partition>/<startOffset:020>-<segmentId>.<suffix>`),
//! and a listing of `<key.prefix>[<topic>-]` is turned into one [`SegmentRef`] per
//! `.rsm-manifest` (the commit marker: a `.log` without a manifest is not a segment).
//!
//! Memory: one [`SegmentRef`] per segment found (a few hundred bytes each).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use tsm_core::custom_metadata::CustomMetadata;
use tsm_core::keys::{INDEXES_SUFFIX, LOG_SUFFIX, MANIFEST_SUFFIX, SegmentKeys};
use tsm_core::{KafkaUuid, ObjectKey, RemoteLogSegmentMetadata, StorageBackend};

use crate::error::{CliError, CliResult};

/// One segment found in the bucket, identified by its object keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentRef {
    /// Topic name.
    pub topic: String,
    /// Topic id (Kafka `Uuid`).
    pub topic_id: KafkaUuid,
    /// Partition number.
    pub partition: i32,
    /// First offset (from the key).
    pub start_offset: i64,
    /// Segment id (Kafka `Uuid`).
    pub segment_id: KafkaUuid,
    /// The three object keys.
    pub keys: SegmentKeys,
    /// Stored sizes found by the listing (bytes), when listed: `.log`, `.indexes`,
    /// `.rsm-manifest`.
    pub sizes: ObjectSizes,
}

/// Stored sizes (bytes) of a segment's objects as listed; `None` = object not found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ObjectSizes {
    /// `.log`
    pub log: Option<u64>,
    /// `.indexes`
    pub indexes: Option<u64>,
    /// `.rsm-manifest`
    pub manifest: Option<u64>,
}

impl ObjectSizes {
    /// Sum of the sizes of the objects present (bytes).
    pub fn total(&self) -> u64 {
        [self.log, self.indexes, self.manifest]
            .into_iter()
            .flatten()
            .sum()
    }
}

/// The fields of a main path `<topic>-<topicId>/<partition>/<startOffset:020>-<segmentId>`.
fn parse_main_path(main: &str) -> Option<(String, KafkaUuid, i32, i64, KafkaUuid)> {
    let mut parts = main.rsplitn(3, '/');
    let file = parts.next()?;
    let partition = parts.next()?.parse::<i32>().ok()?;
    let topic_dir = parts.next()?;
    let (topic, topic_id) = topic_dir.rsplit_once('-')?;
    // A topic id is 22 characters; a `-` inside it makes rsplit_once cut too late.
    let (topic, topic_id) = if topic_id.len() == 22 {
        (topic, topic_id)
    } else if topic_dir.len() > 23 {
        let cut = topic_dir.len() - 22;
        let (t, id) = topic_dir.split_at(cut);
        (t.strip_suffix('-')?, id)
    } else {
        return None;
    };
    let (offset, segment_id) = if file.len() > 23 {
        let cut = file.len() - 22;
        let (o, id) = file.split_at(cut);
        (o.strip_suffix('-')?, id)
    } else {
        return None;
    };
    if topic.is_empty() || offset.len() < 20 {
        return None;
    }
    Some((
        topic.to_string(),
        KafkaUuid::parse(topic_id)?,
        partition,
        offset.parse::<i64>().ok()?,
        KafkaUuid::parse(segment_id)?,
    ))
}

impl SegmentRef {
    /// Parses an object key (any of the three suffixes, or none) under `prefix`.
    /// `None` when the key does not have the shape of a segment key.
    pub fn from_key(key: &str, prefix: &str, mask: bool) -> Option<Self> {
        let rest = key.strip_prefix(prefix)?;
        let main = [MANIFEST_SUFFIX, INDEXES_SUFFIX, LOG_SUFFIX]
            .iter()
            .find_map(|s| rest.strip_suffix(s))
            .unwrap_or(rest);
        let (topic, topic_id, partition, start_offset, segment_id) = parse_main_path(main)?;
        Some(Self {
            topic,
            topic_id,
            partition,
            start_offset,
            segment_id,
            keys: SegmentKeys::new(prefix, main, mask),
            sizes: ObjectSizes::default(),
        })
    }

    /// `<topic>-<partition>/<startOffset>-<segmentId>`, for reports.
    pub fn name(&self) -> String {
        format!(
            "{}-{}/{:020}-{}",
            self.topic, self.partition, self.start_offset, self.segment_id
        )
    }

    /// Broker-style metadata for the engine. Its custom metadata pins the exact prefix and
    /// main path found, so the engine reads these objects whatever the key layout.
    /// `end_offset` is unknown from keys and set to the start offset.
    pub fn metadata(&self) -> RemoteLogSegmentMetadata {
        let custom = CustomMetadata {
            remote_size: None,
            object_prefix: Some(self.keys.prefix.clone()),
            object_key: Some(self.keys.main_path.clone()),
        };
        RemoteLogSegmentMetadata {
            topic_id: self.topic_id,
            topic: self.topic.clone(),
            partition: self.partition,
            segment_id: self.segment_id,
            start_offset: self.start_offset,
            end_offset: self.start_offset,
            max_timestamp_ms: 0,
            broker_id: -1,
            event_timestamp_ms: 0,
            segment_leader_epochs: BTreeMap::new(),
            segment_size_in_bytes: 0,
            custom_metadata: Some(custom.encode()),
        }
    }
}

/// Which segments a command works on.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Only this topic.
    pub topic: Option<String>,
    /// Only this partition.
    pub partition: Option<i32>,
}

impl Filter {
    fn matches(&self, s: &SegmentRef) -> bool {
        self.topic.as_ref().is_none_or(|t| *t == s.topic)
            && self.partition.is_none_or(|p| p == s.partition)
    }
}

/// Every segment (a `.rsm-manifest`) under `prefix` matching `filter`, sorted by topic,
/// partition and start offset, with the listed sizes of its objects. Keys that do not look
/// like segment keys are ignored. Errors name the listed prefix.
pub async fn list_segments(
    backend: &Arc<dyn StorageBackend>,
    prefix: &str,
    mask: bool,
    filter: &Filter,
) -> CliResult<Vec<SegmentRef>> {
    let listed = match &filter.topic {
        Some(t) => format!("{t}-"),
        None => String::new(),
    };
    let mut stream = backend.list(&ObjectKey::new(prefix, &listed, mask));
    let mut by_main: BTreeMap<String, SegmentRef> = BTreeMap::new();
    let mut sizes: BTreeMap<String, ObjectSizes> = BTreeMap::new();
    while let Some(item) = stream.next().await {
        let meta = item?;
        let Some(seg) = SegmentRef::from_key(&meta.key, prefix, mask) else {
            continue;
        };
        if !filter.matches(&seg) {
            continue;
        }
        let entry = sizes.entry(seg.keys.main_path.clone()).or_default();
        if meta.key.ends_with(MANIFEST_SUFFIX) {
            entry.manifest = Some(meta.size);
            by_main.insert(seg.keys.main_path.clone(), seg);
        } else if meta.key.ends_with(INDEXES_SUFFIX) {
            entry.indexes = Some(meta.size);
        } else if meta.key.ends_with(LOG_SUFFIX) {
            entry.log = Some(meta.size);
        }
    }
    let mut out: Vec<SegmentRef> = by_main
        .into_iter()
        .map(|(main, mut s)| {
            s.sizes = sizes.get(&main).copied().unwrap_or_default();
            s
        })
        .collect();
    out.sort_by(|a, b| {
        (&a.topic, a.partition, a.start_offset).cmp(&(&b.topic, b.partition, b.start_offset))
    });
    Ok(out)
}

/// Resolves the `<segment>` argument: an object key or main path (with or without the
/// configured prefix, with or without a suffix), or a bare segment id (22 characters),
/// which is looked up by listing. The segment's objects are listed for their sizes.
pub async fn resolve(
    backend: &Arc<dyn StorageBackend>,
    prefix: &str,
    mask: bool,
    arg: &str,
) -> CliResult<SegmentRef> {
    let parsed = SegmentRef::from_key(arg, prefix, mask)
        .or_else(|| SegmentRef::from_key(&format!("{prefix}{arg}"), prefix, mask));
    let filter = match &parsed {
        Some(s) => Filter {
            topic: Some(s.topic.clone()),
            partition: Some(s.partition),
        },
        None if KafkaUuid::parse(arg).is_some() => Filter::default(),
        None => {
            return Err(CliError::Usage(format!(
                "segment {arg:?}: expected an object key, \
                 <topic>-<topicId>/<partition>/<startOffset>-<segmentId>, or a segment id"
            )));
        }
    };
    let found = list_segments(backend, prefix, mask, &filter).await?;
    let hit = found.into_iter().find(|s| match &parsed {
        Some(p) => p.keys.main_path == s.keys.main_path,
        None => s.segment_id.to_string() == arg,
    });
    match (hit, parsed) {
        (Some(s), _) => Ok(s),
        // No manifest: still return the keys, so delete/verify can name what is missing.
        (None, Some(p)) => Ok(p),
        (None, None) => Err(CliError::Usage(format!(
            "segment id {arg}: no .rsm-manifest with this id under the configured key.prefix"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_spec_key_and_topics_with_dashes() {
        let k = "p/topic-MWJ6FHTfRYy67jzwZdeqSQ/7/00000000000000001234-tqimKeZwStOEOwRzT3L5oQ.log";
        let s = SegmentRef::from_key(k, "p/", false).expect("parses");
        assert_eq!(s.topic, "topic");
        assert_eq!(s.partition, 7);
        assert_eq!(s.start_offset, 1234);
        assert_eq!(s.segment_id.to_string(), "tqimKeZwStOEOwRzT3L5oQ");
        assert_eq!(s.keys.log.as_str(), k);
        let k2 = "my-topic-a-MWJ6FHTfRYy67jzwZdeq-Q/0/00000000000000000000-tqimKeZwStOEOwRzT3L5oQ";
        let s2 = SegmentRef::from_key(k2, "", false).expect("dashes");
        assert_eq!(s2.topic, "my-topic-a");
        assert_eq!(s2.topic_id.to_string(), "MWJ6FHTfRYy67jzwZdeq-Q");
        assert!(SegmentRef::from_key("p/other/file.log", "p/", false).is_none());
        assert!(SegmentRef::from_key(k, "q/", false).is_none());
    }
}
