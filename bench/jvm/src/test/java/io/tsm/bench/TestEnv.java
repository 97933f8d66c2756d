package io.tsm.bench;

import org.junit.jupiter.api.Assumptions;

/** Service / artifact checks for the integration tests: fail loudly unless told to skip. */
final class TestEnv {
    private TestEnv() {}

    /** The tsm plugin class must be loadable; TSM_BENCH_SKIP_TSM=1 skips instead. */
    static void requireTsmJar() {
        try {
            Class.forName(Plugins.TSM_CLASS);
        } catch (ClassNotFoundException e) {
            if ("1".equals(System.getenv("TSM_BENCH_SKIP_TSM"))) {
                System.err.println("SKIPPED (TSM_BENCH_SKIP_TSM=1): the tsm plugin jar is not on the classpath");
                Assumptions.abort("TSM_BENCH_SKIP_TSM=1");
            }
            throw new AssertionError("the tsm plugin jar is not on the test classpath (looked for "
                    + System.getProperty("tsm.plugin.jar") + "): build it with crates/tsm-jni/build.sh --skip-tests, "
                    + "or set TSM_BENCH_SKIP_TSM=1 to skip", e);
        }
    }

    /** MinIO must be configured (TSM_TEST_S3_ENDPOINT); TSM_BENCH_SKIP_S3=1 skips instead. */
    static void requireS3() {
        String endpoint = System.getenv("TSM_TEST_S3_ENDPOINT");
        if (endpoint == null || endpoint.isBlank()) {
            if ("1".equals(System.getenv("TSM_BENCH_SKIP_S3"))) {
                System.err.println("SKIPPED (TSM_BENCH_SKIP_S3=1): no S3 endpoint");
                Assumptions.abort("TSM_BENCH_SKIP_S3=1");
            }
            throw new AssertionError("TSM_TEST_S3_ENDPOINT is not set: run scripts/services/minio.sh start and "
                    + "eval \"$(scripts/services/minio.sh env)\", or set TSM_BENCH_SKIP_S3=1 to skip");
        }
    }
}
