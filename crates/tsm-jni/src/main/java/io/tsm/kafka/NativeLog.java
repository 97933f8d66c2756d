package io.tsm.kafka;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Forwards native {@code tracing} events to SLF4J: a daemon thread per class loader drains the
 * native queue (src/logging.rs) with bounded waits and logs each record under
 * {@code io.tsm.kafka.native.<rust target>} ({@code ::} becomes {@code .}). The level of tsm's
 * own native targets follows what SLF4J has enabled for {@value #ROOT} (which inherits
 * {@code io.tsm.kafka}'s level in log4j), read at load and again at every
 * {@code configure} ({@link #refreshLevel}), unless {@code rsm.config.tsm.log.level} sets it; the
 * SDKs and HTTP stack stay at WARN unless {@code rsm.config.tsm.log.filter} names them
 * (src/logging.rs). Records are redacted natively before they get here.
 */
final class NativeLog {
    private NativeLog() {}

    static final String ROOT = "io.tsm.kafka.native";
    private static final char RECORD_SEP = '\u001e';
    private static final char FIELD_SEP = '\u001f';
    private static Thread pump;

    static synchronized void start() {
        if (pump != null) {
            return;
        }
        NativeBridge.initLogging(slf4jLevel());
        pump = new Thread(NativeLog::run, "tsm-native-log");
        pump.setDaemon(true);
        pump.start();
    }

    /** Hands the broker's current level of {@value #ROOT} to the native side (called by configure). */
    static void refreshLevel() {
        NativeBridge.initLogging(slf4jLevel());
    }

    /** 0 off, 1 error .. 5 trace: the most verbose level SLF4J has enabled for {@value #ROOT}. */
    private static int slf4jLevel() {
        Logger root = LoggerFactory.getLogger(ROOT);
        return root.isTraceEnabled() ? 5 : root.isDebugEnabled() ? 4 : root.isInfoEnabled() ? 3
                : root.isWarnEnabled() ? 2 : root.isErrorEnabled() ? 1 : 0;
    }

    private static void run() {
        while (true) {
            try {
                String batch = NativeBridge.drainLogs(500);
                if (!batch.isEmpty()) {
                    for (String record : batch.split(String.valueOf(RECORD_SEP))) {
                        emit(record);
                    }
                }
            } catch (Throwable t) {
                LoggerFactory.getLogger(ROOT).warn("native log forwarding failed", t);
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    private static void emit(String record) {
        String[] f = record.split(String.valueOf(FIELD_SEP), 3);
        if (f.length < 3) {
            return;
        }
        Logger log = LoggerFactory.getLogger(ROOT + "." + f[1].replace("::", "."));
        switch (f[0]) {
            case "1":
                log.error(f[2]);
                break;
            case "2":
                log.warn(f[2]);
                break;
            case "3":
                log.info(f[2]);
                break;
            case "4":
                log.debug(f[2]);
                break;
            default:
                log.trace(f[2]);
        }
    }
}
