//! The JNI entry points: the `native` methods of `io.tsm.kafka.NativeBridge`.
//!
//! Every entry point runs inside `entry` (below): a panic becomes a
//! `java.lang.RuntimeException` carrying the panic message, location and backtrace (the
//! Java side wraps it in `RemoteStorageException`), never an abort. Engine errors are not
//! thrown from here: they are status codes plus messages (see `ops::status`) that the
//! Java side maps to Kafka's exception classes, so native code never looks up a Kafka
//! class (which would depend on the calling class loader and the broker version).

use jni::errors::ThrowRuntimeExAndDefault;
use jni::objects::{JByteArray, JClass, JString};
use jni::strings::JNIString;
use jni::sys::{jint, jlong};
use jni::{Env, EnvUnowned, jni_str};
use tsm_core::{IndexType, LogSegmentData};

use crate::instance::{self, INSTANCES};
use crate::ops::{self, OpError, OpValue};
use crate::{logging, panic, stream, wire};

type JResult<T> = Result<T, jni::errors::Error>;

/// Runs `f` with the JNI environment; panics become `RuntimeException`.
fn entry<'l, T, F>(env: &mut EnvUnowned<'l>, f: F) -> T
where
    T: Default + 'l,
    F: FnOnce(&mut Env<'l>) -> JResult<T>,
{
    env.with_env(|env| -> JResult<T> {
        match panic::catch(|| f(env)) {
            Ok(r) => r,
            Err(msg) => {
                let msg = logging::redact(&msg).into_owned();
                env.throw_new(jni_str!("java/lang/RuntimeException"), JNIString::from(msg))?;
                Ok(T::default())
            }
        }
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

fn bytes_arg(env: &Env<'_>, a: &JByteArray<'_>) -> JResult<Option<Vec<u8>>> {
    if a.is_null() {
        Ok(None)
    } else {
        env.convert_byte_array(a).map(Some)
    }
}

fn string_arg(env: &Env<'_>, s: &JString<'_>) -> JResult<Option<String>> {
    if s.is_null() {
        Ok(None)
    } else {
        s.try_to_string(env).map(Some)
    }
}

/// Starts an engine call on instance `inst`, or a failed op when it is closed or the
/// metadata does not decode.
fn start_on<Fut>(
    inst: jlong,
    meta: Option<Vec<u8>>,
    call: impl FnOnce(
        std::sync::Arc<tsm_core::RemoteStorageManager>,
        tsm_core::RemoteLogSegmentMetadata,
    ) -> Fut,
) -> jlong
where
    Fut: std::future::Future<Output = Result<OpValue, OpError>> + Send + 'static,
{
    let Some(inst) = INSTANCES.get(inst as u64) else {
        return ops::ready(Err(OpError::closed())) as jlong;
    };
    let meta = match meta.as_deref().map(wire::decode_metadata) {
        Some(Ok(m)) => m,
        Some(Err(e)) => return ops::ready(Err(OpError::error(e))) as jlong,
        None => return ops::ready(Err(OpError::error("segment metadata is null"))) as jlong,
    };
    let fut = call(inst.engine().clone(), meta);
    ops::spawn(&inst.rt, fut) as jlong
}

/// `long configureStart(byte[] props)`: op handle.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_configureStart<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    props: JByteArray<'l>,
) -> jlong {
    entry(&mut env, |env| {
        let raw = bytes_arg(env, &props)?.unwrap_or_default();
        Ok(match wire::decode_props(&raw) {
            Ok(p) => instance::configure_start(p) as jlong,
            Err(e) => ops::ready(Err(OpError::error(e))) as jlong,
        })
    })
}

/// `long takeInstance(long op)`: instance handle, or 0 with the error left in the op
/// registry (Java calls `takeInstance` only after `await` returned OK).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_takeInstance<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    op: jlong,
) -> jlong {
    entry(&mut env, |env| match instance::take_instance(op as u64) {
        Ok(id) => Ok(id as jlong),
        Err(e) => {
            env.throw_new(
                jni_str!("java/lang/IllegalStateException"),
                JNIString::from(e.message),
            )?;
            Ok(0)
        }
    })
}

/// `int await(long op, long timeoutMs)`: a status code (`ops::status`).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_await<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    op: jlong,
    timeout_ms: jlong,
) -> jint {
    entry(&mut env, |_env| Ok(ops::await_op(op as u64, timeout_ms)))
}

/// `String takeError(long op)`: the failed op's message; frees the op.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_takeError<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    op: jlong,
) -> JString<'l> {
    entry(&mut env, |env| {
        let msg = match ops::take(op as u64) {
            Err(e) => e.message,
            Ok(_) => "operation succeeded".to_string(),
        };
        env.new_string(msg)
    })
}

