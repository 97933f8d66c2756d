//! Finding segments in the bucket: object keys are parsed back into the fields they were
//! made from (docs/object-format.md "Objects per segment":
//! `<key.prefix><topic>-<topicId>/<partition>/<startOffset:020>-<segmentId>.<suffix>`),
//! and a listing of `<key.prefix>[<topic>-]` is turned into one [`SegmentRef`] per
//! `.rsm-manifest` (the commit marker: a `.log` without a manifest is not a segment).
//! [`list_objects`] keeps the main paths without a manifest too (orphans, `crate::orphans`).
//!
//! Memory: one [`SegmentRef`] per segment found (a few hundred bytes each).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use tsm_core::custom_metadata::CustomMetadata;
use tsm_core::object_keys::{INDEXES_SUFFIX, LOG_SUFFIX, MANIFEST_SUFFIX, SegmentKeys};
use tsm_core::{KafkaUuid, ObjectKey, ObjectMeta, RemoteLogSegmentMetadata, StorageBackend};

use crate::error::{CliError, CliResult};

/// One segment found in the bucket, identified by its object keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SegmentRef {
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
pub(crate) struct ObjectSizes {
    /// `.log`
    pub log: Option<u64>,
    /// `.indexes`
    pub indexes: Option<u64>,
    /// `.rsm-manifest`
    pub manifest: Option<u64>,
}

