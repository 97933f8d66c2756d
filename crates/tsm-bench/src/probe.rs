//! Request cost and connection use of one measured case, seen from outside the plugin
//! (bench/README.md, "Cloud profile and request cost"): the same numbers for every subject,
//! whatever the plugin itself counts.
//!
//! - **Store counters**: when `TSM_BENCH_STORE_METRICS_URL` is set (bench/run.sh sets it for
//!   s3 runs to MinIO's Prometheus endpoint `/minio/metrics/v3/api/requests`, served without
//!   auth with `MINIO_PROMETHEUS_AUTH_TYPE=public`), the counters
//!   `minio_api_requests_total{name=<S3 API>}`, `minio_api_requests_traffic_sent_bytes` and
//!   `..._received_bytes` are read right before the first measured call and right after the
//!   last; the differences go to `extra.store` (`requests` per API, `sent_bytes`,
//!   `received_bytes`). Nothing else may use that MinIO meanwhile (each run has its own).
//! - **Connections**: when `TSM_BENCH_CONN_PORT` and `TSM_BENCH_CONN_SAMPLER` are set (the
//!   cloud profile: the Toxiproxy listener and bench/cloud/conn-sampler.sh), the sampler runs
//!   during the same window and prints "ACTIVE ESTABLISHED" per sample; `extra.connections`
//!   gets the mean of ACTIVE over the samples where at least one connection moved data
//!   (`mean_active`), its max, the max ESTABLISHED and the sample counts, and the proxy's
//!   per-connection rate from `TSM_BENCH_CONN_RATE_BPS` (bytes/s) for the report's limit.
//! - **CPU**: when `TSM_BENCH_CPU_PIDS` is set (`name=pid,...`: bench/run.sh names MinIO
//!   and, in the cloud profile, Toxiproxy), the CPU time of those processes, of this one
//!   (`bench`) and of the whole machine over the same window, from `/proc/<pid>/stat`
//!   (utime + stime) and `/proc/stat`, both in the kernel's clock ticks; `extra.cpu` gets each
//!   as cores busy on average (`<name>_cores`, `machine_busy_cores`) and the core count, so
//!   a case that ran out of cores, and who used them, shows in its record.
//! - **Label**: `TSM_BENCH_BACKEND_LABEL` (e.g. `s3-cloud`) replaces the record's `backend`,
//!   so a cloud-profile run does not overwrite the plain s3 one in the report.
//!
//! Unset variables: nothing is measured and nothing is added. A set variable that does not
//! work (store unreachable, sampler missing) fails the case: a silent gap would look like a
//! free request.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::record::Record;

/// Env: URL of the store's Prometheus metrics (MinIO v3 `/minio/metrics/v3/api/requests`).
pub const STORE_METRICS_ENV: &str = "TSM_BENCH_STORE_METRICS_URL";
/// Env: local port whose client connections are sampled (the cloud proxy's listener).
pub const CONN_PORT_ENV: &str = "TSM_BENCH_CONN_PORT";
/// Env: the sampler command (bench/cloud/conn-sampler.sh).
pub const CONN_SAMPLER_ENV: &str = "TSM_BENCH_CONN_SAMPLER";
/// Env: bytes per second the proxy allows one connection (recorded for the report).
pub const CONN_RATE_ENV: &str = "TSM_BENCH_CONN_RATE_BPS";
/// Env: processes whose CPU time is measured over the window (`name=pid,...`).
pub const CPU_PIDS_ENV: &str = "TSM_BENCH_CPU_PIDS";
/// Env: backend label written into the records instead of the backend's name.
pub const BACKEND_LABEL_ENV: &str = "TSM_BENCH_BACKEND_LABEL";

/// The store's request counters at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoreCounters {
    /// `minio_api_requests_total` per S3 API name (`GetObject`, `PutObject`, ...).
    pub requests: BTreeMap<String, u64>,
    /// `minio_api_requests_traffic_sent_bytes`: bytes MinIO sent (response bodies).
    pub sent_bytes: u64,
    /// `minio_api_requests_traffic_received_bytes`: bytes MinIO received (request bodies).
    pub received_bytes: u64,
}

