package io.tsm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;

import org.apache.kafka.common.Uuid;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import picocli.CommandLine;

/**
 * Integration test (mvn verify): {@code BenchMain crosscheck} on the filesystem backend with a
 * small generated segment set (just over two 4 MiB chunks), every mode, both directions.
 * Needs the tsm plugin jar (crates/tsm-jni/target/tsm-kafka-plugin-0.1.0.jar, put on the
 * classpath by the failsafe configuration; override with -Dtsm.plugin.jar=...). Missing jar:
 * FAILS, unless TSM_BENCH_SKIP_TSM=1 is set (then the test is skipped, loudly).
 */
class CrossCheckIT {
    static Path work;

    @BeforeAll
    static void needsTsm() {
        TestEnv.requireTsmJar();
        work = Path.of(System.getProperty("tsm.test.work", "target/test-work")).resolve("crosscheck-" + Uuid.randomUuid());
    }

    @Test
    void filesystemBothDirectionsEveryMode() throws Exception {
        SegmentSetWriter.write(work.resolve("data/compressible"), 9L * 1024 * 1024, false, 11);
        SegmentSetWriter.write(work.resolve("data/incompressible"), 5L * 1024 * 1024, true, 12);
        int code = new CommandLine(new CrossCheck()).execute("--backend", "filesystem", "--work",
                work.resolve("work").toString(), "--data", work.resolve("data/compressible").toString(),
                work.resolve("data/incompressible").toString());
        assertEquals(0, code, "crosscheck found mismatches (see the MISMATCH lines above)");
    }
}
