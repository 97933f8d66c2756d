//! Request cost, connections and the issue-18 targets (bench/README.md, "Cloud profile and
//! request cost"): per measured case of every subject, the store's own counts
//! (`extra.store`, from MinIO's Prometheus counters, [`crate::probe`]) or, without them
//! (filesystem), tsm's (`extra.tsm_get_requests`, `downloaded_bytes`); the connections the
//! case moved data on (`extra.connections`, cloud profile) and the aggregate bandwidth the
//! proxy allows for them (per-connection rate x mean active connections); the ratio to the
//! Java plugin of the same case.
//!
//! Input: the latest record per case (the parent's [`Results`]); output: markdown sections,
//! empty when no record carries any of these fields.

use std::fmt::Write as _;

use serde_json::Value;

use super::{MIB, Results, extra_f64};
use crate::record::Record;

/// Issue 18's targets (stated in the report; they are goals, not assertions).
const CLOUD_SEQ_VS_AIVEN: f64 = 4.0;
const CLOUD_SEQ_MBPS: f64 = 500.0;
const CLOUD_SEQ_DOWNLOAD: f64 = 1.05;
const LOCAL_VS_AIVEN: f64 = 2.0;
/// The cloud profile's added round trip (bench/run.sh --cloud: latency 20 ms on responses).
const CLOUD_RTT_MS: f64 = 20.0;

fn aiven_subject(res: &Results) -> Option<String> {
    res.by_key
        .values()
        .filter(|r| r.subject.starts_with("aiven-"))
        .map(|r| r.subject.clone())
        .max()
}

fn store(r: &Record) -> Option<&serde_json::Map<String, Value>> {
    r.extra.get("store").and_then(Value::as_object)
}

fn store_requests(r: &Record, api: &str) -> Option<u64> {
    let s = store(r)?;
    let req = s.get("requests")?.as_object()?;
    Some(req.get(api).and_then(Value::as_u64).unwrap_or(0))
}

fn store_other_requests(r: &Record) -> Option<u64> {
    let req = store(r)?.get("requests")?.as_object()?;
    Some(
        req.iter()
            .filter(|(k, _)| k.as_str() != "GetObject")
            .filter_map(|(_, v)| v.as_u64())
            .sum(),
    )
}

fn conn(r: &Record, k: &str) -> Option<f64> {
    r.extra.get("connections")?.get(k)?.as_f64()
}

/// Bytes per second one connection may move (the proxy's bandwidth toxic), if recorded.
fn rate_per_conn(r: &Record) -> Option<f64> {
    conn(r, "rate_per_connection_bytes_per_s").filter(|v| *v > 0.0)
}

/// The proxy's aggregate limit for this case, MB/s: rate x mean active connections.
fn proxy_limit_mbps(r: &Record) -> Option<f64> {
    let mean = conn(r, "mean_active").filter(|m| *m > 0.0)?;
    Some(rate_per_conn(r)? * mean / 1e6)
}

/// Bytes the store sent (fetch) or received (copy, put) per logical byte.
fn store_bytes_ratio(r: &Record) -> Option<f64> {
    let s = store(r)?;
    let k = if r.op == "copy" || r.op == "put" {
        "received_bytes"
    } else {
        "sent_bytes"
    };
    let b = s.get(k)?.as_f64()?;
    (r.bytes > 0).then(|| b / r.bytes as f64)
}

/// GETs per MiB delivered: the store's count, else tsm's own.
fn gets(r: &Record) -> Option<(u64, &'static str)> {
    store_requests(r, "GetObject")
        .map(|g| (g, "store"))
        .or_else(|| {
            r.extra
                .get("tsm_get_requests")
                .and_then(Value::as_u64)
                .map(|g| (g, "tsm"))
        })
}

fn interesting(r: &Record) -> bool {
    (r.op.starts_with("fetch") || r.op == "copy" || r.op == "get" || r.op == "put")
        && (store(r).is_some()
            || r.extra.contains_key("connections")
            || r.extra.contains_key("tsm_get_requests"))
}

