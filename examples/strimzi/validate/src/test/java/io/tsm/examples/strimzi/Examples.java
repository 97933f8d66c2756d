package io.tsm.examples.strimzi;

import java.util.List;
import java.util.Optional;

import io.fabric8.kubernetes.api.model.Secret;
import io.strimzi.api.kafka.model.common.template.ContainerTemplate;
import io.strimzi.api.kafka.model.common.template.PodTemplate;
import io.strimzi.api.kafka.model.kafka.Kafka;
import io.strimzi.api.kafka.model.nodepool.KafkaNodePool;
import io.strimzi.api.kafka.model.nodepool.ProcessRoles;
import io.strimzi.api.kafka.model.topic.KafkaTopic;

/**
 * The manifests of examples/strimzi/, read strictly ({@link StrictYaml}): the files, what
 * each must hold, and the effective broker pod/container templates (a node pool's template
 * section replaces the Kafka resource's same section for its nodes, as Strimzi merges them).
 */
final class Examples {
    private Examples() {}

    static final String DIR = "examples/strimzi/";
    static final String KAFKA = DIR + "kafka.yaml";
    static final String TOPIC = DIR + "kafka-topic.yaml";
    static final String S3_SECRET = DIR + "secret-s3-credentials.yaml";
    static final String KEYS_SECRET = DIR + "secret-key-pairs.yaml";
    static final String METRICS = DIR + "metrics-config.yaml";
    /** The JMX exporter rules the metrics ConfigMap holds verbatim. */
    static final String EXPORTER_RULES = DIR + "prometheus/jmx-exporter.yml";
    /** The Prometheus alerting rules (a plain rule file). */
    static final String ALERT_RULES = DIR + "prometheus/tsm-alerts.yml";
    static final String DOCKERFILE = DIR + "Dockerfile";
    /** Every manifest of the directory. */
    static final List<String> MANIFESTS = List.of(KAFKA, TOPIC, S3_SECRET, KEYS_SECRET, METRICS);

    static List<StrictYaml.Doc> docs(String file) {
        return StrictYaml.parse(file, Repo.read(file), 1);
    }

    /** The manifests of the directory as the validator reads a user's files ({@link Manifests}). */
    static Manifests manifests() {
        Manifests m = new Manifests();
        for (String f : MANIFESTS) {
            m.add(f, Repo.read(f));
        }
        return m;
    }

    /** The validator's options for the examples: the Dockerfile's plugin directory, the pom's version. */
    static Rules.Options rulesOptions() {
        return new Rules.Options(DockerfileTest.pluginDirectoryInImage(), PluginBuild.version());
    }

    /** The one Kafka resource of kafka.yaml. */
    static Kafka kafka() {
        List<Kafka> all = docs(KAFKA).stream().filter(d -> d.kind().equals("Kafka")).map(d -> d.as(Kafka.class)).toList();
        if (all.size() != 1) {
            throw new AssertionError(KAFKA + " must hold exactly one Kafka resource, has " + all.size());
        }
        return all.get(0);
    }

    /** The node pools of kafka.yaml. */
    static List<KafkaNodePool> pools() {
        return docs(KAFKA).stream().filter(d -> d.kind().equals("KafkaNodePool")).map(d -> d.as(KafkaNodePool.class)).toList();
    }

    static List<KafkaNodePool> brokerPools() {
        return pools().stream().filter(p -> p.getSpec().getRoles() != null
                && p.getSpec().getRoles().contains(ProcessRoles.BROKER)).toList();
    }

    static KafkaTopic topic() {
        List<StrictYaml.Doc> d = docs(TOPIC);
        if (d.size() != 1) {
            throw new AssertionError(TOPIC + " must hold exactly one KafkaTopic, has " + d.size() + " documents");
        }
        return d.get(0).as(KafkaTopic.class);
    }

    /** Every Secret of the example Secret files. */
    static List<Secret> secrets() {
        return List.of(S3_SECRET, KEYS_SECRET).stream().flatMap(f -> docs(f).stream()).map(d -> d.as(Secret.class)).toList();
    }

    static Optional<Secret> secret(String name) {
        return secrets().stream().filter(s -> name.equals(s.getMetadata().getName())).findFirst();
    }

    /** The pod template that applies to the pool's nodes (the pool's, else the Kafka's). */
    static Optional<PodTemplate> podTemplate(Kafka kafka, KafkaNodePool pool) {
        if (pool.getSpec().getTemplate() != null && pool.getSpec().getTemplate().getPod() != null) {
            return Optional.of(pool.getSpec().getTemplate().getPod());
        }
        return Optional.ofNullable(kafka.getSpec().getKafka().getTemplate()).map(t -> t.getPod());
    }

    /** The Kafka container template that applies to the pool's nodes. */
    static Optional<ContainerTemplate> containerTemplate(Kafka kafka, KafkaNodePool pool) {
        if (pool.getSpec().getTemplate() != null && pool.getSpec().getTemplate().getKafkaContainer() != null) {
            return Optional.of(pool.getSpec().getTemplate().getKafkaContainer());
        }
        return Optional.ofNullable(kafka.getSpec().getKafka().getTemplate()).map(t -> t.getKafkaContainer());
    }
}