impl StoreCounters {
    /// Parses MinIO's Prometheus text (v3 `/api/requests`); unknown lines are ignored.
    /// Values may be printed as floats (`8.0000738e+07`); exact below 2^53.
    pub fn parse(text: &str) -> Result<Self> {
        let mut c = StoreCounters::default();
        for line in text.lines() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let Some((series, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let name = series.split('{').next().unwrap_or(series);
            let number = || -> Result<u64> {
                let v: f64 = value
                    .parse()
                    .with_context(|| format!("store metrics: {series} has value {value:?}"))?;
                Ok(v.round() as u64)
            };
            match name {
                "minio_api_requests_total" => {
                    let api = label(series, "name").with_context(|| {
                        format!("store metrics: {series} has no name=\"...\" label")
                    })?;
                    *c.requests.entry(api.to_string()).or_default() += number()?;
                }
                "minio_api_requests_traffic_sent_bytes" => c.sent_bytes += number()?,
                "minio_api_requests_traffic_received_bytes" => c.received_bytes += number()?,
                _ => {}
            }
        }
        Ok(c)
    }

    /// `self - before` (counters only grow; a restart in between is an error).
    pub fn since(&self, before: &StoreCounters) -> Result<Value> {
        let mut req = serde_json::Map::new();
        for (api, &n) in &self.requests {
            let b = before.requests.get(api).copied().unwrap_or(0);
            if n < b {
                bail!("store counter {api} went down ({b} -> {n}): did the store restart?");
            }
            if n > b {
                req.insert(api.clone(), (n - b).into());
            }
        }
        let sent = self.sent_bytes.checked_sub(before.sent_bytes);
        let received = self.received_bytes.checked_sub(before.received_bytes);
        let (Some(sent), Some(received)) = (sent, received) else {
            bail!("store traffic counters went down: did the store restart?");
        };
        Ok(json!({
            "requests": req,
            "sent_bytes": sent,
            "received_bytes": received,
            "source": "minio_api_requests_* (/minio/metrics/v3/api/requests)",
        }))
    }

    /// GET of `url` (plain `http://host:port/path`, HTTP/1.0), parsed.
    pub fn fetch(url: &str) -> Result<Self> {
        let rest = url
            .strip_prefix("http://")
            .with_context(|| format!("{STORE_METRICS_ENV}={url}: only http:// URLs"))?;
        let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let path = if path.is_empty() { "/" } else { path };
        let mut s = TcpStream::connect(host)
            .with_context(|| format!("connecting to {host} for the store metrics ({url})"))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(s, "GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n")
            .with_context(|| format!("requesting {url}"))?;
        let mut body = String::new();
        s.read_to_string(&mut body)
            .with_context(|| format!("reading {url}"))?;
        let status = body.lines().next().unwrap_or("");
        if !status.contains(" 200") {
            bail!(
                "store metrics {url}: {status:?} (MinIO needs MINIO_PROMETHEUS_AUTH_TYPE=public)"
            );
        }
        let text = body.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
        Self::parse(text)
    }
}

/// Value of label `key` in `name{k="v",...}`.
fn label<'a>(series: &'a str, key: &str) -> Option<&'a str> {
    let inner = series.split_once('{')?.1.strip_suffix('}')?;
    inner.split(',').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k.trim() == key).then(|| v.trim().trim_matches('"'))
    })
}

/// Aggregate of the sampler's lines.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConnStats {
    /// Samples read.
    pub samples: u64,
    /// Samples with at least one active connection.
    pub samples_active: u64,
    /// Sum of ACTIVE over those samples.
    pub active_sum: u64,
    /// Largest ACTIVE.
    pub max_active: u64,
    /// Largest ESTABLISHED.
    pub max_established: u64,
}

impl ConnStats {
    /// Adds one "ACTIVE ESTABLISHED" line; other lines are an error naming the line.
    pub fn add_line(&mut self, line: &str) -> Result<()> {
        let mut it = line.split_whitespace().map(str::parse::<u64>);
        let (Some(Ok(active)), Some(Ok(established)), None) = (it.next(), it.next(), it.next())
        else {
            bail!("connection sampler printed {line:?}, expected \"ACTIVE ESTABLISHED\"");
        };
        self.samples += 1;
        if active > 0 {
            self.samples_active += 1;
            self.active_sum += active;
        }
        self.max_active = self.max_active.max(active);
        self.max_established = self.max_established.max(established);
        Ok(())
    }

