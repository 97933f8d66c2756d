package io.tsm.kafka;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.JmxReporter;
import org.apache.kafka.common.metrics.KafkaMetricsContext;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.metrics.stats.Avg;
import org.apache.kafka.common.metrics.stats.CumulativeCount;
import org.apache.kafka.common.metrics.stats.CumulativeSum;
import org.apache.kafka.common.metrics.stats.Max;
import org.apache.kafka.common.metrics.stats.Rate;
import org.apache.kafka.common.utils.Time;

/**
 * The Java plugin's per-call metrics, under its JMX names: MBeans
 * {@code aiven.kafka.server.tieredstorage:type=remote-storage-manager-metrics} with no tag, by
 * {@code topic}, {@code topic,partition}, {@code object-type}, {@code topic,object-type} and
 * {@code topic,partition,object-type} (tag values as Kafka's {@link JmxReporter} writes them:
 * quoted only when they contain characters outside {@code [\w-%. \t]}). Registered through
 * Kafka's own {@link Metrics} + {@link JmxReporter}, as the Java plugin does, so names, tags and
 * attribute names are the same by construction; rates are per second over the sample window
 * ({@code metrics.sample.window.ms} x {@code metrics.num.samples}), {@code -total} cumulative,
 * times in ms. Sensors tagged by partition are at recording level DEBUG (they exist, and count
 * only with {@code metrics.recording.level=DEBUG}), as in the Java plugin.
 *
 * <p>The untagged and object-type MBeans are registered with all their attributes at configure,
 * a topic's and partition's at the first call for it (the Java plugin registers each attribute
 * at its first record, so e.g. {@code segment-delete-errors-total} appears only after an error).
 *
 * <p>Recorded by {@link TsmRemoteStorageManager} when a call ends (Java plugin semantics):
 * copy time and each uploaded object (type {@code log}, {@code indexes}, {@code rsm-manifest}
 * with its stored bytes, as the native copy reports them) after a successful copy; a delete
 * (count, bytes = the segment's size) when it starts, its time when it succeeds, an error when
 * it fails; the fetch's requested byte range before the fetch. See docs/metrics.md.
 */
final class CallMetrics implements AutoCloseable {
    static final String DOMAIN = "aiven.kafka.server.tieredstorage";
    static final String GROUP = "remote-storage-manager-metrics";

    private static final String[] OBJECT_TYPES = {"log", "indexes", "rsm-manifest"};

    private final Metrics metrics;
    /** Topic-partitions whose MBeans are registered. */
    private final Set<String> seen = ConcurrentHashMap.newKeySet();

    CallMetrics(MetricConfig config) {
        metrics = new Metrics(config, List.of(new JmxReporter()), Time.SYSTEM, new KafkaMetricsContext(DOMAIN));
        // The untagged and object-type MBeans exist from the start, with every attribute.
        register(Scope.TOTAL, null, 0);
    }

    /**
     * Registers every sensor of {@code topic}-{@code partition}'s MBeans (topic, partition, with
     * and without object type) on its first call, so each MBean shows all its attributes, errors at
     * 0 included, from then on.
     */
    private void ensure(String topic, int partition) {
        if (seen.add(topic + "-" + partition)) {
            register(Scope.TOPIC, topic, partition);
            register(Scope.PARTITION, topic, partition);
        }
    }

    private void register(Scope s, String topic, int partition) {
        time(s, topic, partition, "segment-copy-time", COPY_TIME_DOC);
        count(s, topic, partition, null, "segment-delete", DELETE_DOC);
        sum(s, topic, partition, null, "segment-delete-bytes", DELETE_BYTES_DOC);
        time(s, topic, partition, "segment-delete-time", DELETE_TIME_DOC);
        count(s, topic, partition, null, "segment-delete-errors", DELETE_ERRORS_DOC);
        sum(s, topic, partition, null, "segment-fetch-requested-bytes", FETCH_DOC);
        for (String type : new String[] {null, OBJECT_TYPES[0], OBJECT_TYPES[1], OBJECT_TYPES[2]}) {
            count(s, topic, partition, type, "object-upload", UPLOAD_DOC);
            sum(s, topic, partition, type, "object-upload-bytes", UPLOAD_BYTES_DOC);
        }
    }

    private static final String COPY_TIME_DOC = "time spent processing and uploading a log segment and indexes";
    private static final String DELETE_DOC = "delete remote segment operations, including all its objects";
    private static final String DELETE_BYTES_DOC = "deleted number of bytes estimated from segment size";
    private static final String DELETE_TIME_DOC = "time spent deleting log segment and indexes";
    private static final String DELETE_ERRORS_DOC = "errors during remote log segment deletion";
    private static final String FETCH_DOC = "segment fetch requested bytes";
    private static final String UPLOAD_DOC = "object uploads";
    private static final String UPLOAD_BYTES_DOC = "object upload bytes";

