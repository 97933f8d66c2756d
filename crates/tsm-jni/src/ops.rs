//! Asynchronous operations started by a Java call and awaited in bounded slices.
//!
//! Java starts an operation (`*Start` native methods return an op handle), then calls
//! `await(op, timeoutMs)` in a loop, checking `Thread.interrupted()` between slices, and
//! finally takes the result or the error (which frees the op) — or cancels it (aborting
//! the task) when the thread was interrupted. No native wait is longer than one slice.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use tokio::task::JoinHandle;
use tsm_core::{RemoteStorageManager, RsmError, SegmentStream};

use crate::registry::Registry;
use crate::runtime::InstanceRuntime;

/// Status codes shared with `io.tsm.kafka.NativeBridge`.
pub mod status {
    /// Still running.
    pub const PENDING: i32 = 0;
    /// Done; take the result.
    pub const OK: i32 = 1;
    /// `RemoteResourceNotFoundException`.
    pub const NOT_FOUND: i32 = 2;
    /// `RemoteStorageException`.
    pub const ERROR: i32 = 3;
    /// `RetriableRemoteStorageException` where the broker has it.
    pub const TRANSIENT: i32 = 4;
    /// A native panic (`RemoteStorageException`, message with backtrace).
    pub const PANIC: i32 = 5;
    /// The plugin instance was closed.
    pub const CLOSED: i32 = 6;
}

/// What a successful operation produced.
pub enum OpValue {
    /// `configure`: the engine (with the runtime it runs on).
    Engine(RemoteStorageManager),
    /// `copy` (custom metadata or none), `fetchIndex` (the index bytes).
    Bytes(Option<Vec<u8>>),
    /// `fetchLogSegment`.
    Stream(SegmentStream),
    /// `delete`.
    Unit,
}

/// A failed operation: a status code and the message (with the cause chain).
#[derive(Debug, Clone)]
pub struct OpError {
    /// One of [`status`].
    pub status: i32,
    /// Human-readable, names the segment / object / key involved.
    pub message: String,
}

impl OpError {
    /// An error with [`status::ERROR`].
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            status: status::ERROR,
            message: crate::logging::redact(&message.into()).into_owned(),
        }
    }

    /// The closed-instance error.
    pub fn closed() -> Self {
        Self {
            status: status::CLOSED,
            message: RsmError::Closed.to_string(),
        }
    }
}

impl From<RsmError> for OpError {
    fn from(e: RsmError) -> Self {
        let status = if matches!(e, RsmError::Closed) {
            status::CLOSED
        } else if e.is_not_found() {
            status::NOT_FOUND
        } else if e.is_transient() {
            status::TRANSIENT
        } else {
            status::ERROR
        };
        Self {
            status,
            message: crate::logging::redact(&cause_chain(&e)).into_owned(),
        }
    }
}

/// `error: cause: cause ...`, skipping a cause whose text the message already contains
/// (`#[error(transparent)]` and `{source}` in messages repeat it).
pub fn cause_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut msg = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !msg.contains(&t) {
            msg.push_str(": caused by: ");
            msg.push_str(&t);
        }
        cur = c.source();
    }
    msg
}

type OpResult = Result<OpValue, OpError>;

enum State {
    Running(JoinHandle<OpResult>),
    Done(OpResult),
    Taken,
}

/// One operation.
pub struct Op {
    rt: Option<Arc<InstanceRuntime>>,
    state: Mutex<State>,
}

/// Every live operation of this library copy.
pub static OPS: Registry<Op> = Registry::new();

/// Spawns `fut` on `rt` (panics inside it become [`status::PANIC`]) and registers it.
pub fn spawn<F>(rt: &Arc<InstanceRuntime>, fut: F) -> u64
where
    F: std::future::Future<Output = OpResult> + Send + 'static,
{
    let wrapped = std::panic::AssertUnwindSafe(fut).catch_unwind().map(|r| {
        r.unwrap_or_else(|p| {
            Err(OpError {
                status: status::PANIC,
                message: crate::logging::redact(&crate::panic::describe(p)).into_owned(),
            })
        })
    });
    crate::panic::install_hook();
    let jh = rt.handle().spawn(wrapped);
    OPS.insert(Arc::new(Op {
        rt: Some(rt.clone()),
        state: Mutex::new(State::Running(jh)),
    }))
}

/// The runtime `op` runs on, if it is known and has one.
pub fn op_runtime(op: u64) -> Option<Arc<InstanceRuntime>> {
    OPS.get(op).and_then(|o| o.rt.clone())
}

/// Registers an operation that already finished (e.g. failed before starting).
pub fn ready(result: OpResult) -> u64 {
    OPS.insert(Arc::new(Op {
        rt: None,
        state: Mutex::new(State::Done(result)),
    }))
}

