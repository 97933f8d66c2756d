//! Native `tracing` events to the broker's log. A `tracing_subscriber` layer formats each
//! event, redacts it ([`redact`]) and puts it on a bounded queue (at most
//! [`QUEUE_CAPACITY`] records; when full, new records are dropped and counted, so logging
//! never blocks or grows memory without bound). A Java daemon thread
//! (`io.tsm.kafka.NativeLog`) drains the queue with bounded waits and hands each record to
//! SLF4J under the logger `io.tsm.kafka.native.<target>`. No JNI call is ever made from a
//! tokio thread.
//!
//! **Levels, per target.** One global subscriber per library copy, installed at load
//! ([`init`]), behind a `reload` filter that each `configure` replaces ([`configure`]):
//! tsm's own crates ([`OWN_TARGETS`]) at `tsm.log.level`, else at the level SLF4J gives
//! `io.tsm.kafka.native` (read by Java at load and at every configure); every other
//! target (the AWS, Google and Azure SDKs, hyper, h2, rustls, reqwest, tower, ...) at
//! [`STACK_LEVEL`] unless `tsm.log.filter` names it. With several plugin instances in one
//! library copy the last `configure` wins (the filter is process-wide); secrets of every
//! instance stay registered.
//!
//! **Never logged.** [`redact`] runs on every record at every level: the secret values
//! of every configured instance ([`register_secrets`], from tsm-core's list of secret
//! keys) are replaced verbatim (also percent-encoded) by `****`, and so are header and
//! query values of credentials (`authorization`, `x-amz-security-token`,
//! `X-Amz-Signature`, `X-Amz-Credential`, SAS `sig`, ...), `Bearer`/`SharedKey` schemes,
//! AWS SigV4 `Authorization` values, STS XML credentials and PEM private key blocks.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{LazyLock, Mutex, OnceLock, RwLock};
use std::time::Duration;

use regex::Regex;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::{EnvFilter, Registry, reload};
use tsm_core::config::LogConfig;
use zeroize::Zeroizing;

/// Records held before new ones are dropped.
pub const QUEUE_CAPACITY: usize = 4096;
/// Separates records in a drained batch.
pub const RECORD_SEP: char = '\u{1e}';
/// Separates level, target and message in a record.
pub const FIELD_SEP: char = '\u{1f}';
/// What a redacted value becomes.
pub const MASK: &str = "****";

/// tsm's own crates: the targets `tsm.log.level` (or the broker's level) applies to.
pub const OWN_TARGETS: &[&str] = &[
    "tsm_core",
    "tsm_codec",
    "tsm_crypto",
    "tsm_backends",
    "tsm_backend_s3",
    "tsm_backend_gcs",
    "tsm_backend_azure",
    "tsm_jni",
];

/// The level of every other target (SDKs, HTTP and TLS stack) unless `tsm.log.filter`
/// asks for more.
pub const STACK_LEVEL: LevelFilter = LevelFilter::WARN;

/// Shortest registered secret: shorter values would mask ordinary text.
const MIN_SECRET_LEN: usize = 4;

struct State {
    tx: SyncSender<String>,
    rx: Mutex<Receiver<String>>,
    filter: reload::Handle<EnvFilter, Registry>,
}

static STATE: OnceLock<State> = OnceLock::new();
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// The level Java last reported for `io.tsm.kafka.native` (numbers as [`level_number`]).
static BROKER_LEVEL: AtomicI32 = AtomicI32::new(3);
/// Secret values of every configured instance, longest first.
static SECRETS: RwLock<Vec<Zeroizing<String>>> = RwLock::new(Vec::new());

/// Level numbers shared with Java: 1 error, 2 warn, 3 info, 4 debug, 5 trace.
fn level_number(l: &Level) -> u8 {
    match *l {
        Level::ERROR => 1,
        Level::WARN => 2,
        Level::INFO => 3,
        Level::DEBUG => 4,
        Level::TRACE => 5,
    }
}

