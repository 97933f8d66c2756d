package io.tsm.examples.strimzi;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * What {@code kafka.strimzi.io/v1} removed from {@code v1beta2}, checked on the raw document
 * (the v1beta2 model {@link StrictYaml} reads into still has these fields, so it would accept
 * them). Source: Strimzi's proposals "Strimzi v1 CRD API and 1.0.0 release" (the removed
 * fields per resource, and {@code .spec} required everywhere) and "Deprecate and remove
 * {@code .spec.kafka.resources}"; {@code .spec.kafka.replicas} / {@code .storage} belong to
 * the node pools (ignored or removed with them).
 */
final class V1Api {
    private V1Api() {}

    /** JSON pointers of fields v1 does not have, per kind. */
    static final Map<String, List<String>> REMOVED = Map.of(
            "Kafka", List.of(
                    "/spec/zookeeper", "/spec/jmxTrans",
                    "/spec/kafka/replicas", "/spec/kafka/storage", "/spec/kafka/resources",
                    "/spec/kafka/template/statefulset",
                    "/spec/cruiseControl/tlsSidecar", "/spec/cruiseControl/template/tlsSidecarContainer",
                    "/spec/cruiseControl/brokerCapacity/cpuUtilization", "/spec/cruiseControl/brokerCapacity/disk",
                    "/spec/kafkaExporter/template/service",
                    "/spec/entityOperator/tlsSidecar", "/spec/entityOperator/template/tlsSidecarContainer",
                    "/spec/entityOperator/topicOperator/reconciliationIntervalSeconds",
                    "/spec/entityOperator/topicOperator/zookeeperSessionTimeoutSeconds",
                    "/spec/entityOperator/topicOperator/topicMetadataMaxAttempts",
                    "/spec/entityOperator/userOperator/reconciliationIntervalSeconds",
                    "/spec/entityOperator/userOperator/zookeeperSessionTimeoutSeconds"),
            "KafkaNodePool", List.of("/spec/storage/overrides"),
            "KafkaTopic", List.of());

    /** Problems of {@code doc} against the v1 API (empty: none found). */
    static List<String> problems(StrictYaml.Doc doc) {
        List<String> out = new ArrayList<>();
        JsonNode t = doc.tree();
        // Strimzi's resources only: a Secret or ConfigMap (core v1) has no .spec.
        if (t.path("apiVersion").asText("").startsWith("kafka.strimzi.io/") && !t.path("spec").isObject()) {
            out.add(doc.where() + ": v1 requires .spec");
        }
        for (String p : REMOVED.getOrDefault(doc.kind(), List.of())) {
            if (!t.at(p).isMissingNode()) {
                out.add(doc.where() + ": " + p + " is not in the v1 API");
            }
        }
        if (doc.kind().equals("Kafka")) {
            String authz = t.at("/spec/kafka/authorization/type").asText("");
            if (authz.equals("opa") || authz.equals("keycloak")) {
                out.add(doc.where() + ": authorization type " + authz + " is not in the v1 API (use custom)");
            }
            for (JsonNode l : t.at("/spec/kafka/listeners")) {
                JsonNode auth = l.path("authentication");
                if (auth.path("type").asText("").equals("oauth")) {
                    out.add(doc.where() + ": listener " + l.path("name").asText() + " authentication oauth is not in v1 (use custom)");
                }
                if (auth.has("secrets")) {
                    out.add(doc.where() + ": listener " + l.path("name").asText()
                            + " authentication.secrets is not in v1 (mount them through template volumes)");
                }
            }
        }
        if (doc.kind().equals("KafkaNodePool")) {
            for (JsonNode v : t.at("/spec/storage/volumes")) {
                if (v.has("overrides")) {
                    out.add(doc.where() + ": storage volume " + v.path("id").asText() + " overrides are not in v1");
                }
            }
        }
        return out;
    }
}
