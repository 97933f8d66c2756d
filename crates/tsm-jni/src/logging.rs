//! Native `tracing` events to the broker's log. A `tracing_subscriber` layer formats each
//! event and puts it on a bounded queue (at most [`QUEUE_CAPACITY`] records; when full,
//! new records are dropped and counted, so logging never blocks or grows memory without
//! bound). A Java daemon thread (`io.tsm.kafka.NativeLog`) drains the queue with bounded
//! waits and hands each record to SLF4J under the logger `io.tsm.kafka.native.<target>`.
//! No JNI call is ever made from a tokio thread.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// Records held before new ones are dropped.
pub const QUEUE_CAPACITY: usize = 4096;
/// Separates records in a drained batch.
pub const RECORD_SEP: char = '\u{1e}';
/// Separates level, target and message in a record.
pub const FIELD_SEP: char = '\u{1f}';

struct Queue {
    tx: SyncSender<String>,
    rx: Mutex<Receiver<String>>,
}

static QUEUE: OnceLock<Queue> = OnceLock::new();
static DROPPED: AtomicU64 = AtomicU64::new(0);

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

/// Installs the forwarding subscriber for this library copy (first call wins); `max_level`
/// uses the numbers above (what the Java logger has enabled).
pub fn init(max_level: i32) {
    QUEUE.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE_CAPACITY);
        let filter = match max_level {
            i32::MIN..=0 => LevelFilter::OFF,
            1 => LevelFilter::ERROR,
            2 => LevelFilter::WARN,
            3 => LevelFilter::INFO,
            4 => LevelFilter::DEBUG,
            _ => LevelFilter::TRACE,
        };
        let subscriber = tracing_subscriber::registry().with(ForwardLayer.with_filter(filter));
        // Fails only when this library copy already has a global subscriber: keep it.
        let _ = tracing::subscriber::set_global_default(subscriber);
        Queue {
            tx,
            rx: Mutex::new(rx),
        }
    });
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

impl<S: Subscriber> Layer<S> for ForwardLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let Some(q) = QUEUE.get() else { return };
        let meta = event.metadata();
        let mut f = Fields::default();
        event.record(&mut f);
        let text: String = format!("{}{}", f.message, f.rest)
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
    let Some(q) = QUEUE.get() else {
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
