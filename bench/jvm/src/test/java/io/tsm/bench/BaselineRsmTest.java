package io.tsm.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.LogSegmentData;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager.IndexType;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import io.tsm.bench.baseline.JavaBaselineRsm;

/**
 * The Java baseline on the filesystem backend, driven through the KIP-405 interface with a
 * small generated segment set (real Kafka v2 batches) and a 150 000-byte chunk size (7 chunks, each encrypted in 3 slices):
 * round trips and on-disk format in every mode, edge cases and error paths.
 */
class BaselineRsmTest {
    static final int CHUNK = 150_000; // > 2 encryption slices of 64 KiB, not a multiple of them
    static Path work;
    static SegmentSet set;
    static byte[] log;

    @BeforeAll
    static void data() throws Exception {
        work = Path.of(System.getProperty("tsm.test.work", "target/test-work")).resolve("baseline-" + Uuid.randomUuid());
        set = SegmentSetWriter.write(work.resolve("data/compressible"), 1024 * 1024 + 12345, false, 7);
        log = Files.readAllBytes(set.log());
        Pem.ensureKeyPair(work.resolve("keys"));
        Files.write(work.resolve("txnindex"), CrossCheck.syntheticTxnIndex());
    }

    static Map<String, Object> config(String mode) {
        Map<String, Object> c = Plugins.config("filesystem", mode, work);
        c.put("chunk.size", Integer.toString(CHUNK));
        return c;
    }

    static RemoteStorageManager rsm(String mode) {
        RemoteStorageManager r = new JavaBaselineRsm();
        r.configure(config(mode));
        return r;
    }

    static byte[] readAll(InputStream in) throws IOException {
        try (in) {
            return in.readAllBytes();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"plain", "zstd", "aes", "zstd+aes"})
    void roundTripAndFormat(String mode) throws Exception {
        try (RemoteStorageManager r = rsm(mode)) {
            RemoteLogSegmentMetadata meta = set.metadata(Uuid.randomUuid());
            assertEquals(Optional.empty(), r.copyLogSegmentData(meta, set.data(Optional.of(work.resolve("txnindex")))));
            assertArrayEquals(log, readAll(r.fetchLogSegment(meta, 0)));
            assertArrayEquals(Arrays.copyOfRange(log, CHUNK - 5, CHUNK * 3 + 6),
                    readAll(r.fetchLogSegment(meta, CHUNK - 5, CHUNK * 3 + 5)));
            assertArrayEquals(Files.readAllBytes(set.offsetIndex()), readAll(r.fetchIndex(meta, IndexType.OFFSET)));
            assertArrayEquals(Files.readAllBytes(set.timeIndex()), readAll(r.fetchIndex(meta, IndexType.TIMESTAMP)));
            assertArrayEquals(Files.readAllBytes(set.snapshot()), readAll(r.fetchIndex(meta, IndexType.PRODUCER_SNAPSHOT)));
            assertArrayEquals(set.leaderEpochBytes(), readAll(r.fetchIndex(meta, IndexType.LEADER_EPOCH)));
            assertArrayEquals(CrossCheck.syntheticTxnIndex(), readAll(r.fetchIndex(meta, IndexType.TRANSACTION)));

            Path main = objectPath(meta);
            Path logObject = main.resolveSibling(main.getFileName() + ".log");
            JsonNode m = Results.JSON.readTree(main.resolveSibling(main.getFileName() + ".rsm-manifest").toFile());
            assertEquals("1", m.get("version").textValue());
            boolean zstd = mode.startsWith("zstd");
            boolean aes = mode.endsWith("aes");
            assertEquals(zstd ? "variable" : "fixed", m.at("/chunkIndex/type").textValue());
            assertEquals(zstd, m.get("compression").booleanValue());
            assertEquals(aes, m.has("encryption"));
            int chunks = (log.length + CHUNK - 1) / CHUNK;
            if (!zstd) {
                int overhead = aes ? 28 : 0;
                assertEquals(CHUNK + overhead, m.at("/chunkIndex/transformedChunkSize").intValue());
                assertEquals(log.length - (chunks - 1) * CHUNK + overhead, m.at("/chunkIndex/finalTransformedChunkSize").intValue());
                assertEquals(log.length + (long) chunks * overhead, Files.size(logObject));
            } else {
                assertTrue(Files.size(logObject) < log.length, "compressible data must shrink");
            }
            if (!zstd && !aes) {
                assertArrayEquals(log, Files.readAllBytes(logObject));
            }
            if (aes) {
                // Every stored index is IV(12) || ciphertext || tag(16).
                assertEquals(Files.size(set.offsetIndex()) + 28, m.at("/segmentIndexes/offset/size").longValue());
                assertTrue(m.at("/encryption/dataKey").textValue().startsWith("bench:"));
            }
            r.deleteLogSegmentData(meta);
            assertFalse(Files.exists(logObject));
        }
    }