    /// Mean ACTIVE over the samples with any (0 when none).
    pub fn mean_active(&self) -> f64 {
        if self.samples_active == 0 {
            0.0
        } else {
            self.active_sum as f64 / self.samples_active as f64
        }
    }

    fn to_json(&self, port: u16) -> Value {
        let rate = std::env::var(CONN_RATE_ENV)
            .ok()
            .and_then(|v| v.parse::<f64>().ok());
        json!({
            "rate_per_connection_bytes_per_s": rate,
            "port": port,
            "mean_active": self.mean_active(),
            "max_active": self.max_active,
            "max_established": self.max_established,
            "samples": self.samples,
            "samples_active": self.samples_active,
            "how": "ss -tin dport = :port every 50 ms; active = bytes_received or bytes_acked changed since the previous sample; mean over samples with any active",
        })
    }
}

/// One case's probe, started right before its first measured call.
pub struct Probe {
    store: Option<(String, StoreCounters)>,
    sampler: Option<Sampler>,
    /// The watched processes and their CPU times at the start.
    cpu: Option<(Vec<(String, String)>, CpuTimes)>,
}

/// CPU clock ticks at one moment: the machine's (all CPUs, busy and total) and each
/// watched process's (utime + stime), from `/proc`.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuTimes {
    cpus: u64,
    busy: u64,
    total: u64,
    procs: Vec<(String, u64)>,
}

impl CpuTimes {
    /// Reads `/proc/stat` and `/proc/<pid>/stat` of each `(name, pid)` (`self` for this
    /// process).
    ///
    /// # Errors
    /// A file that cannot be read or parsed, naming it (a process that exited).
    pub fn read(pids: &[(String, String)]) -> Result<Self> {
        let stat = std::fs::read_to_string("/proc/stat").context("reading /proc/stat")?;
        let (cpus, busy, total) = parse_proc_stat(&stat)?;
        let mut procs = Vec::new();
        for (name, pid) in pids {
            let path = format!("/proc/{pid}/stat");
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {path} ({name}: {CPU_PIDS_ENV})"))?;
            procs.push((
                name.clone(),
                parse_pid_ticks(&text).with_context(|| path.clone())?,
            ));
        }
        Ok(Self {
            cpus,
            busy,
            total,
            procs,
        })
    }

    /// `extra.cpu` of the window from `before` to `self`.
    pub fn since(&self, before: &CpuTimes) -> Value {
        let per_cpu =
            (self.total.saturating_sub(before.total) as f64 / self.cpus.max(1) as f64).max(1.0);
        let mut out = serde_json::Map::new();
        out.insert("cpus".into(), self.cpus.into());
        let busy = self.busy.saturating_sub(before.busy) as f64 / per_cpu;
        out.insert("machine_busy_cores".into(), round3(busy).into());
        for ((name, now), (_, then)) in self.procs.iter().zip(&before.procs) {
            let cores = now.saturating_sub(*then) as f64 / per_cpu;
            out.insert(format!("{name}_cores"), round3(cores).into());
        }
        Value::Object(out)
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// `/proc/stat`: (CPUs, busy ticks, total ticks) of the aggregate `cpu` line (busy: all
/// but idle and iowait).
fn parse_proc_stat(text: &str) -> Result<(u64, u64, u64)> {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    let fields: Vec<u64> = first
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse::<u64>())
        .collect::<Result<_, _>>()
        .with_context(|| format!("/proc/stat: first line {first:?}"))?;
    if !first.starts_with("cpu ") || fields.len() < 5 {
        bail!("/proc/stat: first line {first:?} is not the aggregate cpu line");
    }
    // user nice system idle iowait irq softirq steal (guest time is inside user).
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields[3] + fields[4];
    let cpus = text
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count() as u64;
    Ok((cpus, total - idle, total))
}

/// `/proc/<pid>/stat`: utime + stime (fields 14 and 15; the command name in parentheses
/// may hold spaces, so fields are counted after its closing parenthesis).
fn parse_pid_ticks(text: &str) -> Result<u64> {
    let after = text
        .rfind(')')
        .map(|i| &text[i + 1..])
        .context("no ')' after the command name")?;
    let f: Vec<&str> = after.split_whitespace().collect();
    // after ')': state(3) ppid(4) ... utime(14) stime(15) -> indexes 11 and 12 here.
    let tick = |i: usize| -> Result<u64> {
        f.get(i)
            .context("too few fields")?
            .parse::<u64>()
            .context("not a number")
    };
    Ok(tick(11)? + tick(12)?)
}

/// `TSM_BENCH_CPU_PIDS` as `(name, pid)` pairs, `self` appended as `bench`.
fn cpu_pids(v: &str) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, pid) = part
            .split_once('=')
            .with_context(|| format!("{CPU_PIDS_ENV}: {part:?} is not name=pid"))?;
        if pid.parse::<u32>().is_err() || name.is_empty() {
            bail!("{CPU_PIDS_ENV}: {part:?} is not name=pid");
        }
        out.push((name.to_string(), pid.to_string()));
    }
    out.push(("bench".to_string(), "self".to_string()));
    Ok(out)
}

