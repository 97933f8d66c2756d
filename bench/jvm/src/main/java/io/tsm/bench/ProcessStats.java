package io.tsm.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Per-process measurements of this JVM: CPU time (user + sys of every thread, JIT and GC
 * included, from {@code com.sun.management.OperatingSystemMXBean#getProcessCpuTime}) and
 * resident memory from {@code /proc/self/status} ({@code VmHWM}: peak; {@code VmRSS}: now).
 * Null when the platform does not provide them.
 */
final class ProcessStats {
    private ProcessStats() {}

    /** Process CPU time in nanoseconds, or -1. */
    static long cpuNanos() {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            return os.getProcessCpuTime();
        }
        return -1;
    }

    /** Peak resident set size in bytes (VmHWM), or null. */
    static Long peakRssBytes() {
        return status("VmHWM:");
    }

    /**
     * Resets this process's peak RSS (VmHWM) to its current RSS by writing {@code 5} to
     * {@code /proc/self/clear_refs} (Linux 4.0+), so a later {@link #peakRssBytes} covers only
     * what ran after it. Returns false when the kernel refuses.
     */
    static boolean resetPeakRss() {
        try {
            Files.writeString(Path.of("/proc/self/clear_refs"), "5");
            return true;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** Current resident set size in bytes (VmRSS), or null. */
    static Long rssBytes() {
        return status("VmRSS:");
    }

    private static Long status(String field) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith(field)) {
                    String[] f = line.substring(field.length()).trim().split("\\s+");
                    return Long.parseLong(f[0]) * 1024L;
                }
            }
        } catch (IOException | RuntimeException e) {
            return null;
        }
        return null;
    }
}
