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
 * which this allows 1 GiB. The memory limit must cover heap + both; the rest is page cache.
 */
final class Memory {
    private Memory() {}

    static final long MIB = 1024L * 1024;
    static final long JVM_NON_HEAP = 1024 * MIB;
    static final long TSM_OVERHEAD = 64 * MIB;

    record Sizing(String pool, long limit, long heap, long tsmNative) {
        boolean fits() {
            return limit >= heap + tsmNative + JVM_NON_HEAP;
        }

        @Override
        public String toString() {
            return String.format(Locale.ROOT, "pool %s: memory limit %d MiB, needs heap %d MiB + tsm native %d MiB + JVM non-heap %d MiB = %d MiB",
                    pool, limit / MIB, heap / MIB, tsmNative / MIB, JVM_NON_HEAP / MIB, (heap + tsmNative + JVM_NON_HEAP) / MIB);
        }
    }

    static Sizing sizing(Kafka kafka, KafkaNodePool pool, Map<String, String> rsm) {
        String name = pool.getMetadata().getName();
        var resources = pool.getSpec().getResources();
        if (resources == null || resources.getLimits() == null || resources.getLimits().get("memory") == null) {
            throw new AssertionError("pool " + name + ": resources.limits.memory must be set (tsm's native memory is outside -Xmx)");
        }
        long limit = Quantity.getAmountInBytes(resources.getLimits().get("memory")).longValueExact();
        JvmOptions jvm = pool.getSpec().getJvmOptions() != null ? pool.getSpec().getJvmOptions() : kafka.getSpec().getKafka().getJvmOptions();
        if (jvm == null || jvm.getXmx() == null) {
            throw new AssertionError("pool " + name + ": jvmOptions -Xmx must be set (else Strimzi derives it from the memory request)");
        }
        long heap = jvmBytes(jvm.getXmx(), name);
        long budget = bytes(rsm, "tsm.memory.budget.bytes", 536870912L);
        long indexes = bytes(rsm, "fetch.indexes.cache.size", 10485760L);
        long chunks = 0;
        String cache = rsm.getOrDefault("fetch.chunk.cache.class", "");
        if (cache.equals("memory") || cache.endsWith(".MemoryChunkCache")) {
            chunks = bytes(rsm, "fetch.chunk.cache.size", -2);
            if (chunks == -2) {
                throw new AssertionError("fetch.chunk.cache.size is required with a memory chunk cache");
            }
        }
        if (indexes < 0 || chunks < 0) {
            throw new AssertionError("pool " + name + ": an unbounded cache (-1) cannot be sized against a memory limit");
        }
        return new Sizing(name, limit, heap, budget + indexes + chunks + TSM_OVERHEAD);
    }

    private static long bytes(Map<String, String> rsm, String key, long dflt) {
        String v = rsm.get(key);
        try {
            return v == null ? dflt : Long.parseLong(v.strip());
        } catch (NumberFormatException e) {
            throw new AssertionError(key + "=" + v + " is not a number of bytes", e);
        }
    }

    /** A JVM size ({@code 3g}, {@code 512m}, {@code 1024k}, bytes). */
    static long jvmBytes(String v, String pool) {
        String s = v.strip().toLowerCase(Locale.ROOT);
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
            throw new AssertionError("pool " + pool + ": -Xmx " + v + " is not a JVM size", e);
        }
    }
}
