package io.tsm.examples.strimzi;

import java.math.BigDecimal;
import java.util.Locale;
import java.util.Map;

import io.fabric8.kubernetes.api.model.Quantity;
import io.strimzi.api.kafka.model.common.JvmOptions;
import io.strimzi.api.kafka.model.kafka.Kafka;
import io.strimzi.api.kafka.model.nodepool.KafkaNodePool;

/**
 * A broker container's memory against what it must hold. Outside the heap ({@code -Xmx}):
 * tsm's native memory, the formula of docs/configuration.md ("Deadlines, memory, clean-up"):
 * {@code tsm.memory.budget.bytes} (default 512 MiB) + the caches ({@code fetch.indexes.cache.size},
 * default 10 MiB; a {@code memory} chunk cache's {@code fetch.chunk.cache.size}) + about 64 MiB;
 * and the JVM's own non-heap (metaspace, code cache, thread stacks, direct buffers), for
 * which docs/strimzi.md allows 1 GiB. The rest of the limit is page cache.
 */
final class Memory {
    private Memory() {}

    static final long MIB = 1024L * 1024;
    static final long JVM_NON_HEAP = 1024 * MIB;
    static final long TSM_OVERHEAD = 64 * MIB;
    static final long DEFAULT_BUDGET = 512 * MIB;
    static final long DEFAULT_INDEXES_CACHE = 10 * MIB;

    /** A value that cannot be sized: names the key and why. */
    static final class Unsizable extends Exception {
        final String key;

        Unsizable(String key, String message) {
            super(message);
            this.key = key;
        }
    }

    /** tsm's native memory for the plugin configuration {@code rsm}: budget + caches + overhead. */
    static long tsmNative(Map<String, String> rsm) throws Unsizable {
        long budget = bytes(rsm, "tsm.memory.budget.bytes", DEFAULT_BUDGET);
        long indexes = bytes(rsm, "fetch.indexes.cache.size", DEFAULT_INDEXES_CACHE);
        long chunks = 0;
        String cache = rsm.getOrDefault("fetch.chunk.cache.class", "");
        if (isMemoryChunkCache(cache)) {
            chunks = bytes(rsm, "fetch.chunk.cache.size", -2);
            if (chunks == -2) {
                throw new Unsizable("fetch.chunk.cache.size", "required with a memory chunk cache");
            }
            if (chunks < 0) {
                throw new Unsizable("fetch.chunk.cache.size", "-1 (unbounded) cannot be sized against a memory limit: "
                        + "give the memory chunk cache a size in bytes, and count it in the pool's memory limit");
            }
        }
        if (indexes < 0) {
            throw new Unsizable("fetch.indexes.cache.size", "-1 (unbounded) cannot be sized against a memory limit: "
                    + "give it a size in bytes (default 10485760)");
        }
        return budget + indexes + chunks + TSM_OVERHEAD;
    }

    static boolean isMemoryChunkCache(String cls) {
        return cls.equals("memory") || cls.endsWith(".MemoryChunkCache");
    }

    static boolean isDiskChunkCache(String cls) {
        return cls.equals("disk") || cls.endsWith(".DiskChunkCache");
    }

    /** The pool's {@code resources.limits.memory} in bytes, or null when unset. */
    static Long limit(KafkaNodePool pool) throws Unsizable {
        var resources = pool.getSpec().getResources();
        if (resources == null || resources.getLimits() == null || resources.getLimits().get("memory") == null) {
            return null;
        }
        try {
            return Quantity.getAmountInBytes(resources.getLimits().get("memory")).longValueExact();
        } catch (RuntimeException e) {
            throw new Unsizable("resources.limits.memory", "not a Kubernetes quantity: " + resources.getLimits().get("memory"));
        }
    }

    /** The -Xmx that applies to the pool (its jvmOptions, else the Kafka resource's), or null. */
    static Long heap(Kafka kafka, KafkaNodePool pool) throws Unsizable {
        JvmOptions jvm = pool.getSpec().getJvmOptions() != null ? pool.getSpec().getJvmOptions() : kafka.getSpec().getKafka().getJvmOptions();
        if (jvm == null || jvm.getXmx() == null) {
            return null;
        }
        try {
            return jvmBytes(jvm.getXmx());
        } catch (IllegalArgumentException e) {
            throw new Unsizable("jvmOptions.-Xmx", "not a JVM size (like 3g, 3072m): " + jvm.getXmx());
        }
    }

    private static long bytes(Map<String, String> rsm, String key, long dflt) throws Unsizable {
        String v = rsm.get(key);
        try {
            return v == null ? dflt : Long.parseLong(v.strip());
        } catch (NumberFormatException e) {
            throw new Unsizable(key, "not a number of bytes: " + v);
        }
    }

    /** A JVM size ({@code 3g}, {@code 512m}, {@code 1024k}, bytes). */
    static long jvmBytes(String v) {
        String s = v.strip().toLowerCase(Locale.ROOT);
        if (s.isEmpty()) {
            throw new IllegalArgumentException("empty");
        }
        long unit = switch (s.charAt(s.length() - 1)) {
            case 'k' -> 1024L;
            case 'm' -> MIB;
            case 'g' -> 1024 * MIB;
            case 't' -> 1024 * 1024 * MIB;
            default -> 1L;
        };
        String digits = unit == 1 ? s : s.substring(0, s.length() - 1);
        try {
            return new BigDecimal(digits).multiply(BigDecimal.valueOf(unit)).longValueExact();
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException(v, e);
        }
    }

    static String mib(long bytes) {
        return String.format(Locale.ROOT, "%d MiB", bytes / MIB);
    }
}
