package io.tsm.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;

import org.apache.kafka.server.log.remote.storage.RemoteStorageManager.IndexType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The Java plugin's JMX names (docs/metrics.md, "The Java plugin's MBeans") on the
 * filesystem backend: object names, attribute sets, values after real calls, stable names
 * across a re-configure, a second instance's distinct names, nothing left after close.
 */
class JmxMetricsTest {
    static final String RSM = "aiven.kafka.server.tieredstorage:type=remote-storage-manager-metrics";
    static final Set<String> RSM_ATTRS = set("object-upload-bytes-rate", "object-upload-bytes-total",
            "object-upload-rate", "object-upload-total", "segment-copy-time-avg", "segment-copy-time-max",
            "segment-delete-bytes-total", "segment-delete-errors-rate", "segment-delete-errors-total",
            "segment-delete-rate", "segment-delete-time-avg", "segment-delete-time-max", "segment-delete-total",
            "segment-fetch-requested-bytes-rate", "segment-fetch-requested-bytes-total",
            // Not in the Java plugin's generated metrics list, registered by 1.1.1 all the same.
            "segment-delete-bytes-rate");
    static final Set<String> UPLOAD_ATTRS = set("object-upload-bytes-rate", "object-upload-bytes-total",
            "object-upload-rate", "object-upload-total");
    static final Set<String> CACHE_ATTRS = set("cache-eviction-total", "cache-eviction-weight-total",
            "cache-hits-total", "cache-load-failure-time-total", "cache-load-failure-total",
            "cache-load-success-time-total", "cache-load-success-total", "cache-misses-total", "cache-size-total");
    static final Set<String> POOL_ATTRS = set("active-thread-count-total", "parallelism-total", "pool-size-total",
            "queued-task-count-total", "running-thread-count-total", "steal-task-count-total");

    private final MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();
    private Path work;
    private TsmRemoteStorageManager rsm;

    @BeforeEach
    void setUp() throws Exception {
        work = Fixtures.work("jmx");
        rsm = new TsmRemoteStorageManager();
        Map<String, Object> c = Fixtures.config(work.resolve("remote"));
        c.put("fetch.chunk.cache.class", "memory");
        c.put("fetch.chunk.cache.size", "1000000");
        rsm.configure(c);
    }

    @AfterEach
    void tearDown() {
        rsm.close();
    }

    private static Set<String> set(String... s) {
        return new TreeSet<>(Arrays.asList(s));
    }

    private Set<String> attributes(String name) throws Exception {
        Set<String> out = new TreeSet<>();
        for (MBeanAttributeInfo a : jmx.getMBeanInfo(new ObjectName(name)).getAttributes()) {
            out.add(a.getName());
        }
        return out;
    }

    private double value(String name, String attribute) throws Exception {
        return ((Number) jmx.getAttribute(new ObjectName(name), attribute)).doubleValue();
    }