fn level_filter(n: i32) -> LevelFilter {
    match n {
        i32::MIN..=0 => LevelFilter::OFF,
        1 => LevelFilter::ERROR,
        2 => LevelFilter::WARN,
        3 => LevelFilter::INFO,
        4 => LevelFilter::DEBUG,
        _ => LevelFilter::TRACE,
    }
}

/// The filter directives for tsm's crates at `own` and `extra` (`tsm.log.filter`) on top:
/// `warn,tsm_core=<own>,...[,<extra>]`.
pub fn directives(own: LevelFilter, extra: Option<&str>) -> String {
    let mut d = STACK_LEVEL.to_string().to_ascii_lowercase();
    for t in OWN_TARGETS {
        let _ = write!(d, ",{t}={}", own.to_string().to_ascii_lowercase());
    }
    if let Some(x) = extra.map(str::trim).filter(|x| !x.is_empty()) {
        let _ = write!(d, ",{x}");
    }
    d
}

/// Records the level SLF4J gives `io.tsm.kafka.native` (numbers as above; Java calls
/// this at load and before every configure) and, on the first call in this library copy,
/// installs the forwarding subscriber with [`directives`] at that level.
pub fn init(max_level: i32) {
    BROKER_LEVEL.store(max_level, Ordering::Relaxed);
    state();
}

fn state() -> &'static State {
    STATE.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE_CAPACITY);
        let own = level_filter(BROKER_LEVEL.load(Ordering::Relaxed));
        let (filter, handle) = reload::Layer::new(env_filter(&directives(own, None)));
        let subscriber = tracing_subscriber::registry()
            .with(filter)
            .with(ForwardLayer);
        // Fails only when this library copy already has a global subscriber: keep it.
        let _ = tracing::subscriber::set_global_default(subscriber);
        State {
            tx,
            rx: Mutex::new(rx),
            filter: handle,
        }
    })
}

fn env_filter(directives: &str) -> EnvFilter {
    EnvFilter::builder().parse_lossy(directives)
}

/// Applies an instance's `tsm.log.*` settings to the whole library copy (last configure
/// wins) and returns the directives now in force. `log` was validated by tsm-core.
pub fn configure(log: &LogConfig) -> String {
    let own = log
        .level
        .unwrap_or_else(|| level_filter(BROKER_LEVEL.load(Ordering::Relaxed)));
    let d = directives(own, log.filter.as_deref());
    // Reloading rebuilds the callsite interest cache: new levels apply at once.
    let _ = state().filter.reload(env_filter(&d));
    d
}

/// Adds `values` to the secrets [`redact`] masks (each also percent-encoded); values
/// shorter than 4 characters are ignored.
pub fn register_secrets(values: impl IntoIterator<Item = String>) {
    let mut secrets = SECRETS.write().unwrap_or_else(|p| p.into_inner());
    for v in values {
        for form in [percent_encoded(&v), v] {
            if form.len() >= MIN_SECRET_LEN && !secrets.iter().any(|s| **s == form) {
                secrets.push(Zeroizing::new(form));
            }
        }
    }
    // Longest first, so a secret containing another is masked whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
}

