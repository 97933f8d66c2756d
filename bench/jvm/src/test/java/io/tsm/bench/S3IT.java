package io.tsm.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager.IndexType;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import io.tsm.bench.baseline.JavaBaselineRsm;
import picocli.CommandLine;

/**
 * Integration test (mvn verify) on MinIO (scripts/services/minio.sh start; the TSM_TEST_S3_*
 * exports from {@code minio.sh env}; bucket tsm-bench-jvm, created if missing). Missing
 * endpoint: FAILS unless TSM_BENCH_SKIP_S3=1. The baseline's S3 storage round-trips a 12 MiB
 * segment with 5 MiB parts (a 3-part multipart upload for {@code .log}, single PutObjects for
 * the rest) in every mode; then the cross-check against tsm runs on S3 (needs the tsm jar).
 */
class S3IT {
    static Path work;
    static SegmentSet set;

    @BeforeAll
    static void setUp() throws Exception {
        TestEnv.requireS3();
        work = Path.of(System.getProperty("tsm.test.work", "target/test-work")).resolve("s3-" + Uuid.randomUuid());
        set = SegmentSetWriter.write(work.resolve("data/compressible"), 12L * 1024 * 1024, false, 21);
        Pem.ensureKeyPair(work.resolve("work/keys"));
        Plugins.S3Env.fromEnv().ensureBucket();
    }

    @ParameterizedTest
    @ValueSource(strings = {"plain", "zstd", "aes", "zstd+aes"})
    void baselineMultipartRoundTrip(String mode) throws Exception {
        Map<String, Object> c = Plugins.config("s3", mode, work.resolve("work"));
        c.put("storage.s3.multipart.upload.part.size", Integer.toString(5 * 1024 * 1024));
        byte[] log = Files.readAllBytes(set.log());
        try (RemoteStorageManager r = new JavaBaselineRsm()) {
            r.configure(c);
            RemoteLogSegmentMetadata meta = set.metadata(Uuid.randomUuid());
            r.copyLogSegmentData(meta, set.data(Optional.empty()));
            try (InputStream in = r.fetchLogSegment(meta, 0)) {
                assertArrayEquals(log, in.readAllBytes());
            }
            int s = 4 * 1024 * 1024 - 3;
            try (InputStream in = r.fetchLogSegment(meta, s, s + 9)) {
                assertArrayEquals(Arrays.copyOfRange(log, s, s + 10), in.readAllBytes());
            }
            try (InputStream in = r.fetchIndex(meta, IndexType.OFFSET)) {
                assertArrayEquals(Files.readAllBytes(set.offsetIndex()), in.readAllBytes());
            }
            r.deleteLogSegmentData(meta);
            r.deleteLogSegmentData(meta);
        }
        try (RemoteStorageManager fresh = new JavaBaselineRsm()) {
            fresh.configure(c);
            RemoteLogSegmentMetadata gone = set.metadata(Uuid.randomUuid());
            assertThrows(RemoteResourceNotFoundException.class, () -> fresh.fetchLogSegment(gone, 0));
        }
    }

    @Test
    void crossCheckOnS3() {
        TestEnv.requireTsmJar();
        int code = new CommandLine(new CrossCheck()).execute("--backend", "s3", "--work", work.resolve("work").toString(),
                "--data", set.dir.toString());
        assertEquals(0, code, "crosscheck on S3 found mismatches (see the MISMATCH lines above)");
    }
}
