//! `tsm-bench report`: the results file (both harnesses' JSON lines) -> markdown on stdout:
//! the limits, every result with its ratio to its limit, and issue 8's targets with how
//! far each is.
//!
//! When a case was run more than once, the last line wins. Throughputs are MB/s
//! (10^6 bytes/s) of logical (original segment) bytes; CPU is seconds per GiB of logical
//! bytes; RSS is MiB.
//!
//! Limits (same backend, same data set): copy plain/aes -> raw PUT; copy zstd and
//! zstd+aes -> the smaller of 2 x single-core zstd level 3 (the machine has 2 cores) and
//! raw PUT x the compression ratio (the store only sees compressed bytes); fetches -> raw
//! GET.
//!
//! The JVM subjects (tsm-jni, java-baseline, the real Java plugin `aiven-<version>`) also get
//! a table of their own, side by side (`side_by_side.rs`); request cost, connections and
//! issue 18's targets have theirs (`request_cost.rs`).

mod request_cost;
mod side_by_side;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::record::Record;

/// Cores the copy target counts ("copy zstd+AES on 2 cores").
const TARGET_CORES: f64 = 2.0;
const MIB: f64 = 1024.0 * 1024.0;
const GIB: f64 = 1024.0 * MIB;

type Key = (String, String, String, String, Option<String>, String);

fn key(r: &Record) -> Key {
    (
        r.backend.clone(),
        r.data.clone(),
        r.subject.clone(),
        r.harness.clone(),
        r.mode.clone(),
        r.op.clone(),
    )
}

/// Latest record per (backend, data, subject, harness, mode, op).
struct Results {
    by_key: BTreeMap<Key, Record>,
}

impl Results {
    fn new(records: &[Record]) -> Self {
        let mut by_key = BTreeMap::new();
        for r in records {
            by_key.insert(key(r), r.clone());
        }
        Self { by_key }
    }

    fn limit(&self, backend: &str, data: &str, op: &str) -> Option<&Record> {
        // Limits come from the Rust harness (the JVM side may add its own; prefer ours).
        self.by_key
            .get(&(
                backend.into(),
                data.into(),
                "limit".into(),
                "rust".into(),
                None,
                op.into(),
            ))
            .or_else(|| {
                self.by_key.values().find(|r| {
                    r.subject == "limit" && r.backend == backend && r.data == data && r.op == op
                })
            })
    }

    fn find(
        &self,
        backend: &str,
        data: &str,
        subject: &str,
        mode: &str,
        op: &str,
    ) -> Option<&Record> {
        self.by_key.values().find(|r| {
            r.backend == backend
                && r.data == data
                && r.subject == subject
                && r.mode.as_deref() == Some(mode)
                && r.op == op
        })
    }

    /// The limit of `r` in MB/s and its name.
    fn limit_of(&self, r: &Record) -> Option<(f64, String)> {
        let lim = |op: &str| self.limit(&r.backend, &r.data, op).map(Record::mb_per_s);
        match r.op.as_str() {
            "copy" => {
                let put = lim("put")?;
                match r.mode.as_deref() {
                    Some("zstd") | Some("zstd+aes") => {
                        // The store only sees the compressed bytes: in logical bytes the
                        // PUT limit is the raw PUT rate x the compression ratio.
                        let ratio = extra_f64(r, "uploaded_bytes")
                            .filter(|u| *u > 0.0)
                            .map_or(1.0, |u| (r.bytes as f64 / u).max(1.0));
                        let put = put * ratio;
                        match lim("zstd-1core") {
                            Some(z) if TARGET_CORES * z < put => {
                                Some((TARGET_CORES * z, "2 x zstd-1core".into()))
                            }
                            _ if ratio > 1.01 => {
                                Some((put, format!("raw PUT x {ratio:.2} (compression)")))
                            }
                            _ => Some((put, "raw PUT".into())),
                        }
                    }
                    _ => Some((put, "raw PUT".into())),
                }
            }
            op if op.starts_with("fetch") => lim("get").map(|g| (g, "raw GET".into())),
            _ => None,
        }
    }
}

fn mib(b: u64) -> String {
    format!("{:.0}", b as f64 / MIB)
}

fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".into())
}

/// Downloaded bytes / stored bytes of what was delivered (1.0 = nothing downloaded twice
/// or in vain), from the fetch record's `stored_log_bytes`.
fn overfetch(r: &Record) -> Option<f64> {
    let d = r.downloaded_bytes? as f64;
    let stored = extra_f64(r, "stored_log_bytes")?;
    let original = extra_f64(r, "segment_bytes").unwrap_or(r.bytes as f64);
    let delivered_stored = r.bytes as f64 * stored / original;
    (delivered_stored > 0.0).then(|| d / delivered_stored)
}

fn extra_f64(r: &Record, k: &str) -> Option<f64> {
    r.extra.get(k).and_then(serde_json::Value::as_f64)
}

/// Renders `records` as markdown.
pub fn render(records: &[Record]) -> String {
    let res = Results::new(records);
    let mut out = String::new();
    let _ = writeln!(out, "# tsm benchmark results\n");
    if records.is_empty() {
        let _ = writeln!(out, "No results.");
        return out;
    }
    let sizes: std::collections::BTreeSet<u64> = res
        .by_key
        .values()
        .filter(|r| r.op == "copy" || r.op == "file-read")
        .map(|r| r.bytes)
        .collect();
    let _ = writeln!(
        out,
        "Segment .log size(s): {} MiB. MB/s = 10^6 bytes/s of original segment bytes; CPU = \
         CPU seconds per GiB; RSS = peak resident set of the process that ran the case; \
         ratio = result / its limit (same backend, same data, same run).\n",
        sizes.iter().map(|b| mib(*b)).collect::<Vec<_>>().join(", ")
    );

    // Limits.
    let _ = writeln!(out, "## Limits\n");
    let _ = writeln!(
        out,
        "| backend | data | file read MB/s | zstd-3 1 core MB/s (ratio) | unzstd 1 core MB/s | raw PUT MB/s | raw GET MB/s |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|");
    let mut pairs: Vec<(String, String)> = res
        .by_key
        .values()
        .map(|r| (r.backend.clone(), r.data.clone()))
        .collect();
    pairs.dedup();
    pairs.sort();
    pairs.dedup();
    for (b, d) in &pairs {
        let l = |op: &str| res.limit(b, d, op);
        let zstd = l("zstd-1core").map(|z| {
            let ratio = extra_f64(z, "compressed_bytes")
                .filter(|c| *c > 0.0)
                .map(|c| format!(" ({:.2}x)", z.bytes as f64 / c))
                .unwrap_or_default();
            format!("{:.0}{ratio}", z.mb_per_s())
        });
        let _ = writeln!(
            out,
            "| {b} | {d} | {} | {} | {} | {} | {} |",
            opt(l("file-read"), |r| format!("{:.0}", r.mb_per_s())),
            zstd.unwrap_or_else(|| "-".into()),
            opt(l("unzstd-1core"), |r| format!("{:.0}", r.mb_per_s())),
            opt(l("put"), |r| format!("{:.0}", r.mb_per_s())),
            opt(l("get"), |r| format!("{:.0}", r.mb_per_s())),
        );
    }

    // Every result.
    let _ = writeln!(out, "\n## Results\n");
    let _ = writeln!(
        out,
        "| backend | data | subject | mode | op | MB/s | ratio to limit | CPU s/GiB | peak RSS MiB | downloaded / delivered | notes |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---:|---|---:|---:|---:|---|");
    let op_order = |op: &str| {
        [
            "copy",
            "fetch-1mib",
            "fetch-seq",
            "fetch-seq-cached",
            "fetch-stream",
        ]
        .iter()
        .position(|o| *o == op)
        .unwrap_or(9)
    };
    let mode_order = |m: Option<&str>| {
        ["plain", "zstd", "aes", "zstd+aes"]
            .iter()
            .position(|o| Some(*o) == m)
            .unwrap_or(9)
    };
    let mut rows: Vec<&Record> = res
        .by_key
        .values()
        .filter(|r| r.subject != "limit")
        .collect();
    rows.sort_by_key(|r| {
        (
            r.backend.clone(),
            r.data.clone(),
            op_order(&r.op),
            mode_order(r.mode.as_deref()),
            r.subject.clone(),
        )
    });
    for r in rows {
        let ratio = res
            .limit_of(r)
            .filter(|(l, _)| *l > 0.0)
            .map(|(l, name)| format!("{:.2} of {name}", r.mb_per_s() / l))
            .unwrap_or_else(|| "-".into());
        let cpu = r
            .cpu_seconds
            .filter(|_| r.bytes > 0)
            .map(|c| format!("{:.2}", c / (r.bytes as f64 / GIB)));
        let dl = r
            .downloaded_bytes
            .filter(|_| r.bytes > 0)
            .map(|d| format!("{:.3}", d as f64 / r.bytes as f64));
        let mut notes = Vec::new();
        if let (Some(p50), Some(p99)) = (extra_f64(r, "ttfb_p50_ms"), extra_f64(r, "ttfb_p99_ms")) {
            notes.push(format!("TTFB p50 {p50:.1} ms, p99 {p99:.1} ms"));
        }
        if let Some(m) = extra_f64(r, "max_downloaded_per_fetch") {
            notes.push(format!("max {:.2} MiB downloaded per fetch", m / MIB));
        }
        if let Some(o) = overfetch(r) {
            notes.push(format!("downloaded {o:.3}x the stored bytes delivered"));
        }
        if r.op == "copy" {
            if let Some(up) = extra_f64(r, "uploaded_bytes").filter(|u| *u > 0.0) {
                notes.push(format!("stored {:.2}x smaller", r.bytes as f64 / up));
            }
        }
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {:.1} | {ratio} | {} | {} | {} | {} |",
            r.backend,
            r.data,
            r.subject,
            r.mode.as_deref().unwrap_or("-"),
            r.op,
            r.mb_per_s(),
            cpu.unwrap_or_else(|| "-".into()),
            opt(r.peak_rss_bytes, mib),
            dl.unwrap_or_else(|| "-".into()),
            notes.join("; "),
        );
    }

    out.push_str(&side_by_side::render(&res));
    out.push_str(&request_cost::render(&res));

    let _ = writeln!(out, "\n## Targets (issue 8)\n");
    let _ = writeln!(out, "| target | case | value | threshold | status |");
    let _ = writeln!(out, "|---|---|---:|---:|---|");
    let mut ts = targets(&res);
    let order = |n: &str| TARGET_ORDER.iter().position(|t| *t == n).unwrap_or(99);
    ts.sort_by_key(|t| order(t.name));
    for t in ts {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            t.name, t.case, t.value, t.threshold, t.status
        );
    }
    out
}