/// `v` with every byte outside RFC 3986's unreserved set as `%XX`.
fn percent_encoded(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Names whose values are credentials, in headers (`name: value`, `"name": "value"`,
/// `"name": HeaderValue { .. "value" }`), query strings and JSON (`name=value`).
const SECRET_NAMES: &str = r"proxy-authorization|authorization|x-amz-security-token|x-amz-signature|x-amz-credential|x-goog-signature|x-goog-credential|x-ms-copy-source-authorization|x-api-key|set-cookie|cookie|sig|signature|credential|accountkey|sharedaccesssignature|access_token|refresh_token|id_token|client_secret|private_key|secret_access_key|aws_secret_access_key|aws_session_token|session_token|security_token|secretaccesskey|sessiontoken|securitytoken|token|password";

/// The patterns [`redact`] replaces, with their replacements.
static PATTERNS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    let p = |re: &str, with: &'static str| {
        // The patterns are constants: a failure is a bug caught by the unit tests.
        Regex::new(re).map(|r| (r, with)).ok()
    };
    [
        // PEM private keys (also JSON-escaped and truncated ones).
        p(
            r"(?s)-----BEGIN ([A-Z0-9 ]*PRIVATE KEY)-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)",
            "-----BEGIN $1-----****-----END $1-----",
        ),
        // SigV4 Authorization values: everything after the algorithm up to a quote or line end.
        p(r"(?i)(AWS4-HMAC-SHA256|GOOG4-RSA-SHA256|GOOG4-HMAC-SHA256)\s+[^\x22\n]+", "$1 ****"),
        // Authorization schemes followed by a credential.
        p(r"(?i)\b(Bearer|Basic|SharedKey|SharedKeyLite|SharedAccessSignature)\s+[^\s\x22',;]+", "$1 ****"),
        // STS / IMDS XML and JSON credential bodies.
        p(
            r"(?i)<(SessionToken|SecretAccessKey|Token|Signature)>[^<]*</",
            "<$1>****</",
        ),
        // name ... "value": the first quoted string shortly after the name.
        p(
            &format!(r#"(?i)(\b(?:{SECRET_NAMES})(?:\\?["'])?\s*[:=][^"\n]{{0,40}}?)(\\?")[^"]*""#),
            "${1}${2}****${2}",
        ),
        // name=value / name: value, unquoted (query strings, connection strings, fields).
        p(
            &format!(r#"(?i)(\b(?:{SECRET_NAMES})\s*[:=]\s*)[^\s"',;&)}}\]\\]+"#),
            "${1}****",
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
});

/// `text` with every registered secret and every credential-shaped value (see the module
/// docs) replaced by `****`.
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    {
        let secrets = SECRETS.read().unwrap_or_else(|p| p.into_inner());
        for s in secrets.iter() {
            if out.contains(s.as_str()) {
                out = Cow::Owned(out.replace(s.as_str(), MASK));
            }
        }
    }
    for (re, with) in PATTERNS.iter() {
        if let Cow::Owned(changed) = re.replace_all(&out, *with) {
            out = Cow::Owned(changed);
        }
    }
    out
}

struct ForwardLayer;

#[derive(Default)]
struct Fields {
    message: String,
    rest: String,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.rest, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.rest, " {}={value}", field.name());
        }
    }
}

/// An event's message and fields as one line of text, before redaction (public for the
/// redaction tests, which compare it with what [`redact`] leaves).
pub fn format_event(event: &Event<'_>) -> String {
    let mut f = Fields::default();
    event.record(&mut f);
    format!("{}{}", f.message, f.rest)
}

impl<S: Subscriber> Layer<S> for ForwardLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let Some(q) = STATE.get() else { return };
        let meta = event.metadata();
        let raw = format_event(event);
        let text: String = redact(&raw)
            .chars()
            .map(|c| {
                if c == RECORD_SEP || c == FIELD_SEP {
                    ' '
                } else {
                    c
                }
            })
            .collect();
        let record = format!(
            "{}{FIELD_SEP}{}{FIELD_SEP}{text}",
            level_number(meta.level()),
            meta.target()
        );
        match q.tx.try_send(record) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                DROPPED.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Waits at most `timeout_ms` for records; returns up to `max` of them joined by
