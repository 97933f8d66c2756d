package io.tsm.kafka;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;

import java.io.InputStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;

import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;
import org.junit.jupiter.api.Test;

/**
 * Two plugin instances in one JVM, each from its own child-first class loader (as two brokers
 * would load the plugin): each extracts and loads its own copy of the native library.
 */
class TwoClassLoadersTest {

    /** Child-first for the plugin's own classes, parent-first for Kafka and SLF4J. */
    static final class ChildFirst extends URLClassLoader {
        ChildFirst(URL[] urls, ClassLoader parent) {
            super(urls, parent);
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.startsWith("io.tsm.kafka.")) {
                return super.loadClass(name, resolve);
            }
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c == null) {
                    c = findClass(name);
                }
                if (resolve) {
                    resolveClass(c);
                }
                return c;
            }
        }
    }

    @Test
    void configuredExtractionDirIsUsedAndStaleCopiesAreRemoved() throws Exception {
        URL classes = TsmRemoteStorageManager.class.getProtectionDomain().getCodeSource().getLocation();
        Path work = Fixtures.work("extract");
        Path dir = work.resolve("native");
        java.nio.file.Files.createDirectories(dir);
        // A copy left by a process that is gone (pid far above any real one) and one by a live process.
        Path stale = java.nio.file.Files.write(dir.resolve("tsm-jni-2147483646-123.so"), new byte[] {1});
        Path live = java.nio.file.Files.write(
                dir.resolve("tsm-jni-" + ProcessHandle.current().pid() + "-456.so"), new byte[] {1});
        try (ChildFirst loader = new ChildFirst(new URL[] {classes}, getClass().getClassLoader())) {
            RemoteStorageManager rsm = (RemoteStorageManager) loader.loadClass(TsmRemoteStorageManager.class.getName())
                    .getConstructor().newInstance();
            java.util.Map<String, Object> config = Fixtures.config(work.resolve("bucket"));
            config.put("tsm.jni.native.dir", dir.toString());
            rsm.configure(config);
            Fixtures.Segment s = Fixtures.segment(work.resolve("local"), 10_000, false, 31);
            rsm.copyLogSegmentData(s.metadata, s.data);
            try (InputStream in = rsm.fetchLogSegment(s.metadata, 0)) {
                assertArrayEquals(s.log, in.readAllBytes());
            }
            rsm.close();
        }
        org.junit.jupiter.api.Assertions.assertFalse(java.nio.file.Files.exists(stale), "stale copy removed");
        org.junit.jupiter.api.Assertions.assertTrue(java.nio.file.Files.exists(live), "a live process's copy is kept");
        try (java.util.stream.Stream<Path> files = java.nio.file.Files.list(dir)) {
            // Our own extracted copy is deleted right after loading.
            org.junit.jupiter.api.Assertions.assertEquals(java.util.List.of(live), files.collect(java.util.stream.Collectors.toList()));
        }
    }

    @Test
    void twoLoadersEachLoadTheirOwnNativeLibrary() throws Exception {
        URL classes = TsmRemoteStorageManager.class.getProtectionDomain().getCodeSource().getLocation();
        Path work = Fixtures.work("loaders");
        try (ChildFirst a = new ChildFirst(new URL[] {classes}, getClass().getClassLoader());
                ChildFirst b = new ChildFirst(new URL[] {classes}, getClass().getClassLoader())) {
            RemoteStorageManager ra = (RemoteStorageManager) a.loadClass(TsmRemoteStorageManager.class.getName())
                    .getConstructor().newInstance();
            RemoteStorageManager rb = (RemoteStorageManager) b.loadClass(TsmRemoteStorageManager.class.getName())
                    .getConstructor().newInstance();
            assertNotSame(ra.getClass(), rb.getClass());
            assertNotSame(ra.getClass(), TsmRemoteStorageManager.class);
            Fixtures.configured(ra, work.resolve("bucket-a"));
            Fixtures.configured(rb, work.resolve("bucket-b"));
            Fixtures.Segment sa = Fixtures.segment(work.resolve("local-a"), 30_000, true, 21);
            Fixtures.Segment sb = Fixtures.segment(work.resolve("local-b"), 40_000, false, 22);
            ra.copyLogSegmentData(sa.metadata, sa.data);
            rb.copyLogSegmentData(sb.metadata, sb.data);
            try (InputStream in = ra.fetchLogSegment(sa.metadata, 0)) {
                assertArrayEquals(sa.log, in.readAllBytes());
            }
            try (InputStream in = rb.fetchLogSegment(sb.metadata, 100, 200)) {
                assertArrayEquals(Fixtures.slice(sb.log, 100, 200), in.readAllBytes());
            }
            ra.close();
            // b keeps working after a is closed.
            try (InputStream in = rb.fetchLogSegment(sb.metadata, 0)) {
                assertArrayEquals(sb.log, in.readAllBytes());
            }
            rb.close();
        }
    }
}