    @Test
    void javaPluginNamesAttributesAndValues() throws Exception {
        Fixtures.Segment s = Fixtures.segment(work.resolve("local"), 20_000, true, 21);
        rsm.copyLogSegmentData(s.metadata, s.data);
        byte[] read;
        try (InputStream in = rsm.fetchLogSegment(s.metadata, 100, 199)) {
            read = in.readAllBytes();
        }
        assertEquals(100, read.length);
        long served = read.length;
        try (InputStream in = rsm.fetchLogSegment(s.metadata, 19_000)) {
            served += in.readAllBytes().length;
        }
        rsm.fetchIndex(s.metadata, IndexType.OFFSET).close();
        rsm.deleteLogSegmentData(s.metadata);
        rsm.metricsFeed().pollNow();

        String topic = RSM + ",topic=topic-a";
        String partition = topic + ",partition=3";
        assertEquals(RSM_ATTRS, attributes(RSM));
        // A topic's MBeans show every attribute from its first call (errors at 0).
        assertEquals(RSM_ATTRS, attributes(topic));
        assertEquals(RSM_ATTRS, attributes(partition));
        for (String type : new String[] {"log", "indexes", "rsm-manifest"}) {
            for (String base : new String[] {RSM, topic, partition}) {
                assertEquals(UPLOAD_ATTRS, attributes(base + ",object-type=" + type), base + " " + type);
            }
            assertEquals(1.0, value(RSM + ",object-type=" + type, "object-upload-total"), type);
            assertEquals(1.0, value(topic + ",object-type=" + type, "object-upload-total"), type);
            assertTrue(value(topic + ",object-type=" + type, "object-upload-bytes-total") > 0, type);
            // Partition-level sensors are DEBUG (as in the Java plugin): present, not counting at INFO.
            assertEquals(0.0, value(partition + ",object-type=" + type, "object-upload-total"), type);
        }
        assertEquals(3.0, value(RSM, "object-upload-total"));
        assertTrue(value(RSM, "object-upload-bytes-total") >= 20_000, "plain log stored in full");
        assertFalse(Double.isNaN(value(topic, "segment-copy-time-max")));
        // Requested bytes as the Java plugin counts them: 100..199, then 19000 to the segment's end.
        assertEquals(100 + 1_000, value(topic, "segment-fetch-requested-bytes-total"));
        assertEquals(1.0, value(topic, "segment-delete-total"));
        assertEquals(20_000.0, value(topic, "segment-delete-bytes-total"));
        assertEquals(0.0, value(topic, "segment-delete-errors-total"));
        assertFalse(Double.isNaN(value(topic, "segment-delete-time-max")));

        String[][] caches = {{"segment-manifest-cache", "1"}, {"segment-indexes-cache", "1"}, {"chunk-cache", "1"}};
        for (String[] c : caches) {
            String name = "aiven.kafka.server.tieredstorage.cache:type=" + c[0] + "-metrics";
            assertEquals(CACHE_ATTRS, attributes(name), name);
            for (String cause : NativeMetricsFeed.CAUSES) {
                assertEquals(set("cache-eviction-total", "cache-eviction-weight-total"),
                        attributes(name + ",cause=" + cause), name + " " + cause);
            }
            assertTrue(value(name, "cache-misses-total") >= 1, name);
            assertTrue(value(name, "cache-load-success-total") >= 1, name);
            assertTrue(value(name, "cache-load-success-time-total") > 0, name);
            String pool = "aiven.kafka.server.tieredstorage.thread-pool:type=" + c[0] + "-thread-pool-metrics";
            assertEquals(POOL_ATTRS, attributes(pool), pool);
            assertTrue(value(pool, "pool-size-total") >= 1, pool);
        }

        String tsm = "io.tsm.kafka:type=tsm-storage-metrics";
        assertEquals(served, value(tsm, "segment-fetch-served-bytes-total"));
        assertTrue(value(tsm, "storage-downloaded-bytes-total") >= served);
        assertEquals(3.0, value(tsm, "storage-put-requests-total"), "three objects written");
        assertTrue(value(tsm, "storage-get-requests-total") >= 3, "manifest, indexes, chunks read");
        assertEquals(0.0, value(tsm, "integrity-unverified-segments-total"), "tsm wrote integrity data");
        assertEquals(0.0, value(tsm, "integrity-failures-total"), "nothing tampered with");
        assertEquals(512.0 * 1024 * 1024, value(tsm, "native-memory-budget-bytes"));
        assertEquals(0.0, value(tsm, "native-memory-in-use-bytes"), "no call in flight");
        assertEquals(0.0, value(tsm, "native-memory-copy-in-use-bytes"), "no copy in flight");
        assertEquals(0.0, value(tsm, "native-memory-read-in-use-bytes"), "no read in flight");
        double copies = value(tsm, "native-memory-copy-pool-bytes");
        double reads = value(tsm, "native-memory-read-pool-bytes");
        assertTrue(copies > 0 && reads > 0, "both pools sized");
        assertTrue(copies + reads <= value(tsm, "native-memory-budget-bytes"), "pools within the budget");
        // No storage client MBean for the filesystem backend.
        assertTrue(jmx.queryNames(new ObjectName("aiven.kafka.server.tieredstorage.s3:*"), null).isEmpty());
    }

