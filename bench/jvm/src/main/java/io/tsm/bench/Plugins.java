package io.tsm.bench;

import java.lang.management.ManagementFactory;
import java.net.URI;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import javax.management.MBeanServer;
import javax.management.ObjectName;

import org.apache.kafka.server.log.remote.storage.ClassLoaderAwareRemoteStorageManager;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;

import io.tsm.bench.baseline.JavaBaselineRsm;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.BucketAlreadyOwnedByYouException;

/**
 * The plugins under test and their shared configuration. All get the SAME
 * {@code rsm.config.*} map (prefix stripped, values strings, {@code broker.id} an Integer, as
 * the broker passes it; docs/broker-contract.md "The interface"): chunk.size 4 MiB, zstd
 * on/off with the heuristic off, AES on/off with one RSA 2048 key pair from the scratch dir,
 * the backend.
 *
 * <p>The tsm plugin ({@value #TSM_CLASS}) is loaded from the classpath: bench/jvm/run.sh puts
 * crates/tsm-jni/target/tsm-kafka-plugin-0.1.0.jar there (it is not a Maven dependency). The
 * real Java plugin ({@code aiven}) comes from its own plugin directory ({@link AivenPlugin})
 * and gets the map with its full backend class names ({@link #configFor}).
 */
final class Plugins {
    static final String TSM_CLASS = "io.tsm.kafka.TsmRemoteStorageManager";
    static final int CHUNK_SIZE = 4 * 1024 * 1024;
    static final String KEY_ID = "bench";

    private Plugins() {}

    /**
     * The version of the kafka-clients jar on the class path (its
     * {@code kafka/kafka-version.properties}; the class that reads it moved between 4.2 and
     * 4.4), or {@code unknown}.
     */
    static String kafkaVersion() {
        try (java.io.InputStream in = Plugins.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in == null) {
                return "unknown";
            }
            java.util.Properties p = new java.util.Properties();
            p.load(in);
            return p.getProperty("version", "unknown");
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }

    /** The result subject of {@code plugin}: tsm-jni, java-baseline, aiven-VERSION. */
    static String subject(String plugin) throws ReflectiveOperationException, java.io.IOException {
        return switch (plugin) {
            case "tsm" -> "tsm-jni";
            case "java" -> "java-baseline";
            case "aiven" -> AivenPlugin.get().subject();
            default -> throw new IllegalArgumentException("--plugin must be tsm, java or aiven, not " + plugin);
        };
    }

    static RemoteStorageManager create(String plugin) throws ReflectiveOperationException, java.io.IOException {
        if ("java".equals(plugin)) {
            return new JavaBaselineRsm();
        }
        if ("aiven".equals(plugin)) {
            return AivenPlugin.get().create();
        }
        subject(plugin);
        Class<?> c;
        try {
            c = Class.forName(TSM_CLASS);
        } catch (ClassNotFoundException e) {
            throw new ClassNotFoundException(TSM_CLASS + " is not on the classpath: add "
                    + "crates/tsm-jni/target/tsm-kafka-plugin-0.1.0.jar (bench/jvm/run.sh does; build it with "
                    + "crates/tsm-jni/build.sh --skip-tests)", e);
        }
        return (RemoteStorageManager) c.getDeclaredConstructor().newInstance();
    }

    /**
     * {@link #config} as {@code plugin} takes it: for {@code aiven} translated by
     * {@link AivenPlugin#translate} (full backend class names, storage.root created).
     */
    static Map<String, Object> configFor(String plugin, String backend, String mode, Path work) throws java.io.IOException {
        Map<String, Object> c = config(backend, mode, work);
        return "aiven".equals(plugin) ? AivenPlugin.translate(c) : c;
    }