/// `byte[] takeBytes(long op)`: copy's custom metadata (null = none) or an index.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_takeBytes<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    op: jlong,
) -> JByteArray<'l> {
    entry(&mut env, |env| match ops::take(op as u64) {
        Ok(OpValue::Bytes(Some(b))) => env.byte_array_from_slice(&b),
        Ok(OpValue::Bytes(None)) | Ok(OpValue::Unit) => Ok(JByteArray::default()),
        Ok(_) => {
            env.throw_new(
                jni_str!("java/lang/IllegalStateException"),
                jni_str!("operation does not produce bytes"),
            )?;
            Ok(JByteArray::default())
        }
        Err(e) => {
            env.throw_new(
                jni_str!("java/lang/IllegalStateException"),
                JNIString::from(e.message),
            )?;
            Ok(JByteArray::default())
        }
    })
}

/// `long takeStream(long op)`: a stream handle for a finished fetch.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_takeStream<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    op: jlong,
) -> jlong {
    entry(&mut env, |env| {
        let rt = ops::op_runtime(op as u64);
        match (ops::take(op as u64), rt) {
            (Ok(OpValue::Stream(s)), Some(rt)) => Ok(stream::open(rt, s) as jlong),
            (Err(e), _) => {
                env.throw_new(
                    jni_str!("java/lang/IllegalStateException"),
                    JNIString::from(e.message),
                )?;
                Ok(0)
            }
            _ => {
                env.throw_new(
                    jni_str!("java/lang/IllegalStateException"),
                    jni_str!("operation does not produce a stream"),
                )?;
                Ok(0)
            }
        }
    })
}

/// `void cancel(long op)`: aborts and frees (idempotent).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_cancel<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    op: jlong,
) {
    entry(&mut env, |_env| {
        ops::cancel(op as u64);
        Ok(())
    })
}

/// `long copyStart(long inst, byte[] meta, String log, String offsetIndex,
/// String timeIndex, String txnIndex /* nullable */, String producerSnapshot,
/// byte[] leaderEpoch)`: op handle; result via `takeBytes` (`wire::encode_copy_outcome`).
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_copyStart<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    inst: jlong,
    meta: JByteArray<'l>,
    log: JString<'l>,
    offset_index: JString<'l>,
    time_index: JString<'l>,
    txn_index: JString<'l>,
    snapshot: JString<'l>,
    leader_epoch: JByteArray<'l>,
) -> jlong {
    entry(&mut env, |env| {
        let meta = bytes_arg(env, &meta)?;
        let path = |env: &Env<'_>, s: &JString<'_>| -> JResult<std::path::PathBuf> {
            Ok(string_arg(env, s)?.unwrap_or_default().into())
        };
        let data = LogSegmentData {
            log_segment: path(env, &log)?,
            offset_index: path(env, &offset_index)?,
            time_index: path(env, &time_index)?,
            transaction_index: string_arg(env, &txn_index)?.map(Into::into),
            producer_snapshot_index: path(env, &snapshot)?,
            leader_epoch_index: bytes_arg(env, &leader_epoch)?.unwrap_or_default().into(),
        };
        Ok(start_on(inst, meta, move |engine, meta| async move {
            let out = engine.copy_log_segment_data_reporting(&meta, &data).await?;
            Ok(OpValue::Bytes(Some(wire::encode_copy_outcome(&out))))
        }))
    })
}

