package io.tsm.bench.baseline;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigException;

/**
 * The {@code rsm.config.*} keys (prefix stripped, as the broker passes them to
 * {@code configure}) the baseline understands: the same names and meanings as Aiven's plugin
 * and tsm (docs/configuration.md). Unknown keys are ignored. Invalid values throw
 * {@link ConfigException} naming the key.
 *
 * @param chunkSize          {@code chunk.size}, bytes of ORIGINAL data per chunk (required)
 * @param compression        {@code compression.enabled}: zstd level 3 per chunk
 * @param heuristic          {@code compression.heuristic.enabled}: compress only when the
 *                           segment's first record batch is uncompressed
 * @param keyPrefix          {@code key.prefix}, prepended verbatim to every object key
 * @param encryption         the key ring when {@code encryption.enabled=true}, else null
 * @param fsRoot             {@code storage.root} for the filesystem backend, else null
 * @param s3                 the {@code storage.s3.*} / {@code storage.aws.*} keys for s3, else null
 */
record BaselineConfig(int chunkSize, boolean compression, boolean heuristic, String keyPrefix,
                      KeyRing encryption, Path fsRoot, S3 s3) {

    /** Default {@code storage.s3.multipart.upload.part.size}: 25 MiB, as Aiven's. */
    static final int DEFAULT_PART_SIZE = 25 * 1024 * 1024;

    /**
     * S3 settings. {@code toString} omits the secret key.
     *
     * @param partSize bytes per multipart part (5 MiB .. 2 GiB - 1)
     */
    record S3(String bucket, String region, String endpoint, Boolean pathStyle, String accessKeyId,
              String secretAccessKey, int partSize) {
        @Override
        public String toString() {
            return "S3[bucket=" + bucket + ", region=" + region + ", endpoint=" + endpoint + ", partSize=" + partSize + "]";
        }
    }

    static BaselineConfig parse(Map<String, ?> configs) {
        int chunkSize = intValue(configs, "chunk.size", null, 1, Integer.MAX_VALUE - 1);
        boolean compression = bool(configs, "compression.enabled", false);
        boolean heuristic = bool(configs, "compression.heuristic.enabled", false);
        if (heuristic && !compression) {
            throw new ConfigException("compression.heuristic.enabled", "true", "requires compression.enabled=true");
        }
        String prefix = str(configs, "key.prefix");
        KeyRing ring = null;
        if (bool(configs, "encryption.enabled", false)) {
            ring = KeyRing.fromConfig(configs);
        }
        String backend = str(configs, "storage.backend.class");
        if (backend == null) {
            throw new ConfigException("storage.backend.class", null, "is required (filesystem or s3)");
        }
        Path root = null;
        S3 s3 = null;
        switch (backend) {
            case "filesystem", "io.aiven.kafka.tieredstorage.storage.filesystem.FileSystemStorage" -> {
                String r = str(configs, "storage.root");
                if (r == null) {
                    throw new ConfigException("storage.root", null, "is required for the filesystem backend");
                }
                root = Path.of(r);
            }
            case "s3", "io.aiven.kafka.tieredstorage.storage.s3.S3Storage" -> {
                String bucket = str(configs, "storage.s3.bucket.name");
                if (bucket == null) {
                    throw new ConfigException("storage.s3.bucket.name", null, "is required for the s3 backend");
                }
                String id = str(configs, "storage.aws.access.key.id");
                String secret = str(configs, "storage.aws.secret.access.key");
                if ((id == null) != (secret == null)) {
                    throw new ConfigException("storage.aws.access.key.id",
                            id == null ? null : "(set)", "must be set together with storage.aws.secret.access.key");
                }
                String ps = str(configs, "storage.s3.path.style.access.enabled");
                s3 = new S3(bucket, str(configs, "storage.s3.region"), str(configs, "storage.s3.endpoint.url"),
                        ps == null ? null : bool(configs, "storage.s3.path.style.access.enabled", false), id, secret,
                        intValue(configs, "storage.s3.multipart.upload.part.size", DEFAULT_PART_SIZE,
                                5 * 1024 * 1024, Integer.MAX_VALUE - 1));
            }
            default -> throw new ConfigException("storage.backend.class", backend,
                    "the baseline supports filesystem and s3");
        }
        return new BaselineConfig(chunkSize, compression, heuristic, prefix == null ? "" : prefix, ring, root, s3);
    }

    static String str(Map<String, ?> c, String key) {
        Object v = c.get(key);
        if (v == null) {
            return null;
        }
        String s = v.toString().trim();
        return s.isEmpty() ? null : s;
    }

    static boolean bool(Map<String, ?> c, String key, boolean dflt) {
        String s = str(c, key);
        if (s == null) {
            return dflt;
        }
        if (s.equalsIgnoreCase("true")) {
            return true;
        }
        if (s.equalsIgnoreCase("false")) {
            return false;
        }
        throw new ConfigException(key, s, "must be true or false");
    }

    static int intValue(Map<String, ?> c, String key, Integer dflt, int min, int max) {
        String s = str(c, key);
        if (s == null) {
            if (dflt == null) {
                throw new ConfigException(key, null, "is required");
            }
            return dflt;
        }
        long v;
        try {
            v = Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw new ConfigException(key, s, "must be an integer");
        }
        if (v < min || v > max) {
            throw new ConfigException(key, s, "must be from " + min + " to " + max);
        }
        return (int) v;
    }

    static List<String> list(Map<String, ?> c, String key) {
        String s = str(c, key);
        List<String> out = new ArrayList<>();
        if (s != null) {
            for (String p : s.split(",")) {
                if (!p.isBlank()) {
                    out.add(p.trim());
                }
            }
        }
        return out;
    }
}
