package io.tsm.examples.strimzi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * examples/strimzi/Dockerfile: its base is a Strimzi Kafka image tsm runs on (a Kafka version
 * tsm supports, a UBI 9 image with glibc 2.34 or newer, the v1 API), it copies exactly the
 * files build.sh puts in target/plugin/ into one directory (the Kafka resource's classPath),
 * and the plugin directory build.sh made is that layout: the jar with the plugin class and
 * the library the jar records, side by side, as NativeLoader loads it in place.
 */
class DockerfileTest {
    private static final Pattern STRIMZI_KAFKA = Pattern.compile("quay\\.io/strimzi/kafka:((\\d+)\\.(\\d+)\\.(\\d+))-kafka-((\\d+)\\.(\\d+)\\.(\\d+))");

    /** The base image: the tag, the Strimzi version and the Kafka version in it. */
    record BaseImage(String tag, String strimzi, int strimziMajor, int strimziMinor, String kafka, int kafkaMajor, int kafkaMinor) {}

    /** The Dockerfile as `docker build --build-arg TSM_VERSION=<the pom's version>` reads it. */
    static Dockerfile dockerfile() {
        return new Dockerfile(Repo.read(Examples.DOCKERFILE), Map.of("TSM_VERSION", PluginBuild.version()));
    }

    static BaseImage baseImage() {
        String from = dockerfile().from;
        Matcher m = STRIMZI_KAFKA.matcher(from);
        if (!m.matches()) {
            throw new AssertionError("FROM " + from + " is not quay.io/strimzi/kafka:<strimzi>-kafka-<kafka>");
        }
        return new BaseImage(m.group(1) + "-kafka-" + m.group(5), m.group(1), Integer.parseInt(m.group(2)), Integer.parseInt(m.group(3)),
                m.group(5), Integer.parseInt(m.group(6)), Integer.parseInt(m.group(7)));
    }

    /** The one COPY of the Dockerfile. */
    static Dockerfile.Copy copy() {
        List<Dockerfile.Copy> copies = dockerfile().copies;
        assertEquals(1, copies.size(), "one COPY (the plugin directory's files)");
        return copies.get(0);
    }

    /** The directory the plugin lands in, with a trailing '/'. */
    static String pluginDirectoryInImage() {
        String dest = copy().destination();
        assertTrue(dest.endsWith("/") && dest.startsWith("/"), "COPY destination is an absolute directory ending in '/': " + dest);
        return dest;
    }

    @Test
    void theBaseIsAStrimziKafkaImageTsmRunsOn() {
        BaseImage b = baseImage();
        // README: Kafka brokers 3.6 to 4.x.
        boolean kafkaSupported = (b.kafkaMajor() == 3 && b.kafkaMinor() >= 6) || b.kafkaMajor() == 4;
        assertTrue(kafkaSupported, "Kafka " + b.kafka() + " is outside tsm's 3.6 to 4.x");
        // libtsm_jni.so needs glibc 2.34: Strimzi images are UBI 9 (glibc 2.34) from 0.42 on; the
        // manifests are kafka.strimzi.io/v1, which Strimzi serves from 0.49 on.
        boolean strimziOk = b.strimziMajor() >= 1 || b.strimziMinor() >= 49;
        assertTrue(strimziOk, "Strimzi " + b.strimzi() + ": the manifests need 0.49+ (v1 API; UBI 9 / glibc 2.34 from 0.42)");
    }

    @Test
    void thePluginVersionIsABuildArgumentAndEveryDocumentedBuildGivesIt() {
        Dockerfile d = dockerfile();
        assertEquals(List.of("TSM_VERSION"), d.argsWithoutDefault, "TSM_VERSION is an ARG without a default (no version hard-coded)");
        String text = Repo.read(Examples.DOCKERFILE);
        assertTrue(text.contains("test -n \"${TSM_VERSION}\""), "the build stops with a message when TSM_VERSION is not given");
        for (String file : List.of(Examples.DOCKERFILE, "docs/strimzi.md")) {
            Matcher m = Pattern.compile("docker build [^\\n]*(\\\\\\n[^\\n]*)*").matcher(Repo.read(file));
            int builds = 0;
            while (m.find()) {
                builds++;
                assertTrue(m.group().contains("--build-arg TSM_VERSION="), file + ": every docker build passes --build-arg TSM_VERSION: " + m.group());
            }
            assertTrue(builds > 0, file + " shows the docker build command");
        }
    }

    @Test
    void itCopiesExactlyThePluginDirectoryIntoTheClassPathDirectory() {
        Dockerfile.Copy c = copy();
        assertEquals(PluginBuild.pluginFiles(), c.sources(), "COPY sources: the files build.sh puts in target/plugin/");
        assertEquals(PluginBuild.loaderLibraryName(), PluginBuild.libraryName(), "NativeLoader looks for the library build.sh names");
        assertEquals("/opt/kafka/plugins/tsm/", c.destination());
        assertTrue(c.flags().stream().noneMatch(f -> f.startsWith("--chown")), "the plugin stays root-owned (no --chown)");
    }

    @Test
    void thePluginDirectoryBuildShMadeIsThatLayout() throws IOException {
        Path dir = Repo.pluginDir();
        assertTrue(Files.isDirectory(dir), dir + " (run crates/tsm-jni/build.sh; scripts/test.d/52-strimzi-examples.sh does)");
        List<String> files;
        try (Stream<Path> s = Files.list(dir)) {
            files = s.map(p -> p.getFileName().toString()).sorted().toList();
        }
        assertEquals(copy().sources().stream().sorted().toList(), files, dir + " holds exactly the files the Dockerfile copies");
        Path lib = dir.resolve(PluginBuild.libraryName());
        try (JarFile jar = new JarFile(dir.resolve(PluginBuild.jarName()).toFile())) {
            String cls = PluginBuild.RSM_CLASS.replace('.', '/') + ".class";
            assertNotNull(jar.getJarEntry(cls), "the jar has " + cls);
            JarEntry sha = jar.getJarEntry("io/tsm/kafka/native/linux-x86_64/" + PluginBuild.libraryName() + ".sha256");
            assertNotNull(sha, "the jar records its library's SHA-256");
            String recorded;
            try (InputStream in = jar.getInputStream(sha)) {
                recorded = new String(in.readAllBytes(), StandardCharsets.US_ASCII).strip().split("\\s+")[0];
            }
            assertEquals(recorded, sha256(lib), lib + " is the library the jar was built with (else the loader extracts a copy to /tmp)");
        }
    }

    private static String sha256(Path file) throws IOException {
        try (InputStream in = Files.newInputStream(file)) {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            byte[] buf = new byte[1 << 16];
            for (int n; (n = in.read(buf)) > 0; ) {
                md.update(buf, 0, n);
            }
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
