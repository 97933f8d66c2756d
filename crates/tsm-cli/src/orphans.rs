//! Orphans: `.log` / `.indexes` objects that belong to no committed segment. The engine
//! writes `.log`, then `.indexes`, then the `.rsm-manifest` (the commit marker) and
//! deletes what it wrote when a copy fails; a copy that dies (broker killed, network
//! gone) leaves the first objects without their manifest. Kafka retries such a copy
//! under a new segment id, so nothing ever reads them.
//!
//! [`select`] is the one place that decides what is an orphan, for `tsm ls --orphans`
//! and `tsm gc`:
//! - a main path with no `.rsm-manifest` and a `.log`, an `.indexes` or both: all of
//!   them are orphans (never a manifest, never an object of a segment that has one);
//! - only when the segment's youngest object is at least `--older-than` old, so a copy
//!   still in flight (its `.log` written, the manifest not yet) is left alone. An object
//!   whose age is unknown ([`crate::segment::object_age`]) makes its segment's age
//!   unknown: listed with age `?`, deleted by gc only with `--include-unknown-age`.

use std::time::Duration;

use tsm_core::ObjectKey;

use crate::segment::{Listed, SegmentRef};

/// Default `--older-than` of `tsm ls --orphans`.
pub(crate) const DEFAULT_OLDER_THAN: Duration = Duration::from_secs(3600);

/// One orphan object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OrphanObject {
    /// The object key (`Display` masks `key.prefix` when `key.prefix.mask` is set).
    pub key: ObjectKey,
    /// Stored size (bytes).
    pub size: u64,
    /// Age of this object; `None` = unknown.
    pub age: Option<Duration>,
}

/// The orphan objects of one main path (a segment without its manifest).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Orphan {
    /// The segment the keys name.
    pub seg: SegmentRef,
    /// Its youngest object's age; `None` when any of its objects' age is unknown.
    pub age: Option<Duration>,
    /// `.log` and/or `.indexes`, in that order.
    pub objects: Vec<OrphanObject>,
}

/// The orphans among `listed` at least `older_than` old, plus those of unknown age, in
/// listing order.
pub(crate) fn select(listed: Vec<Listed>, older_than: Duration) -> Vec<Orphan> {
    listed
        .into_iter()
        .filter(|l| l.seg.sizes.manifest.is_none())
        .map(|l| {
            let objects: Vec<OrphanObject> = [
                (&l.seg.keys.log, l.seg.sizes.log, l.ages.log),
                (&l.seg.keys.indexes, l.seg.sizes.indexes, l.ages.indexes),
            ]
            .into_iter()
            .filter_map(|(key, size, age)| {
                size.map(|size| OrphanObject {
                    key: key.clone(),
                    size,
                    age,
                })
            })
            .collect();
            // The youngest object decides; one unknown age makes the segment's unknown.
            let age = objects
                .iter()
                .map(|o| o.age)
                .collect::<Option<Vec<Duration>>>()
                .and_then(|ages| ages.into_iter().min());
            (l.seg, age, objects)
        })
        .filter(|(_, age, objects)| !objects.is_empty() && age.is_none_or(|a| a >= older_than))
        .map(|(seg, age, objects)| Orphan { seg, age, objects })
        .collect()
}

/// Parses a human duration: one or more `<number><unit>` with unit `s`, `m`, `h` or `d`
/// (`90s`, `30m`, `2h`, `1d`, `1h30m`, `0s`).
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || {
        format!(
            "invalid duration {text:?}: expected a number and a unit s, m, h or d \
             (90s, 30m, 2h, 1d, 1h30m, 0s)"
        )
    };
    let text_trimmed = text.trim();
    if text_trimmed.is_empty() {
        return Err(bad());
    }
    let mut total: u64 = 0;
    let mut rest = text_trimmed;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        let (number, tail) = rest.split_at(digits);
        let number: u64 = number.parse().map_err(|_| bad())?;
        let unit = tail.chars().next().ok_or_else(bad)?;
        let seconds = match unit {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return Err(bad()),
        };
        total = number
            .checked_mul(seconds)
            .and_then(|s| total.checked_add(s))
            .ok_or_else(bad)?;
        rest = &tail[unit.len_utf8()..];
    }
    Ok(Duration::from_secs(total))
}

/// A duration as given on the command line: `1h`, `1h30m`, `1m30s` (`90s`), `0s`.
pub(crate) fn format_duration(d: Duration) -> String {
    let mut s = d.as_secs();
    if s == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    for (unit, len) in [('d', 86_400), ('h', 3600), ('m', 60), ('s', 1)] {
        if s >= len {
            out.push_str(&format!("{}{unit}", s / len));
            s %= len;
        }
    }
    out
}

