package io.tsm.kafka;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import javax.management.InstanceAlreadyExistsException;
import javax.management.MBeanServer;
import javax.management.ObjectName;

import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.server.log.remote.storage.LogSegmentData;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * tsm as a Kafka tiered-storage plugin (KIP-405 {@link RemoteStorageManager}): every method
 * delegates to the native engine (Rust crate tsm-core, through crate tsm-jni). Configure it on
 * the broker with {@code remote.log.storage.manager.class.name=io.tsm.kafka.TsmRemoteStorageManager}
 * and the {@code rsm.config.*} keys of the Java plugin it replaces.
 *
 * <p>Thread-safe: the broker's copier, expiration, reader and fetcher threads call one instance
 * concurrently. {@link #close()} may run while calls are in flight: they finish or fail, later
 * calls fail with {@link RemoteStorageException}. Errors: missing data gives
 * {@code RemoteResourceNotFoundException}; transient store errors give
 * {@code RetriableRemoteStorageException} on brokers that have it (4.1+, found by reflection);
 * everything else {@link RemoteStorageException} with the native cause chain in the message.
 *
 * <p>Keys read here (removed before the engine sees the map): {@value NativeLoader#DIR_CONFIG}
 * (native library extraction directory), {@code tsm.jni.worker.threads} (tokio workers, 0 = one
 * per core).
 */
public class TsmRemoteStorageManager implements RemoteStorageManager {
    private static final Logger LOG = LoggerFactory.getLogger(TsmRemoteStorageManager.class);

    private volatile long instance;
    private final AtomicBoolean closed = new AtomicBoolean();
    private ObjectName mbeanName;
    /** 1 for the first live instance in this JVM, 2 for a second one, ... (MBean names). */
    private int mbeanSlot = 1;
    /** The Java plugin's JMX metrics (CallMetrics: per call; NativeMetricsFeed: native counters). */
    private volatile CallMetrics calls;
    private NativeMetricsFeed feed;

    /** Public no-arg constructor: the broker instantiates the plugin reflectively. */
    public TsmRemoteStorageManager() {}

    @Override
    public void configure(Map<String, ?> configs) {
        Map<String, String> props = new TreeMap<>();
        for (Map.Entry<String, ?> e : configs.entrySet()) {
            Object v = e.getValue();
            if (v == null) {
                continue;
            }
            props.put(e.getKey(), v instanceof Password ? ((Password) v).value() : String.valueOf(v));
        }
        NativeLoader.ensureLoaded(props.get(NativeLoader.DIR_CONFIG));
        NativeLog.refreshLevel();
        long h;
        try {
            long op = NativeBridge.configureStart(Wire.props(props));
            Calls.await(op, "configure");
            h = NativeBridge.takeInstance(op);
        } catch (RemoteStorageException e) {
            // Configurable.configure cannot throw checked exceptions.
            throw new IllegalArgumentException("tsm: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("tsm: configure failed in native code: " + e.getMessage(), e);
        }
        synchronized (this) {
            if (instance != 0) {
                NativeBridge.closeInstance(instance);
            }
            instance = h;
            closed.set(false);
        }
        // node.id first: KAFKA-18628 deprecates broker.id for plugins, Kafka 5.0 drops it.
        String nodeId = props.get("node.id");
        registerMBean(nodeId != null ? nodeId : props.get("broker.id"));
        startMetrics(props);
        afterCall();
        LOG.info("tsm remote storage manager configured (native library for {})", NativeLoader.platform());
    }

    private long handle(String what) throws RemoteStorageException {
        long h = instance;
        if (closed.get()) {
            throw new RemoteStorageException(what + ": the remote storage manager is closed");
        }
        if (h == 0) {
            throw new RemoteStorageException(what + ": the remote storage manager is not configured");
        }
        return h;
    }

    @Override
    public Optional<RemoteLogSegmentMetadata.CustomMetadata> copyLogSegmentData(
            RemoteLogSegmentMetadata metadata, LogSegmentData data) throws RemoteStorageException {
        String what = "copy of " + metadata.remoteLogSegmentId();
        long h = handle(what);
        // A heap buffer: copy it without moving the broker's position.
        ByteBuffer epochs = data.leaderEpochIndex().duplicate();
        byte[] leaderEpoch = new byte[epochs.remaining()];
        epochs.get(leaderEpoch);
        long started = System.nanoTime();
        try {
            long op = NativeBridge.copyStart(h, Wire.metadata(metadata),
                    data.logSegment().toString(), data.offsetIndex().toString(), data.timeIndex().toString(),
                    data.transactionIndex().map(Object::toString).orElse(null),
                    data.producerSnapshotIndex().toString(), leaderEpoch);
            Calls.await(op, what);
            Wire.CopyResult result = Wire.copyResult(NativeBridge.takeBytes(op));
            CallMetrics m = calls;
            if (m != null) {
                m.copied(topic(metadata), partition(metadata), (System.nanoTime() - started) / 1_000_000,
                        result.uploads);
            }
            afterCall();
            byte[] custom = result.customMetadata;
            return custom == null ? Optional.empty()
                    : Optional.of(new RemoteLogSegmentMetadata.CustomMetadata(custom));
        } catch (RuntimeException e) {
            throw Calls.nativeFailure(what, e);
        }
    }

    @Override
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata metadata, int startPosition)
            throws RemoteStorageException {
        return fetch(metadata, startPosition, -1L);
    }

    @Override
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata metadata, int startPosition, int endPosition)
            throws RemoteStorageException {
        return fetch(metadata, startPosition, endPosition);
    }

    /** The {@code long} overload newer Kafka versions may add (to the end of the segment). */
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata metadata, long startPosition)
            throws RemoteStorageException {
        return fetch(metadata, startPosition, -1L);
    }

    /** The {@code long} overload newer Kafka versions may add (both positions inclusive). */
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata metadata, long startPosition, long endPosition)
            throws RemoteStorageException {
        if (endPosition < 0) {
            throw new RemoteStorageException("fetch of " + metadata.remoteLogSegmentId()
                    + ": negative end position " + endPosition);
        }
        return fetch(metadata, startPosition, endPosition);
    }

    private InputStream fetch(RemoteLogSegmentMetadata metadata, long start, long endInclusive)
            throws RemoteStorageException {
        String what = "fetch of " + metadata.remoteLogSegmentId() + " from byte " + start
                + (endInclusive < 0 ? "" : " to byte " + endInclusive);
        long h = handle(what);
        if (start < 0) {
            throw new RemoteStorageException(what + ": negative start position");
        }
        CallMetrics m = calls;
        if (m != null) {
            // As the Java plugin: the range asked for, to the segment's end when open-ended.
            long last = metadata.segmentSizeInBytes() - 1L;
            long end = endInclusive < 0 ? last : Math.min(endInclusive, last);
            m.fetchRequested(topic(metadata), partition(metadata), Math.max(0, end - start + 1));
        }
        try {
            long op = NativeBridge.fetchStart(h, Wire.metadata(metadata), start, endInclusive);
            Calls.await(op, what);
            InputStream in = new NativeInputStream(NativeBridge.takeStream(op), what);
            afterCall();
            return in;
        } catch (RuntimeException e) {
            throw Calls.nativeFailure(what, e);
        }
    }

    @Override
    public InputStream fetchIndex(RemoteLogSegmentMetadata metadata, IndexType indexType)
            throws RemoteStorageException {
        String what = "fetch of the " + indexType + " index of " + metadata.remoteLogSegmentId();
        long h = handle(what);
        try {
            long op = NativeBridge.fetchIndexStart(h, Wire.metadata(metadata), indexType.name());
            Calls.await(op, what);
            byte[] bytes = NativeBridge.takeBytes(op);
            afterCall();
            return new ByteArrayInputStream(bytes == null ? new byte[0] : bytes);
        } catch (RuntimeException e) {
            throw Calls.nativeFailure(what, e);
        }
    }

    @Override
    public void deleteLogSegmentData(RemoteLogSegmentMetadata metadata) throws RemoteStorageException {
        String what = "delete of " + metadata.remoteLogSegmentId();
        long h = handle(what);
        CallMetrics m = calls;
        if (m != null) {
            m.deleteStarted(topic(metadata), partition(metadata), metadata.segmentSizeInBytes());
        }
        long started = System.nanoTime();
        boolean ok = false;
        try {
            long op = NativeBridge.deleteStart(h, Wire.metadata(metadata));
            // The broker deletes after a failed copy, often on an interrupted thread: the
            // delete runs to its end (bounded natively by tsm.storage.delete.timeout.ms).
            Calls.awaitThroughInterrupts(op, what);
            NativeBridge.takeBytes(op);
            ok = true;
            afterCall();
        } catch (RuntimeException e) {
            throw Calls.nativeFailure(what, e);
        } finally {
            if (m != null) {
                if (ok) {
                    m.deleted(topic(metadata), partition(metadata), (System.nanoTime() - started) / 1_000_000);
                } else {
                    m.deleteFailed(topic(metadata), partition(metadata));
                }
            }
        }
    }

    /** Idempotent; calls in flight finish or fail, later calls fail. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        stopMetrics();
        long h = instance;
        if (h != 0) {
            try {
                NativeBridge.closeInstance(h);
            } catch (RuntimeException e) {
                LOG.warn("tsm: native close failed: {}", e.getMessage());
            }
        }
        unregisterMBean();
    }

    /** The engine's metrics as text (see src/lib.rs {@code metrics_text}); null when closed. */
    String metricsText() {
        long h = instance;
        if (h == 0 || closed.get()) {
            return null;
        }
        try {
            return NativeBridge.metrics(h);
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** As {@link #metricsText()}, with latency maxima since the previous call (the metrics poller's). */
    String metricsWindowText() {
        long h = instance;
        if (h == 0 || closed.get()) {
            return null;
        }
        try {
            return NativeBridge.metricsWindow(h);
        } catch (RuntimeException e) {
            return null;
        }
    }

    private static String topic(RemoteLogSegmentMetadata m) {
        return m.remoteLogSegmentId().topicIdPartition().topic();
    }

    private static int partition(RemoteLogSegmentMetadata m) {
        return m.remoteLogSegmentId().topicIdPartition().partition();
    }

    /**
     * Registers the Java plugin's MBeans (docs/metrics.md) with the sample window, samples and
     * recording level of {@code metrics.*}; a second live instance in this JVM ({@link #mbeanSlot}
     * above 1) tags all of them {@code instance=<slot>} so neither replaces the other's.
     */
    private synchronized void startMetrics(Map<String, String> props) {
        stopMetrics();
        Map<String, String> tags = mbeanSlot > 1 ? Map.of("instance", String.valueOf(mbeanSlot)) : Map.of();
        MetricConfig config = new MetricConfig()
                .samples(intProp(props, "metrics.num.samples", 2))
                .timeWindow(intProp(props, "metrics.sample.window.ms", 30_000), TimeUnit.MILLISECONDS)
                .recordLevel(Sensor.RecordingLevel.forName(
                        props.getOrDefault("metrics.recording.level", "INFO").trim().toUpperCase(Locale.ROOT)))
                .tags(tags);
        try {
            calls = new CallMetrics(config);
            feed = new NativeMetricsFeed(this::metricsWindowText, config,
                    NativeMetricsFeed.backendOf(props.get("storage.backend.class")));
        } catch (RuntimeException e) {
            LOG.warn("tsm: cannot register the JMX metrics: {}", e.toString());
            stopMetrics();
        }
    }

    private static int intProp(Map<String, String> props, String key, int dflt) {
        try {
            String v = props.get(key);
            return v == null ? dflt : Math.max(1, Integer.parseInt(v.trim()));
        } catch (NumberFormatException e) {
            return dflt; // the native configure has already rejected it
        }
    }

    private synchronized void stopMetrics() {
        NativeMetricsFeed f = feed;
        feed = null;
        if (f != null) {
            f.close();
        }
        CallMetrics c = calls;
        calls = null;
        if (c != null) {
            c.close();
        }
    }

    /** The native metrics feed (tests: poll it now instead of waiting for the poller). */
    synchronized NativeMetricsFeed metricsFeed() {
        return feed;
    }

    /** Called after each successful call; subclasses refresh derived state (metrics). */
    void afterCall() {}

    /** The native instance handle (0 before configure); for tests in this package. */
    long nativeHandle() {
        return instance;
    }

    /** The JMX name of this instance's metrics MBean (null when not registered). */
    public synchronized ObjectName metricsMBeanName() {
        return mbeanName;
    }

    /**
     * Registers tsm's own MBean under a name that is the same across restarts: the first live
     * instance in the JVM gets {@code io.tsm.kafka:type=RemoteStorageManager[,broker=<id>]}, a
     * second one {@code ...,instance=2}, and so on (the lowest free slot; the slot also tags the
     * Java plugin's MBeans, see {@link #startMetrics}).
     */
    private synchronized void registerMBean(String brokerId) {
        unregisterMBean();
        mbeanSlot = 1;
        String base = "io.tsm.kafka:type=RemoteStorageManager"
                + (brokerId == null ? "" : ",broker="
                        + (brokerId.matches("-?\\d+") ? brokerId : ObjectName.quote(brokerId)));
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        for (int slot = 1; slot <= 64; slot++) {
            try {
                ObjectName name = new ObjectName(base + (slot == 1 ? "" : ",instance=" + slot));
                server.registerMBean(new TsmMetrics(this), name);
                mbeanName = name;
                mbeanSlot = slot;
                return;
            } catch (InstanceAlreadyExistsException e) {
                // taken by another live instance: try the next slot
            } catch (Exception e) {
                LOG.warn("tsm: cannot register the metrics MBean: {}", e.toString());
                return;
            }
        }
        LOG.warn("tsm: cannot register the metrics MBean: 64 instances registered");
    }

    private synchronized void unregisterMBean() {
        if (mbeanName == null) {
            return;
        }
        try {
            ManagementFactory.getPlatformMBeanServer().unregisterMBean(mbeanName);
        } catch (Exception e) {
            LOG.debug("tsm: cannot unregister {}: {}", mbeanName, e.toString());
        }
        mbeanName = null;
    }
}
