package io.tsm.kafka;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The plugin directory build.sh lays out (the jar and libtsm_jni.so side by side): the library
 * is loaded in place, nothing is extracted; a second class loader, or a library of another
 * build beside the jar, falls back to an extracted copy.
 */
class PluginDirectoryTest {

    /** The compiled plugin (classes and the bundled library) packed into {@code dir/tsm.jar}. */
    private static Path pluginJar(Path dir) throws IOException {
        Path classes;
        try {
            classes = Paths.get(TsmRemoteStorageManager.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (java.net.URISyntaxException e) {
            throw new IOException(e);
        }
        Files.createDirectories(dir);
        Path jar = dir.resolve("tsm.jar");
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar));
                Stream<Path> files = Files.walk(classes)) {
            for (Path f : files.filter(Files::isRegularFile).collect(Collectors.toList())) {
                out.putNextEntry(new JarEntry(classes.relativize(f).toString().replace('\\', '/')));
                Files.copy(f, out);
                out.closeEntry();
            }
        }
        return jar;
    }

    /** The stripped library build.sh bundled (target/classes/io/tsm/kafka/native/...). */
    private static Path bundledLibrary() throws Exception {
        URL url = NativeLoader.class.getResource(
                "/io/tsm/kafka/native/" + NativeLoader.platform() + "/" + NativeLoader.libraryFileName());
        Assumptions.assumeTrue(url != null && "file".equals(url.getProtocol()), "bundled library on disk");
        return Paths.get(url.toURI());
    }

    private static String maps() throws IOException {
        Path maps = Paths.get("/proc/self/maps");
        Assumptions.assumeTrue(Files.isReadable(maps), "Linux /proc/self/maps");
        return Files.readString(maps);
    }

    private static RemoteStorageManager instance(ClassLoader loader, Path work, String name, Path nativeDir)
            throws Exception {
        RemoteStorageManager rsm = (RemoteStorageManager) loader.loadClass(TsmRemoteStorageManager.class.getName())
                .getConstructor().newInstance();
        Map<String, Object> config = Fixtures.config(work.resolve("bucket-" + name));
        config.put("tsm.jni.native.dir", nativeDir.toString());
        rsm.configure(config);
        return rsm;
    }

    private static void roundTrip(RemoteStorageManager rsm, Path work, String name, int seed) throws Exception {
        Fixtures.Segment s = Fixtures.segment(work.resolve("local-" + name), 20_000, seed % 2 == 0, seed);
        rsm.copyLogSegmentData(s.metadata, s.data);
        try (InputStream in = rsm.fetchLogSegment(s.metadata, 0)) {
            assertArrayEquals(s.log, in.readAllBytes());
        }
    }

    @Test
    void libraryBesideTheJarIsLoadedInPlaceAndASecondLoaderGetsACopy() throws Exception {
        Path work = Fixtures.work("plugin-dir");
        Path plugin = work.resolve("plugin");
        URL jar = pluginJar(plugin).toUri().toURL();
        Path lib = plugin.resolve(NativeLoader.libraryFileName());
        Files.copy(bundledLibrary(), lib);
        Path nativeDir = work.resolve("native"); // must never be needed by the first loader
        try (TwoClassLoadersTest.ChildFirst a = new TwoClassLoadersTest.ChildFirst(new URL[] {jar}, getClass().getClassLoader());
                TwoClassLoadersTest.ChildFirst b = new TwoClassLoadersTest.ChildFirst(new URL[] {jar}, getClass().getClassLoader())) {
            RemoteStorageManager ra = instance(a, work, "a", nativeDir);
            assertTrue(maps().contains(lib.toRealPath().toString()), "the plugin directory's library is mapped in place");
            assertFalse(Files.exists(nativeDir), "nothing extracted for the first loader");
            roundTrip(ra, work, "a", 41);

            // Same file, second class loader: the JVM refuses to bind it twice, so b extracts.
            RemoteStorageManager rb = instance(b, work, "b", nativeDir);
            String pid = String.valueOf(ProcessHandle.current().pid());
            assertTrue(maps().contains(nativeDir.toRealPath().resolve("tsm-jni-" + pid + "-").toString()),
                    "the second loader mapped an extracted copy");
            roundTrip(rb, work, "b", 42);
            ra.close();
            roundTrip(rb, work, "b2", 43);
            rb.close();
        }
        try (Stream<Path> files = Files.list(nativeDir)) {
            assertTrue(files.collect(Collectors.toList()).isEmpty(), "the extracted copy is deleted once loaded");
        }
    }

    @Test
    void libraryOfAnotherBuildBesideTheJarIsNotLoaded() throws Exception {
        Path work = Fixtures.work("plugin-dir-other");
        Path plugin = work.resolve("plugin");
        URL jar = pluginJar(plugin).toUri().toURL();
        Path lib = plugin.resolve(NativeLoader.libraryFileName());
        // Not an ELF file at all: loading it would fail; the digest check must skip it first.
        try (OutputStream out = Files.newOutputStream(lib)) {
            out.write("not the library of this jar".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        }
        Path nativeDir = work.resolve("native");
        try (TwoClassLoadersTest.ChildFirst a = new TwoClassLoadersTest.ChildFirst(new URL[] {jar}, getClass().getClassLoader())) {
            RemoteStorageManager ra = instance(a, work, "a", nativeDir);
            assertFalse(maps().contains(lib.toRealPath().toString()), "the foreign file is not mapped");
            roundTrip(ra, work, "a", 44);
            ra.close();
        }
        try (Stream<Path> files = Files.list(nativeDir)) {
            assertTrue(files.collect(Collectors.toList()).isEmpty(), "the extracted copy is deleted once loaded");
        }
    }
}