    static Path objectPath(RemoteLogSegmentMetadata meta) {
        return work.resolve("fs-root").resolve("bench-jvm/" + meta.topicIdPartition().topic() + "-"
                + meta.topicIdPartition().topicId() + "/0/00000000000000000000-" + meta.remoteLogSegmentId().id());
    }

    @Test
    void readNeverReturnsZeroAndCloseIsIdempotent() throws Exception {
        try (RemoteStorageManager r = rsm("zstd+aes")) {
            RemoteLogSegmentMetadata meta = set.metadata(Uuid.randomUuid());
            r.copyLogSegmentData(meta, set.data(Optional.empty()));
            InputStream in = r.fetchLogSegment(meta, 100);
            byte[] b = new byte[7];
            long total = 0;
            int n;
            while ((n = in.read(b, 0, b.length)) != -1) {
                assertTrue(n > 0);
                total += n;
            }
            assertEquals(log.length - 100, total);
            in.close();
            in.close();
            assertThrows(IOException.class, () -> in.read());
        }
    }

    @Test
    void concurrentFetchesShareThePoolSafely() throws Exception {
        try (RemoteStorageManager r = rsm("zstd+aes")) {
            RemoteLogSegmentMetadata meta = set.metadata(Uuid.randomUuid());
            r.copyLogSegmentData(meta, set.data(Optional.empty()));
            java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(8);
            try {
                java.util.List<java.util.concurrent.Future<Boolean>> results = new java.util.ArrayList<>();
                for (int t = 0; t < 8; t++) {
                    final int seed = t;
                    results.add(pool.submit(() -> {
                        java.util.Random random = new java.util.Random(seed);
                        for (int i = 0; i < 20; i++) {
                            int s = random.nextInt(log.length - 1);
                            int e = Math.min(log.length - 1, s + random.nextInt(3 * CHUNK));
                            if (!Arrays.equals(Arrays.copyOfRange(log, s, e + 1), readAll(r.fetchLogSegment(meta, s, e)))) {
                                return false;
                            }
                        }
                        return true;
                    }));
                }
                for (java.util.concurrent.Future<Boolean> f : results) {
                    assertTrue(f.get());
                }
            } finally {
                pool.shutdownNow();
            }
        }
    }

    @Test
    void missingSegmentsAndIndexes() throws Exception {
        try (RemoteStorageManager r = rsm("plain")) {
            RemoteLogSegmentMetadata meta = set.metadata(Uuid.randomUuid());
            assertThrows(RemoteResourceNotFoundException.class, () -> r.fetchLogSegment(meta, 0));
            assertThrows(RemoteResourceNotFoundException.class, () -> r.fetchIndex(meta, IndexType.OFFSET));
            r.deleteLogSegmentData(meta); // never written: success
            r.copyLogSegmentData(meta, set.data(Optional.empty()));
            assertThrows(RemoteResourceNotFoundException.class, () -> r.fetchIndex(meta, IndexType.TRANSACTION));
            r.deleteLogSegmentData(meta);
            r.deleteLogSegmentData(meta);
        }
    }

    @Test
    void emptySegment() throws Exception {
        Path dir = work.resolve("empty");
        Files.createDirectories(dir);
        Path emptyLog = dir.resolve("e.log");
        Files.write(emptyLog, new byte[0]);
        LogSegmentData data = new LogSegmentData(emptyLog, set.offsetIndex(), set.timeIndex(), Optional.empty(),
                set.snapshot(), java.nio.ByteBuffer.wrap(new byte[0]));
        for (String mode : new String[] {"plain", "zstd+aes"}) {
            try (RemoteStorageManager r = rsm(mode)) {
                RemoteLogSegmentMetadata meta = set.metadata(Uuid.randomUuid());
                r.copyLogSegmentData(meta, data);
                assertArrayEquals(new byte[0], readAll(r.fetchLogSegment(meta, 0)));
                assertArrayEquals(new byte[0], readAll(r.fetchIndex(meta, IndexType.LEADER_EPOCH)));
            }
        }
    }

