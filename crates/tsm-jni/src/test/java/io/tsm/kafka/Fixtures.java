package io.tsm.kafka;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.LogSegmentData;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;

/** Segment files on disk, metadata and configuration for the filesystem backend. */
final class Fixtures {
    private Fixtures() {}

    static final byte[] LEADER_EPOCH = "0\n2\n0 0\n3 57\n".getBytes(StandardCharsets.UTF_8);

    /** Scratch folder for a test (under target/test-work). */
    static Path work(String name) throws IOException {
        Path base = Paths.get(System.getProperty("tsm.test.work", "target/test-work"));
        Path dir = base.resolve(name + "-" + Uuid.randomUuid());
        Files.createDirectories(dir);
        return dir;
    }

    /** The broker's map for a filesystem backend rooted at {@code root}. */
    static Map<String, Object> config(Path root) {
        Map<String, Object> c = new HashMap<>();
        c.put("storage.backend.class", "filesystem");
        c.put("storage.root", root.toString());
        c.put("chunk.size", "4096");
        c.put("broker.id", 1);
        return c;
    }

    static RemoteStorageManager configured(RemoteStorageManager rsm, Path root) {
        rsm.configure(config(root));
        return rsm;
    }

    /** One segment: its files and metadata. */
    static final class Segment {
        final RemoteLogSegmentMetadata metadata;
        final LogSegmentData data;
        final byte[] log;
        final byte[] offsetIndex;
        final byte[] timeIndex;
        final byte[] snapshot;
        final byte[] txnIndex;

        Segment(RemoteLogSegmentMetadata metadata, LogSegmentData data, byte[] log, byte[] offsetIndex,
                byte[] timeIndex, byte[] snapshot, byte[] txnIndex) {
            this.metadata = metadata;
            this.data = data;
            this.log = log;
            this.offsetIndex = offsetIndex;
            this.timeIndex = timeIndex;
            this.snapshot = snapshot;
            this.txnIndex = txnIndex;
        }
    }

    static byte[] random(Random r, int n) {
        byte[] b = new byte[n];
        r.nextBytes(b);
        return b;
    }

    /** A segment of {@code size} random bytes, with a transaction index when {@code withTxn}. */
    static Segment segment(Path dir, int size, boolean withTxn, long seed) throws IOException {
        return segment(dir, size, withTxn, seed,
                new TopicIdPartition(Uuid.randomUuid(), new TopicPartition("topic-a", 3)));
    }

    /** As {@link #segment(Path, int, boolean, long)}, of the topic partition {@code tip}. */
    static Segment segment(Path dir, int size, boolean withTxn, long seed, TopicIdPartition tip)
            throws IOException {
        Random r = new Random(seed);
        Files.createDirectories(dir);
        byte[] log = random(r, size);
        byte[] offsetIndex = random(r, 8 * 40);
        byte[] timeIndex = random(r, 12 * 40);
        byte[] snapshot = random(r, 333);
        byte[] txn = withTxn ? random(r, 40 * 3) : null;
        String base = String.format("%020d", seed);
        Path logFile = Files.write(dir.resolve(base + ".log"), log);
        Path offsetFile = Files.write(dir.resolve(base + ".index"), offsetIndex);
        Path timeFile = Files.write(dir.resolve(base + ".timeindex"), timeIndex);
        Path snapshotFile = Files.write(dir.resolve(base + ".snapshot"), snapshot);
        Optional<Path> txnFile = withTxn ? Optional.of(Files.write(dir.resolve(base + ".txnindex"), txn))
                : Optional.empty();
        RemoteLogSegmentId id = new RemoteLogSegmentId(tip, Uuid.randomUuid());
        Map<Integer, Long> epochs = new HashMap<>();
        epochs.put(0, 0L);
        epochs.put(3, 57L);
        RemoteLogSegmentMetadata meta = new RemoteLogSegmentMetadata(id, 0L, 99L, 1_700_000_000_000L, 1,
                1_700_000_000_500L, size, epochs);
        // A heap buffer whose position is not 0, like a slice the broker might hand over.
        ByteBuffer epochBuffer = ByteBuffer.allocate(LEADER_EPOCH.length + 4);
        epochBuffer.put(new byte[4]);
        epochBuffer.put(LEADER_EPOCH);
        epochBuffer.position(4);
        LogSegmentData data = new LogSegmentData(logFile, offsetFile, timeFile, txnFile, snapshotFile, epochBuffer);
        return new Segment(meta, data, log, offsetIndex, timeIndex, snapshot, txn);
    }

    /** Reads everything with read(byte[],off,len) in steps of {@code step}; asserts no read returns 0. */
    static byte[] readAll(InputStream in, int step) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buf = new byte[step];
        while (true) {
            int n = in.read(buf, 0, step);
            if (n == -1) {
                return out.toByteArray();
            }
            if (n == 0) {
                throw new AssertionError("read returned 0 for a non-empty request");
            }
            out.write(buf, 0, n);
        }
    }

    static byte[] slice(byte[] b, int from, int toInclusive) {
        int end = Math.min(toInclusive + 1, b.length);
        byte[] out = new byte[end - from];
        System.arraycopy(b, from, out, 0, out.length);
        return out;
    }

    /** No op or stream handle is left in the native registries. */
    static void assertNoLeaks() {
        String[] live = NativeBridge.liveHandles().split(" ");
        assertEquals("0", live[1], "live native ops: " + String.join(" ", live));
        assertEquals("0", live[2], "live native streams: " + String.join(" ", live));
    }
}
