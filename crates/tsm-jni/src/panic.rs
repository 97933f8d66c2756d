//! Panics never cross into the JVM. A process-wide hook (installed once per library copy)
//! records the message, location and a backtrace in a thread-local and logs it as an
//! `error` event (which reaches SLF4J, see `logging`); [`catch`] and the task wrapper in
//! `ops` turn the unwinding into an error message that Java throws as an exception.

use std::any::Any;
use std::backtrace::Backtrace;
use std::cell::RefCell;
use std::sync::Once;

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// Installs the panic hook (idempotent).
pub fn install_hook() {
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let msg = payload_text(info.payload());
            let location = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            let text = format!(
                "native panic: {msg}{location}\n{}",
                Backtrace::force_capture()
            );
            tracing::error!(target: "tsm_jni::panic", "{text}");
            LAST_PANIC.with(|p| *p.borrow_mut() = Some(text));
        }));
    });
}

fn payload_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-text panic payload)".to_string()
    }
}

/// The message for a caught panic: what the hook recorded on this thread (message,
/// location, backtrace), else the payload text.
pub fn describe(payload: Box<dyn Any + Send>) -> String {
    LAST_PANIC
        .with(|p| p.borrow_mut().take())
        .unwrap_or_else(|| format!("native panic: {}", payload_text(payload.as_ref())))
}

/// Runs `f`, turning a panic into `Err(message)`.
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    install_hook();
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(describe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_become_messages_with_location() {
        let r: Result<(), String> = catch(|| panic!("boom 42"));
        let msg = r.expect_err("panicked");
        assert!(msg.contains("boom 42"), "{msg}");
        assert!(msg.contains("panic.rs"), "{msg}");
        assert_eq!(catch(|| 5), Ok(5));
    }
}