/// An age for reports: `45s`, `12m05s`, `3h07m`, `2d04h`; `?` when unknown.
pub(crate) fn format_age(age: Option<Duration>) -> String {
    let Some(age) = age else {
        return "?".into();
    };
    let s = age.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        3600..86_400 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{:02}h", s / 86_400, s % 86_400 / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::{ObjectAges, ObjectSizes};

    const MAIN: &str = "t-MWJ6FHTfRYy67jzwZdeqSQ/0/00000000000000000000-tqimKeZwStOEOwRzT3L5oQ";

    fn listed(sizes: ObjectSizes, ages: ObjectAges) -> Listed {
        let mut seg = SegmentRef::from_key(&format!("p/{MAIN}.log"), "p/", true).expect("key");
        seg.sizes = sizes;
        Listed { seg, ages }
    }

    fn mins(m: u64) -> Option<Duration> {
        Some(Duration::from_secs(m * 60))
    }

    #[test]
    fn durations_parse_and_print() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        for bad in [
            "",
            "1",
            "h",
            "5x",
            "1.5h",
            "-1h",
            "1h 30m",
            "99999999999999999999d",
        ] {
            let e = parse_duration(bad).expect_err(bad);
            assert!(e.contains("90s, 30m"), "{e}");
        }
        for d in ["0s", "1h", "1h30m", "1d2h3m4s", "45s"] {
            let parsed = parse_duration(d).expect(d);
            assert_eq!(format_duration(parsed), d);
        }
        assert_eq!(format_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(format_age(None), "?");
        assert_eq!(format_age(Some(Duration::from_secs(45))), "45s");
        assert_eq!(format_age(Some(Duration::from_secs(725))), "12m05s");
        assert_eq!(
            format_age(Some(Duration::from_secs(3 * 3600 + 420))),
            "3h07m"
        );
        assert_eq!(
            format_age(Some(Duration::from_secs(2 * 86_400 + 4 * 3600))),
            "2d04h"
        );
    }

    #[test]
    fn selects_by_manifest_and_youngest_object() {
        let both = ObjectSizes {
            log: Some(10),
            indexes: Some(5),
            manifest: None,
        };
        let hour = Duration::from_secs(3600);
        // Both old: both objects are orphans; the segment's age is the youngest.
        let old = ObjectAges {
            log: mins(120),
            indexes: mins(90),
            manifest: None,
        };
        let got = select(vec![listed(both, old)], hour);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].age, mins(90));
        assert_eq!(got[0].objects.len(), 2);
        assert!(got[0].objects[0].key.as_str().ends_with(".log"));
        assert_eq!(got[0].objects[0].age, mins(120));
        assert!(got[0].objects[1].key.as_str().ends_with(".indexes"));
        assert_eq!(
            got[0].objects[0].key.to_string(),
            format!("<prefix>/{MAIN}.log")
        );
        // An old .log with a fresh .indexes: a copy about to write its manifest.
        let fresh = ObjectAges {
            log: mins(120),
            indexes: mins(1),
            manifest: None,
        };
        assert!(select(vec![listed(both, fresh)], hour).is_empty());
        assert_eq!(select(vec![listed(both, fresh)], Duration::ZERO).len(), 1);
        // One unknown age: the segment's age is unknown, and it is listed.
        let unknown = ObjectAges {
            log: mins(120),
            indexes: None,
            manifest: None,
        };
        let got = select(vec![listed(both, unknown)], hour);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].age, None);
        // A lone .log or .indexes is an orphan too.
        let lone = ObjectSizes {
            log: None,
            indexes: Some(5),
            manifest: None,
        };
        let got = select(vec![listed(lone, old)], hour);
        assert_eq!(got[0].objects.len(), 1);
        assert_eq!(got[0].age, mins(90));
    }

    #[test]
    fn never_selects_a_segment_with_a_manifest() {
        let hour = Duration::from_secs(3600);
        let old = ObjectAges {
            log: mins(600),
            indexes: mins(600),
            manifest: mins(600),
        };
        for sizes in [
            ObjectSizes {
                log: Some(1),
                indexes: Some(1),
                manifest: Some(1),
            },
            ObjectSizes {
                log: Some(1),
                indexes: None,
                manifest: Some(1),
            },
            ObjectSizes {
                log: None,
                indexes: None,
                manifest: Some(1),
            },
        ] {
            assert!(
                select(vec![listed(sizes, old)], hour).is_empty(),
                "{sizes:?}"
            );
            assert!(select(vec![listed(sizes, ObjectAges::default())], Duration::ZERO).is_empty());
        }
    }
}