/// Waits at most `timeout_ms` for `op`; returns a [`status`] code. An unknown op (already
/// taken, cancelled) is [`status::CLOSED`].
pub fn await_op(op: u64, timeout_ms: i64) -> i32 {
    let Some(op) = OPS.get(op) else {
        return status::CLOSED;
    };
    let mut st = op.state.lock().unwrap_or_else(|p| p.into_inner());
    if let State::Running(jh) = &mut *st {
        let Some(rt) = &op.rt else {
            return status::CLOSED;
        };
        let wait = Duration::from_millis(timeout_ms.clamp(1, 60_000) as u64);
        match rt.block_on(async { tokio::time::timeout(wait, jh).await }) {
            Err(_elapsed) => return status::PENDING,
            Ok(Ok(r)) => *st = State::Done(r),
            Ok(Err(join)) => {
                *st = State::Done(Err(OpError::error(format!("native task failed: {join}"))))
            }
        }
    }
    match &*st {
        State::Done(Ok(_)) => status::OK,
        State::Done(Err(e)) => e.status,
        State::Running(_) => status::PENDING,
        State::Taken => status::CLOSED,
    }
}

/// Removes `op` and returns its result (an error when still running or unknown).
pub fn take(op: u64) -> OpResult {
    let Some(op) = OPS.remove(op) else {
        return Err(OpError::closed());
    };
    let mut st = op.state.lock().unwrap_or_else(|p| p.into_inner());
    match std::mem::replace(&mut *st, State::Taken) {
        State::Done(r) => r,
        State::Running(jh) => {
            jh.abort();
            Err(OpError::error("operation taken before it finished"))
        }
        State::Taken => Err(OpError::closed()),
    }
}

/// Aborts and removes `op` (idempotent). The task stops at its next await point.
pub fn cancel(op: u64) {
    if let Some(op) = OPS.remove(op) {
        // A finished result (engine, stream) is dropped inside the runtime context.
        let _guard = op.rt.as_ref().map(|rt| rt.handle().enter());
        let old = {
            let mut st = op.state.lock().unwrap_or_else(|p| p.into_inner());
            std::mem::replace(&mut *st, State::Taken)
        };
        if let State::Running(jh) = &old {
            jh.abort();
        }
        drop(old);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> Arc<InstanceRuntime> {
        Arc::new(InstanceRuntime::new(1).expect("runtime"))
    }

    fn wait(op: u64) -> i32 {
        loop {
            let s = await_op(op, 50);
            if s != status::PENDING {
                return s;
            }
        }
    }

    #[test]
    fn error_messages_crossing_into_java_are_redacted() {
        let e = OpError::error(r#"credentials: {"SecretAccessKey":"OPSECRET","Token":"OPTOKEN"}"#);
        assert!(
            !e.message.contains("OPSECRET") && !e.message.contains("OPTOKEN"),
            "{}",
            e.message
        );
        let e = OpError::from(RsmError::InvalidArgument(
            "bad header authorization: Bearer OPBEARER".into(),
        ));
        assert!(!e.message.contains("OPBEARER"), "{}", e.message);
    }

    #[test]
    fn finished_op_is_taken_once() {
        let rt = rt();
        let op = spawn(&rt, async { Ok(OpValue::Bytes(Some(vec![1, 2]))) });
        assert_eq!(wait(op), status::OK);
        assert!(matches!(take(op), Ok(OpValue::Bytes(Some(b))) if b == vec![1, 2]));
        assert_eq!(await_op(op, 1), status::CLOSED);
        assert!(take(op).is_err());
    }

    #[test]
    fn errors_map_to_status_codes() {
        let rt = rt();
        let op = spawn(&rt, async {
            Err(RsmError::NotFound("segment x".into()).into())
        });
        assert_eq!(wait(op), status::NOT_FOUND);
        let e = take(op).err().expect("error");
        assert!(e.message.contains("segment x"));
        let op = spawn(&rt, async { Err(RsmError::Closed.into()) });
        assert_eq!(wait(op), status::CLOSED);
        cancel(op);
        let op = spawn(&rt, async {
            Err(RsmError::InvalidArgument("bad".into()).into())
        });
        assert_eq!(wait(op), status::ERROR);
        cancel(op);
    }

    #[test]
    fn panics_in_tasks_become_panic_status() {
        let rt = rt();
        let op = spawn(&rt, async { panic!("task exploded") });
        assert_eq!(wait(op), status::PANIC);
        let e = take(op).err().expect("error");
        assert!(e.message.contains("task exploded"), "{}", e.message);
    }

    #[test]
    fn pending_ops_time_out_and_cancel() {
        let rt = rt();
        let op = spawn(&rt, async {
            futures::future::pending::<()>().await;
            Ok(OpValue::Unit)
        });
        assert_eq!(await_op(op, 10), status::PENDING);
        cancel(op);
        cancel(op);
        assert_eq!(await_op(op, 10), status::CLOSED);
    }

    #[test]
    fn cause_chain_skips_repeated_text() {
        let io = std::io::Error::other("disk on fire");
        let e = RsmError::Io {
            path: "/x/00.log".into(),
            source: io,
        };
        let m = cause_chain(&e);
        assert_eq!(m.matches("disk on fire").count(), 1, "{m}");
        assert!(m.contains("/x/00.log"));
    }
}