const TARGET_ORDER: [&str; 8] = [
    "copy zstd+AES >= 80% of 2 x 1-core zstd",
    "plain copy >= 90% of raw PUT",
    "peak RSS of a 1 GiB copy <= 128 MiB",
    "sequential fetch downloads <= 1.01x delivered",
    "a 1 MiB read downloads <= 1 chunk + 1 MiB",
    "JNI path >= 95% of the core's copy throughput",
    ">= 2x the Java baseline's copy throughput",
    "<= 1/4 of the Java baseline's peak memory",
];

struct Target {
    name: &'static str,
    case: String,
    value: String,
    threshold: String,
    status: String,
}

/// `value` against `threshold` (at least / at most): "met (x% margin)" or "MISSED by x%".
fn judge(value: f64, threshold: f64, at_least: bool) -> String {
    if threshold <= 0.0 {
        return "n/a".into();
    }
    let rel = value / threshold;
    let met = if at_least { rel >= 1.0 } else { rel <= 1.0 };
    if met {
        format!("met ({:.0}% margin)", (rel - 1.0).abs() * 100.0)
    } else if at_least {
        format!("**MISSED**: {:.0}% short", (1.0 - rel) * 100.0)
    } else {
        format!("**MISSED**: {:.0}% over", (rel - 1.0) * 100.0)
    }
}

