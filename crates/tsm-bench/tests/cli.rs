//! End-to-end: the `tsm-bench` binary on a small generated set, filesystem backend.
//! Correctness only (no timing is asserted).

use std::path::Path;
use std::process::Command;

fn bench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tsm-bench"))
}

fn generate(dir: &Path) {
    let st = bench()
        .args(["gen", "--size-mib", "1", "--out"])
        .arg(dir)
        .status()
        .expect("run gen");
    assert!(st.success());
}

fn spec(work: &Path, data: &Path, op: &str, mode: &str) -> String {
    serde_json::json!({
        "op": op,
        "backend": "filesystem",
        "work": work,
        "set_dir": data.join("compressible"),
        "data": "compressible",
        "mode": mode,
        "fetches": 3,
        "seed": 1,
    })
    .to_string()
}

/// `run` writes one result per measured case (every op, the selected modes) and
/// `report` renders the targets.
#[test]
fn run_and_report() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    generate(&data);
    let out = tmp.path().join("results.jsonl");
    let st = bench()
        .args([
            "run",
            "--backend",
            "filesystem",
            "--repeat",
            "1",
            "--fetches",
            "3",
        ])
        .args(["--modes", "plain,zstd+aes", "--sets", "compressible"])
        .arg("--data")
        .arg(&data)
        .arg("--out")
        .arg(&out)
        .arg("--work")
        .arg(tmp.path().join("work"))
        .status()
        .expect("run");
    assert!(st.success());
    let text = std::fs::read_to_string(&out).expect("results");
    let recs: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let ops: Vec<(String, String)> = recs
        .iter()
        .map(|r| {
            (
                r["op"].as_str().unwrap_or_default().to_string(),
                r["mode"].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect();
    for op in ["file-read", "zstd-1core", "unzstd-1core", "put", "get"] {
        assert!(ops.contains(&(op.into(), "-".into())), "{op} in {ops:?}");
    }
    for mode in ["plain", "zstd+aes"] {
        for op in [
            "copy",
            "fetch-1mib",
            "fetch-seq",
            "fetch-seq-cached",
            "fetch-stream",
        ] {
            assert!(
                ops.contains(&(op.into(), mode.into())),
                "{op} {mode} in {ops:?}"
            );
        }
    }
    assert_eq!(recs.len(), 5 + 2 * 5);
    for r in &recs {
        assert!(r["peak_rss_bytes"].as_u64().unwrap_or(0) > 0, "{r}");
        assert_eq!(r["harness"], "rust");
    }
    let report = bench()
        .args(["report", "--results"])
        .arg(&out)
        .output()
        .expect("report");
    assert!(report.status.success());
    let md = String::from_utf8_lossy(&report.stdout);
    assert!(md.contains("## Targets (issue 8)"), "{md}");
    assert!(md.contains("sequential fetch downloads"), "{md}");
}

/// A stored byte changed behind the engine's back makes the fetch case fail: the engine's
/// chunk digest refuses it (and were a wrong byte served, the harness compares every byte
/// with the original).
#[test]
fn fetch_detects_a_corrupted_object() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    generate(&data);
    let work = tmp.path().join("work");
    let st = bench()
        .args(["case", "--spec", &spec(&work, &data, "copy", "plain")])
        .stdout(std::process::Stdio::null())
        .status()
        .expect("copy");
    assert!(st.success());
    let log = find_log(&work.join("storage")).expect("stored .log object");
    let mut bytes = std::fs::read(&log).expect("read object");
    bytes[1000] ^= 0x40;
    std::fs::write(&log, bytes).expect("write object");
    let out = bench()
        .args([
            "case",
            "--spec",
            &spec(&work, &data, "fetch-stream", "plain"),
        ])
        .output()
        .expect("fetch");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("do not match the digest") || err.contains("differ"),
        "{err}"
    );
}

fn find_log(dir: &Path) -> Option<std::path::PathBuf> {
    for e in std::fs::read_dir(dir).ok()? {
        let p = e.ok()?.path();
        if p.is_dir() {
            if let Some(f) = find_log(&p) {
                return Some(f);
            }
        } else if p.extension().is_some_and(|x| x == "log") {
            return Some(p);
        }
    }
    None
}
