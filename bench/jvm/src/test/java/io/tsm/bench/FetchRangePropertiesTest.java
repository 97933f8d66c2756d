package io.tsm.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;

import io.tsm.bench.baseline.JavaBaselineRsm;

/**
 * Property: for any {@code [start, end]} (end clamped at the segment's end) and any read size,
 * the baseline's fetch returns exactly those original bytes, in every mode (zstd+aes and
 * plain, 4 KiB chunks so ranges cross many chunk boundaries).
 */
class FetchRangePropertiesTest {
    static final int CHUNK = 4096;
    static Path work;
    static byte[] log;
    static RemoteStorageManager plain;
    static RemoteStorageManager both;
    static RemoteLogSegmentMetadata plainMeta;
    static RemoteLogSegmentMetadata bothMeta;

    @BeforeContainer
    static void setUp() throws Exception {
        work = Path.of(System.getProperty("tsm.test.work", "target/test-work")).resolve("ranges-" + Uuid.randomUuid());
        SegmentSet set = SegmentSetWriter.write(work.resolve("data/incompressible"), 200_000, true, 3);
        log = Files.readAllBytes(set.log());
        Pem.ensureKeyPair(work.resolve("keys"));
        plain = open("plain");
        both = open("zstd+aes");
        plainMeta = set.metadata(Uuid.randomUuid());
        bothMeta = set.metadata(Uuid.randomUuid());
        plain.copyLogSegmentData(plainMeta, set.data(Optional.empty()));
        both.copyLogSegmentData(bothMeta, set.data(Optional.empty()));
    }

    static RemoteStorageManager open(String mode) {
        Map<String, Object> c = Plugins.config("filesystem", mode, work);
        c.put("chunk.size", Integer.toString(CHUNK));
        RemoteStorageManager r = new JavaBaselineRsm();
        r.configure(c);
        return r;
    }

    @AfterContainer
    static void tearDown() throws Exception {
        plain.close();
        both.close();
    }

    @Property(tries = 200)
    void rangedFetchReturnsExactlyTheRange(@ForAll @IntRange(min = 0, max = 199_999) int start,
                                           @ForAll @IntRange(min = 0, max = 250_000) int length,
                                           @ForAll @IntRange(min = 1, max = 20_000) int readSize,
                                           @ForAll boolean encrypted) throws Exception {
        int s = Math.min(start, log.length - 1);
        int end = s + length; // may pass the end: clamped
        byte[] want = Arrays.copyOfRange(log, s, Math.min(log.length, end + 1));
        RemoteStorageManager r = encrypted ? both : plain;
        RemoteLogSegmentMetadata meta = encrypted ? bothMeta : plainMeta;
        try (InputStream in = r.fetchLogSegment(meta, s, end)) {
            byte[] got = new byte[want.length + 10];
            int total = 0;
            int n;
            while ((n = in.read(got, total, Math.min(readSize, got.length - total))) > 0) {
                total += n;
            }
            assertArrayEquals(want, Arrays.copyOf(got, total));
        }
    }
}
