package io.tsm.examples.strimzi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * Every manifest of examples/strimzi/ reads strictly into Strimzi's and Kubernetes' models,
 * in the v1 API, and the strictness is real: a misspelt field (in a Strimzi class and in a
 * Kubernetes one), a number where the API wants a string, a duplicate key and an old
 * apiVersion each fail, naming the field.
 */
class ManifestsTest {

    @Test
    void everyManifestOfTheDirectoryIsKnownAndReadsStrictly() throws IOException {
        List<String> onDisk;
        try (Stream<Path> s = Files.list(Repo.path(Examples.DIR))) {
            onDisk = s.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".yaml") || n.endsWith(".yml"))
                    .sorted().map(n -> Examples.DIR + n).toList();
        }
        assertEquals(Examples.MANIFESTS.stream().sorted().toList(), onDisk,
                "the manifests of " + Examples.DIR + " (a new one must be added to Examples.MANIFESTS and checked)");
        assertEquals(List.of("KafkaNodePool controller", "KafkaNodePool broker", "Kafka payments"), kinds(Examples.KAFKA));
        assertEquals(List.of("KafkaTopic payments-events"), kinds(Examples.TOPIC));
        assertEquals(List.of("Secret tsm-s3-credentials"), kinds(Examples.S3_SECRET));
        assertEquals(List.of("Secret tsm-key-pairs"), kinds(Examples.KEYS_SECRET));
        assertEquals(List.of("ConfigMap tsm-kafka-metrics"), kinds(Examples.METRICS));
    }

    @Test
    void noManifestUsesAFieldTheV1ApiRemoved() {
        List<String> problems = new ArrayList<>();
        for (String f : Examples.MANIFESTS) {
            Examples.docs(f).forEach(d -> problems.addAll(V1Api.problems(d)));
        }
        assertEquals(List.of(), problems);
    }

    @Test
    void aMisspeltStrimziFieldFails() {
        AssertionError e = mutated(Examples.KAFKA, "        className: io.tsm", "        clasName: io.tsm");
        assertTrue(e.getMessage().contains("unknown field 'clasName' at spec.kafka.tieredStorage.remoteStorageManager"), e.getMessage());
        assertTrue(e.getMessage().contains("className"), "names the known fields: " + e.getMessage());
    }

    @Test
    void aMisspeltKubernetesFieldFails() {
        AssertionError e = mutated(Examples.KAFKA, "          mountPath: /mnt/tsm-key-pairs", "          mountpath: /mnt/tsm-key-pairs");
        assertTrue(e.getMessage().contains("unknown field 'mountpath' at spec.template.kafkaContainer.volumeMounts[0]"), e.getMessage());
    }

    @Test
    void aMisspeltTopicFieldFails() {
        AssertionError e = mutated(Examples.TOPIC, "  partitions: 24", "  partition: 24");
        assertTrue(e.getMessage().contains("unknown field 'partition' at spec"), e.getMessage());
        assertTrue(e.getMessage().contains(Examples.TOPIC), "names the file: " + e.getMessage());
    }

    @Test
    void aNumberWhereTheApiWantsAStringFails() {
        AssertionError e = mutated(Examples.KAFKA, "          value: \"2\"", "          value: 2");
        assertTrue(e.getMessage().contains("spec.template.kafkaContainer.env[0].value"), e.getMessage());
    }

    @Test
    void anUnquotedRsmConfigValueFails() {
        // remoteStorageManager.config is a map of strings in the CRD: an unquoted number is rejected.
        AssertionError e = mutated(Examples.KAFKA, "chunk.size: \"4194304\"", "chunk.size: 4194304");
        assertTrue(e.getMessage().contains("spec.kafka.tieredStorage.remoteStorageManager.config.chunk.size"), e.getMessage());
    }

    @Test
    void aDuplicateKeyFails() {
        AssertionError e = mutated(Examples.TOPIC, "  replicas: 3\n", "  replicas: 3\n  replicas: 1\n");
        assertTrue(e.getMessage().contains("replicas"), e.getMessage());
    }

    @Test
    void anOldApiVersionFails() {
        AssertionError e = mutated(Examples.TOPIC, "apiVersion: kafka.strimzi.io/v1\n", "apiVersion: kafka.strimzi.io/v1beta2\n");
        assertTrue(e.getMessage().contains("kafka.strimzi.io/v1beta2"), e.getMessage());
    }

    @Test
    void aFieldTheV1ApiRemovedIsReported() {
        String text = Repo.read(Examples.KAFKA).replace("    version: 4.3.1\n", "    version: 4.3.1\n    replicas: 3\n");
        assertNotEquals(Repo.read(Examples.KAFKA), text, "the mutation must change the file");
        List<String> problems = new ArrayList<>();
        StrictYaml.parse(Examples.KAFKA, text, 1).forEach(d -> problems.addAll(V1Api.problems(d)));
        assertEquals(1, problems.size(), problems.toString());
        assertTrue(problems.get(0).contains("/spec/kafka/replicas is not in the v1 API"), problems.toString());
    }

    /** Parses {@code file} with {@code from} replaced by {@code to}; the parse must fail. */
    private static AssertionError mutated(String file, String from, String to) {
        String text = Repo.read(file);
        String changed = text.replace(from, to);
        assertNotEquals(text, changed, "the mutation '" + from + "' -> '" + to + "' must change " + file);
        StrictYaml.parse(file, text, 1);
        return assertThrows(AssertionError.class, () -> StrictYaml.parse(file, changed, 1));
    }

    private static List<String> kinds(String file) {
        return Examples.docs(file).stream().map(d -> d.kind() + " " + d.name()).toList();
    }
}