    @Test
    void unknownKeyPairIsNamed() throws Exception {
        RemoteLogSegmentMetadata meta = set.metadata(Uuid.randomUuid());
        try (RemoteStorageManager w = rsm("aes")) {
            w.copyLogSegmentData(meta, set.data(Optional.empty()));
        }
        Map<String, Object> c = config("aes");
        Pem.ensureKeyPair(work.resolve("keys2"));
        c.put("encryption.key.pair.id", "other");
        c.put("encryption.key.pairs", "other");
        c.put("encryption.key.pairs.other.public.key.file", work.resolve("keys2/public.pem").toString());
        c.put("encryption.key.pairs.other.private.key.file", work.resolve("keys2/private.pem").toString());
        try (RemoteStorageManager r = new JavaBaselineRsm()) {
            r.configure(c);
            RemoteStorageException e = assertThrows(RemoteStorageException.class, () -> r.fetchLogSegment(meta, 0));
            assertTrue(e.getMessage().contains("'bench'"), e.getMessage());
        }
    }

    @Test
    void corruptChunkIsNamed() throws Exception {
        try (RemoteStorageManager r = rsm("aes")) {
            RemoteLogSegmentMetadata meta = set.metadata(Uuid.randomUuid());
            r.copyLogSegmentData(meta, set.data(Optional.empty()));
            Path main = objectPath(meta);
            Path logObject = main.resolveSibling(main.getFileName() + ".log");
            byte[] stored = Files.readAllBytes(logObject);
            stored[(CHUNK + 28) * 2 + 40] ^= 1; // inside chunk 2
            Files.write(logObject, stored);
            InputStream in = r.fetchLogSegment(meta, 0);
            IOException e = assertThrows(IOException.class, in::readAllBytes);
            assertTrue(e.getMessage().contains("chunk 2"), e.getMessage());
        }
    }

    @Test
    void heuristicSkipsCompressedBatches() throws Exception {
        Map<String, Object> c = config("zstd");
        c.put("compression.heuristic.enabled", "true");
        Path dir = work.resolve("compressed-first");
        Files.createDirectories(dir);
        Path gz = dir.resolve("gz.log");
        byte[] copy = log.clone();
        copy[22] |= 1; // attributes (bytes 21-22): codec gzip
        Files.write(gz, copy);
        try (RemoteStorageManager r = new JavaBaselineRsm()) {
            r.configure(c);
            for (boolean compressed : new boolean[] {false, true}) {
                RemoteLogSegmentMetadata meta = set.metadata(Uuid.randomUuid());
                LogSegmentData d = compressed
                        ? new LogSegmentData(gz, set.offsetIndex(), set.timeIndex(), Optional.empty(), set.snapshot(),
                                java.nio.ByteBuffer.wrap(set.leaderEpochBytes()))
                        : set.data(Optional.empty());
                r.copyLogSegmentData(meta, d);
                Path main = objectPath(meta);
                JsonNode m = Results.JSON.readTree(main.resolveSibling(main.getFileName() + ".rsm-manifest").toFile());
                assertEquals(!compressed, m.get("compression").booleanValue());
            }
        }
    }

    @Test
    void failedCopyLeavesNothing() throws Exception {
        try (RemoteStorageManager r = rsm("plain")) {
            RemoteLogSegmentMetadata meta = set.metadata(Uuid.randomUuid());
            LogSegmentData bad = new LogSegmentData(set.log(), work.resolve("no-such.index"), set.timeIndex(),
                    Optional.empty(), set.snapshot(), java.nio.ByteBuffer.wrap(new byte[0]));
            RemoteStorageException e = assertThrows(RemoteStorageException.class, () -> r.copyLogSegmentData(meta, bad));
            assertTrue(e.getMessage().contains(meta.remoteLogSegmentId().id().toString()), e.getMessage());
            Path dir = objectPath(meta).getParent();
            try (Stream<Path> files = Files.exists(dir) ? Files.list(dir) : Stream.empty()) {
                assertFalse(files.anyMatch(p -> p.getFileName().toString().contains(meta.remoteLogSegmentId().id().toString())));
            }
        }
    }
}