fn f1(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.1}"))
}

fn f3(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.3}"))
}

/// Renders the sections (with headings), or "".
pub(super) fn render(res: &Results) -> String {
    let aiven = aiven_subject(res);
    let mut rows: Vec<&Record> = res.by_key.values().filter(|r| interesting(r)).collect();
    if rows.is_empty() {
        return String::new();
    }
    let ops = [
        "put",
        "get",
        "copy",
        "fetch-1mib",
        "fetch-seq",
        "fetch-seq-cached",
        "fetch-stream",
    ];
    let modes = ["plain", "zstd", "aes", "zstd+aes"];
    rows.sort_by_key(|r| {
        (
            r.backend.clone(),
            r.data.clone(),
            ops.iter().position(|o| *o == r.op).unwrap_or(9),
            modes
                .iter()
                .position(|m| Some(*m) == r.mode.as_deref())
                .unwrap_or(9),
            r.subject.clone(),
        )
    });
    let vs_aiven = |r: &Record| -> Option<f64> {
        let a = aiven.as_deref()?;
        if r.subject == a || r.subject == "limit" {
            return None;
        }
        let other = res.find(&r.backend, &r.data, a, r.mode.as_deref()?, &r.op)?;
        let v = other.mb_per_s();
        (v > 0.0).then(|| r.mb_per_s() / v)
    };
    let mut out = String::new();
    let _ = writeln!(out, "\n## Request cost and connections\n");
    let _ = writeln!(
        out,
        "Per measured case (measured calls only: no warm-up). GETs and store bytes: MinIO's \
         own counters (`minio_api_requests_*`) read before and after, the same for every \
         subject; without a store (filesystem) tsm's own counts (`backend.fetch.requests`, \
         downloaded bytes; the Java plugins have none: `-`). Connections (cloud profile): \
         mean / max connections to the proxy that moved data in a 50 ms sample (`ss`); \
         proxy limit = per-connection bandwidth x mean active connections. Store bytes / \
         logical: sent by the store per byte delivered (fetch), received per logical byte \
         (copy); `(tsm)`: tsm's downloaded bytes per byte delivered, where no store counts.\n"
    );
    let _ = writeln!(
        out,
        "| backend | data | subject | mode | op | MB/s | vs aiven | conns mean (max) | proxy limit MB/s | of proxy limit | GETs | GETs / MiB | other requests | store bytes / logical | tsm GETs | ttfb p50 ms |"
    );
    let _ = writeln!(
        out,
        "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for r in &rows {
        let lim = proxy_limit_mbps(r);
        let g = gets(r);
        let conns = match (conn(r, "mean_active"), conn(r, "max_active")) {
            (Some(m), Some(x)) => format!("{m:.1} ({x:.0})"),
            _ => "-".into(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.backend,
            r.data,
            r.subject,
            r.mode.as_deref().unwrap_or("-"),
            r.op,
            r.mb_per_s(),
            vs_aiven(r).map_or_else(|| "-".into(), |v| format!("{v:.2}x")),
            conns,
            f1(lim),
            lim.filter(|l| *l > 0.0)
                .map_or_else(|| "-".into(), |l| format!("{:.2}", r.mb_per_s() / l)),
            g.map_or_else(
                || "-".into(),
                |(n, src)| if src == "tsm" {
                    format!("{n} (tsm)")
                } else {
                    n.to_string()
                }
            ),
            f3(g.map(|(n, _)| n as f64 / (r.bytes as f64 / MIB))),
            store_other_requests(r).map_or_else(|| "-".into(), |n| n.to_string()),
            store_bytes_ratio(r).map_or_else(
                || {
                    // No store counters (filesystem): tsm's own downloaded bytes, marked.
                    r.downloaded_bytes
                        .filter(|_| r.bytes > 0 && r.op.starts_with("fetch"))
                        .map_or_else(
                            || "-".into(),
                            |d| format!("{:.3} (tsm)", d as f64 / r.bytes as f64),
                        )
                },
                |v| format!("{v:.3}"),
            ),
            r.extra
                .get("tsm_get_requests")
                .and_then(Value::as_u64)
                .map_or_else(|| "-".into(), |n| n.to_string()),
            f1(extra_f64(r, "ttfb_p50_ms")),
        );
    }
    out.push_str(&targets(res, aiven.as_deref()));
    out
}

/// Issue 18's targets, each with its value and how far it is.
fn targets(res: &Results, aiven: Option<&str>) -> String {
    let mut lines = Vec::new();
    let status = |ok: bool, value: f64, want: f64, higher_better: bool| {
        if ok {
            "met".to_string()
        } else if higher_better {
            format!("MISSED by {:.0}%", (1.0 - value / want) * 100.0)
        } else {
            format!("MISSED by {:.0}%", (value / want - 1.0) * 100.0)
        }
    };
    let find_a = |r: &Record| {
        aiven.and_then(|a| res.find(&r.backend, &r.data, a, r.mode.as_deref()?, &r.op))
    };
    for r in res.by_key.values() {
        let cloud = r.backend.ends_with("-cloud");
        let tsm = r.subject == "tsm-jni" || r.subject == "tsm-core";
        if !tsm {
            continue;
        }
        let case = format!(
            "{} {} {} {} {}",
            r.backend,
            r.data,
            r.subject,
            r.mode.as_deref().unwrap_or("-"),
            r.op
        );
        if cloud && r.op == "fetch-seq" {
            let v = r.mb_per_s();
            lines.push((
                "cloud catch-up >= 500 MB/s",
                case.clone(),
                format!("{v:.1}"),
                status(v >= CLOUD_SEQ_MBPS, v, CLOUD_SEQ_MBPS, true),
            ));
            if let Some(a) = find_a(r).filter(|a| a.mb_per_s() > 0.0) {
                let x = v / a.mb_per_s();
                lines.push((
                    "cloud catch-up >= 4x the Java plugin",
                    case.clone(),
                    format!("{x:.2}x"),
                    status(x >= CLOUD_SEQ_VS_AIVEN, x, CLOUD_SEQ_VS_AIVEN, true),
                ));
            }
            if let Some(d) = store_bytes_ratio(r) {
                lines.push((
                    "cloud catch-up downloads <= 1.05x delivered",
                    case.clone(),
                    format!("{d:.3}"),
                    status(d <= CLOUD_SEQ_DOWNLOAD, d, CLOUD_SEQ_DOWNLOAD, false),
                ));
            }
        }
        if cloud
            && r.op == "fetch-1mib"
            && let Some(p50) = extra_f64(r, "ttfb_p50_ms")
        {
            // One round trip + one chunk at the aggregate rate of the connections it opened.
            let chunk = extra_f64(r, "chunk_size").unwrap_or(4.0 * MIB);
            let mean = conn(r, "mean_active").filter(|m| *m > 0.0).unwrap_or(1.0);
            if let Some(rate) = rate_per_conn(r) {
                let want = CLOUD_RTT_MS + chunk / (rate * mean) * 1e3;
                lines.push((
                    "cloud 1 MiB read: ttfb p50 <= 1 RTT + 1 chunk at the aggregate rate",
                    case.clone(),
                    format!("{p50:.1} ms"),
                    format!(
                        "{} (bound {want:.1} ms)",
                        status(p50 <= want, p50, want, false)
                    ),
                ));
            }
            if let Some(a) = find_a(r).and_then(|a| extra_f64(a, "ttfb_p50_ms")) {
                lines.push((
                    "cloud 1 MiB read: ttfb p50 below the Java plugin's",
                    case.clone(),
                    format!("{p50:.1} vs {a:.1} ms"),
                    status(p50 < a, p50, a, false),
                ));
            }
        }
        if !cloud
            && r.subject == "tsm-jni"
            && (r.op == "copy" || r.op.starts_with("fetch"))
            && let Some(a) = find_a(r).filter(|a| a.mb_per_s() > 0.0)
        {
            let x = r.mb_per_s() / a.mb_per_s();
            let warmed = a
                .extra
                .get("jit_warmup")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            lines.push((
                "local: >= 2x a warmed Java plugin",
                format!("{case}{}", if warmed { "" } else { " (aiven NOT warmed)" }),
                format!("{x:.2}x"),
                status(x >= LOCAL_VS_AIVEN, x, LOCAL_VS_AIVEN, true),
            ));
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let _ = writeln!(out, "\n## Targets (issue 18)\n");
    let _ = writeln!(out, "| target | case | value | status |");
    let _ = writeln!(out, "|---|---|---:|---|");
    for (t, c, v, s) in lines {
        let _ = writeln!(out, "| {t} | {c} | {v} | {s} |");
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rec(subject: &str, backend: &str, op: &str, seconds: f64, extra: Value) -> Record {
        Record {
            harness: "jvm".into(),
            subject: subject.into(),
            backend: backend.into(),
            data: "compressible".into(),
            mode: Some("plain".into()),
            op: op.into(),
            bytes: 100 * 1024 * 1024,
            seconds,
            extra: extra.as_object().cloned().unwrap_or_default(),
            ..Record::default()
        }
    }

    #[test]
    fn cloud_rows_limits_and_targets() {
        let store = json!({"requests": {"GetObject": 50, "ListObjectsV2": 1}, "sent_bytes": 110 * 1024 * 1024, "received_bytes": 0});
        let conns =
            json!({"mean_active": 2.0, "max_active": 3, "rate_per_connection_bytes_per_s": 80e6});
        let tsm = rec(
            "tsm-jni",
            "s3-cloud",
            "fetch-seq",
            1.0,
            json!({"store": store, "connections": conns}),
        );
        let aiven = rec(
            "aiven-1.1.1",
            "s3-cloud",
            "fetch-seq",
            2.0,
            json!({"store": store}),
        );
        let res = Results::new(&[tsm, aiven]);
        let md = render(&res);
        // 104.9 MB/s, 2 connections x 80 MB/s = 160 MB/s limit.
        assert!(md.contains("| s3-cloud | compressible | tsm-jni | plain | fetch-seq | 104.9 | 2.00x | 2.0 (3) | 160.0 | 0.66 | 50 | 0.500 | 1 | 1.100 |"), "{md}");
        assert!(md.contains("cloud catch-up >= 4x the Java plugin | s3-cloud compressible tsm-jni plain fetch-seq | 2.00x | MISSED by 50%"), "{md}");
        assert!(md.contains("downloads <= 1.05x delivered | s3-cloud compressible tsm-jni plain fetch-seq | 1.100 | MISSED by 5%"), "{md}");
    }

    #[test]
    fn filesystem_rows_use_tsm_counts_marked() {
        let mut r = rec(
            "tsm-jni",
            "filesystem",
            "fetch-seq",
            1.0,
            json!({"tsm_get_requests": 25}),
        );
        r.downloaded_bytes = Some(125 * 1024 * 1024);
        let md = render(&Results::new(&[r]));
        assert!(
            md.contains("| 25 (tsm) | 0.250 | - | 1.250 (tsm) | 25 |"),
            "{md}"
        );
    }

    #[test]
    fn nothing_to_say_without_the_fields() {
        let res = Results::new(&[rec("tsm-jni", "s3", "fetch-seq", 1.0, json!({}))]);
        assert_eq!(render(&res), "");
    }

    #[test]
    fn local_target_says_when_aiven_was_not_warmed() {
        let tsm = rec(
            "tsm-jni",
            "filesystem",
            "copy",
            1.0,
            json!({"tsm_get_requests": 0}),
        );
        let aiven = rec(
            "aiven-1.1.1",
            "filesystem",
            "copy",
            3.0,
            json!({"jit_warmup": false}),
        );
        let md = render(&Results::new(&[tsm, aiven]));
        assert!(md.contains("(aiven NOT warmed) | 3.00x | met"), "{md}");
    }
}
