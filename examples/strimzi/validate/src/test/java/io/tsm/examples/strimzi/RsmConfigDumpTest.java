package io.tsm.examples.strimzi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import org.junit.jupiter.api.Test;

import io.strimzi.api.kafka.model.kafka.Kafka;

/**
 * Writes the plugin configuration of every Kafka resource (examples/strimzi/kafka.yaml and
 * the docs' snippets) as the broker gets it, {@code rsm.config.<key>=<value>} lines
 * ({@link RsmConfig}), one file per resource under {@code tsm.rsm.config.dir};
 * scripts/test.d/52-strimzi-examples.sh then runs {@code tsm config check} on each, so every
 * tsm config snippet is checked by tsm itself. Each file reads back (java.util.Properties, as
 * the broker reads its config) to exactly the resource's entries.
 */
class RsmConfigDumpTest {

    @Test
    void dumpEveryRsmConfig() throws IOException {
        Map<String, Kafka> sources = new LinkedHashMap<>();
        sources.put(Examples.KAFKA, Examples.kafka());
        for (String file : DocSnippets.FILES) {
            for (DocSnippets.Snippet s : DocSnippets.snippets(file)) {
                for (StrictYaml.Doc d : DocSnippets.parse(s)) {
                    if (d.model() instanceof Kafka k) {
                        sources.put(file + " line " + s.line(), k);
                    }
                }
            }
        }
        Path dir = Repo.rsmConfigDir();
        if (Files.isDirectory(dir)) {
            try (var old = Files.list(dir)) {
                for (Path p : old.toList()) {
                    Files.delete(p);
                }
            }
        }
        List<String> written = new ArrayList<>();
        for (Map.Entry<String, Kafka> e : sources.entrySet()) {
            LinkedHashMap<String, String> props = RsmConfig.brokerProperties(e.getValue());
            if (props.isEmpty()) {
                continue;
            }
            Path file = dir.resolve(e.getKey().replaceAll("[^A-Za-z0-9]+", "-").replaceAll("^-|-$", "") + ".properties");
            RsmConfig.write(file, "rsm.config.* of " + e.getKey() + " as Strimzi writes them into the broker config\n"
                    + "(written by examples/strimzi/validate RsmConfigDumpTest; checked with `tsm config check`)", props);
            Properties back = new Properties();
            try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
                back.load(r);
            }
            Map<String, String> read = new TreeMap<>();
            back.stringPropertyNames().forEach(k -> read.put(k, back.getProperty(k)));
            assertEquals(new TreeMap<>(props), read, file + " reads back as the broker reads it");
            written.add(dir.relativize(file).toString());
        }
        assertTrue(written.contains("examples-strimzi-kafka-yaml.properties"), "kafka.yaml's config is dumped: " + written);
        assertTrue(written.size() >= 2, "the docs' Kafka snippets are dumped too: " + written);
    }
}