struct Sampler {
    port: u16,
    child: Child,
    reader: JoinHandle<()>,
    stats: Arc<Mutex<(ConnStats, Option<String>)>>,
}

impl Probe {
    /// Starts what the environment asks for (see the module docs).
    pub fn start() -> Result<Self> {
        let store = match std::env::var(STORE_METRICS_ENV) {
            Ok(url) if !url.is_empty() => {
                let c = StoreCounters::fetch(&url)?;
                Some((url, c))
            }
            _ => None,
        };
        let sampler = match std::env::var(CONN_PORT_ENV) {
            Ok(p) if !p.is_empty() => {
                let port: u16 = p
                    .parse()
                    .with_context(|| format!("{CONN_PORT_ENV}={p:?} is not a port"))?;
                let cmd = std::env::var(CONN_SAMPLER_ENV).with_context(|| {
                    format!("{CONN_PORT_ENV} is set but {CONN_SAMPLER_ENV} (the sampler) is not")
                })?;
                Some(Sampler::start(&cmd, port)?)
            }
            _ => None,
        };
        let cpu = match std::env::var(CPU_PIDS_ENV) {
            Ok(v) if !v.is_empty() => {
                let pids = cpu_pids(&v)?;
                Some(CpuTimes::read(&pids).map(|t| (pids, t))?)
            }
            _ => None,
        };
        Ok(Self {
            store,
            sampler,
            cpu,
        })
    }

    /// Stops the sampler, reads the counters again and adds `extra.store` /
    /// `extra.connections` / `extra.cpu` to `rec`.
    pub fn finish(self, rec: &mut Record) -> Result<()> {
        if let Some((pids, before)) = &self.cpu {
            let after = CpuTimes::read(pids)?;
            rec.extra.insert("cpu".into(), after.since(before));
        }
        if let Some(s) = self.sampler {
            let port = s.port;
            let stats = s.stop()?;
            rec.extra.insert("connections".into(), stats.to_json(port));
        }
        if let Some((url, before)) = self.store {
            let after = StoreCounters::fetch(&url)?;
            rec.extra.insert("store".into(), after.since(&before)?);
        }
        Ok(())
    }
}

impl Sampler {
    fn start(cmd: &str, port: u16) -> Result<Self> {
        use std::os::unix::process::CommandExt as _;
        let mut child = Command::new(cmd)
            // Its own process group (shell loop | awk), so stop() can end all of it.
            .process_group(0)
            .arg(port.to_string())
            .arg("0.05")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting the connection sampler {cmd}"))?;
        let out = child
            .stdout
            .take()
            .context("the connection sampler has no stdout")?;
        let stats = Arc::new(Mutex::new((ConnStats::default(), None)));
        let st = stats.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                let mut g = st.lock().unwrap_or_else(|e| e.into_inner());
                if g.1.is_none()
                    && let Err(e) = g.0.add_line(&line)
                {
                    g.1 = Some(format!("{e:#}"));
                }
            }
        });
        Ok(Self {
            port,
            child,
            reader,
            stats,
        })
    }

    fn stop(mut self) -> Result<ConnStats> {
        // A shell loop piped into awk: killing only the shell would leave awk holding the
        // pipe, so the sampler's own process group (made at spawn) gets the signal.
        let pgid = self.child.id() as libc::pid_t;
        // SAFETY: kill(2) with a negative pid signals that process group; no memory involved.
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        let _ = self.child.wait();
        let _ = self.reader.join();
        let g = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = &g.1 {
            bail!("{e}");
        }
        Ok(g.0.clone())
    }
}

