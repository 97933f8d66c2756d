package io.tsm.kafka;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager.IndexType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Test 1 of issue 4: the plugin against the filesystem backend, through the real native library
 * (the one the jar ships). Native panics, never-ending ops and native log lines are forced
 * through the test hook, which only a dev build has: {@link NativeHooksTest}.
 */
class TsmRemoteStorageManagerTest {
    private Path work;
    private TsmRemoteStorageManager rsm;

    @BeforeEach
    void setUp() throws IOException {
        work = Fixtures.work("rsm");
        rsm = new TsmRemoteStorageManager();
        rsm.configure(Fixtures.config(work.resolve("bucket")));
    }

    @AfterEach
    void tearDown() {
        rsm.close();
    }

    @Test
    void copyFetchFetchIndexDeleteRoundTrip() throws Exception {
        Fixtures.Segment s = Fixtures.segment(work.resolve("local"), 100_000, true, 1);
        int positionBefore = s.data.leaderEpochIndex().position();
        Optional<RemoteLogSegmentMetadata.CustomMetadata> custom = rsm.copyLogSegmentData(s.metadata, s.data);
        assertNotNull(custom);
        assertEquals(positionBefore, s.data.leaderEpochIndex().position(), "leader-epoch buffer position moved");

        try (InputStream in = rsm.fetchLogSegment(s.metadata, 0)) {
            assertArrayEquals(s.log, Fixtures.readAll(in, 8192));
        }
        try (InputStream in = rsm.fetchLogSegment(s.metadata, 5000)) {
            assertArrayEquals(Fixtures.slice(s.log, 5000, s.log.length - 1), Fixtures.readAll(in, 777));
        }
        try (InputStream in = rsm.fetchLogSegment(s.metadata, 100, 4195)) {
            assertArrayEquals(Fixtures.slice(s.log, 100, 4195), Fixtures.readAll(in, 1000));
        }
        // An end past the segment is clamped.
        try (InputStream in = rsm.fetchLogSegment(s.metadata, 99_000, 5_000_000)) {
            assertArrayEquals(Fixtures.slice(s.log, 99_000, s.log.length - 1), Fixtures.readAll(in, 4096));
        }
        // The long overloads.
        try (InputStream in = rsm.fetchLogSegment(s.metadata, 10L, 20L)) {
            assertArrayEquals(Fixtures.slice(s.log, 10, 20), Fixtures.readAll(in, 3));
        }
        try (InputStream in = rsm.fetchLogSegment(s.metadata, 99_990L)) {
            assertArrayEquals(Fixtures.slice(s.log, 99_990, s.log.length - 1), in.readAllBytes());
        }
        // Single-byte reads.
        try (InputStream in = rsm.fetchLogSegment(s.metadata, 7, 8)) {
            assertEquals(s.log[7] & 0xff, in.read());
            assertEquals(s.log[8] & 0xff, in.read());
            assertEquals(-1, in.read());
            assertEquals(-1, in.read(new byte[4], 0, 4));
        }

        assertArrayEquals(s.offsetIndex, rsm.fetchIndex(s.metadata, IndexType.OFFSET).readAllBytes());
        assertArrayEquals(s.timeIndex, rsm.fetchIndex(s.metadata, IndexType.TIMESTAMP).readAllBytes());
        assertArrayEquals(s.snapshot, rsm.fetchIndex(s.metadata, IndexType.PRODUCER_SNAPSHOT).readAllBytes());
        assertArrayEquals(s.txnIndex, rsm.fetchIndex(s.metadata, IndexType.TRANSACTION).readAllBytes());
        assertArrayEquals(Fixtures.LEADER_EPOCH, rsm.fetchIndex(s.metadata, IndexType.LEADER_EPOCH).readAllBytes());

        rsm.deleteLogSegmentData(s.metadata);
        rsm.deleteLogSegmentData(s.metadata); // idempotent
        assertThrows(RemoteResourceNotFoundException.class, () -> rsm.fetchLogSegment(s.metadata, 0));
        assertThrows(RemoteResourceNotFoundException.class, () -> rsm.fetchIndex(s.metadata, IndexType.OFFSET));
        Fixtures.assertNoLeaks();
    }

    /** The library the jar ships lacks the test hook (cargo feature test-hooks): no native panic on request. */
    @Test
    void theShippedLibraryHasNoTestHook() {
        assertThrows(UnsatisfiedLinkError.class, () -> NativeBridge.testHook(0, 3, "must not be logged"));
    }