    /** The configuration map for {@code backend} x {@code mode}; {@code work} holds keys and the fs root. */
    static Map<String, Object> config(String backend, String mode, Path work) {
        Map<String, Object> c = new HashMap<>();
        c.put("broker.id", 0);
        c.put("chunk.size", Integer.toString(CHUNK_SIZE));
        c.put("key.prefix", "bench-jvm/");
        boolean zstd = mode.equals("zstd") || mode.equals("zstd+aes");
        boolean aes = mode.equals("aes") || mode.equals("zstd+aes");
        if (!zstd && !aes && !mode.equals("plain")) {
            throw new IllegalArgumentException("--mode must be plain, zstd, aes or zstd+aes, not " + mode);
        }
        c.put("compression.enabled", Boolean.toString(zstd));
        c.put("compression.heuristic.enabled", "false");
        c.put("encryption.enabled", Boolean.toString(aes));
        if (aes) {
            c.put("encryption.key.pair.id", KEY_ID);
            c.put("encryption.key.pairs", KEY_ID);
            c.put("encryption.key.pairs." + KEY_ID + ".public.key.file", work.resolve("keys/public.pem").toString());
            c.put("encryption.key.pairs." + KEY_ID + ".private.key.file", work.resolve("keys/private.pem").toString());
        }
        switch (backend) {
            case "filesystem" -> {
                c.put("storage.backend.class", "filesystem");
                c.put("storage.root", work.resolve("fs-root").toString());
            }
            case "s3" -> {
                S3Env s3 = S3Env.fromEnv();
                c.put("storage.backend.class", "s3");
                c.put("storage.s3.bucket.name", s3.bucket);
                c.put("storage.s3.region", s3.region);
                c.put("storage.s3.endpoint.url", s3.endpoint);
                c.put("storage.s3.path.style.access.enabled", "true");
                c.put("storage.aws.access.key.id", s3.accessKey);
                c.put("storage.aws.secret.access.key", s3.secretKey);
            }
            default -> throw new IllegalArgumentException("--backend must be filesystem or s3, not " + backend);
        }
        return c;
    }

    /** {@code fetch.chunk.cache.size} of fetch-seq-cached (as the Rust harness): 64 MiB. */
    static final int CHUNK_CACHE_BYTES = 64 * 1024 * 1024;
    /** {@code fetch.chunk.cache.prefetch.max.size} of fetch-seq-cached: two chunks ahead. */
    static final int PREFETCH_BYTES = 2 * CHUNK_SIZE;

    /** Adds tsm's memory chunk cache + prefetch (fetch-seq-cached), same values as the Rust harness. */
    static void addChunkCache(Map<String, Object> c) {
        c.put("fetch.chunk.cache.class", "memory");
        c.put("fetch.chunk.cache.size", Integer.toString(CHUNK_CACHE_BYTES));
        c.put("fetch.chunk.cache.prefetch.max.size", Integer.toString(PREFETCH_BYTES));
    }

    /**
     * Bytes the plugin downloaded from the backend so far, or null when unknown: the baseline
     * counts them itself; tsm exposes {@code backend.bytes.downloaded} on its JMX MBean; the
     * Java plugin has no such metric (null).
     */
    static Long bytesDownloaded(RemoteStorageManager rsm) {
        if (rsm instanceof JavaBaselineRsm j) {
            return j.bytesDownloaded();
        }
        if (rsm instanceof ClassLoaderAwareRemoteStorageManager) {
            return null;
        }
        return tsmCounter(rsm, "backend.bytes.downloaded");
    }

    /**
     * Bytes the plugin uploaded (every object), or null when unknown. The Java plugin: its
     * {@value #AIVEN_METRICS} {@code object-upload-bytes-total} (JVM-wide; one instance per case;
     * the MBean attribute appears with the first upload, so none means 0).
     */
    static Long bytesUploaded(RemoteStorageManager rsm) {
        if (rsm instanceof JavaBaselineRsm j) {
            return j.bytesUploaded();
        }
        if (rsm instanceof ClassLoaderAwareRemoteStorageManager) {
            return aivenUploaded();
        }
        return tsmCounter(rsm, "backend.bytes.uploaded");
    }

    /** tsm's object reads ({@code backend.fetch.requests}); null for the other plugins. */
    static Long getRequests(RemoteStorageManager rsm) {
        if (rsm instanceof JavaBaselineRsm || rsm instanceof ClassLoaderAwareRemoteStorageManager) {
            return null;
        }
        return tsmCounter(rsm, "backend.fetch.requests");
    }

    static final String AIVEN_METRICS = "aiven.kafka.server.tieredstorage:type=remote-storage-manager-metrics";

