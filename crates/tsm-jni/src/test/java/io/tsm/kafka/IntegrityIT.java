package io.tsm.kafka;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * Segment integrity through the plugin jar on the s3 backend against MinIO: the cases of
 * {@link IntegrityScenarios}, as {@link IntegrityTest} runs them on the filesystem, with the
 * objects changed by S3 calls straight to MinIO (the AWS SDK), one fresh bucket per test
 * (emptied and deleted afterwards).
 *
 * <p>Environment: {@code TSM_TEST_S3_ENDPOINT}, {@code TSM_TEST_S3_ACCESS_KEY},
 * {@code TSM_TEST_S3_SECRET_KEY}, {@code TSM_TEST_S3_REGION} ({@code scripts/services/minio.sh
 * env}), on 127.0.0.1. Without {@code TSM_TEST_S3_ENDPOINT} every test FAILS. Not part of
 * build.sh's test run (surefire excludes {@code *IT}); {@code scripts/test.d/55-brownout-jar.sh}
 * starts MinIO and runs this class.
 */
class IntegrityIT extends IntegrityScenarios {
    private static final AtomicInteger SEQ = new AtomicInteger();

    private static String required(String name) {
        String v = System.getenv(name);
        if (v == null || v.isBlank()) {
            fail(name + " is not set: IntegrityIT needs MinIO. Run scripts/test.d/55-brownout-jar.sh, or "
                    + "start scripts/services/minio.sh and eval the output of its `env` subcommand");
        }
        return v;
    }

    private static String optional(String name, String dflt) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? dflt : v;
    }

    /** These tests only ever talk to a server on this machine. */
    private static void assertLoopback(String endpoint) {
        String rest = endpoint.contains("://") ? endpoint.substring(endpoint.indexOf("://") + 3) : endpoint;
        int slash = rest.indexOf('/');
        String hostPort = slash < 0 ? rest : rest.substring(0, slash);
        int colon = hostPort.lastIndexOf(':');
        String host = colon < 0 ? hostPort : hostPort.substring(0, colon);
        assertTrue(host.equals("localhost") || host.equals("[::1]") || host.startsWith("127."),
                "TSM_TEST_S3_ENDPOINT (" + endpoint + ") is not on the loopback interface: IntegrityIT only "
                        + "sends traffic to 127.0.0.1");
    }

    /** A bucket name no other test of this or an earlier run uses (S3-bucket safe). */
    private static String unique(String test) {
        String n = ("tsm-int-" + ProcessHandle.current().pid() + "-" + (System.nanoTime() % 1_000_000L) + "-"
                + SEQ.incrementAndGet() + "-" + test).toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9-]", "-");
        return n.length() > 63 ? n.substring(0, 63).replaceAll("-+$", "") : n;
    }

    @Override
    protected Bucket bucket(Path work, String test) {
        String endpoint = required("TSM_TEST_S3_ENDPOINT").replaceAll("/+$", "");
        assertLoopback(endpoint);
        String accessKey = optional("TSM_TEST_S3_ACCESS_KEY", "tsm-minio");
        String secretKey = optional("TSM_TEST_S3_SECRET_KEY", "tsm-minio-secret");
        String region = optional("TSM_TEST_S3_REGION", "us-east-1");
        S3Client s3 = S3Client.builder()
                .endpointOverride(URI.create(endpoint))
                .region(Region.of(region))
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(accessKey, secretKey)))
                .forcePathStyle(true)
                .build();
        String name = unique(test);
        s3.createBucket(b -> b.bucket(name));
        log("%s: bucket %s on %s", test, name, endpoint);
        Map<String, Object> backend = new HashMap<>();
        backend.put("storage.backend.class", "s3");
        backend.put("storage.s3.endpoint.url", endpoint);
        backend.put("storage.s3.bucket.name", name);
        backend.put("storage.s3.region", region);
        backend.put("storage.s3.path.style.access.enabled", "true");
        backend.put("storage.aws.access.key.id", accessKey);
        backend.put("storage.aws.secret.access.key", secretKey);
        return new S3Bucket(s3, name, backend);
    }

    /** The objects of one MinIO bucket. */
    private final class S3Bucket implements Bucket {
        private final S3Client s3;
        private final String name;
        private final Map<String, Object> backend;

        S3Bucket(S3Client s3, String name, Map<String, Object> backend) {
            this.s3 = s3;
            this.name = name;
            this.backend = backend;
        }

        @Override
        public Map<String, Object> backend() {
            return backend;
        }

        @Override
        public byte[] get(String key) {
            return s3.getObjectAsBytes(b -> b.bucket(name).key(key)).asByteArray();
        }

        @Override
        public void put(String key, byte[] bytes) {
            s3.putObject(b -> b.bucket(name).key(key), RequestBody.fromBytes(bytes));
        }

        @Override
        public List<String> list() {
            List<String> keys = new ArrayList<>();
            for (S3Object o : s3.listObjectsV2Paginator(b -> b.bucket(name)).contents()) {
                keys.add(o.key());
            }
            return keys;
        }

        @Override
        public void close() {
            try {
                for (String k : list()) {
                    s3.deleteObject(b -> b.bucket(name).key(k));
                }
                s3.deleteBucket(b -> b.bucket(name));
            } catch (RuntimeException e) {
                log("cannot empty bucket %s: %s", name, e);
            }
            s3.close();
        }
    }
}
