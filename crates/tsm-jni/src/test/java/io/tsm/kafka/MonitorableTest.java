package io.tsm.kafka;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Map;

import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.junit.jupiter.api.Test;

/** KIP-877: the engine's metrics registered through Kafka's real PluginMetrics implementation. */
class MonitorableTest {
    @Test
    void engineMetricsBecomePluginGauges() throws Exception {
        Path work = Fixtures.work("monitorable");
        try (Metrics metrics = new Metrics();
                PluginMetricsImpl pluginMetrics = new PluginMetricsImpl(metrics,
                        Map.of("config", "remote.log.storage.manager.class.name", "class", "tsm"))) {
            MonitorableTsmRemoteStorageManager rsm = new MonitorableTsmRemoteStorageManager();
            rsm.configure(Fixtures.config(work.resolve("bucket")));
            rsm.withPluginMetrics(pluginMetrics);
            Fixtures.Segment s = Fixtures.segment(work.resolve("local"), 20_000, false, 41);
            rsm.copyLogSegmentData(s.metadata, s.data);
            rsm.fetchLogSegment(s.metadata, 0).close();
            rsm.syncPluginMetrics();
            boolean found = false;
            for (Map.Entry<MetricName, KafkaMetric> e : metrics.metrics().entrySet()) {
                if (e.getKey().description().startsWith("tsm engine metric")) {
                    found = true;
                    assertNotNull(e.getValue().metricValue(), e.getKey().toString());
                }
            }
            assertTrue(found, "no tsm gauge registered: " + metrics.metrics().keySet());
            rsm.close();
            assertFalse(metrics.metrics().isEmpty());
        }
    }
}