    @Test
    void missingTransactionIndexIsNotFound() throws Exception {
        Fixtures.Segment s = Fixtures.segment(work.resolve("local"), 10_000, false, 2);
        rsm.copyLogSegmentData(s.metadata, s.data);
        assertThrows(RemoteResourceNotFoundException.class, () -> rsm.fetchIndex(s.metadata, IndexType.TRANSACTION));
        assertArrayEquals(s.offsetIndex, rsm.fetchIndex(s.metadata, IndexType.OFFSET).readAllBytes());
    }

    @Test
    void errorsAreMapped() throws Exception {
        Fixtures.Segment never = Fixtures.segment(work.resolve("local"), 1000, false, 3);
        RemoteResourceNotFoundException nf =
                assertThrows(RemoteResourceNotFoundException.class, () -> rsm.fetchLogSegment(never.metadata, 0));
        assertTrue(nf.getMessage().contains(never.metadata.remoteLogSegmentId().id().toString()), nf.getMessage());
        // Deleting what was never written is success.
        rsm.deleteLogSegmentData(never.metadata);

        Fixtures.Segment s = Fixtures.segment(work.resolve("local"), 1000, false, 4);
        rsm.copyLogSegmentData(s.metadata, s.data);
        RemoteStorageException past = assertThrows(RemoteStorageException.class, () -> rsm.fetchLogSegment(s.metadata, 5000));
        assertFalse(past instanceof RemoteResourceNotFoundException, past.toString());
        assertThrows(RemoteStorageException.class, () -> rsm.fetchLogSegment(s.metadata, -1));
        assertThrows(RemoteStorageException.class, () -> rsm.fetchLogSegment(s.metadata, 10, 5));

        // A copy whose local file is gone names the file.
        Fixtures.Segment gone = Fixtures.segment(work.resolve("gone"), 1000, false, 5);
        java.nio.file.Files.delete(gone.data.logSegment());
        RemoteStorageException copyErr =
                assertThrows(RemoteStorageException.class, () -> rsm.copyLogSegmentData(gone.metadata, gone.data));
        assertTrue(copyErr.getMessage().contains(gone.data.logSegment().getFileName().toString()), copyErr.getMessage());

        // Invalid configuration names the key.
        TsmRemoteStorageManager bad = new TsmRemoteStorageManager();
        Map<String, Object> c = Fixtures.config(work.resolve("b2"));
        c.put("chunk.size", "not-a-number");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> bad.configure(c));
        assertTrue(e.getMessage().contains("chunk.size"), e.getMessage());
        bad.close();
        Fixtures.assertNoLeaks();
    }

    @Test
    void passwordValuesArePassedAsTheirValue() throws Exception {
        Path root = work.resolve("password-bucket");
        TsmRemoteStorageManager p = new TsmRemoteStorageManager();
        Map<String, Object> c = Fixtures.config(root);
        c.put("storage.root", new org.apache.kafka.common.config.types.Password(root.toString()));
        p.configure(c);
        try {
            Fixtures.Segment s = Fixtures.segment(work.resolve("local"), 1000, false, 13);
            p.copyLogSegmentData(s.metadata, s.data);
            try (java.util.stream.Stream<Path> files = java.nio.file.Files.walk(root)) {
                assertTrue(files.anyMatch(f -> f.toString().endsWith(".rsm-manifest")), "objects under " + root);
            }
        } finally {
            p.close();
        }
    }

    @Test
    void retriableClassIsDetected() {
        // Compiled against 4.4, so the class is on this test's class path.
        assertTrue(Calls.hasRetriable());
        RemoteStorageException t = Calls.map(NativeBridge.TRANSIENT, "x");
        assertEquals("org.apache.kafka.server.log.remote.storage.RetriableRemoteStorageException", t.getClass().getName());
        assertTrue(Calls.map(NativeBridge.NOT_FOUND, "x") instanceof RemoteResourceNotFoundException);
        assertEquals(RemoteStorageException.class, Calls.map(NativeBridge.ERROR, "x").getClass());
    }

    @Test
    void closedInstanceRejectsCallsAndCloseIsIdempotent() throws Exception {
        Fixtures.Segment s = Fixtures.segment(work.resolve("local"), 1000, false, 6);
        rsm.copyLogSegmentData(s.metadata, s.data);
        rsm.close();
        rsm.close();
        RemoteStorageException e = assertThrows(RemoteStorageException.class, () -> rsm.fetchLogSegment(s.metadata, 0));
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
        assertThrows(RemoteStorageException.class, () -> rsm.copyLogSegmentData(s.metadata, s.data));
        assertThrows(RemoteStorageException.class, () -> rsm.fetchIndex(s.metadata, IndexType.OFFSET));
        assertThrows(RemoteStorageException.class, () -> rsm.deleteLogSegmentData(s.metadata));
        assertThrows(RemoteStorageException.class,
                () -> new TsmRemoteStorageManager().fetchLogSegment(s.metadata, 0), "not configured");
    }

    /** The broker deletes after a failed copy, often on an interrupted thread: it must still run. */
    @Test
    void deleteOnAnInterruptedThreadStillDeletes() throws Exception {
        Fixtures.Segment s = Fixtures.segment(work.resolve("local"), 20_000, true, 21);
        rsm.copyLogSegmentData(s.metadata, s.data);
        Thread.currentThread().interrupt();
        rsm.deleteLogSegmentData(s.metadata);
        assertTrue(Thread.interrupted(), "interrupt flag restored after the delete");
        assertThrows(RemoteResourceNotFoundException.class, () -> rsm.fetchLogSegment(s.metadata, 0));
        assertEquals(List.of(), files(work.resolve("bucket")), "objects left after delete");
        Fixtures.assertNoLeaks();
    }

    /** A copy whose thread is interrupted mid-upload (shutdown, leadership change) leaves nothing. */
    @Test
    void copyInterruptedMidUploadLeavesAnEmptyBucket() throws Exception {
        Path bucket = work.resolve("slow-bucket");
        TsmRemoteStorageManager slow = new TsmRemoteStorageManager();
        Map<String, Object> c = Fixtures.config(bucket);
        c.put("upload.rate.limit.bytes.per.second", "1048576"); // 1 MiB/s
        slow.configure(c);
        try {
            Fixtures.Segment s = Fixtures.segment(work.resolve("local-slow"), 256 << 10, false, 22);
            // A 4 MiB producer snapshot: the .indexes upload takes ~4 s, so the copy is
            // interrupted with the .log already stored (what a cancelled copy used to leave).
            byte[] big = new byte[4 << 20];
            new Random(22).nextBytes(big);
            java.nio.file.Files.write(s.data.producerSnapshotIndex(), big);
            Throwable[] outcome = new Throwable[1];
            Thread copier = new Thread(() -> {
                try {
                    slow.copyLogSegmentData(s.metadata, s.data);
                } catch (Throwable t) {
                    outcome[0] = t;
                }
            });
            copier.start();
            for (int i = 0; i < 200 && files(bucket).stream().noneMatch(p -> p.toString().endsWith(".log")); i++) {
                Thread.sleep(25);
            }
            assertTrue(files(bucket).stream().anyMatch(p -> p.toString().endsWith(".log")), "the .log was stored");
            copier.interrupt();
            copier.join(10_000);
            assertFalse(copier.isAlive(), "copy still running after its interrupt");
            assertTrue(outcome[0] instanceof RemoteStorageException, String.valueOf(outcome[0]));
            // The delete of what the copy wrote runs in the background: bounded wait.
            List<Path> left = files(bucket);
            for (int i = 0; i < 100 && !left.isEmpty(); i++) {
                Thread.sleep(100);
                left = files(bucket);
            }
            assertEquals(List.of(), left, "objects left by the interrupted copy");
        } finally {
            slow.close();
        }
        Fixtures.assertNoLeaks();
    }

    /**
     * The regular files under {@code root}. A file or directory removed while the walk runs
     * (a delete in the background prunes emptied directories) is skipped, not an error: the
     * callers poll until the bucket is empty.
     */
    private static List<Path> files(Path root) throws IOException {
        List<Path> out = new ArrayList<>();
        if (!java.nio.file.Files.exists(root)) {
            return out;
        }
        java.nio.file.Files.walkFileTree(root, new java.nio.file.SimpleFileVisitor<Path>() {
            @Override
            public java.nio.file.FileVisitResult visitFile(Path file, java.nio.file.attribute.BasicFileAttributes a) {
                if (a.isRegularFile()) {
                    out.add(file);
                }
                return java.nio.file.FileVisitResult.CONTINUE;
            }

            @Override
            public java.nio.file.FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
                if (e instanceof java.nio.file.NoSuchFileException) {
                    return java.nio.file.FileVisitResult.CONTINUE;
                }
                throw e;
            }

            @Override
            public java.nio.file.FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
                if (e != null && !(e instanceof java.nio.file.NoSuchFileException)) {
                    throw e;
                }
                return java.nio.file.FileVisitResult.CONTINUE;
            }
        });
        return out;
    }

    @Test
    void sixteenThreadsFetchConcurrently() throws Exception {
        List<Fixtures.Segment> segments = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            Fixtures.Segment s = Fixtures.segment(work.resolve("local"), 300_000 + i * 1000, i % 2 == 0, 100 + i);
            rsm.copyLogSegmentData(s.metadata, s.data);
            segments.add(s);
        }
        ExecutorService pool = Executors.newFixedThreadPool(16);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<Integer>> results = new ArrayList<>();
        for (int t = 0; t < 16; t++) {
            final int seed = t;
            results.add(pool.submit(() -> {
                go.await();
                Random r = new Random(seed);
                int checked = 0;
                for (int i = 0; i < 25; i++) {
                    Fixtures.Segment s = segments.get(r.nextInt(segments.size()));
                    int start = r.nextInt(s.log.length);
                    int end = start + r.nextInt(60_000);
                    try (InputStream in = rsm.fetchLogSegment(s.metadata, start, end)) {
                        assertArrayEquals(Fixtures.slice(s.log, start, end), Fixtures.readAll(in, 1 + r.nextInt(9000)));
                    }
                    assertArrayEquals(s.offsetIndex, rsm.fetchIndex(s.metadata, IndexType.OFFSET).readAllBytes());
                    checked++;
                }
                return checked;
            }));
        }
        go.countDown();
        int total = 0;
        for (Future<Integer> f : results) {
            total += f.get();
        }
        pool.shutdown();
        assertEquals(16 * 25, total);
        Fixtures.assertNoLeaks();
    }

    @Test
    void closeDuringInFlightFetchesIsSafe() throws Exception {
        Fixtures.Segment s = Fixtures.segment(work.resolve("local"), 400_000, false, 9);
        rsm.copyLogSegmentData(s.metadata, s.data);
        ExecutorService pool = Executors.newFixedThreadPool(8);
        CountDownLatch started = new CountDownLatch(8);
        List<Future<String>> results = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            results.add(pool.submit(() -> {
                started.countDown();
                int rounds = 0;
                try {
                    while (rounds < 1000) {
                        try (InputStream in = rsm.fetchLogSegment(s.metadata, 0)) {
                            byte[] got = Fixtures.readAll(in, 1024);
                            assertArrayEquals(s.log, got);
                        }
                        rounds++;
                    }
                    return "finished";
                } catch (RemoteStorageException | IOException e) {
                    return "failed cleanly: " + e.getMessage();
                }
            }));
        }
        started.await();
        rsm.close();
        for (Future<String> f : results) {
            String outcome = f.get();
            assertTrue(outcome.startsWith("failed cleanly") || outcome.equals("finished"), outcome);
        }
        pool.shutdown();
        // After close, new calls fail; nothing native is left behind.
        assertThrows(RemoteStorageException.class, () -> rsm.fetchLogSegment(s.metadata, 0));
        Fixtures.assertNoLeaks();
    }

    @Test
    void streamReadAfterCloseFailsAndCloseIsIdempotentAcrossThreads() throws Exception {
        Fixtures.Segment s = Fixtures.segment(work.resolve("local"), 20_000, false, 10);
        rsm.copyLogSegmentData(s.metadata, s.data);
        InputStream in = rsm.fetchLogSegment(s.metadata, 0);
        assertEquals(s.log[0], (byte) in.read());
        Thread[] closers = new Thread[4];
        for (int i = 0; i < closers.length; i++) {
            closers[i] = new Thread(() -> {
                try {
                    in.close();
                } catch (IOException e) {
                    throw new AssertionError(e);
                }
            });
            closers[i].start();
        }
        for (Thread t : closers) {
            t.join();
        }
        in.close();
        assertThrows(IOException.class, () -> in.read(new byte[4], 0, 4));
        Fixtures.assertNoLeaks();
    }

    @Test
    void leakedStreamsAreFreedByTheCleaner() throws Exception {
        Fixtures.Segment s = Fixtures.segment(work.resolve("local"), 20_000, false, 11);
        rsm.copyLogSegmentData(s.metadata, s.data);
        for (int i = 0; i < 5; i++) {
            InputStream in = rsm.fetchLogSegment(s.metadata, 0);
            assertEquals(s.log[0], (byte) in.read());
            // dropped without close
        }
        assertTrue(streams() >= 5);
        // GC is not deterministic: give it bounded attempts.
        for (int i = 0; i < 100 && streams() > 0; i++) {
            System.gc();
            Thread.sleep(20);
        }
        assertEquals(0, streams(), "the Cleaner freed the leaked native streams");
    }

    /**
     * Streams the broker opens, reads a little of and never closes (KAFKA-18923) give their
     * memory back after {@code tsm.fetch.stream.idle.timeout.ms}, even while Java still holds
     * them (so the Cleaner cannot): a later read fails retriably naming the key, and new
     * fetches work.
     */
    @Test
    void forgottenStreamsAreReleasedAfterTheIdleTimeout() throws Exception {
        Map<String, Object> c = Fixtures.config(work.resolve("idle-bucket"));
        c.put("compression.enabled", "true");
        c.put("tsm.fetch.stream.idle.timeout.ms", "1000");
        TsmRemoteStorageManager idle = new TsmRemoteStorageManager();
        idle.configure(c);
        try {
            Fixtures.Segment s = Fixtures.segment(work.resolve("idle-local"), 200_000, false, 13);
            idle.copyLogSegmentData(s.metadata, s.data);
            Random r = new Random(13);
            List<InputStream> forgotten = new ArrayList<>();
            for (int i = 0; i < 300; i++) {
                int from = r.nextInt(s.log.length);
                InputStream in = idle.fetchLogSegment(s.metadata, from);
                assertEquals(s.log[from], (byte) in.read());
                forgotten.add(in);
            }
            assertEquals(300L, TsmMetrics.parse(idle.metricsText()).get("fetch.streams.held"));
            long deadline = System.nanoTime() + 20_000_000_000L;
            while (((Number) TsmMetrics.parse(idle.metricsText()).get("fetch.streams.held")).longValue() > 0) {
                assertTrue(System.nanoTime() < deadline, "forgotten streams not released within 20 s");
                Thread.sleep(100);
            }
            assertEquals(0L, TsmMetrics.parse(idle.metricsText()).get("memory.in_use.bytes"),
                    "the released streams gave their memory back");
            IOException e = assertThrows(IOException.class, () -> forgotten.get(0).read(new byte[8], 0, 8));
            assertTrue(e.getMessage().contains("tsm.fetch.stream.idle.timeout.ms"), e.getMessage());
            if (Calls.hasRetriable()) {
                assertEquals("RetriableRemoteStorageException", e.getCause().getClass().getSimpleName());
            }
            try (InputStream in = idle.fetchLogSegment(s.metadata, 0)) {
                assertArrayEquals(s.log, Fixtures.readAll(in, 65536), "a new fetch reads the whole segment");
            }
            for (InputStream in : forgotten) {
                in.close();
            }
        } finally {
            idle.close();
        }
        Fixtures.assertNoLeaks();
    }

    @Test
    void metricsAreExposedAsMBean() throws Exception {
        javax.management.ObjectName name = rsm.metricsMBeanName();
        assertNotNull(name);
        assertTrue(ManagementFactory.getPlatformMBeanServer().isRegistered(name));
        Fixtures.Segment s = Fixtures.segment(work.resolve("local"), 20_000, false, 12);
        rsm.copyLogSegmentData(s.metadata, s.data);
        javax.management.MBeanInfo info = ManagementFactory.getPlatformMBeanServer().getMBeanInfo(name);
        for (javax.management.MBeanAttributeInfo a : info.getAttributes()) {
            assertNotNull(ManagementFactory.getPlatformMBeanServer().getAttribute(name, a.getName()));
        }
        rsm.close();
        assertFalse(ManagementFactory.getPlatformMBeanServer().isRegistered(name));
        assertNull(rsm.metricsMBeanName());
    }

    private static int streams() {
        return Integer.parseInt(NativeBridge.liveHandles().split(" ")[2]);
    }
}
