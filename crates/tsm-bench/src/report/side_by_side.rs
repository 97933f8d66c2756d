//! The JVM harness's subjects side by side (issue 16): for each (backend, data, mode, op)
//! the tsm plugin jar (`tsm-jni`), the Java baseline (`java-baseline`) and the real Java
//! plugin (`aiven-<version>`, bench/jvm's `--plugin aiven`), with the throughput ratios
//! tsm / baseline and tsm / aiven and each subject's peak RSS and Kafka classes
//! (`extra.kafka_version`: the Java plugin runs on Kafka 4.2.2, the others on what
//! bench/jvm/run.sh was told).
//!
//! Input: the latest record per case (the parent's [`Results`]); output: a markdown section,
//! empty when there is no `tsm-jni` record with another JVM subject beside it.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::{Results, mib};
use crate::record::Record;

const TSM: &str = "tsm-jni";
const BASELINE: &str = "java-baseline";

/// The Java plugin's subject name in these records (`aiven-1.1.1`), the newest by name.
fn aiven_subject(res: &Results) -> Option<String> {
    res.by_key
        .values()
        .filter(|r| r.harness == "jvm" && r.subject.starts_with("aiven-"))
        .map(|r| r.subject.clone())
        .max()
}

fn mbps(r: Option<&Record>) -> String {
    r.map_or_else(|| "-".into(), |r| format!("{:.1}", r.mb_per_s()))
}

/// `a / b` of the throughputs, as `1.23x`.
fn ratio(a: &Record, b: Option<&Record>) -> String {
    b.map(Record::mb_per_s)
        .filter(|v| *v > 0.0)
        .map_or_else(|| "-".into(), |v| format!("{:.2}x", a.mb_per_s() / v))
}

fn rss(r: Option<&Record>) -> String {
    r.and_then(|r| r.peak_rss_bytes)
        .map_or_else(|| "-".into(), mib)
}

fn kafka(r: Option<&Record>) -> String {
    r.and_then(|r| r.extra.get("kafka_version"))
        .and_then(serde_json::Value::as_str)
        .unwrap_or("-")
        .to_string()
}

/// Renders the section (with its heading), or "" when there is nothing to compare.
pub(super) fn render(res: &Results) -> String {
    let aiven = aiven_subject(res);
    let find = |r: &Record, subject: &str| {
        res.find(
            &r.backend,
            &r.data,
            subject,
            r.mode.as_deref().unwrap_or("-"),
            &r.op,
        )
    };
    let tsm: Vec<&Record> = res
        .by_key
        .values()
        .filter(|r| r.harness == "jvm" && r.subject == TSM)
        .filter(|r| {
            find(r, BASELINE).is_some() || aiven.as_deref().is_some_and(|a| find(r, a).is_some())
        })
        .collect();
    if tsm.is_empty() {
        return String::new();
    }
    let a = aiven.as_deref().unwrap_or("aiven");
    let mut out = String::new();
    let _ = writeln!(out, "\n## JVM subjects side by side\n");
    let _ = writeln!(
        out,
        "Same cases, same configuration map (the Java plugin's with full backend class names), \
         one JVM per case. Ratios are tsm's throughput over the other's (> 1: tsm faster). \
         Kafka: the classes each ran on (the Java plugin needs <= 4.2).\n"
    );
    let _ = writeln!(
        out,
        "| backend | data | mode | op | {TSM} MB/s | {BASELINE} MB/s | {a} MB/s | tsm / {BASELINE} | tsm / {a} | peak RSS MiB ({TSM} / {BASELINE} / {a}) | Kafka ({TSM} / {a}) |"
    );
    let _ = writeln!(out, "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|");
    let ops = [
        "copy",
        "fetch-1mib",
        "fetch-seq",
        "fetch-seq-cached",
        "fetch-stream",
    ];
    let modes = ["plain", "zstd", "aes", "zstd+aes"];
    let order = |r: &Record| {
        (
            r.backend.clone(),
            r.data.clone(),
            ops.iter().position(|o| *o == r.op).unwrap_or(9),
            modes
                .iter()
                .position(|m| Some(*m) == r.mode.as_deref())
                .unwrap_or(9),
        )
    };
    let mut rows = tsm;
    rows.sort_by_key(|r| order(r));
    let mut seen = BTreeSet::new();
    for r in rows {
        if !seen.insert(order(r)) {
            continue; // a tsm-jni line of the Rust harness would be a duplicate
        }
        let base = find(r, BASELINE);
        let av = aiven.as_deref().and_then(|s| find(r, s));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.1} | {} | {} | {} | {} | {} / {} / {} | {} / {} |",
            r.backend,
            r.data,
            r.mode.as_deref().unwrap_or("-"),
            r.op,
            r.mb_per_s(),
            mbps(base),
            mbps(av),
            ratio(r, base),
            ratio(r, av),
            rss(Some(r)),
            rss(base),
            rss(av),
            kafka(Some(r)),
            kafka(av),
        );
    }
    out
}
