package io.tsm.examples.strimzi;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

import io.strimzi.api.kafka.model.kafka.Kafka;
import io.strimzi.api.kafka.model.kafka.KafkaClusterSpec;
import io.strimzi.api.kafka.model.kafka.tieredstorage.TieredStorageCustom;

/**
 * The plugin configuration a broker gets from a Kafka resource, as Strimzi writes it: its
 * Cluster Operator (KafkaBrokerConfigurationBuilder.withTieredStorage) prints each
 * {@code spec.kafka.tieredStorage.remoteStorageManager.config} entry as the broker property
 * {@code rsm.config.<key>=<value>} (raw, no escaping), then the user's {@code spec.kafka.config}
 * (where {@code rsm.config.*} entries may also appear; the file is a Java properties file, so
 * a later key wins). Kafka hands the plugin every {@code rsm.config.*} property with the prefix
 * removed (RemoteLogManagerConfig, {@code remote.log.storage.manager.impl.prefix}); tsm's CLI
 * reads the same lines ({@code tsm --config FILE}).
 */
final class RsmConfig {
    private RsmConfig() {}

    static final String PREFIX = "rsm.config.";

    /** The broker's {@code rsm.config.*} properties for {@code kafka}, in the order Strimzi writes them. */
    static LinkedHashMap<String, String> brokerProperties(Kafka kafka) {
        LinkedHashMap<String, String> out = new LinkedHashMap<>();
        KafkaClusterSpec spec = kafka.getSpec().getKafka();
        if (spec.getTieredStorage() instanceof TieredStorageCustom custom && custom.getRemoteStorageManager() != null
                && custom.getRemoteStorageManager().getConfig() != null) {
            custom.getRemoteStorageManager().getConfig().forEach((k, v) -> out.put(PREFIX + k, v));
        }
        if (spec.getConfig() != null) {
            spec.getConfig().forEach((k, v) -> {
                if (k.startsWith(PREFIX)) {
                    out.remove(k);
                    out.put(k, String.valueOf(v));
                }
            });
        }
        return out;
    }

    /** What the plugin's {@code configure()} gets: the same entries without the prefix. */
    static Map<String, String> pluginConfig(Kafka kafka) {
        Map<String, String> out = new LinkedHashMap<>();
        brokerProperties(kafka).forEach((k, v) -> out.put(k.substring(PREFIX.length()), v));
        return out;
    }

    /**
     * The field of {@code kafka} that sets the plugin key {@code key} (no prefix): an
     * {@code rsm.config.<key>} entry of {@code spec.kafka.config} when there is one (it wins),
     * else the entry of {@code remoteStorageManager.config}.
     */
    static String fieldPath(Kafka kafka, String key) {
        Map<String, Object> config = kafka.getSpec().getKafka().getConfig();
        if (config != null && config.containsKey(PREFIX + key)) {
            return "spec.kafka.config." + PREFIX + key;
        }
        return CONFIG_PATH + "." + key;
    }

    /** Where the plugin configuration is in a Kafka resource. */
    static final String CONFIG_PATH = "spec.kafka.tieredStorage.remoteStorageManager.config";

    /** Writes {@code props} as Strimzi does (one raw {@code key=value} line each) under a comment header. */
    static void write(Path file, String header, Map<String, String> props) {
        StringBuilder b = new StringBuilder();
        header.lines().forEach(l -> b.append("# ").append(l).append('\n'));
        props.forEach((k, v) -> b.append(k).append('=').append(v).append('\n'));
        try {
            Files.createDirectories(file.getParent());
            Files.writeString(file, b.toString(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }
}