    /** A successful copy of a segment of {@code topic}-{@code partition}. */
    void copied(String topic, int partition, long timeMs, List<Wire.Upload> uploads) {
        ensure(topic, partition);
        for (Scope s : Scope.values()) {
            time(s, topic, partition, "segment-copy-time", COPY_TIME_DOC).record(timeMs);
        }
        for (Wire.Upload u : uploads) {
            for (Scope s : Scope.values()) {
                for (String type : new String[] {null, u.type}) {
                    count(s, topic, partition, type, "object-upload", UPLOAD_DOC).record();
                    sum(s, topic, partition, type, "object-upload-bytes", UPLOAD_BYTES_DOC).record(u.bytes);
                }
            }
        }
    }

    /** A delete starts (the Java plugin counts it, and the segment's size, up front). */
    void deleteStarted(String topic, int partition, long segmentBytes) {
        ensure(topic, partition);
        for (Scope s : Scope.values()) {
            count(s, topic, partition, null, "segment-delete", DELETE_DOC).record();
            sum(s, topic, partition, null, "segment-delete-bytes", DELETE_BYTES_DOC).record(segmentBytes);
        }
    }

    /** A delete succeeded after {@code timeMs}. */
    void deleted(String topic, int partition, long timeMs) {
        ensure(topic, partition);
        for (Scope s : Scope.values()) {
            time(s, topic, partition, "segment-delete-time", DELETE_TIME_DOC).record(timeMs);
        }
    }

    /** A delete failed. */
    void deleteFailed(String topic, int partition) {
        ensure(topic, partition);
        for (Scope s : Scope.values()) {
            count(s, topic, partition, null, "segment-delete-errors", DELETE_ERRORS_DOC).record();
        }
    }

    /** A fetch asked for {@code bytes} (its range, to the segment end when open-ended). */
    void fetchRequested(String topic, int partition, long bytes) {
        ensure(topic, partition);
        for (Scope s : Scope.values()) {
            sum(s, topic, partition, null, "segment-fetch-requested-bytes", FETCH_DOC).record(bytes);
        }
    }

    @Override
    public void close() {
        metrics.close();
    }

    /** The Kafka metrics (tests). */
    Metrics metrics() {
        return metrics;
    }

    /** The tag sets: total, by topic, by topic and partition (per-object-type ones add the type). */
    private enum Scope {
        TOTAL, TOPIC, PARTITION;

        Map<String, String> tags(String topic, int partition, String objectType) {
            Map<String, String> t = new LinkedHashMap<>();
            if (this != TOTAL) {
                t.put("topic", topic);
            }
            if (this == PARTITION) {
                t.put("partition", String.valueOf(partition));
            }
            if (objectType != null) {
                t.put("object-type", objectType);
            }
            return t;
        }

        Sensor.RecordingLevel level() {
            return this == PARTITION ? Sensor.RecordingLevel.DEBUG : Sensor.RecordingLevel.INFO;
        }
    }

    private interface Stats {
        void add(Sensor s, Map<String, String> tags);
    }

    private Sensor sensor(Scope scope, String topic, int partition, String objectType, String base, Stats stats) {
        Map<String, String> tags = scope.tags(topic, partition, objectType);
        String name = base + tags;
        Sensor s = metrics.getSensor(name);
        if (s != null) {
            return s;
        }
        synchronized (this) {
            s = metrics.getSensor(name);
            if (s == null) {
                s = metrics.sensor(name, scope.level());
                stats.add(s, tags);
            }
            return s;
        }
    }

    private MetricName name(String name, String doc, Map<String, String> tags) {
        return metrics.metricName(name, GROUP, doc, tags);
    }

    /** {@code <base>-rate} (Rate) and {@code <base>-total} (CumulativeCount). */
    private Sensor count(Scope sc, String topic, int partition, String type, String base, String doc) {
        return sensor(sc, topic, partition, type, base, (s, t) -> {
            s.add(name(base + "-rate", "Rate of " + doc, t), new Rate());
            s.add(name(base + "-total", "Total number of " + doc, t), new CumulativeCount());
        });
    }

    /** {@code <base>-rate} (Rate) and {@code <base>-total} (CumulativeSum). */
    private Sensor sum(Scope sc, String topic, int partition, String type, String base, String doc) {
        return sensor(sc, topic, partition, type, base, (s, t) -> {
            s.add(name(base + "-rate", "Rate of " + doc, t), new Rate());
            s.add(name(base + "-total", "Total " + doc, t), new CumulativeSum());
        });
    }

    /** {@code <base>-avg} (Avg) and {@code <base>-max} (Max), ms. */
    private Sensor time(Scope sc, String topic, int partition, String base, String doc) {
        return sensor(sc, topic, partition, null, base, (s, t) -> {
            s.add(name(base + "-avg", "Average " + doc, t), new Avg());
            s.add(name(base + "-max", "Maximum " + doc, t), new Max());
        });
    }
}
