//! Runs one measured case in its own process (this binary re-executed with the hidden
//! `case` subcommand) so each case's peak RSS and CPU are its own: the child prints its
//! [`Record`] as one JSON line on stdout; the parent reaps it with `wait4(2)` and adds the
//! child's peak RSS (`ru_maxrss`) and total CPU.

use std::io::Read;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::record::Record;

/// Resource usage of a finished child.
#[derive(Debug, Clone, Copy)]
pub struct Usage {
    /// Peak resident set size, bytes.
    pub peak_rss_bytes: u64,
    /// User + system CPU of the whole process, seconds.
    pub cpu_seconds: f64,
}

/// Runs `tsm-bench case --spec <spec_json>`; returns the child's record (if it printed
/// one) and its usage. A non-zero exit is an error (the child printed why on stderr).
pub fn run_case(spec_json: &str, what: &str) -> Result<(Option<Record>, Usage)> {
    let exe = std::env::current_exe().context("locating the tsm-bench binary")?;
    let mut child = Command::new(&exe)
        .arg("case")
        .arg("--spec")
        .arg(spec_json)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting {} for {what}", exe.display()))?;
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        stdout
            .read_to_string(&mut out)
            .with_context(|| format!("reading the output of {what}"))?;
    }
    let (status, usage) = wait4(child.id())?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    let record = match out.lines().rev().find(|l| !l.trim().is_empty()) {
        Some(line) => Some(
            serde_json::from_str(line)
                .with_context(|| format!("{what}: unexpected output {line:?}"))?,
        ),
        None => None,
    };
    Ok((record, usage))
}

/// `wait4(pid)`: exit status plus the child's resource usage. The `Child` handle is not
/// waited on afterwards (the pid is reaped here).
fn wait4(pid: u32) -> Result<(std::process::ExitStatus, Usage)> {
    use std::os::unix::process::ExitStatusExt;
    let pid = libc::pid_t::try_from(pid).context("child pid out of range")?;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `ru` are valid, exclusively borrowed out-pointers for the
        // duration of the call; `pid` is our own unreaped child.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err).context("wait4 on the case process");
        }
    }
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    Ok((
        std::process::ExitStatus::from_raw(status),
        Usage {
            // Linux reports ru_maxrss in KiB.
            peak_rss_bytes: u64::try_from(ru.ru_maxrss).unwrap_or(0) * 1024,
            cpu_seconds: secs(ru.ru_utime) + secs(ru.ru_stime),
        },
    ))
}

/// `sync(2)`: writes every dirty page to disk (between cases, not measured).
pub fn sync_filesystems() {
    // SAFETY: sync takes no arguments and cannot fail.
    unsafe { libc::sync() };
}

/// CPU seconds (user + sys, all threads) this process used so far.
pub fn self_cpu_seconds() -> f64 {
    // SAFETY: as in `wait4`: a zeroed plain C struct and a valid out-pointer.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, exclusively borrowed out-pointer.
    let r = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if r != 0 {
        return 0.0;
    }
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    secs(ru.ru_utime) + secs(ru.ru_stime)
}
