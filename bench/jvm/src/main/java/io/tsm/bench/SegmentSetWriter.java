package io.tsm.bench;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;

/**
 * A small stand-in for {@code tsm-bench gen} (tests, and {@code BenchMain gen} when the Rust
 * harness is not built): one segment set of real Kafka v2 record batches written with Kafka's
 * own {@code MemoryRecordsBuilder} (codec none, valid CRC32C), an offset index entry per
 * ~4 KiB of log, a time index entry per batch, a snapshot stand-in, the leader-epoch
 * checkpoint and {@code segment.json}. Memory: one batch (~16 KiB) at a time.
 */
final class SegmentSetWriter {
    private SegmentSetWriter() {}

    /** Writes {@code dir} holding about {@code bytes} of log; {@code random}: payloads are random bytes. */
    static SegmentSet write(Path dir, long bytes, boolean random, long seed) throws IOException {
        if (Files.isRegularFile(dir.resolve("segment.json"))) {
            return SegmentSet.load(dir); // idempotent, like tsm-bench gen
        }
        Files.createDirectories(dir);
        Random r = new Random(seed);
        long offset = 0;
        long position = 0;
        long lastIndexed = -1;
        long ts = 1_700_000_000_000L;
        long maxTs = ts;
        String[] words = {"order", "user", "item", "price", "status", "created", "shipped", "region", "eu", "us"};
        try (OutputStream log = Files.newOutputStream(dir.resolve(SegmentSet.BASE + ".log"));
             OutputStream idx = Files.newOutputStream(dir.resolve(SegmentSet.BASE + ".index"));
             OutputStream tidx = Files.newOutputStream(dir.resolve(SegmentSet.BASE + ".timeindex"))) {
            while (position < bytes) {
                MemoryRecordsBuilder b = MemoryRecords.builder(ByteBuffer.allocate(32 * 1024), Compression.NONE,
                        TimestampType.CREATE_TIME, offset);
                long batchStart = position;
                for (int i = 0; i < 40; i++) {
                    byte[] value;
                    if (random) {
                        value = new byte[300 + r.nextInt(200)];
                        r.nextBytes(value);
                    } else {
                        StringBuilder s = new StringBuilder("{");
                        for (int k = 0; k < 12; k++) {
                            s.append('"').append(words[r.nextInt(words.length)]).append("\":");
                            s.append(r.nextInt(1_000_000)).append(k < 11 ? "," : "");
                        }
                        value = s.append('}').toString().getBytes(StandardCharsets.UTF_8);
                    }
                    b.append(ts, ("k" + offset).getBytes(StandardCharsets.UTF_8), value);
                    offset++;
                    ts += 1 + r.nextInt(3);
                }
                maxTs = ts - 1;
                MemoryRecords records = b.build();
                ByteBuffer buf = records.buffer();
                byte[] out = new byte[buf.remaining()];
                buf.get(out);
                log.write(out);
                position += out.length;
                if (lastIndexed < 0 || batchStart - lastIndexed >= 4096) {
                    idx.write(ByteBuffer.allocate(8).putInt((int) (offset - 1)).putInt((int) batchStart).array());
                    lastIndexed = batchStart;
                }
                tidx.write(ByteBuffer.allocate(12).putLong(maxTs).putInt((int) (offset - 1)).array());
            }
        }
        Files.write(dir.resolve(SegmentSet.BASE + ".snapshot"), new byte[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
        Files.writeString(dir.resolve("leader-epoch-checkpoint"), "0\n1\n0 0\n");
        Files.writeString(dir.resolve("segment.json"), "{\"baseOffset\":0,\"endOffset\":" + (offset - 1)
                + ",\"logBytes\":" + position + ",\"maxTimestampMs\":" + maxTs + "}\n");
        return SegmentSet.load(dir);
    }
}