    /**
     * Tier health (docs/metrics.md): a failed copy shows on its partition's MBean (consecutive
     * failures, class code) and in the broker's failures by class; the next successful copy
     * resets the partition.
     */
    @Test
    void tierHealthShowsAFailingPartitionAndItsRecovery() throws Exception {
        Fixtures.Segment s = Fixtures.segment(work.resolve("local"), 20_000, false, 5);
        java.nio.file.Files.delete(s.data.logSegment());
        org.junit.jupiter.api.Assertions.assertThrows(
                org.apache.kafka.server.log.remote.storage.RemoteStorageException.class,
                () -> rsm.copyLogSegmentData(s.metadata, s.data));
        rsm.metricsFeed().pollNow();
        String tier = "io.tsm.kafka:type=tsm-tier-metrics,topic=topic-a,partition=3";
        assertEquals(set(NativeMetricsFeed.TIER_ATTRS), attributes(tier));
        assertEquals(1.0, value(tier, "copy-consecutive-failures"));
        assertEquals(9.0, value(tier, "copy-last-failure-class"), "a missing local file: internal");
        assertEquals(-1.0, value(tier, "copy-last-success-age-ms"), "no success since start");
        assertEquals(-1.0, value(tier, "copy-oldest-in-flight-age-ms"));
        assertEquals(0.0, value(tier, "copies-in-flight"));
        String tsm = "io.tsm.kafka:type=tsm-storage-metrics";
        assertEquals(1.0, value(tsm + ",class=internal", "copy-failures-total"));
        assertEquals(0.0, value(tsm + ",class=auth", "copy-failures-total"));
        assertEquals(1.0, value(tsm, "tier-partitions-failing"));
        assertEquals(0.0, value(tsm, "copies-in-flight"));
        assertEquals(0.0, value(tsm, "fetches-in-flight"));

        Fixtures.Segment ok = Fixtures.segment(work.resolve("local2"), 20_000, false, 6);
        rsm.copyLogSegmentData(ok.metadata, ok.data);
        rsm.metricsFeed().pollNow();
        assertEquals(0.0, value(tier, "copy-consecutive-failures"));
        assertEquals(0.0, value(tier, "copy-last-failure-class"));
        assertTrue(value(tier, "copy-last-success-age-ms") >= 0);
        assertEquals(0.0, value(tsm, "tier-partitions-failing"));
        assertEquals(1.0, value(tsm + ",class=internal", "copy-failures-total"), "a total stays");
    }

    /** node.id names the broker before broker.id (KAFKA-18628; Kafka 5.0 passes only node.id). */
    @Test
    void nodeIdNamesTheBroker() throws Exception {
        for (Map<String, Object> extra : List.of(Map.<String, Object>of("node.id", 7),
                Map.<String, Object>of("node.id", "7", "broker.id", "9"))) {
            TsmRemoteStorageManager other = new TsmRemoteStorageManager();
            Map<String, Object> c = Fixtures.config(work.resolve("node-id"));
            c.remove("broker.id");
            c.putAll(extra);
            try {
                other.configure(c);
                assertEquals(new ObjectName("io.tsm.kafka:type=RemoteStorageManager,broker=7"),
                        other.metricsMBeanName(), extra.toString());
            } finally {
                other.close();
            }
        }
    }

    @Test
    void namesAreStableAndASecondInstanceGetsItsOwn() throws Exception {
        assertEquals(new ObjectName("io.tsm.kafka:type=RemoteStorageManager,broker=1"), rsm.metricsMBeanName());
        TsmRemoteStorageManager second = new TsmRemoteStorageManager();
        try {
            second.configure(Fixtures.config(work.resolve("remote2")));
            assertEquals(new ObjectName("io.tsm.kafka:type=RemoteStorageManager,broker=1,instance=2"),
                    second.metricsMBeanName());
            assertTrue(jmx.isRegistered(new ObjectName(RSM + ",instance=2")));
            assertTrue(jmx.isRegistered(new ObjectName(RSM)), "the first instance's MBeans stay");
        } finally {
            second.close();
        }
        assertFalse(jmx.isRegistered(new ObjectName(RSM + ",instance=2")));
        assertTrue(jmx.isRegistered(new ObjectName(RSM)));
        // A restart (close, new instance) gets the same names.
        rsm.close();
        assertEquals(Set.of(), jmx.queryNames(new ObjectName("aiven.kafka.server.tieredstorage*:*"), null),
                "close unregisters every Java plugin MBean");
        assertEquals(Set.of(), jmx.queryNames(new ObjectName("io.tsm.kafka:*"), null), "and tsm's own");
        rsm = new TsmRemoteStorageManager();
        rsm.configure(Fixtures.config(work.resolve("remote")));
        assertEquals(new ObjectName("io.tsm.kafka:type=RemoteStorageManager,broker=1"), rsm.metricsMBeanName());
        assertTrue(jmx.isRegistered(new ObjectName(RSM)));
        assertNotEquals(0, attributes(RSM).size());
    }
}