/// `long fetchStart(long inst, byte[] meta, long start, long endInclusive /* -1: to the
/// end */)`: op handle; result via `takeStream`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_fetchStart<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    inst: jlong,
    meta: JByteArray<'l>,
    start: jlong,
    end: jlong,
) -> jlong {
    entry(&mut env, |env| {
        let meta = bytes_arg(env, &meta)?;
        if start < 0 || (end >= 0 && end < start) {
            return Ok(ops::ready(Err(OpError::error(format!(
                "invalid fetch range: start position {start}, end position {end}"
            )))) as jlong);
        }
        let end = (end >= 0).then_some(end as u64);
        Ok(start_on(inst, meta, move |engine, meta| async move {
            let s = engine.fetch_log_segment(&meta, start as u64, end).await?;
            Ok(OpValue::Stream(s))
        }))
    })
}

/// `long fetchIndexStart(long inst, byte[] meta, String indexType)`: op handle; result
/// via `takeBytes`. `indexType` is the Java enum constant name.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_fetchIndexStart<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    inst: jlong,
    meta: JByteArray<'l>,
    index_type: JString<'l>,
) -> jlong {
    entry(&mut env, |env| {
        let meta = bytes_arg(env, &meta)?;
        let name = string_arg(env, &index_type)?.unwrap_or_default();
        let Some(index) = IndexType::from_java_name(&name) else {
            return Ok(
                ops::ready(Err(OpError::error(format!("unknown index type {name:?}")))) as jlong,
            );
        };
        Ok(start_on(inst, meta, move |engine, meta| async move {
            let b = engine.fetch_index(&meta, index).await?;
            Ok(OpValue::Bytes(Some(b.to_vec())))
        }))
    })
}

/// `long deleteStart(long inst, byte[] meta)`: op handle; finish with `takeBytes`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_deleteStart<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    inst: jlong,
    meta: JByteArray<'l>,
) -> jlong {
    entry(&mut env, |env| {
        let meta = bytes_arg(env, &meta)?;
        Ok(start_on(inst, meta, move |engine, meta| async move {
            engine.delete_log_segment_data(&meta).await?;
            Ok(OpValue::Unit)
        }))
    })
}

/// `void closeInstance(long inst)`: idempotent.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_closeInstance<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    inst: jlong,
) {
    entry(&mut env, |_env| {
        instance::close(inst as u64);
        Ok(())
    })
}

/// `String metrics(long inst)`: the engine's `MetricsSnapshot` as text
/// ([`crate::metrics_text`]; null when the instance is closed).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_metrics<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    inst: jlong,
) -> JString<'l> {
    entry(&mut env, |env| {
        let Some(inst) = INSTANCES.get(inst as u64) else {
            return Ok(JString::default());
        };
        env.new_string(crate::instance_metrics_text(&inst, false))
    })
}

/// `String metricsWindow(long inst)`: as `metrics`, with each latency's maximum since the
/// previous `metricsWindow` call (a new window starts): for the plugin's one metrics poller.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_metricsWindow<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    inst: jlong,
) -> JString<'l> {
    entry(&mut env, |env| {
        let Some(inst) = INSTANCES.get(inst as u64) else {
            return Ok(JString::default());
        };
        env.new_string(crate::instance_metrics_text(&inst, true))
    })
}