/// [`RECORD_SEP`] (empty when none), plus a warning record when some were dropped.
pub fn drain(timeout_ms: i64, max: usize) -> String {
    let Some(q) = STATE.get() else {
        std::thread::sleep(Duration::from_millis(timeout_ms.clamp(0, 1000) as u64));
        return String::new();
    };
    let rx = q.rx.lock().unwrap_or_else(|p| p.into_inner());
    let mut out = String::new();
    let wait = Duration::from_millis(timeout_ms.clamp(1, 60_000) as u64);
    let first = match rx.recv_timeout(wait) {
        Ok(r) => r,
        Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => String::new(),
    };
    if !first.is_empty() {
        out.push_str(&first);
        for _ in 1..max.max(1) {
            match rx.try_recv() {
                Ok(r) => {
                    out.push(RECORD_SEP);
                    out.push_str(&r);
                }
                Err(_) => break,
            }
        }
    }
    let dropped = DROPPED.swap(0, Ordering::Relaxed);
    if dropped > 0 {
        if !out.is_empty() {
            out.push(RECORD_SEP);
        }
        let _ = write!(
            out,
            "2{FIELD_SEP}tsm_jni::logging{FIELD_SEP}{dropped} native log records dropped (queue of {QUEUE_CAPACITY} full)"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_compile() {
        assert_eq!(PATTERNS.len(), 6);
    }

    #[test]
    fn credentials_are_redacted_in_every_shape() {
        register_secrets(["unit-test-secret/+=".to_string(), "abc".to_string()]);
        let cases = [
            (
                r#"headers: {"authorization": "AWS4-HMAC-SHA256 Credential=AKIDUNIT/20260101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=0123abcd"}"#,
                &["AKIDUNIT", "0123abcd"][..],
            ),
            (
                r#"{"x-amz-security-token": HeaderValue { _private: H0("FQoGZXIvYXdzEXAMPLETOKEN") }}"#,
                &["FQoGZXIvYXdzEXAMPLETOKEN"][..],
            ),
            (
                "GET /b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDQ%2F2026&X-Amz-Signature=feedbeef&x=1",
                &["AKIDQ", "feedbeef"][..],
            ),
            (
                "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sp=racwdl&sig=SASSIG%2Babc%3D&se=2030",
                &["SASSIG"][..],
            ),
            (
                "authorization: Bearer ya29.tokenvalue",
                &["ya29.tokenvalue"][..],
            ),
            (
                "Authorization=SharedKey acct:c2lnbmF0dXJl",
                &["c2lnbmF0dXJl"][..],
            ),
            (
                "<Credentials><SessionToken>STSTOKEN</SessionToken><SecretAccessKey>STSSECRET</SecretAccessKey></Credentials>",
                &["STSTOKEN", "STSSECRET"][..],
            ),
            (
                r#"{\"private_key\": \"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----\n\"}"#,
                &["MIIEvQIBADANBg"][..],
            ),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA truncated",
                &["MIIEpAIBAAKCAQEA"][..],
            ),
            (
                "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNO==;BlobEndpoint=x",
                &["Eby8vdM02xNO"][..],
            ),
            (
                r#"{"Code" : "Success", "AccessKeyId" : "ASIAUNIT", "SecretAccessKey" : "IMDSSECRET", "Token" : "IMDSTOKEN", "Expiration" : "2030-01-01T00:00:00Z"}"#,
                &["IMDSSECRET", "IMDSTOKEN"][..],
            ),
            (
                r#"{"accessKeyId":"ASIAECS","secretAccessKey":"ECSSECRET","sessionToken":"ECSTOKEN"}"#,
                &["ECSSECRET", "ECSTOKEN"][..],
            ),
            (
                "value unit-test-secret/+= and unit-test-secret%2F%2B%3D",
                &["unit-test-secret"][..],
            ),
        ];
        for (text, leaked) in cases {
            let out = redact(text);
            for l in leaked {
                assert!(!out.contains(l), "{l} left in {out}");
            }
            assert!(out.contains(MASK), "{out}");
        }
        // Ordinary text is untouched; short "secrets" are ignored.
        let plain = "uploaded 3 parts of abc-123 to s3://bucket/key in 12 ms";
        assert_eq!(redact(plain), plain);
    }

    #[test]
    fn directives_put_the_stack_at_warn_and_tsm_at_its_level() {
        let d = directives(LevelFilter::DEBUG, Some("aws_smithy_runtime=trace"));
        assert!(d.starts_with("warn,tsm_core=debug,"), "{d}");
        assert!(
            d.ends_with(",tsm_jni=debug,aws_smithy_runtime=trace"),
            "{d}"
        );
        assert!(EnvFilter::builder().parse(&d).is_ok());
    }
}
