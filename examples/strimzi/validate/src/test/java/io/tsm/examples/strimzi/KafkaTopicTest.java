package io.tsm.examples.strimzi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;

import org.junit.jupiter.api.Test;

import io.strimzi.api.kafka.model.topic.KafkaTopic;

/**
 * examples/strimzi/kafka-topic.yaml: the tiered {@code payments-events} topic of the
 * {@code payments} cluster with the durability and retention settings the docs describe,
 * and the backfill note (retention.ms -1 during a backfill) beside its retention.
 */
class KafkaTopicTest {
    private final KafkaTopic topic = Examples.topic();
    private final Map<String, Object> config = topic.getSpec().getConfig();

    @Test
    void theTopicOfTheCluster() {
        assertEquals("payments-events", topic.getMetadata().getName());
        assertEquals(Examples.kafka().getMetadata().getName(), topic.getMetadata().getLabels().get("strimzi.io/cluster"));
        assertEquals(24, topic.getSpec().getPartitions());
        assertEquals(3, topic.getSpec().getReplicas());
    }

    @Test
    void durability() {
        assertEquals(2, config.get("min.insync.replicas"));
        assertEquals(false, config.get("unclean.leader.election.enable"));
    }

    @Test
    void tieredWithDeleteRetention() {
        assertEquals("delete", config.get("cleanup.policy"), "tiered storage does not support compact");
        assertEquals(true, config.get("remote.storage.enable"));
        long retention = number("retention.ms");
        long local = number("local.retention.ms");
        assertTrue(retention > 0, "retention.ms (-1 only during a backfill)");
        assertTrue(local > 0 && local <= retention, "0 < local.retention.ms <= retention.ms");
        Object bytes = config.get("retention.bytes");
        assertTrue(bytes == null || Integer.valueOf(-1).equals(bytes), "no retention.bytes: a size limit deletes history from the bucket");
    }

    @Test
    void theBackfillNoteIsThere() {
        String text = Repo.read(Examples.TOPIC);
        assertTrue(text.contains("docs/tiering-a-backfilled-topic.md") && text.contains("retention.ms: -1"), Examples.TOPIC + " notes the backfill setting");
    }

    private long number(String key) {
        Object v = Checks.present(config.get(key), key);
        assertTrue(v instanceof Number, key + " is a number: " + v);
        return ((Number) v).longValue();
    }
}