/// `int read(long stream, byte[] buf, int off, int len, long timeoutMs)`: bytes copied
/// (> 0), or `stream::READ_*`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_read<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    handle: jlong,
    buf: JByteArray<'l>,
    off: jint,
    len: jint,
    timeout_ms: jlong,
) -> jint {
    entry(&mut env, |env| {
        if off < 0 || len < 0 {
            return Ok(stream::READ_ERROR);
        }
        match stream::read(handle as u64, len as usize, timeout_ms) {
            stream::ReadOutcome::Code(c) => Ok(c),
            stream::ReadOutcome::Data(items) => {
                let mut at = off;
                for b in items {
                    // SAFETY: u8 and i8 have the same size and alignment; the bytes are
                    // only reinterpreted for the JNI copy.
                    let signed: &[i8] =
                        unsafe { std::slice::from_raw_parts(b.as_ptr().cast::<i8>(), b.len()) };
                    buf.set_region(env, at, signed)?;
                    // At most `len` bytes in all (`stream::read`), so this stays a jint.
                    at += b.len() as jint;
                }
                Ok(at - off)
            }
        }
    })
}

/// `String streamError(long stream)`: why `read` returned `READ_ERROR`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_streamError<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    handle: jlong,
) -> JString<'l> {
    entry(&mut env, |env| {
        env.new_string(stream::error(handle as u64).unwrap_or_else(|| "stream closed".into()))
    })
}

/// `int streamErrorStatus(long stream)`: the status code (`ops::status`: transient, not
/// found, error) of the failure that made `read` return `READ_ERROR`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_streamErrorStatus<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    handle: jlong,
) -> jint {
    entry(&mut env, |_env| Ok(stream::error_status(handle as u64)))
}

/// `void closeStream(long stream)`: idempotent, cheap.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_closeStream<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    handle: jlong,
) {
    entry(&mut env, |_env| {
        stream::close(handle as u64);
        Ok(())
    })
}

/// `void initLogging(int maxLevel)`: the broker's level of `io.tsm.kafka.native`, 0 off,
/// 1 error .. 5 trace; called at load and before every configure (`logging::init`).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_initLogging<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    max_level: jint,
) {
    entry(&mut env, |_env| {
        panic::install_hook();
        logging::init(max_level);
        Ok(())
    })
}

/// `String drainLogs(long timeoutMs)`: records (see `logging::drain`).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_drainLogs<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    timeout_ms: jlong,
) -> JString<'l> {
    entry(&mut env, |env| {
        env.new_string(logging::drain(timeout_ms, 512))
    })
}

/// `String liveHandles()`: `instances ops streams` counts (tests check nothing leaks).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_liveHandles<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
) -> JString<'l> {
    entry(&mut env, |env| {
        env.new_string(format!(
            "{} {} {}",
            INSTANCES.len(),
            ops::OPS.len(),
            stream::STREAMS.len()
        ))
    })
}

/// `long testHook(long inst, int what, String msg)`: TEST ONLY, compiled only with the
/// cargo feature `test-hooks` (the JUnit `NativeHooksTest` loads such a dev build; the
/// shipped library lacks the symbol, so a call there is an `UnsatisfiedLinkError`).
/// `what`: 1 = panic in this entry point, 2 = return an op whose task panics, 3 = log
/// `msg` at warn and error level, 4 = an op that never finishes (for interrupt tests).
#[cfg(feature = "test-hooks")]
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_tsm_kafka_NativeBridge_testHook<'l>(
    mut env: EnvUnowned<'l>,
    _c: JClass<'l>,
    inst: jlong,
    what: jint,
    msg: JString<'l>,
) -> jlong {
    entry(&mut env, |env| {
        let msg = string_arg(env, &msg)?.unwrap_or_default();
        match what {
            1 => panic!("{msg}"),
            3 => {
                tracing::warn!(target: "tsm_jni::test", "{msg}");
                tracing::error!(target: "tsm_jni::test", "{msg}");
                Ok(0)
            }
            2 | 4 => {
                let Some(inst) = INSTANCES.get(inst as u64) else {
                    return Ok(ops::ready(Err(OpError::closed())) as jlong);
                };
                Ok(ops::spawn(&inst.rt, async move {
                    if what == 2 {
                        panic!("{msg}");
                    }
                    futures::future::pending::<()>().await;
                    Ok(OpValue::Unit)
                }) as jlong)
            }
            _ => Ok(0),
        }
    })
}
