package io.tsm.bench;

/**
 * Accumulates wall time and process CPU time over the timed sections only (the fetch calls),
 * so correctness checks between them are not measured.
 */
final class Clock {
    private long wallNanos;
    private long cpuNanos;
    private boolean cpuKnown = true;
    private long wall0;
    private long cpu0;

    void start() {
        cpu0 = ProcessStats.cpuNanos();
        wall0 = System.nanoTime();
    }

    void stop() {
        long w = System.nanoTime();
        long c = ProcessStats.cpuNanos();
        wallNanos += w - wall0;
        if (c < 0 || cpu0 < 0) {
            cpuKnown = false;
        } else {
            cpuNanos += c - cpu0;
        }
    }

    double seconds() {
        return wallNanos / 1e9;
    }

    /** CPU seconds, or null when the platform does not report process CPU time. */
    Double cpuSeconds() {
        return cpuKnown ? cpuNanos / 1e9 : null;
    }
}
