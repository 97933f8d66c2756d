//! A configured plugin instance: the engine plus the runtime it runs on. Java holds its
//! id; `close` unregisters it (new calls then fail "closed") while calls already in flight
//! keep their `Arc` and finish on the still-running runtime.

use std::collections::BTreeMap;
use std::mem::ManuallyDrop;
use std::sync::Arc;

use tsm_core::RemoteStorageManager;
use tsm_core::config::LogConfig;
use tsm_core::config::effective::{effective_settings, render_settings, secret_values};
use tsm_core::config::names::STORAGE_BACKEND_CLASS;

use crate::logging;
use crate::ops::{self, OpError, OpValue};
use crate::registry::Registry;
use crate::runtime::InstanceRuntime;

/// Keys with this prefix belong to the JNI layer and are removed before the engine sees
/// the configuration (declared in tsm-core's `JNI_KEYS`, with their docs).
pub use tsm_core::config::names::JNI_KEY_PREFIX;

/// `tsm.jni.worker.threads`: tokio worker threads per plugin instance (0 = one per core).
pub use tsm_core::config::names::JNI_WORKER_THREADS as WORKER_THREADS_KEY;

/// One configured `TsmRemoteStorageManager`.
pub struct Instance {
    /// The runtime every operation of this instance runs on.
    pub rt: Arc<InstanceRuntime>,
    /// The engine (dropped inside the runtime context, see `Drop`).
    engine: ManuallyDrop<Arc<RemoteStorageManager>>,
}

impl Instance {
    /// The engine.
    pub fn engine(&self) -> &Arc<RemoteStorageManager> {
        &self.engine
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // SDK clients may spawn tasks when dropped: give them the runtime context.
        let _guard = self.rt.handle().enter();
        // SAFETY: `engine` is never used again after this point.
        unsafe { ManuallyDrop::drop(&mut self.engine) };
    }
}

/// Every configured, not yet closed instance of this library copy.
pub static INSTANCES: Registry<Instance> = Registry::new();

/// Starts `configure`: registers the instance's secret values for log redaction, applies
/// its `tsm.log.*` settings, builds the runtime, then the engine on it, and logs one INFO
/// line with the plugin version, the backend and the effective settings (secrets as
/// `****`). Returns an op handle whose result is taken with [`take_instance`].
pub fn configure_start(mut props: BTreeMap<String, String>) -> u64 {
    // Before anything is logged about this configuration.
    logging::register_secrets(secret_values(&props, tsm_backends::KINDS));
    let log = match LogConfig::from_props(&props) {
        Ok(l) => l,
        Err(e) => return ops::ready(Err(OpError::error(e.to_string()))),
    };
    let directives = logging::configure(&log);
    let startup = startup_line(&props, &directives);
    let workers = match props
        .get(WORKER_THREADS_KEY)
        .map(|v| v.trim().parse::<usize>())
    {
        None => 0,
        Some(Ok(n)) if n as u64 <= tsm_core::config::names::JNI_WORKER_THREADS_MAX => n,
        Some(_) => {
            return ops::ready(Err(OpError::error(format!(
                "invalid configuration {WORKER_THREADS_KEY}={}: an integer from 0 to {}",
                props.get(WORKER_THREADS_KEY).map_or("", |v| v.as_str()),
                tsm_core::config::names::JNI_WORKER_THREADS_MAX
            ))));
        }
    };
    props.retain(|k, _| !k.starts_with(JNI_KEY_PREFIX));
    let rt = match InstanceRuntime::new(workers) {
        Ok(rt) => Arc::new(rt),
        Err(e) => {
            return ops::ready(Err(OpError::error(format!(
                "cannot start the tokio runtime: {e}"
            ))));
        }
    };
    ops::spawn(&rt, async move {
        let engine = RemoteStorageManager::configure(props, tsm_backends::KINDS).await?;
        if let Some(line) = startup {
            tracing::info!("{line}");
        }
        Ok(OpValue::Engine(engine))
    })
}

/// `tsm <version> configured: backend <name>, log filter <directives>, settings k=v, ...`
/// (tsm-core's key tables; secrets masked), or `None` without a known backend (configure
/// then fails naming the key).
fn startup_line(props: &BTreeMap<String, String>, directives: &str) -> Option<String> {
    let class = props.get(STORAGE_BACKEND_CLASS)?;
    let kind = tsm_backends::KINDS.iter().find(|k| k.matches(class))?;
    let settings = render_settings(&effective_settings(props, kind));
    Some(format!(
        "tsm {} configured: backend {}, native log filter {directives}, settings {settings}",
        env!("CARGO_PKG_VERSION"),
        kind.name
    ))
}

/// Takes a finished `configure` op and registers the instance; returns its id.
pub fn take_instance(op: u64) -> Result<u64, OpError> {
    let rt = ops::op_runtime(op);
    match ops::take(op)? {
        OpValue::Engine(engine) => {
            let rt = rt.ok_or_else(OpError::closed)?;
            crate::stream::spawn_sweeper(&rt, engine.stream_idle_timeout());
            Ok(INSTANCES.insert(Arc::new(Instance {
                rt,
                engine: ManuallyDrop::new(Arc::new(engine)),
            })))
        }
        _ => Err(OpError::error("not a configure operation")),
    }
}

/// `close()`: closes the engine and unregisters the instance (idempotent), then waits at
/// most `tsm.close.timeout.ms` for clean-up in flight (deletes of cancelled copies,
/// multipart aborts). Calls in flight finish or fail within their deadlines; the runtime
/// stops when the last of them is done, after the same bounded wait for clean-up
/// ([`InstanceRuntime`]'s `Drop`).
pub fn close(id: u64) {
    if let Some(inst) = INSTANCES.remove(id) {
        let timeout = inst.engine().close_timeout();
        inst.rt.set_drain_timeout(timeout);
        if tokio::runtime::Handle::try_current().is_ok() {
            // Never block a runtime thread (not a path Java takes).
            inst.engine().close();
        } else {
            inst.rt.block_on(inst.engine().shutdown(timeout));
        }
    }
}
