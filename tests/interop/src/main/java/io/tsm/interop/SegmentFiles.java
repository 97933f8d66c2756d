package io.tsm.interop;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.kafka.server.log.remote.storage.LogSegmentData;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager.IndexType;

/**
 * One segment set written by {@code tsm-bench gen} (real Kafka v2 record batches with valid
 * CRC32C, the offset and time indexes as Kafka's {@code LogSegment.append} writes them, a
 * producer snapshot stand-in, the leader-epoch checkpoint, {@code segment.json}), plus an
 * optional synthetic transaction index: the broker's local files that a copy is given and
 * that every fetch is compared with.
 */
final class SegmentFiles {
    static final String BASE = "00000000000000000000";

    final String name;
    final Path dir;
    final long baseOffset;
    final long endOffset;
    final int logBytes;
    final long maxTimestampMs;
    /** The transaction index given to copy, or empty (the segment has none). */
    final Optional<Path> txnIndex;

    private SegmentFiles(String name, Path dir, long baseOffset, long endOffset, int logBytes, long maxTimestampMs,
                         Optional<Path> txnIndex) {
        this.name = name;
        this.dir = dir;
        this.baseOffset = baseOffset;
        this.endOffset = endOffset;
        this.logBytes = logBytes;
        this.maxTimestampMs = maxTimestampMs;
        this.txnIndex = txnIndex;
    }

    /**
     * Loads {@code data/<name>}; with {@code txn}, a synthetic transaction index
     * ({@code data/<name>.txnindex}, three aborted-transaction entries) goes with it.
     */
    static SegmentFiles load(Path data, String name, boolean txn) throws IOException {
        Path dir = data.resolve(name);
        Path json = dir.resolve("segment.json");
        if (!Files.isRegularFile(json)) {
            throw new IOException(json + " is missing: write the segment sets with `tsm-bench gen --out " + data + "`");
        }
        String text = Files.readString(json);
        long logBytes = field(json, text, "logBytes");
        long actual = Files.size(dir.resolve(BASE + ".log"));
        if (actual != logBytes || logBytes > Integer.MAX_VALUE) {
            throw new IOException(dir.resolve(BASE + ".log") + " has " + actual + " bytes, segment.json says " + logBytes);
        }
        Optional<Path> t = Optional.empty();
        if (txn) {
            Path p = data.resolve(name + ".txnindex");
            if (!Files.exists(p)) {
                Files.write(p, syntheticTxnIndex());
            }
            t = Optional.of(p);
        }
        return new SegmentFiles(name, dir, field(json, text, "baseOffset"), field(json, text, "endOffset"),
                (int) logBytes, field(json, text, "maxTimestampMs"), t);
    }

    private static long field(Path json, String text, String field) throws IOException {
        Matcher m = Pattern.compile("\"" + field + "\"\\s*:\\s*(-?\\d+)").matcher(text);
        if (!m.find()) {
            throw new IOException(json + ": field " + field + " is missing or not an integer");
        }
        return Long.parseLong(m.group(1));
    }

    /** Three 40-byte aborted-transaction entries (version i16, producerId i64, first/last/lastStable i64, i32). */
    static byte[] syntheticTxnIndex() {
        ByteBuffer b = ByteBuffer.allocate(3 * 40);
        for (int i = 0; i < 3; i++) {
            b.putShort((short) 0).putLong(1000 + i).putLong(10L * i).putLong(10L * i + 5).putLong(10L * i + 6).putInt(0);
        }
        return b.array();
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

    Path leaderEpoch() {
        return dir.resolve("leader-epoch-checkpoint");
    }

    /** What the broker hands to copy (the leader-epoch checkpoint as a heap buffer, as Kafka does). */
    LogSegmentData data() throws IOException {
        return new LogSegmentData(log(), offsetIndex(), timeIndex(), txnIndex, snapshot(),
                ByteBuffer.wrap(Files.readAllBytes(leaderEpoch())));
    }

    /** The bytes copy was given for each index; TRANSACTION is absent when the segment has none. */
    Map<IndexType, byte[]> indexes() throws IOException {
        Map<IndexType, byte[]> m = new EnumMap<>(IndexType.class);
        m.put(IndexType.OFFSET, Files.readAllBytes(offsetIndex()));
        m.put(IndexType.TIMESTAMP, Files.readAllBytes(timeIndex()));
        m.put(IndexType.PRODUCER_SNAPSHOT, Files.readAllBytes(snapshot()));
        m.put(IndexType.LEADER_EPOCH, Files.readAllBytes(leaderEpoch()));
        if (txnIndex.isPresent()) {
            m.put(IndexType.TRANSACTION, Files.readAllBytes(txnIndex.get()));
        }
        return m;
    }

    /** Byte positions in the offset index (8-byte entries: relative offset i32, position i32). */
    int[] indexPositions() throws IOException {
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(offsetIndex()));
        int[] out = new int[b.remaining() / 8];
        for (int i = 0; i < out.length; i++) {
            b.getInt();
            out[i] = b.getInt();
        }
        return out;
    }
}