impl ObjectSizes {
    /// Sum of the sizes of the objects present (bytes).
    pub(crate) fn total(&self) -> u64 {
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
    pub(crate) fn from_key(key: &str, prefix: &str, mask: bool) -> Option<Self> {
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
    pub(crate) fn name(&self) -> String {
        format!(
            "{}-{}/{:020}-{}",
            self.topic, self.partition, self.start_offset, self.segment_id
        )
    }

    /// Broker-style metadata for the engine. Its custom metadata pins the exact prefix and
    /// main path found, so the engine reads these objects whatever the key layout.
    /// `end_offset` is unknown from keys: -1, below the start offset, which tells the
    /// engine's integrity check not to compare it (`tsm_core::manifest::integrity`).
    pub(crate) fn metadata(&self) -> RemoteLogSegmentMetadata {
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
            end_offset: -1,
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
pub(crate) struct Filter {
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
pub(crate) async fn list_segments(
    backend: &Arc<dyn StorageBackend>,
    prefix: &str,
    mask: bool,
    filter: &Filter,
) -> CliResult<Vec<SegmentRef>> {
    Ok(list_objects(backend, prefix, mask, filter)
        .await?
        .into_iter()
        .filter(|l| l.seg.sizes.manifest.is_some())
        .map(|l| l.seg)
        .collect())
}

/// How long ago an object was last modified, from its listing's
/// [`ObjectMeta::last_modified`]; `None` = unknown (the store reported no time).
///
/// A modification time in the future (clock skew between this host and the store)
/// counts as age 0: young, so never deleted early.
pub(crate) fn object_age(meta: &ObjectMeta) -> Option<Duration> {
    meta.last_modified.map(|t| {
        SystemTime::now()
            .duration_since(t)
            .unwrap_or(Duration::ZERO)
    })
}

/// Ages of a segment's objects as listed ([`object_age`]); `None` = absent or unknown
/// (see [`ObjectSizes`] for which objects exist).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ObjectAges {
    /// `.log`
    pub log: Option<Duration>,
    /// `.indexes`
    pub indexes: Option<Duration>,
    /// `.rsm-manifest`
    pub manifest: Option<Duration>,
}

/// One main path found by a listing: the segment its keys name, the sizes of the objects
/// present (`seg.sizes`; no manifest = not a committed segment) and their ages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Listed {
    /// The segment (keys, fields, sizes of the objects found).
    pub seg: SegmentRef,
    /// Ages of the objects found.
    pub ages: ObjectAges,
}

/// Every main path under `prefix` matching `filter` with at least one of its three objects
/// (`.log`, `.indexes`, `.rsm-manifest`), committed or not, sorted by topic, partition,
/// start offset and main path. Keys that do not look like segment keys, or end in another
/// suffix, are ignored. Errors name the listed prefix.
pub(crate) async fn list_objects(
    backend: &Arc<dyn StorageBackend>,
    prefix: &str,
    mask: bool,
    filter: &Filter,
) -> CliResult<Vec<Listed>> {
    let listed = match &filter.topic {
        Some(t) => format!("{t}-"),
        None => String::new(),
    };
    let mut stream = backend.list(&ObjectKey::new(prefix, &listed, mask));
    let mut by_main: BTreeMap<String, Listed> = BTreeMap::new();
    while let Some(item) = stream.next().await {
        let meta = item?;
        let kind = if meta.key.ends_with(MANIFEST_SUFFIX) {
            Kind::Manifest
        } else if meta.key.ends_with(INDEXES_SUFFIX) {
            Kind::Indexes
        } else if meta.key.ends_with(LOG_SUFFIX) {
            Kind::Log
        } else {
            continue;
        };
        let Some(seg) = SegmentRef::from_key(&meta.key, prefix, mask) else {
            continue;
        };
        if !filter.matches(&seg) {
            continue;
        }
        let age = object_age(&meta);
        let entry = by_main
            .entry(seg.keys.main_path.clone())
            .or_insert_with(|| Listed {
                seg,
                ages: ObjectAges::default(),
            });
        let (size, at) = match kind {
            Kind::Log => (&mut entry.seg.sizes.log, &mut entry.ages.log),
            Kind::Indexes => (&mut entry.seg.sizes.indexes, &mut entry.ages.indexes),
            Kind::Manifest => (&mut entry.seg.sizes.manifest, &mut entry.ages.manifest),
        };
        *size = Some(meta.size);
        *at = age;
    }
    let mut out: Vec<Listed> = by_main.into_values().collect();
    // Stable: equal (topic, partition, start) keep the main-path order of the map.
    out.sort_by(|a, b| {
        (&a.seg.topic, a.seg.partition, a.seg.start_offset).cmp(&(
            &b.seg.topic,
            b.seg.partition,
            b.seg.start_offset,
        ))
    });
    Ok(out)
}

/// Which of a segment's three objects a listed key is.
#[derive(Clone, Copy)]
enum Kind {
    Log,
    Indexes,
    Manifest,
}

/// True when `key` exists (a listing of exactly that key).
pub(crate) async fn object_exists(
    backend: &Arc<dyn StorageBackend>,
    key: &ObjectKey,
) -> CliResult<bool> {
    let mut s = backend.list(key);
    while let Some(item) = s.next().await {
        if item?.key == key.as_str() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// What a `<segment>` argument names: an object key or main path (with or without the
/// configured prefix, with or without a suffix), or a bare segment id.
#[derive(Clone, Debug)]
pub(crate) enum SegmentSpec {
    /// A key or main path, parsed into the segment it names.
    Path(Box<SegmentRef>),
    /// A segment id (Kafka `Uuid`, 22 base64url characters).
    Id(KafkaUuid),
}

/// What a segment key looks like, for error messages.
const SEGMENT_KEY: &str = "[key.prefix]<topic>-<topicId>/<partition>/<startOffset>-<segmentId>\
     [.log|.indexes|.rsm-manifest]";

impl SegmentSpec {
    /// Parses `arg`; the error says what is wrong with it (without suggestions: see
    /// [`unknown_segment`]).
    pub(crate) fn parse(arg: &str, prefix: &str, mask: bool) -> Result<Self, String> {
        if let Some(s) = SegmentRef::from_key(arg, prefix, mask)
            .or_else(|| SegmentRef::from_key(&format!("{prefix}{arg}"), prefix, mask))
        {
            return Ok(Self::Path(Box::new(s)));
        }
        if let Some(id) = KafkaUuid::parse(arg) {
            return Ok(Self::Id(id));
        }
        let n = arg.chars().count();
        Err(if arg.contains('/') {
            format!(
                "segment {arg:?}: not a segment key ({SEGMENT_KEY}; topic id and segment id \
                 22 characters each, the offset 20 digits)"
            )
        } else if n == 22 {
            format!("segment {arg:?}: not a segment id (22 base64url characters: A-Z a-z 0-9 - _)")
        } else {
            format!(
                "segment {arg:?}: not a segment id (22 base64url characters; this is {n}) \
                 nor a segment key ({SEGMENT_KEY})"
            )
        })
    }

    /// True when `seg` is the segment this names.
    pub(crate) fn matches(&self, seg: &SegmentRef) -> bool {
        match self {
            Self::Path(p) => p.keys.main_path == seg.keys.main_path,
            Self::Id(id) => seg.segment_id == *id,
        }
    }

    /// The narrowest listing that finds it.
    fn filter(&self) -> Filter {
        match self {
            Self::Path(p) => Filter {
                topic: Some(p.topic.clone()),
                partition: Some(p.partition),
            },
            Self::Id(_) => Filter::default(),
        }
    }
}

/// `; did you mean <closest>?` when a listed segment's id (for an id-like `arg`) or main
/// path (for a key-like one) is a few edits away from `arg`, else empty.
pub(crate) fn did_you_mean<'a>(
    arg: &str,
    prefix: &str,
    listed: impl IntoIterator<Item = &'a SegmentRef>,
) -> String {
    let arg = arg.strip_prefix(prefix).unwrap_or(arg);
    let arg = [MANIFEST_SUFFIX, INDEXES_SUFFIX, LOG_SUFFIX]
        .iter()
        .find_map(|s| arg.strip_suffix(s))
        .unwrap_or(arg);
    let by_path = arg.contains('/');
    let candidates: Vec<String> = listed
        .into_iter()
        .map(|s| {
            if by_path {
                s.keys.main_path.clone()
            } else {
                s.segment_id.to_string()
            }
        })
        .collect();
    match tsm_core::config::closest_key(arg, candidates.iter().map(String::as_str)) {
        Some(c) if c != arg => format!("; did you mean {c}?"),
        _ => String::new(),
    }
}

/// The usage error for a well-formed `<segment>` argument `arg` that names no committed
/// segment: where it was looked for, what was found instead (an orphan without its
/// manifest) and the closest listed segment.
/// A masked prefix (`key.prefix.mask`) is not shown.
pub(crate) fn unknown_segment(
    arg: &str,
    spec: &SegmentSpec,
    (prefix, mask): (&str, bool),
    found: Option<&Listed>,
    listed: &[SegmentRef],
) -> CliError {
    let at = if prefix.is_empty() {
        "at the bucket's root (no key.prefix)".to_string()
    } else if mask {
        "under the configured key.prefix (masked)".to_string()
    } else {
        format!("under key.prefix {prefix:?}")
    };
    let hint = " (`tsm ls` lists the segments)";
    let msg = match (spec, found) {
        (SegmentSpec::Path(p), Some(orphan)) => {
            let present: Vec<&str> = [
                (orphan.seg.sizes.log, ".log"),
                (orphan.seg.sizes.indexes, ".indexes"),
            ]
            .into_iter()
            .filter_map(|(size, what)| size.map(|_| what))
            .collect();
            format!(
                "segment {}: no .rsm-manifest {at}, only its {}: left by a copy that did not \
                 finish, not a segment (`tsm ls --orphans` lists such objects)",
                p.keys.main_path,
                present.join(" and ")
            )
        }
        (SegmentSpec::Path(p), None) => format!(
            "segment {}: no .rsm-manifest {at}{}{hint}",
            p.keys.main_path,
            did_you_mean(arg, prefix, listed)
        ),
        (SegmentSpec::Id(_), _) => format!(
            "segment id {arg}: no .rsm-manifest with this id under the configured key.prefix \
             ({} segment(s) {at}){}{hint}",
            listed.len(),
            did_you_mean(arg, prefix, listed)
        ),
    };
    CliError::Usage(msg)
}

/// What [`resolve`] requires of the segment it finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    /// A committed segment (its `.rsm-manifest` exists): `inspect`, `fetch`.
    Manifest,
    /// Any main path, even with none of its objects (`delete`: idempotent, and it removes
    /// an orphan's objects too). A bare id must still name a committed segment.
    Any,
}

/// Resolves the `<segment>` argument ([`SegmentSpec`]): a main path or key is looked up
/// in a listing of its topic and partition, a bare id in a listing of the whole prefix.
/// The segment's objects come back with their listed sizes. An argument that is not
/// well-formed, or (with [`Need::Manifest`], and always for an id) names no committed
/// segment, is a usage error (exit 2) saying what was looked for and where, with the
/// closest listed segment when one is near.
pub(crate) async fn resolve(
    backend: &Arc<dyn StorageBackend>,
    prefix: &str,
    mask: bool,
    arg: &str,
    need: Need,
) -> CliResult<SegmentRef> {
    let spec = match SegmentSpec::parse(arg, prefix, mask) {
        Ok(s) => s,
        Err(why) => {
            // Suggestions are best effort: a listing that fails leaves the usage error.
            let all = list_segments(backend, prefix, mask, &Filter::default())
                .await
                .unwrap_or_default();
            return Err(CliError::Usage(format!(
                "{why}{}",
                did_you_mean(arg, prefix, &all)
            )));
        }
    };
    let listed = list_objects(backend, prefix, mask, &spec.filter()).await?;
    let hit = listed.iter().find(|l| spec.matches(&l.seg));
    let by_path = matches!(spec, SegmentSpec::Path(_));
    if let Some(l) = hit
        && (l.seg.sizes.manifest.is_some() || (need == Need::Any && by_path))
    {
        return Ok(l.seg.clone());
    }
    if let (SegmentSpec::Path(p), Need::Any, None) = (&spec, need, hit) {
        // No object at all: still return the keys (delete is idempotent).
        return Ok(p.as_ref().clone());
    }
    let mut committed: Vec<SegmentRef> = listed
        .iter()
        .filter(|l| l.seg.sizes.manifest.is_some())
        .map(|l| l.seg.clone())
        .collect();
    if committed.is_empty() && by_path && hit.is_none() {
        // Nothing in that topic-partition: the topic may be mistyped; suggest from all.
        committed = list_segments(backend, prefix, mask, &Filter::default())
            .await
            .unwrap_or_default();
    }
    Err(unknown_segment(arg, &spec, (prefix, mask), hit, &committed))
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

    #[test]
    fn object_age_from_last_modified() {
        let meta = |last_modified| ObjectMeta {
            key: "p/x.log".into(),
            size: 1,
            last_modified,
        };
        assert_eq!(object_age(&meta(None)), None);
        let hour = Duration::from_secs(3600);
        let age = object_age(&meta(Some(SystemTime::now() - hour))).expect("known");
        assert!(
            age >= hour && age < hour + Duration::from_secs(600),
            "{age:?}"
        );
        // Clock skew: a time in the future is age 0, never old.
        assert_eq!(
            object_age(&meta(Some(SystemTime::now() + hour))),
            Some(Duration::ZERO)
        );
    }
}
