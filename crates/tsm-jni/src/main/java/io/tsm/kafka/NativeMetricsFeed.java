package io.tsm.kafka;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.JmxReporter;
import org.apache.kafka.common.metrics.KafkaMetricsContext;
import org.apache.kafka.common.metrics.Measurable;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.metrics.stats.Avg;
import org.apache.kafka.common.metrics.stats.CumulativeSum;
import org.apache.kafka.common.metrics.stats.Max;
import org.apache.kafka.common.metrics.stats.Rate;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Java plugin's cache, thread-pool and storage-client MBeans, plus tsm's additions, fed from
 * the native engine's counters (text of {@code NativeBridge.metricsWindow}, parsed by
 * {@link TsmMetrics#parse}).
 *
 * <p>Where values come from: one daemon thread ({@code tsm-metrics-poller}) reads the native
 * snapshot every {@link #POLL_MS} ms (one JNI call of a few microseconds; it never runs on a broker
 * thread) and keeps it. Totals and gauges ({@code cache-*-total}, {@code *-thread-pool-metrics},
 * {@code native-memory-*}) are {@link Measurable}s reading the kept snapshot, so they lag the
 * native counters by at most one poll. Rates, averages and maxima (storage client requests,
 * errors, request times; tsm's byte and request rates) are Kafka {@link Sensor}s the poller feeds
 * with the deltas since its previous poll: a rate is the deltas recorded in Kafka's sample window
 * divided by the window (so it moves in steps of one poll); an S3 request time average records
 * each poll's mean once per request of that poll (at most {@link #MAX_RECORDS} times); a maximum
 * is the native maximum of each poll (exact, windowed natively). {@link #close()} stops the
 * poller and unregisters every MBean.
 *
 * <p>MBeans (see docs/metrics.md): {@code aiven.kafka.server.tieredstorage.cache:type=
 * segment-manifest-cache-metrics} / {@code segment-indexes-cache-metrics} / {@code
 * chunk-cache-metrics} (the last only with a chunk cache), each also by {@code cause}; {@code
 * aiven.kafka.server.tieredstorage.thread-pool:type=<cache>-thread-pool-metrics} (tsm has no
 * pool per cache: all three report the instance's tokio runtime); {@code
 * aiven.kafka.server.tieredstorage.s3:type=s3-client-metrics}, {@code .gcs:type=gcs-client-metrics}
 * or {@code .azure:type=azure-blob-storage-client-metrics} for the configured backend; {@code
 * io.tsm.kafka:type=tsm-storage-metrics} (downloaded vs served bytes, GET/PUT requests, native
 * memory against the budget, copies and fetches in flight and the age of the oldest, failures by
 * {@code class}); {@code io.tsm.kafka:type=tsm-tier-metrics,topic=<t>,partition=<p>} per partition
 * this broker copied since it started (registered at the first poll that shows it: time since the
 * last successful copy, the oldest copy in flight, consecutive failures, the last failure's class
 * code; from the {@code partition} lines of the native text, see {@link #partitions}).
 */
final class NativeMetricsFeed implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(NativeMetricsFeed.class);

    /** How often the poller reads the native counters (ms). */
    static final long POLL_MS = 1000;
    /** Most records of one poll's mean request time into an average sensor. */
    static final int MAX_RECORDS = 1000;

    static final String CACHE_DOMAIN = "aiven.kafka.server.tieredstorage.cache";
    static final String POOL_DOMAIN = "aiven.kafka.server.tieredstorage.thread-pool";
    static final String TSM_DOMAIN = "io.tsm.kafka";
    static final String TSM_GROUP = "tsm-storage-metrics";
    static final String TIER_GROUP = "tsm-tier-metrics";
    /** The per-partition attributes, in the order of the native {@code partition} line's values. */
    static final String[] TIER_ATTRS = {"copy-last-success-age-ms", "copy-oldest-in-flight-age-ms",
        "copies-in-flight", "copy-consecutive-failures", "copy-last-failure-class"};
    private static final String[] TIER_DOCS = {
        "time since the partition's last successful copy on this broker (ms; -1: none since start)",
        "age of the partition's oldest copy in flight (ms; -1: none)",
        "the partition's copies in flight",
        "copies of the partition that failed since its last successful one",
        "class of the partition's last failure until a copy succeeds: 0 none, 1 timeout, 2 throttled, "
            + "3 unavailable, 4 auth, 5 rejected, 6 not-found, 7 corrupt, 8 config, 9 internal"};
    /** Failure classes (tsm-core's ErrorClass names, in code order). */
    static final String[] FAILURE_CLASSES = {"timeout", "throttled", "unavailable", "auth", "rejected",
        "not-found", "corrupt", "config", "internal"};
    /** Caffeine's removal causes: the Java plugin registers a {@code cause} MBean for each. */
    static final String[] CAUSES = {"EXPLICIT", "REPLACED", "COLLECTED", "EXPIRED", "SIZE"};
    static final String[] S3_OPS = {"create-multipart-upload", "upload-part", "complete-multipart-upload",
        "abort-multipart-upload", "put-object", "get-object", "delete-object", "delete-objects"};
    static final String[] S3_ERRORS = {"throttling", "server", "configured-timeout", "io", "other"};
    static final String[] GCS_OPS = {"object-get", "object-metadata-get", "object-delete",
        "resumable-upload-initiate", "resumable-chunk-upload"};
    static final String[] AZURE_OPS = {"blob-get", "blob-upload", "block-upload", "block-list-upload", "blob-delete"};

    private final Supplier<String> source;
    private final List<Metrics> registries = new ArrayList<>();
    private final List<Feed> feeds = new ArrayList<>();
    private final Map<String, Double> previous = new HashMap<>();
    private volatile Map<String, Object> latest;
    /** Per-partition values by "topic partition" (see {@link #partitions}). */
    private volatile Map<String, long[]> tier = Map.of();
    /** Partitions whose MBean is registered (guarded by this). */
    private final Set<String> tierRegistered = new HashSet<>();
    private Metrics tsmRegistry;
    private final ScheduledExecutorService poller;

    /** A sensor fed with what changed in the native snapshot since the previous poll. */
    private interface Feed {
        void poll(Map<String, Object> now, NativeMetricsFeed f);
    }

    /**
     * Registers the MBeans and starts polling. {@code source} gives the native metrics text (null
     * once the instance is closed); {@code backend} is {@code s3}, {@code gcs}, {@code azure} or
     * null (no client MBean).
     */
    NativeMetricsFeed(Supplier<String> source, MetricConfig config, String backend) {
        this.source = source;
        this.latest = TsmMetrics.parse(source.get(), true);
        Metrics caches = registry(config, CACHE_DOMAIN);
        Metrics pools = registry(config, POOL_DOMAIN);
        cache(caches, pools, "segment-manifest-cache", "manifest");
        cache(caches, pools, "segment-indexes-cache", "indexes");
        if (latest.containsKey("cache.chunk.entries")) {
            cache(caches, pools, "chunk-cache", "chunk");
        }
        if ("s3".equals(backend)) {
            Metrics m = registry(config, "aiven.kafka.server.tieredstorage.s3");
            for (String op : S3_OPS) {
                counted(m, "s3-client-metrics", op + "-requests", "client.s3." + op + ".requests");
                timed(m, "s3-client-metrics", op + "-time", "client.s3." + op);
            }
            for (String e : S3_ERRORS) {
                counted(m, "s3-client-metrics", e + "-errors", "client.s3.errors." + e);
            }
        } else if ("gcs".equals(backend)) {
            Metrics m = registry(config, "aiven.kafka.server.tieredstorage.gcs");
            for (String op : GCS_OPS) {
                counted(m, "gcs-client-metrics", op, "client.gcs." + op + ".requests");
            }
        } else if ("azure".equals(backend)) {
            Metrics m = registry(config, "aiven.kafka.server.tieredstorage.azure");
            for (String op : AZURE_OPS) {
                counted(m, "azure-blob-storage-client-metrics", op, "client.azure." + op + ".requests");
            }
        }
        Metrics tsm = registry(config, TSM_DOMAIN);
        counted(tsm, TSM_GROUP, "storage-downloaded-bytes", "backend.bytes.downloaded");
        counted(tsm, TSM_GROUP, "segment-fetch-served-bytes", "fetch.bytes.served");
        counted(tsm, TSM_GROUP, "storage-get-requests", "client.get.requests");
        counted(tsm, TSM_GROUP, "storage-put-requests", "client.put.requests");
        counted(tsm, TSM_GROUP, "integrity-unverified-segments", "integrity.unverified");
        counted(tsm, TSM_GROUP, "integrity-failures", "integrity.failures");
        gauge(tsm, TSM_GROUP, "native-memory-in-use-bytes", "native memory reserved by calls in flight (bytes)",
                null, "memory.in_use.bytes");
        gauge(tsm, TSM_GROUP, "native-memory-budget-bytes", "native memory budget, tsm.memory.budget.bytes",
                null, "memory.budget.bytes");
        gauge(tsm, TSM_GROUP, "native-memory-copy-in-use-bytes", "native memory reserved by copies in flight (bytes)",
                null, "memory.copy.reserved.bytes");
        gauge(tsm, TSM_GROUP, "native-memory-copy-pool-bytes", "the copies' pool, tsm.memory.copy.bytes (bytes)",
                null, "memory.copy.pool.bytes");
        gauge(tsm, TSM_GROUP, "native-memory-read-in-use-bytes", "native memory reserved by reads in flight (bytes)",
                null, "memory.read.reserved.bytes");
        gauge(tsm, TSM_GROUP, "native-memory-read-pool-bytes", "the reads' pool (bytes)",
                null, "memory.read.pool.bytes");
        gauge(tsm, TSM_GROUP, "copies-in-flight", "copies in flight", null, "copy.in_flight");
        gauge(tsm, TSM_GROUP, "copy-oldest-in-flight-age-ms", "age of the oldest copy in flight (ms; 0: none)",
                null, "copy.oldest.age.ms");
        gauge(tsm, TSM_GROUP, "fetches-in-flight", "fetchLogSegment opens and fetchIndex calls in flight",
                null, "fetch.in_flight");
        gauge(tsm, TSM_GROUP, "fetch-oldest-in-flight-age-ms", "age of the oldest fetch in flight (ms; 0: none)",
                null, "fetch.oldest.age.ms");
        gauge(tsm, TSM_GROUP, "tier-partitions-failing", "partitions whose last copy failed", null,
                "tier.partitions.failing");
        gauge(tsm, TSM_GROUP, "tier-partitions-stalled",
                "partitions with a copy running past tsm.copy.stall.warn.factor times its expected time", null,
                "tier.partitions.stalled");
        for (String c : FAILURE_CLASSES) {
            Map<String, String> t = new LinkedHashMap<>();
            t.put("class", c);
            gauge(tsm, TSM_GROUP, "copy-failures-total", "failed copies by class", t, "copy.failures." + c);
            gauge(tsm, TSM_GROUP, "fetch-failures-total", "failed fetches and fetchIndex calls by class", t,
                    "fetch.failures." + c);
        }
        tsmRegistry = tsm;
        pollNow();
        poller = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "tsm-metrics-poller");
            t.setDaemon(true);
            return t;
        });
        poller.scheduleWithFixedDelay(this::pollQuietly, POLL_MS, POLL_MS, TimeUnit.MILLISECONDS);
    }

    /** The backend tag for {@code storage.backend.class} (tsm's short names or the Java class names). */
    static String backendOf(String cls) {
        if (cls == null) {
            return null;
        }
        String c = cls.trim();
        if (c.equalsIgnoreCase("s3") || c.endsWith(".S3Storage")) {
            return "s3";
        }
        if (c.equalsIgnoreCase("gcs") || c.endsWith(".GcsStorage")) {
            return "gcs";
        }
        if (c.equalsIgnoreCase("azure") || c.endsWith(".AzureBlobStorage")) {
            return "azure";
        }
        return null;
    }

    private Metrics registry(MetricConfig config, String domain) {
        Metrics m = new Metrics(config, List.of(new JmxReporter()), Time.SYSTEM, new KafkaMetricsContext(domain));
        registries.add(m);
        return m;
    }

    private void cache(Metrics caches, Metrics pools, String cache, String nat) {
        String g = cache + "-metrics";
        String p = "cache." + nat + ".";
        gauge(caches, g, "cache-hits-total", "cache hits", null, p + "hits");
        gauge(caches, g, "cache-misses-total", "cache misses", null, p + "misses");
        gauge(caches, g, "cache-load-success-total", "successful cache loads", null, p + "loads", "-" + p + "load.errors");
        gauge(caches, g, "cache-load-success-time-total", "time of successful cache loads (ns)", null,
                p + "load.success.nanos");
        gauge(caches, g, "cache-load-failure-total", "failed cache loads", null, p + "load.errors");
        gauge(caches, g, "cache-load-failure-time-total", "time of failed cache loads (ns)", null,
                p + "load.failure.nanos");
        gauge(caches, g, "cache-eviction-total", "cache evictions", null, p + "evictions");
        gauge(caches, g, "cache-eviction-weight-total", "weight of evicted entries", null,
                p + "eviction.weight.size", p + "eviction.weight.expired");
        gauge(caches, g, "cache-size-total", "entries in the cache", null, p + "entries");
        for (String cause : CAUSES) {
            Map<String, String> t = Map.of("cause", cause);
            String suffix = cause.equals("SIZE") ? "size" : cause.equals("EXPIRED") ? "expired" : null;
            gauge(caches, g, "cache-eviction-total", "cache evictions by cause", t,
                    suffix == null ? null : p + "evictions." + suffix);
            gauge(caches, g, "cache-eviction-weight-total", "weight of evicted entries by cause", t,
                    suffix == null ? null : p + "eviction.weight." + suffix);
        }
        String pg = cache + "-thread-pool-metrics";
        gauge(pools, pg, "active-thread-count-total", "runtime workers not parked", null, "runtime.workers.active");
        gauge(pools, pg, "running-thread-count-total", "runtime workers not parked", null, "runtime.workers.active");
        gauge(pools, pg, "pool-size-total", "runtime worker threads", null, "runtime.workers");
        gauge(pools, pg, "parallelism-total", "runtime worker threads", null, "runtime.workers");
        gauge(pools, pg, "queued-task-count-total", "tasks in the runtime's global queue", null, "runtime.queue.depth");
        gauge(pools, pg, "steal-task-count-total", "not exposed by the runtime: always 0", null, (String) null);
    }

    /**
     * A measurable: the sum of the native values {@code keys} (a key starting with {@code -} is
     * subtracted; null keys contribute 0) in the latest snapshot.
     */
    private void gauge(Metrics m, String group, String name, String doc, Map<String, String> tags, String... keys) {
        MetricName n = m.metricName(name, group, doc, tags == null ? new LinkedHashMap<>() : tags);
        m.addMetric(n, (Measurable) (config, now) -> {
            Map<String, Object> s = latest;
            double v = 0;
            for (String k : keys) {
                if (k == null) {
                    continue;
                }
                boolean minus = k.startsWith("-");
                Object o = s.get(minus ? k.substring(1) : k);
                double d = o instanceof Number ? ((Number) o).doubleValue() : 0;
                v += minus ? -d : d;
            }
            return v;
        });
    }

    /** {@code <base>-rate} (Rate) and {@code <base>-total} (CumulativeSum) of a native counter's deltas. */
    private void counted(Metrics m, String group, String base, String key) {
        Sensor s = m.sensor(group + "." + base);
        s.add(m.metricName(base + "-rate", group, "Rate of " + base), new Rate());
        s.add(m.metricName(base + "-total", group, "Total " + base), new CumulativeSum());
        feeds.add((now, f) -> {
            double d = f.delta(now, key);
            if (d > 0) {
                s.record(d);
            }
        });
    }

    /** {@code <base>-avg} / {@code <base>-max} (ms) of a native latency's observations since the previous poll. */
    private void timed(Metrics m, String group, String base, String key) {
        Sensor avg = m.sensor(group + "." + base + ".avg");
        avg.add(m.metricName(base + "-avg", group, "Average " + base + " (ms)"), new Avg());
        Sensor max = m.sensor(group + "." + base + ".max");
        max.add(m.metricName(base + "-max", group, "Maximum " + base + " (ms)"), new Max());
        feeds.add((now, f) -> {
            double count = f.delta(now, key + ".latency.count");
            double sum = f.delta(now, key + ".latency.sumMs");
            if (count <= 0) {
                return;
            }
            double mean = sum / count;
            for (int i = 0; i < Math.min(count, MAX_RECORDS); i++) {
                avg.record(mean);
            }
            Object w = now.get(key + ".latency.windowMaxMs");
            if (w instanceof Number) {
                max.record(((Number) w).doubleValue());
            }
        });
    }

    /**
     * The {@code partition <topic> <partition> <since_last_success_ms> <oldest_copy_ms>
     * <copies_in_flight> <consecutive_failures> <last_failure_class>} lines of the native text, by
     * {@code "<topic> <partition>"}: the five values after the partition number.
     */
    static Map<String, long[]> partitions(String text) {
        Map<String, long[]> out = new LinkedHashMap<>();
        if (text == null) {
            return out;
        }
        for (String line : text.split("\n")) {
            String[] f = line.trim().split(" ");
            if (f.length != 3 + TIER_ATTRS.length || !f[0].equals("partition")) {
                continue;
            }
            try {
                Integer.parseInt(f[2]);
                long[] v = new long[TIER_ATTRS.length];
                for (int i = 0; i < v.length; i++) {
                    v[i] = Long.parseLong(f[3 + i]);
                }
                out.put(f[1] + " " + f[2], v);
            } catch (NumberFormatException e) {
                // skip a malformed line
            }
        }
        return out;
    }

    /** Registers the MBean of each partition new in {@code now}; unregisters those gone. */
    private void syncPartitions(Map<String, long[]> now) {
        Metrics m = tsmRegistry;
        if (m == null) {
            return;
        }
        for (String k : now.keySet()) {
            if (!tierRegistered.add(k)) {
                continue;
            }
            for (int i = 0; i < TIER_ATTRS.length; i++) {
                final int at = i;
                m.addMetric(tierName(m, k, i), (Measurable) (config, t) -> {
                    long[] v = tier.get(k);
                    return v == null ? 0 : v[at];
                });
            }
        }
        for (Iterator<String> it = tierRegistered.iterator(); it.hasNext();) {
            String k = it.next();
            if (!now.containsKey(k)) {
                for (int i = 0; i < TIER_ATTRS.length; i++) {
                    m.removeMetric(tierName(m, k, i));
                }
                it.remove();
            }
        }
    }

    private static MetricName tierName(Metrics m, String key, int attr) {
        int space = key.lastIndexOf(' ');
        Map<String, String> tags = new LinkedHashMap<>();
        tags.put("topic", key.substring(0, space));
        tags.put("partition", key.substring(space + 1));
        return m.metricName(TIER_ATTRS[attr], TIER_GROUP, TIER_DOCS[attr], tags);
    }

    private double delta(Map<String, Object> now, String key) {
        Object o = now.get(key);
        if (!(o instanceof Number)) {
            return 0;
        }
        double v = ((Number) o).doubleValue();
        Double before = previous.put(key, v);
        return before == null ? v : v - before;
    }

    /** Reads the native counters once and feeds the sensors (the poller does this every {@link #POLL_MS} ms). */
    synchronized void pollNow() {
        String text = source.get();
        if (text == null) {
            return;
        }
        Map<String, Object> now = TsmMetrics.parse(text, true);
        latest = now;
        Map<String, long[]> parts = partitions(text);
        tier = parts;
        syncPartitions(parts);
        for (Feed f : feeds) {
            f.poll(now, this);
        }
    }

    private void pollQuietly() {
        try {
            pollNow();
        } catch (RuntimeException e) {
            LOG.debug("tsm: metrics poll failed: {}", e.toString());
        }
    }

    /** Stops the poller (waits at most 1 s for a poll in progress) and unregisters every MBean. */
    @Override
    public void close() {
        poller.shutdownNow();
        try {
            poller.awaitTermination(1, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (Metrics m : registries) {
            m.close();
        }
    }
}
