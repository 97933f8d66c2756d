//! Shared by the log redaction tests: a capturing subscriber that keeps records as the
//! plugin's layer formats them before redaction (the control phase), and a pump that
//! drains the plugin's queue as Java's `NativeLog` does.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tracing_subscriber::layer::{Context, Layer};
use tsm_jni::logging::{self, FIELD_SEP, RECORD_SEP};

/// Every event as `(target, level, text before redaction)`.
pub(crate) type Records = Arc<Mutex<Vec<(String, tracing::Level, String)>>>;

/// Keeps every event, formatted as the plugin's layer formats it, unredacted.
#[derive(Clone, Default)]
pub(crate) struct Capture(pub Records);

impl<S: tracing::Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let m = event.metadata();
        if let Ok(mut v) = self.0.lock() {
            v.push((
                m.target().to_string(),
                *m.level(),
                logging::format_event(event),
            ));
        }
    }
}

/// Runs `work` while a thread drains the native queue (as Java's pump does); returns every
/// record as `(level, target, text)`.
pub(crate) fn collect_while(work: impl FnOnce()) -> Vec<(String, String, String)> {
    let done = Arc::new(AtomicBool::new(false));
    let pump = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut out = Vec::new();
            loop {
                let finished = done.load(Ordering::Acquire);
                let batch = logging::drain(20, 4096);
                for r in batch.split(RECORD_SEP).filter(|r| !r.is_empty()) {
                    let mut f = r.splitn(3, FIELD_SEP);
                    if let (Some(l), Some(t), Some(m)) = (f.next(), f.next(), f.next()) {
                        out.push((l.to_string(), t.to_string(), m.to_string()));
                    }
                }
                if finished && batch.is_empty() {
                    return out;
                }
            }
        })
    };
    work();
    done.store(true, Ordering::Release);
    pump.join().expect("log pump")
}