/// The backend label for records: `TSM_BENCH_BACKEND_LABEL` or `name`.
pub fn backend_label(name: &str) -> String {
    match std::env::var(BACKEND_LABEL_ENV) {
        Ok(l) if !l.is_empty() => l,
        _ => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# HELP x\n\
minio_api_requests_incoming_total{server=\"127.0.0.1:9980\",type=\"s3\"} 3\n\
minio_api_requests_total{name=\"GetObject\",server=\"127.0.0.1:9980\",type=\"s3\"} 3\n\
minio_api_requests_total{name=\"PutObject\",server=\"127.0.0.1:9980\",type=\"s3\"} 2\n\
minio_api_requests_traffic_received_bytes{server=\"127.0.0.1:9980\",type=\"s3\"} 4e+07\n\
minio_api_requests_traffic_sent_bytes{server=\"127.0.0.1:9980\",type=\"s3\"} 8.0000738e+07\n";

    #[test]
    fn parses_minio_v3_requests() {
        let c = StoreCounters::parse(TEXT).unwrap();
        assert_eq!(c.requests.get("GetObject"), Some(&3));
        assert_eq!(c.requests.get("PutObject"), Some(&2));
        assert_eq!(c.sent_bytes, 80_000_738);
        assert_eq!(c.received_bytes, 40_000_000);
    }

    #[test]
    fn differences_and_restart() {
        let before = StoreCounters::parse(TEXT).unwrap();
        let mut after = before.clone();
        after.requests.insert("GetObject".into(), 10);
        after.sent_bytes += 5;
        let d = after.since(&before).unwrap();
        assert_eq!(d["requests"]["GetObject"], 7);
        assert!(d["requests"].get("PutObject").is_none());
        assert_eq!(d["sent_bytes"], 5);
        let err = before.since(&after).unwrap_err().to_string();
        assert!(err.contains("GetObject went down"), "{err}");
    }

    #[test]
    fn bad_value_names_the_series() {
        let err = StoreCounters::parse("minio_api_requests_total{name=\"GetObject\"} x\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("GetObject"), "{err}");
    }

    #[test]
    fn cpu_times_from_proc() {
        let stat = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\ncpu1 50 0 25 400 25 0 0 0 0 0\nintr 1\n";
        assert_eq!(parse_proc_stat(stat).unwrap(), (2, 150, 1000));
        assert!(parse_proc_stat("intr 1\n").is_err());
        let pid = "4242 (tool (x) y) S 1 2 3 4 5 6 7 8 9 10 31 12 13 14\n";
        assert_eq!(parse_pid_ticks(pid).unwrap(), 31 + 12);
        assert!(parse_pid_ticks("4242 (x) S 1").is_err());
        let pids = cpu_pids("minio=12, toxiproxy=34").unwrap();
        assert_eq!(pids.len(), 3);
        assert_eq!(pids[2], ("bench".to_string(), "self".to_string()));
        assert!(cpu_pids("minio").is_err());
        assert!(cpu_pids("minio=abc").is_err());
        let before = CpuTimes {
            cpus: 2,
            busy: 0,
            total: 0,
            procs: vec![("minio".into(), 0)],
        };
        let after = CpuTimes {
            cpus: 2,
            busy: 150,
            total: 200,
            procs: vec![("minio".into(), 50)],
        };
        let v = after.since(&before);
        assert_eq!(v["machine_busy_cores"], 1.5);
        assert_eq!(v["minio_cores"], 0.5);
        // This process, for real.
        let now = CpuTimes::read(&cpu_pids("").unwrap()).unwrap();
        assert!(now.cpus >= 1 && now.total > 0);
    }

    #[test]
    fn connection_stats() {
        let mut s = ConnStats::default();
        for l in ["0 0", "2 4", "4 4", "0 4"] {
            s.add_line(l).unwrap();
        }
        assert_eq!(s.samples, 4);
        assert_eq!(s.samples_active, 2);
        assert_eq!(s.mean_active(), 3.0);
        assert_eq!(s.max_established, 4);
        assert!(s.add_line("nope").is_err());
        assert!(s.add_line("1 2 3").is_err());
    }
}
