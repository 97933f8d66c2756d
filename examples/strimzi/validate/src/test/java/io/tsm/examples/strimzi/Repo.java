package io.tsm.examples.strimzi;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * The repository's files as the tests read them. Locations come from system properties the
 * pom sets (surefire): {@code tsm.repo.root} (the repository root), {@code tsm.plugin.dir}
 * (the plugin directory crates/tsm-jni/build.sh lays out) and {@code tsm.rsm.config.dir}
 * (where {@link RsmConfigDumpTest} writes). A missing property or file fails the test with
 * its name; nothing is skipped.
 */
final class Repo {
    private Repo() {}

    /** The repository root, absolute. */
    static Path root() {
        return property("tsm.repo.root");
    }

    /** {@code rel} (a repository-relative path with '/') under the root. */
    static Path path(String rel) {
        return root().resolve(rel).normalize();
    }

    /** The UTF-8 text of the repository file {@code rel}. */
    static String read(String rel) {
        Path p = path(rel);
        try {
            return Files.readString(p, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + rel + " (" + p + ")", e);
        }
    }

    /** The plugin directory build.sh lays out (crates/tsm-jni/target/plugin). */
    static Path pluginDir() {
        return property("tsm.plugin.dir");
    }

    /** Where the rsm.config.* dumps go (examples/strimzi/validate/target/rsm-config). */
    static Path rsmConfigDir() {
        return property("tsm.rsm.config.dir");
    }

    private static Path property(String name) {
        String v = System.getProperty(name);
        if (v == null || v.isBlank()) {
            throw new IllegalStateException("system property " + name
                    + " is not set: run through Maven (examples/strimzi/validate/pom.xml sets it)");
        }
        return Paths.get(v).toAbsolutePath().normalize();
    }
}
