package io.tsm.examples.strimzi;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import io.fabric8.kubernetes.api.model.Secret;
import io.strimzi.api.kafka.model.common.template.ContainerTemplate;
import io.strimzi.api.kafka.model.common.template.PodTemplate;
import io.strimzi.api.kafka.model.kafka.Kafka;
import io.strimzi.api.kafka.model.nodepool.KafkaNodePool;
import io.strimzi.api.kafka.model.nodepool.ProcessRoles;

/**
 * A set of manifests read strictly ({@link StrictYaml}): every document of the files given,
 * and the problems of those that do not read (an unknown or misspelt field, a duplicate key,
 * an old apiVersion: errors; a kind this does not know, e.g. a Service: a note). The Kafka
 * resources, their node pools (label {@code strimzi.io/cluster}) and the Secrets are looked
 * up across all files, so a cluster split over several files is checked as one.
 */
final class Manifests {
    final List<StrictYaml.Doc> docs = new ArrayList<>();
    final List<Finding> findings = new ArrayList<>();
    /** Documents that did not read (their errors are among the findings). */
    int unreadable;

    /** Reads {@code files} (as given on the command line: their names appear in every message). */
    static Manifests read(List<Path> files) {
        Manifests m = new Manifests();
        for (Path f : files) {
            String text;
            try {
                text = Files.readString(f, StandardCharsets.UTF_8);
            } catch (IOException e) {
                m.findings.add(Finding.error(f.toString(), "", "cannot read the file: " + e));
                continue;
            }
            m.add(f.toString(), text);
        }
        return m;
    }

    /** Adds the documents of {@code text}, named {@code source} in messages. */
    Manifests add(String source, String text) {
        List<StrictYaml.Result> results = StrictYaml.parseEach(source, text, 1);
        if (results.isEmpty()) {
            findings.add(Finding.warning(source, "", "no YAML document in the file"));
        }
        for (StrictYaml.Result r : results) {
            if (r.doc() != null) {
                docs.add(r.doc());
                for (String p : V1Api.problems(r.doc())) {
                    findings.add(Finding.error(r.doc().where(), "", p.substring(p.indexOf(": ") + 2)
                            + " (Strimzi 1.x serves only kafka.strimzi.io/v1: remove the field)"));
                }
            } else if (r.problem() instanceof StrictYaml.OtherKind o) {
                findings.add(Finding.note(source, "", o.kind + " (" + o.apiVersion + ") not checked: this validates Kafka, "
                        + "KafkaNodePool, KafkaTopic, Secret and ConfigMap resources"));
            } else {
                unreadable++;
                findings.add(Finding.error("", "", r.problem().getMessage()
                        + " (this document's other checks did not run: fix it and run again)"));
            }
        }
        return this;
    }

    List<StrictYaml.Doc> ofKind(String kind) {
        return docs.stream().filter(d -> d.kind().equals(kind)).toList();
    }

    /** The node pools labelled for the Kafka cluster {@code cluster}. */
    List<StrictYaml.Doc> pools(String cluster) {
        return ofKind("KafkaNodePool").stream().filter(d -> {
            var labels = d.as(KafkaNodePool.class).getMetadata().getLabels();
            return labels != null && cluster.equals(labels.get("strimzi.io/cluster"));
        }).toList();
    }

    static boolean isBroker(KafkaNodePool p) {
        return p.getSpec() != null && p.getSpec().getRoles() != null && p.getSpec().getRoles().contains(ProcessRoles.BROKER);
    }

    Optional<Secret> secret(String name) {
        return ofKind("Secret").stream().map(d -> d.as(Secret.class))
                .filter(s -> s.getMetadata() != null && name.equals(s.getMetadata().getName())).findFirst();
    }

    /** The Secret's keys (data and stringData). */
    static List<String> keys(Secret s) {
        List<String> out = new ArrayList<>();
        if (s.getData() != null) {
            out.addAll(s.getData().keySet());
        }
        if (s.getStringData() != null) {
            out.addAll(s.getStringData().keySet());
        }
        return out;
    }

    /**
     * The pod template that applies to the pool's nodes and the path it is at: the pool's
     * {@code template.pod} when it has one, else the Kafka resource's. (Strimzi merges the two
     * templates section by section; before that change, proposal 118, any pool template
     * replaced the whole Kafka template. Either way a pool's {@code template.pod} wins.)
     */
    static Optional<Located<PodTemplate>> podTemplate(Kafka kafka, KafkaNodePool pool) {
        if (pool.getSpec().getTemplate() != null && pool.getSpec().getTemplate().getPod() != null) {
            return Optional.of(new Located<>(pool.getSpec().getTemplate().getPod(), "KafkaNodePool " + name(pool), "spec.template.pod"));
        }
        return Optional.ofNullable(kafka.getSpec().getKafka().getTemplate()).map(t -> t.getPod())
                .map(p -> new Located<>(p, "Kafka " + name(kafka), "spec.kafka.template.pod"));
    }

    /** The Kafka container template that applies to the pool's nodes, and where it is. */
    static Optional<Located<ContainerTemplate>> containerTemplate(Kafka kafka, KafkaNodePool pool) {
        if (pool.getSpec().getTemplate() != null && pool.getSpec().getTemplate().getKafkaContainer() != null) {
            return Optional.of(new Located<>(pool.getSpec().getTemplate().getKafkaContainer(), "KafkaNodePool " + name(pool),
                    "spec.template.kafkaContainer"));
        }
        return Optional.ofNullable(kafka.getSpec().getKafka().getTemplate()).map(t -> t.getKafkaContainer())
                .map(c -> new Located<>(c, "Kafka " + name(kafka), "spec.kafka.template.kafkaContainer"));
    }

    /** A template section and where it is: the resource ("KafkaNodePool broker") and the field path. */
    record Located<T>(T value, String resource, String path) {}

    static String name(Kafka k) {
        return k.getMetadata().getName();
    }

    static String name(KafkaNodePool p) {
        return p.getMetadata().getName();
    }
}
