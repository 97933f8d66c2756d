package io.tsm.bench;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.LogSegmentData;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;

/**
 * One segment set written by {@code tsm-bench gen} (or {@link SegmentSetWriter}): a directory
 * with {@code 00000000000000000000.log}, {@code .index}, {@code .timeindex}, {@code .snapshot},
 * {@code leader-epoch-checkpoint}, optional {@code .txnindex}, and {@code segment.json}
 * {@code {"baseOffset","endOffset","logBytes","maxTimestampMs"}}. Turns them into the
 * broker's {@link RemoteLogSegmentMetadata} and {@link LogSegmentData}.
 */
final class SegmentSet {
    static final String BASE = "00000000000000000000";

    final Path dir;
    final String name;
    final long baseOffset;
    final long endOffset;
    final long logBytes;
    final long maxTimestampMs;

    private SegmentSet(Path dir, long baseOffset, long endOffset, long logBytes, long maxTimestampMs) {
        this.dir = dir;
        this.name = dir.getFileName().toString();
        this.baseOffset = baseOffset;
        this.endOffset = endOffset;
        this.logBytes = logBytes;
        this.maxTimestampMs = maxTimestampMs;
    }

    static SegmentSet load(Path dir) throws IOException {
        Path json = dir.resolve("segment.json");
        if (!Files.isRegularFile(json)) {
            throw new IOException(json + " is missing: make the data with `tsm-bench gen --out DIR` (or BenchMain gen)");
        }
        JsonNode n = new ObjectMapper().readTree(json.toFile());
        for (String f : new String[] {"baseOffset", "endOffset", "logBytes", "maxTimestampMs"}) {
            if (n.get(f) == null || !n.get(f).canConvertToLong()) {
                throw new IOException(json + ": field " + f + " is missing or not an integer");
            }
        }
        SegmentSet s = new SegmentSet(dir, n.get("baseOffset").asLong(), n.get("endOffset").asLong(),
                n.get("logBytes").asLong(), n.get("maxTimestampMs").asLong());
        long actual = Files.size(s.log());
        if (actual != s.logBytes) {
            throw new IOException(s.log() + " has " + actual + " bytes but segment.json says " + s.logBytes);
        }
        if (s.logBytes > Integer.MAX_VALUE) {
            throw new IOException(s.log() + " is larger than a Kafka segment can be (2 GiB)");
        }
        return s;
    }

    Path log() {
        return dir.resolve(BASE + ".log");
    }

    Path offsetIndex() {
        return dir.resolve(BASE + ".index");
    }

    Path timeIndex() {
        return dir.resolve(BASE + ".timeindex");
    }

    Path snapshot() {
        return dir.resolve(BASE + ".snapshot");
    }

    Path txnIndex() {
        return dir.resolve(BASE + ".txnindex");
    }

    byte[] leaderEpochBytes() throws IOException {
        Path p = dir.resolve("leader-epoch-checkpoint");
        return Files.exists(p) ? Files.readAllBytes(p) : "0\n1\n0 0\n".getBytes(StandardCharsets.UTF_8);
    }

    /** The broker's view of the local segment; {@code txn} overrides the transaction index. */
    LogSegmentData data(Optional<Path> txn) throws IOException {
        Optional<Path> t = txn.isPresent() ? txn : (Files.exists(txnIndex()) ? Optional.of(txnIndex()) : Optional.empty());
        return new LogSegmentData(log(), offsetIndex(), timeIndex(), t, snapshot(), ByteBuffer.wrap(leaderEpochBytes()));
    }

    /** A Kafka Uuid derived from {@code seed} (same seed, same id: fetch JVMs find what copy wrote). */
    static Uuid uuid(String seed) {
        UUID u = UUID.nameUUIDFromBytes(seed.getBytes(StandardCharsets.UTF_8));
        return new Uuid(u.getMostSignificantBits(), u.getLeastSignificantBits());
    }

    /** Metadata for this segment with the given segment id, on topic {@code bench-<set>} partition 0. */
    RemoteLogSegmentMetadata metadata(Uuid segmentId) {
        return metadata(segmentId, (int) logBytes);
    }

    /** As {@link #metadata(Uuid)} for a log of {@code size} bytes (the JIT warm-up's prefix). */
    RemoteLogSegmentMetadata metadata(Uuid segmentId, int size) {
        TopicIdPartition tip = new TopicIdPartition(uuid("topic:" + name), new TopicPartition("bench-" + name, 0));
        return new RemoteLogSegmentMetadata(new RemoteLogSegmentId(tip, segmentId), baseOffset, endOffset,
                maxTimestampMs, 0, System.currentTimeMillis(), size, Map.of(0, baseOffset));
    }

    /** Byte positions in the offset index (8-byte entries: relative offset, position; i32 BE). */
    int[] indexPositions() throws IOException {
        byte[] idx = Files.readAllBytes(offsetIndex());
        ByteBuffer b = ByteBuffer.wrap(idx);
        int n = idx.length / 8;
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            b.getInt();
            out[i] = b.getInt();
        }
        return out;
    }
}
