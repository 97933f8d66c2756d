package io.tsm.examples.strimzi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.ConfigMapKeySelector;
import io.strimzi.api.kafka.model.common.metrics.JmxPrometheusExporterMetrics;

/**
 * examples/strimzi/metrics-config.yaml: the Kafka resource scrapes its brokers through the
 * JMX exporter with the ConfigMap's rules, which are prometheus/jmx-exporter.yml verbatim (the
 * file a real broker's exporter loads in scripts/test.d/60-broker.sh), and every rule is one
 * the exporter can load: a pattern that compiles and a name.
 */
class MetricsConfigTest {
    private static ConfigMap configMap() {
        List<StrictYaml.Doc> d = Examples.docs(Examples.METRICS);
        assertEquals(1, d.size(), Examples.METRICS + " holds one ConfigMap");
        return d.get(0).as(ConfigMap.class);
    }

    @Test
    void theKafkaResourceScrapesWithTheConfigMapsRules() {
        JmxPrometheusExporterMetrics m = assertInstanceOf(JmxPrometheusExporterMetrics.class,
                Examples.kafka().getSpec().getKafka().getMetricsConfig(),
                "spec.kafka.metricsConfig must be type jmxPrometheusExporter");
        ConfigMapKeySelector ref = Checks.present(m.getValueFrom(), "metricsConfig.valueFrom").getConfigMapKeyRef();
        assertNotNull(ref, "metricsConfig.valueFrom.configMapKeyRef");
        ConfigMap cm = configMap();
        assertEquals(cm.getMetadata().getName(), ref.getName(), "the ConfigMap of " + Examples.METRICS);
        Map<String, String> data = cm.getData();
        assertTrue(data.containsKey(ref.getKey()), Examples.METRICS + " has the key " + ref.getKey());
        assertEquals(Repo.read(Examples.EXPORTER_RULES), data.get(ref.getKey()),
                "the ConfigMap's " + ref.getKey() + " must be " + Examples.EXPORTER_RULES + " verbatim");
    }

    @Test
    void theAlertRulesWrapIntoAPrometheusRuleAsTheDocsShow() throws Exception {
        String rules = Repo.read(Examples.ALERT_RULES);
        JsonNode plain = new YAMLMapper().readTree(rules);
        assertEquals(List.of("groups"), iterate(plain.fieldNames()), Examples.ALERT_RULES + " has only groups at its top");
        String docs = Repo.read("docs/strimzi.md");
        assertTrue(docs.contains("sed 's/^/  /' " + Examples.ALERT_RULES), "docs/strimzi.md wraps the rule file by indenting it under spec");
        StringBuilder wrapped = new StringBuilder("apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  name: tsm-alerts\nspec:\n");
        rules.lines().forEach(l -> wrapped.append("  ").append(l).append('\n'));
        JsonNode pr = new YAMLMapper().readTree(wrapped.toString());
        assertEquals(plain.get("groups"), pr.path("spec").path("groups"), "the wrapped rules are the file's rules");
    }

    private static List<String> iterate(java.util.Iterator<String> it) {
        List<String> out = new java.util.ArrayList<>();
        it.forEachRemaining(out::add);
        return out;
    }

    @Test
    void everyExporterRuleHasAPatternThatCompilesAndAName() throws Exception {
        JsonNode cfg = new YAMLMapper().readTree(Repo.read(Examples.EXPORTER_RULES));
        assertTrue(cfg.path("lowercaseOutputName").asBoolean(), "lowercaseOutputName: true");
        JsonNode rules = cfg.path("rules");
        assertTrue(rules.isArray() && rules.size() > 0, "rules");
        for (JsonNode r : rules) {
            String pattern = r.path("pattern").asText("");
            assertTrue(!pattern.isEmpty() && !r.path("name").asText("").isEmpty(), "pattern and name: " + r);
            // The exporter compiles each pattern inside ^.*(?: ... ).*$ (JmxCollector).
            Pattern.compile("^.*(?:" + pattern + ").*$");
            // A COUNTER is named ..._total (an attribute that only grows); a GAUGE is not (the
            // exporter would drop the suffix and the documented name would not exist).
            String type = r.path("type").asText();
            boolean total = r.path("name").asText().endsWith("_total");
            assertEquals(total ? "COUNTER" : "GAUGE", type, "a rule named ..._total is a COUNTER, any other a GAUGE: " + r);
        }
    }
}
