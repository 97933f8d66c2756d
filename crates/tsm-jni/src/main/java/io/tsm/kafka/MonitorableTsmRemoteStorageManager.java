package io.tsm.kafka;

import java.util.LinkedHashMap;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.Monitorable;
import org.apache.kafka.common.metrics.PluginMetrics;

/**
 * {@link TsmRemoteStorageManager} that also registers the engine's metrics with the broker
 * through KIP-877 {@link Monitorable} (Kafka 4.1+). Use this class name on brokers that have
 * {@code org.apache.kafka.common.metrics.Monitorable}; on older brokers it cannot load, so the
 * base class does not implement the interface (the base class's JMX MBean works everywhere).
 *
 * <p>Each engine metric becomes a gauge named like the JMX attribute with '.' replaced by '-'
 * (e.g. {@code copy-count}); new metric names are picked up after calls, at most once a second.
 */
public class MonitorableTsmRemoteStorageManager extends TsmRemoteStorageManager implements Monitorable {
    private static final long SYNC_INTERVAL_NANOS = 1_000_000_000L;

    private volatile PluginMetrics pluginMetrics;
    private final Set<String> registered = ConcurrentHashMap.newKeySet();
    private volatile long lastSync = System.nanoTime() - SYNC_INTERVAL_NANOS;

    /** Public no-arg constructor: the broker instantiates the plugin reflectively. */
    public MonitorableTsmRemoteStorageManager() {}

    @Override
    public void withPluginMetrics(PluginMetrics metrics) {
        this.pluginMetrics = metrics;
        syncPluginMetrics();
    }

    @Override
    void afterCall() {
        long now = System.nanoTime();
        if (now - lastSync >= SYNC_INTERVAL_NANOS) {
            lastSync = now;
            syncPluginMetrics();
        }
    }

    /** Registers a gauge for every engine metric not registered yet. */
    void syncPluginMetrics() {
        PluginMetrics m = pluginMetrics;
        if (m == null) {
            return;
        }
        for (String name : TsmMetrics.parse(metricsText()).keySet()) {
            if (registered.add(name)) {
                m.addMetric(m.metricName(name.replace('.', '-'), "tsm engine metric " + name, new LinkedHashMap<>()),
                        (Gauge<Object>) (config, now) -> TsmMetrics.parse(metricsText()).get(name));
            }
        }
    }
}