    private static Long aivenUploaded() {
        try {
            Object v = ManagementFactory.getPlatformMBeanServer().getAttribute(new ObjectName(AIVEN_METRICS),
                    "object-upload-bytes-total");
            return v instanceof Number n ? n.longValue() : null;
        } catch (javax.management.InstanceNotFoundException | javax.management.AttributeNotFoundException e) {
            return 0L; // it registers the MBean and attribute with its first upload
        } catch (javax.management.JMException | RuntimeException e) {
            return null;
        }
    }

    private static Long tsmCounter(RemoteStorageManager rsm, String counter) {
        try {
            Object name = rsm.getClass().getMethod("metricsMBeanName").invoke(rsm);
            if (!(name instanceof ObjectName on)) {
                return null;
            }
            MBeanServer server = ManagementFactory.getPlatformMBeanServer();
            Object v = server.getAttribute(on, counter);
            return v instanceof Number n ? n.longValue() : null;
        } catch (ReflectiveOperationException | javax.management.JMException | RuntimeException e) {
            return null;
        }
    }

    /**
     * Stored size of the segment's {@code .log} object (bytes), or null when it cannot be read:
     * a file under the storage root, or S3 HeadObject. Keys as docs/object-format.md "Objects
     * per segment" with the benchmark's {@code key.prefix}.
     */
    static Long storedLogBytes(String backend, Path work, org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata m) {
        String offset = String.format(java.util.Locale.ROOT, "%020d", m.startOffset());
        String key = "bench-jvm/" + m.topicIdPartition().topic() + "-" + m.topicIdPartition().topicId() + "/"
                + m.topicIdPartition().partition() + "/" + offset + "-" + m.remoteLogSegmentId().id() + ".log";
        try {
            if (backend.equals("filesystem")) {
                return java.nio.file.Files.size(work.resolve("fs-root").resolve(key));
            }
            S3Env e = S3Env.fromEnv();
            try (S3Client s3 = e.client()) {
                return s3.headObject(r -> r.bucket(e.bucket).key(key)).contentLength();
            }
        } catch (java.io.IOException | RuntimeException ex) {
            return null;
        }
    }

    /** MinIO settings from {@code scripts/services/minio.sh env} (TSM_TEST_S3_*), bucket tsm-bench-jvm. */
    static final class S3Env {
        final String endpoint;
        final String accessKey;
        final String secretKey;
        final String region;
        final String bucket;

        private S3Env(String endpoint, String accessKey, String secretKey, String region, String bucket) {
            this.endpoint = endpoint;
            this.accessKey = accessKey;
            this.secretKey = secretKey;
            this.region = region;
            this.bucket = bucket;
        }

        static S3Env fromEnv() {
            String endpoint = System.getenv("TSM_TEST_S3_ENDPOINT");
            if (endpoint == null || endpoint.isBlank()) {
                throw new IllegalStateException("--backend s3 needs TSM_TEST_S3_ENDPOINT etc.: run "
                        + "`scripts/services/minio.sh start` and `eval \"$(scripts/services/minio.sh env)\"`");
            }
            return new S3Env(endpoint, env("TSM_TEST_S3_ACCESS_KEY", "tsm-minio"),
                    env("TSM_TEST_S3_SECRET_KEY", "tsm-minio-secret"), env("TSM_TEST_S3_REGION", "us-east-1"),
                    env("TSM_BENCH_S3_BUCKET", "tsm-bench-jvm"));
        }

        private static String env(String name, String dflt) {
            String v = System.getenv(name);
            return v == null || v.isBlank() ? dflt : v;
        }

        S3Client client() {
            return S3Client.builder().endpointOverride(URI.create(endpoint)).forcePathStyle(true)
                    .region(Region.of(region))
                    .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                    .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
                    .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(accessKey, secretKey)))
                    .build();
        }

        /** Creates the bucket if it does not exist (the plugins never create buckets). */
        void ensureBucket() {
            try (S3Client s3 = client()) {
                try {
                    s3.headBucket(r -> r.bucket(bucket));
                } catch (software.amazon.awssdk.services.s3.model.NoSuchBucketException e) {
                    try {
                        s3.createBucket(r -> r.bucket(bucket));
                    } catch (BucketAlreadyOwnedByYouException ignored) {
                        // created concurrently
                    }
                }
            }
        }
    }
}
