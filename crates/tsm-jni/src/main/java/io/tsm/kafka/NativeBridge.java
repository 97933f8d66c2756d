package io.tsm.kafka;

/**
 * The native methods of libtsm_jni (crate tsm-jni, {@code src/exports.rs}). Handles are ids
 * into native registries, never pointers: a stale handle fails, it never crashes.
 *
 * <p>Engine calls are started ({@code *Start}, returning an op handle) and awaited in bounded
 * slices ({@link #await}); see {@link Calls}. Panics arrive as {@link RuntimeException}.
 */
final class NativeBridge {
    private NativeBridge() {}

    // Op status codes (src/ops.rs `status`).
    static final int PENDING = 0;
    static final int OK = 1;
    static final int NOT_FOUND = 2;
    static final int ERROR = 3;
    static final int TRANSIENT = 4;
    static final int PANIC = 5;
    static final int CLOSED = 6;

    // read() results (src/stream.rs).
    static final int READ_PENDING = 0;
    static final int READ_EOF = -1;
    static final int READ_ERROR = -2;
    static final int READ_CLOSED = -3;

    static native long configureStart(byte[] props);

    static native long takeInstance(long op);

    static native int await(long op, long timeoutMs);

    static native String takeError(long op);

    static native byte[] takeBytes(long op);

    static native long takeStream(long op);

    static native void cancel(long op);

    static native long copyStart(long instance, byte[] metadata, String log, String offsetIndex,
            String timeIndex, String transactionIndex, String producerSnapshot, byte[] leaderEpoch);

    static native long fetchStart(long instance, byte[] metadata, long start, long endInclusive);

    static native long fetchIndexStart(long instance, byte[] metadata, String indexType);

    static native long deleteStart(long instance, byte[] metadata);

    static native void closeInstance(long instance);

    static native String metrics(long instance);

    /** As {@link #metrics}, with latency maxima since the previous call (one caller: {@link NativeMetricsFeed}). */
    static native String metricsWindow(long instance);

    static native int read(long stream, byte[] buf, int off, int len, long timeoutMs);

    static native String streamError(long stream);

    /** The op status code ({@link #TRANSIENT}, {@link #NOT_FOUND}, {@link #ERROR}) of a stream's failure. */
    static native int streamErrorStatus(long stream);

    static native void closeStream(long stream);

    static native void initLogging(int maxLevel);

    static native String drainLogs(long timeoutMs);

    /** "instances ops streams": live native handles (tests check that nothing leaks). */
    static native String liveHandles();

    /**
     * TEST ONLY: 1 panic here, 2 op whose task panics, 3 log msg at warn+error, 4 op that never ends.
     * Only a native library built with the cargo feature {@code test-hooks} has it (the JUnit
     * NativeHooksTest); in the shipped library a call throws {@link UnsatisfiedLinkError}.
     */
    static native long testHook(long instance, int what, String msg);
}