fn targets(res: &Results) -> Vec<Target> {
    let mut out = Vec::new();
    let recs: Vec<&Record> = res.by_key.values().collect();
    let case = |r: &Record| {
        format!(
            "{} {} {} {} {}",
            r.backend,
            r.data,
            r.subject,
            r.mode.as_deref().unwrap_or("-"),
            r.op
        )
    };
    for r in recs
        .iter()
        .filter(|r| r.op == "copy" && r.subject != "limit")
    {
        let lim = |op: &str| res.limit(&r.backend, &r.data, op).map(Record::mb_per_s);
        if r.mode.as_deref() == Some("zstd+aes") {
            if let Some(z) = lim("zstd-1core").filter(|z| *z > 0.0) {
                let v = r.mb_per_s() / (TARGET_CORES * z);
                // When the store is slower than 2 cores of zstd, the target cannot be met.
                let ratio = extra_f64(r, "uploaded_bytes")
                    .filter(|u| *u > 0.0)
                    .map_or(1.0, |u| (r.bytes as f64 / u).max(1.0));
                let cap = lim("put")
                    .map(|p| p * ratio)
                    .filter(|p| *p < TARGET_CORES * z)
                    .map(|p| format!(" (raw PUT caps it at {:.2})", p / (TARGET_CORES * z)))
                    .unwrap_or_default();
                out.push(Target {
                    name: "copy zstd+AES >= 80% of 2 x 1-core zstd",
                    case: case(r),
                    value: format!("{v:.2}{cap}"),
                    threshold: ">= 0.80".into(),
                    status: judge(v, 0.8, true),
                });
            }
        }
        if r.mode.as_deref() == Some("plain") {
            if let Some(p) = lim("put").filter(|p| *p > 0.0) {
                let v = r.mb_per_s() / p;
                out.push(Target {
                    name: "plain copy >= 90% of raw PUT",
                    case: case(r),
                    value: format!("{:.2}", v),
                    threshold: ">= 0.90".into(),
                    status: judge(v, 0.9, true),
                });
            }
        }
        if let Some(rss) = r.peak_rss_bytes {
            let gib_note = if r.bytes >= 1 << 30 {
                ""
            } else {
                " (segment < 1 GiB)"
            };
            out.push(Target {
                name: "peak RSS of a 1 GiB copy <= 128 MiB",
                case: format!("{}{gib_note}", case(r)),
                value: format!("{} MiB", mib(rss)),
                threshold: "<= 128 MiB".into(),
                status: judge(rss as f64, 128.0 * MIB, false),
            });
        }
    }
    for r in recs
        .iter()
        .filter(|r| matches!(r.op.as_str(), "fetch-seq-cached" | "fetch-stream"))
    {
        if let Some(v) = overfetch(r) {
            let raw = r.downloaded_bytes.unwrap_or(0) as f64 / r.bytes.max(1) as f64;
            out.push(Target {
                name: "sequential fetch downloads <= 1.01x delivered",
                case: case(r),
                value: format!("{v:.3} of stored ({raw:.3} of original)"),
                threshold: "<= 1.01".into(),
                status: judge(v, 1.01, false),
            });
        }
    }
    for r in recs.iter().filter(|r| r.op == "fetch-1mib") {
        if let Some(m) = extra_f64(r, "max_downloaded_per_fetch") {
            let chunk = extra_f64(r, "chunk_size").unwrap_or(4.0 * MIB);
            let fetches = extra_f64(r, "fetches").filter(|f| *f > 0.0).unwrap_or(1.0);
            let avg = r.downloaded_bytes.unwrap_or(0) as f64 / fetches;
            out.push(Target {
                name: "a 1 MiB read downloads <= 1 chunk + 1 MiB",
                case: case(r),
                value: format!("{:.2} MiB max, {:.2} MiB mean", m / MIB, avg / MIB),
                threshold: format!("<= {:.0} MiB", (chunk + MIB) / MIB),
                status: judge(m, chunk + MIB, false),
            });
        }
    }
    // JVM side by side.
    for r in recs
        .iter()
        .filter(|r| r.subject == "tsm-jni" && r.op == "copy")
    {
        let mode = r.mode.as_deref().unwrap_or("-");
        if let Some(core) = res.find(&r.backend, &r.data, "tsm-core", mode, "copy") {
            let v = r.mb_per_s() / core.mb_per_s().max(f64::MIN_POSITIVE);
            out.push(Target {
                name: "JNI path >= 95% of the core's copy throughput",
                case: case(r),
                value: format!("{v:.2}"),
                threshold: ">= 0.95".into(),
                status: judge(v, 0.95, true),
            });
        }
        if let Some(java) = res.find(&r.backend, &r.data, "java-baseline", mode, "copy") {
            let v = r.mb_per_s() / java.mb_per_s().max(f64::MIN_POSITIVE);
            out.push(Target {
                name: ">= 2x the Java baseline's copy throughput",
                case: case(r),
                value: format!("{v:.2}x"),
                threshold: ">= 2.00x".into(),
                status: judge(v, 2.0, true),
            });
            if let (Some(a), Some(b)) = (r.peak_rss_bytes, java.peak_rss_bytes.filter(|b| *b > 0)) {
                let v = a as f64 / b as f64;
                out.push(Target {
                    name: "<= 1/4 of the Java baseline's peak memory",
                    case: case(r),
                    value: format!("{v:.2} ({} / {} MiB)", mib(a), mib(b)),
                    threshold: "<= 0.25".into(),
                    status: judge(v, 0.25, false),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(subject: &str, mode: Option<&str>, op: &str, bytes: u64, seconds: f64) -> Record {
        Record {
            harness: "rust".into(),
            subject: subject.into(),
            backend: "filesystem".into(),
            data: "compressible".into(),
            mode: mode.map(str::to_string),
            op: op.into(),
            bytes,
            seconds,
            ..Record::default()
        }
    }

    #[test]
    fn ratios_and_targets() {
        let gib = 1u64 << 30;
        let mut copy = rec("tsm-core", Some("zstd+aes"), "copy", gib, 4.0);
        copy.peak_rss_bytes = Some(100 << 20);
        let records = vec![
            rec("limit", None, "zstd-1core", gib, 5.0),
            rec("limit", None, "put", gib, 1.0),
            copy,
            rec("tsm-core", Some("plain"), "copy", gib, 1.25),
        ];
        let md = render(&records);
        // zstd+aes: 2 x zstd-1core = gib/2.5 s; copy gib/4 s -> 0.62 of it.
        assert!(
            md.contains("| 0.62 | >= 0.80 | **MISSED**: 22% short |"),
            "{md}"
        );
        // plain: 1/1.25 = 0.80 of raw PUT.
        assert!(
            md.contains("| 0.80 | >= 0.90 | **MISSED**: 11% short |"),
            "{md}"
        );
        assert!(
            md.contains("| 100 MiB | <= 128 MiB | met (22% margin) |"),
            "{md}"
        );
    }

    #[test]
    fn jvm_subjects_side_by_side() {
        let jvm = |subject: &str, seconds: f64, kafka: &str| {
            let mut r = rec(subject, Some("zstd"), "copy", 100_000_000, seconds);
            r.harness = "jvm".into();
            r.peak_rss_bytes = Some(64 << 20);
            r.extra
                .insert("kafka_version".into(), serde_json::json!(kafka));
            r
        };
        let records = vec![
            jvm("tsm-jni", 1.0, "4.4.0"),
            jvm("java-baseline", 2.0, "4.4.0"),
            jvm("aiven-1.1.1", 4.0, "4.2.2"),
        ];
        let md = render(&records);
        assert!(md.contains("## JVM subjects side by side"), "{md}");
        assert!(
            md.contains("| filesystem | compressible | zstd | copy | 100.0 | 50.0 | 25.0 | 2.00x | 4.00x | 64 / 64 / 64 | 4.4.0 / 4.2.2 |"),
            "{md}"
        );
        // Without another JVM subject there is nothing to set beside tsm.
        let md = render(&[jvm("tsm-jni", 1.0, "4.4.0")]);
        assert!(!md.contains("side by side"), "{md}");
    }

    #[test]
    fn last_record_wins() {
        let records = vec![
            rec("limit", None, "put", 1_000_000, 2.0),
            rec("limit", None, "put", 1_000_000, 1.0),
        ];
        let md = render(&records);
        assert!(md.contains("| - | - | 1 | - |"), "{md}");
    }
}
