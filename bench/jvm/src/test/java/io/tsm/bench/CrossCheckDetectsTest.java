package io.tsm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.LogSegmentData;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;
import org.junit.jupiter.api.Test;

import io.tsm.bench.baseline.JavaBaselineRsm;
import picocli.CommandLine;

/**
 * The cross-check itself must catch a wrong plugin: with the baseline on both sides it
 * passes; when one side's fetch stream flips one byte (a fault-injecting wrapper, no tsm jar
 * needed) it fails and names the first differing position.
 */
class CrossCheckDetectsTest {
    /** Delegates to the baseline; fetched log bytes at {@code flipAt} are inverted. */
    static final class FlippingRsm implements RemoteStorageManager {
        final JavaBaselineRsm inner = new JavaBaselineRsm();
        final long flipAt;

        FlippingRsm(long flipAt) {
            this.flipAt = flipAt;
        }

        @Override
        public void configure(Map<String, ?> configs) {
            inner.configure(configs);
        }

        @Override
        public Optional<RemoteLogSegmentMetadata.CustomMetadata> copyLogSegmentData(RemoteLogSegmentMetadata m,
                                                                                   LogSegmentData d)
                throws RemoteStorageException {
            return inner.copyLogSegmentData(m, d);
        }

        @Override
        public InputStream fetchLogSegment(RemoteLogSegmentMetadata m, int start) throws RemoteStorageException {
            return flip(inner.fetchLogSegment(m, start), start);
        }

        @Override
        public InputStream fetchLogSegment(RemoteLogSegmentMetadata m, int start, int end) throws RemoteStorageException {
            return flip(inner.fetchLogSegment(m, start, end), start);
        }

        private InputStream flip(InputStream in, long start) {
            return new FilterInputStream(in) {
                long pos = start;

                @Override
                public int read(byte[] b, int off, int len) throws IOException {
                    int n = super.read(b, off, len);
                    if (n > 0 && flipAt >= pos && flipAt < pos + n) {
                        b[off + (int) (flipAt - pos)] ^= (byte) 0xFF;
                    }
                    pos += Math.max(n, 0);
                    return n;
                }
            };
        }

        @Override
        public InputStream fetchIndex(RemoteLogSegmentMetadata m, IndexType t) throws RemoteStorageException {
            return inner.fetchIndex(m, t);
        }

        @Override
        public void deleteLogSegmentData(RemoteLogSegmentMetadata m) throws RemoteStorageException {
            inner.deleteLogSegmentData(m);
        }

        @Override
        public void close() {
            inner.close();
        }
    }

    @Test
    void passesOnAGoodPairAndCatchesAFlippedByte() throws Exception {
        Path work = Path.of(System.getProperty("tsm.test.work", "target/test-work")).resolve("detect-" + Uuid.randomUuid());
        SegmentSet set = SegmentSetWriter.write(work.resolve("data/compressible"), 5L * 1024 * 1024, false, 5);
        String[] args = {"--work", work.resolve("work").toString(), "--modes", "zstd+aes", "--data", set.dir.toString()};

        CrossCheck good = new CrossCheck();
        good.factory = name -> new JavaBaselineRsm();
        assertEquals(0, new CommandLine(good).execute(args), String.join("\n", good.failures()));

        long flipAt = 4 * 1024 * 1024 + 17; // in the second chunk
        CrossCheck bad = new CrossCheck();
        bad.factory = name -> name.equals("java") ? new FlippingRsm(flipAt) : new JavaBaselineRsm();
        assertEquals(1, new CommandLine(bad).execute(args));
        assertTrue(bad.failures().stream().anyMatch(f -> f.contains("tsm->java") && f.contains("position " + flipAt)),
                String.join("\n", bad.failures()));
        assertTrue(bad.failures().stream().noneMatch(f -> f.contains("java->tsm fetchLogSegment(0)")),
                "only the flipping reader's reads may fail:\n" + String.join("\n", bad.failures()));
    }
}
