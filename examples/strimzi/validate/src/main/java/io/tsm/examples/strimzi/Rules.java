package io.tsm.examples.strimzi;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.fabric8.kubernetes.api.model.KeyToPath;
import io.fabric8.kubernetes.api.model.LocalObjectReference;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.strimzi.api.kafka.model.common.template.AdditionalVolume;
import io.strimzi.api.kafka.model.common.template.ContainerEnvVar;
import io.strimzi.api.kafka.model.common.template.ContainerTemplate;
import io.strimzi.api.kafka.model.common.template.PodTemplate;
import io.strimzi.api.kafka.model.kafka.Kafka;
import io.strimzi.api.kafka.model.kafka.KafkaClusterSpec;
import io.strimzi.api.kafka.model.kafka.tieredstorage.RemoteStorageManager;
import io.strimzi.api.kafka.model.kafka.tieredstorage.TieredStorageCustom;
import io.strimzi.api.kafka.model.nodepool.KafkaNodePool;

/**
 * What a Strimzi cluster needs for tsm, checked on a user's manifests ({@link Manifests}).
 *
 * <p>Errors: what stops tsm from working as configured. Tiered storage on with tsm's class, a
 * {@code classPath} that reaches the image's plugin directory, the plugin keys tsm requires
 * (the rest of the configuration is checked by {@code tsm config check}), values Strimzi can
 * write into a properties file, a custom image, a Kafka version tsm supports and the one the
 * image's tag names, the key files and a disk cache on volumes the broker container mounts,
 * Secrets (when given) holding the keys the pod reads, the RLMM's replication factor within
 * the brokers, a broker memory limit that holds the heap and tsm's native memory, and no
 * {@code --illegal-native-access=deny} without {@code --enable-native-access}.
 *
 * <p>Warnings: what docs/strimzi.md recommends and a working cluster may do otherwise:
 * {@code MALLOC_ARENA_MAX}, {@code JDK_JAVA_OPTIONS=--enable-native-access=ALL-UNNAMED}, room
 * for the JVM's own non-heap, an explicit {@code -Xmx}, the image tag naming Strimzi, Kafka
 * and tsm versions, credentials from a Secret or IRSA rather than inline, one credential
 * path rather than two, the same pull secrets for every pool. Credentials by static keys or
 * by IRSA / EKS Pod Identity are both fine.
 */
final class Rules {
    private Rules() {}

    static final String TSM_CLASS = "io.tsm.kafka.TsmRemoteStorageManager";
    static final String JAVA_PLUGIN_CLASS = "io.aiven.kafka.tieredstorage.RemoteStorageManager";
    /** Where examples/strimzi/Dockerfile puts the plugin (the default of --plugin-dir). */
    static final String DEFAULT_PLUGIN_DIR = "/opt/kafka/plugins/tsm/";

    /**
     * @param pluginDir the directory of the image that holds tsm's jar and library
     * @param tsmVersion the version this repository builds (null: unknown), for a note on the image tag
     */
    record Options(String pluginDir, String tsmVersion) {
        Options {
            pluginDir = pluginDir.endsWith("/") ? pluginDir : pluginDir + "/";
        }
    }

    /** Plugin keys that hold credentials (docs/configuration.md: "Secret: never logged"). */
    static final List<String> SECRET_KEYS = List.of(
            "storage.aws.access.key.id", "storage.aws.secret.access.key", "storage.aws.session.token",
            "storage.azure.account.key", "storage.azure.sas.token", "storage.azure.connection.string",
            "storage.gcs.credentials.json");
    /** Environment variables the SDKs read credentials from. */
    static final Pattern CREDENTIAL_ENV = Pattern.compile("AWS_(ACCESS_KEY_ID|SECRET_ACCESS_KEY|SESSION_TOKEN)|AZURE_CLIENT_SECRET|AZURE_STORAGE_KEY|.*(PASSWORD|SECRET|TOKEN).*");
    /** A Kafka config provider reference, e.g. {@code ${secrets:ns/name:key}}: not a literal. */
    static final Pattern CONFIG_PROVIDER = Pattern.compile("^\\$\\{[^}]+}$");
    static final String IRSA_ANNOTATION = "eks.amazonaws.com/role-arn";
    /** The examples' tag: {@code <strimzi>-kafka-<kafka>-tsm-<tsm>}. */
    static final Pattern EXAMPLE_TAG = Pattern.compile("(\\d+\\.\\d+\\.\\d+)-kafka-(\\d+\\.\\d+\\.\\d+)-tsm-(\\S+)");
    static final Pattern KAFKA_IN_TAG = Pattern.compile("(?:^|-)kafka-(\\d+\\.\\d+\\.\\d+)(?:-|$)");
    static final Pattern KAFKA_VERSION = Pattern.compile("(\\d+)\\.(\\d+)\\.(\\d+)");

    static List<Finding> check(Manifests m, Options o) {
        List<Finding> out = new ArrayList<>();
        List<StrictYaml.Doc> kafkas = m.ofKind("Kafka");
        if (kafkas.isEmpty() && m.unreadable == 0) {
            out.add(Finding.error("", "", "no Kafka resource (kafka.strimzi.io/v1, kind Kafka) among the files: "
                    + "give the file with the Kafka resource (and its KafkaNodePools)"));
        }
        for (StrictYaml.Doc d : kafkas) {
            new OneCluster(m, o, d, out).check();
        }
        return out;
    }

    /** The checks of one Kafka resource and its node pools. */
    private static final class OneCluster {
        final Manifests m;
        final Options o;
        final StrictYaml.Doc doc;
        final Kafka kafka;
        final KafkaClusterSpec spec;
        final String where;
        final List<Finding> out;
        Map<String, String> rsm = Map.of();

        OneCluster(Manifests m, Options o, StrictYaml.Doc doc, List<Finding> out) {
            this.m = m;
            this.o = o;
            this.doc = doc;
            this.kafka = doc.as(Kafka.class);
            this.spec = kafka.getSpec() == null ? null : kafka.getSpec().getKafka();
            this.where = doc.where();
            this.out = out;
        }

        void error(String field, String message) {
            out.add(Finding.error(where, field, message));
        }

        void warning(String field, String message) {
            out.add(Finding.warning(where, field, message));
        }

        void note(String field, String message) {
            out.add(Finding.note(where, field, message));
        }

        void check() {
            if (spec == null) {
                error("spec.kafka", "missing: the Kafka resource has no broker section");
                return;
            }
            boolean tsm = tieredStorage();
            image();
            clusterConfig();
            if (tsm) {
                rsm = RsmConfig.pluginConfig(kafka);
                pluginConfig();
            }
            List<StrictYaml.Doc> pools = m.pools(Manifests.name(kafka));
            List<KafkaNodePool> brokers = pools.stream().map(p -> p.as(KafkaNodePool.class)).filter(Manifests::isBroker).toList();
            if (brokers.isEmpty()) {
                note("", "no KafkaNodePool with role broker labelled strimzi.io/cluster: " + Manifests.name(kafka)
                        + " among the files: the broker checks (memory, env, key-file mounts, RLMM replicas) did not run; "
                        + "give the node pools' manifests too");
            }
            rlmmReplicas(brokers, pools.size());
            credentials(brokers);
            for (StrictYaml.Doc p : pools) {
                KafkaNodePool pool = p.as(KafkaNodePool.class);
                if (Manifests.isBroker(pool)) {
                    new OnePool(p, pool).check(tsm);
                }
            }
            pullSecrets(pools);
        }

        /** Tiered storage on, tsm's class, the plugin directory on the classPath. False: no tsm config to check. */
        boolean tieredStorage() {
            if (spec.getTieredStorage() == null) {
                error("spec.kafka.tieredStorage", "missing: the brokers run without tiered storage; add type: custom with "
                        + "remoteStorageManager className " + TSM_CLASS + ", classPath " + o.pluginDir() + "* and the plugin "
                        + "config (examples/strimzi/kafka.yaml)");
                return false;
            }
            if (!(spec.getTieredStorage() instanceof TieredStorageCustom ts)) {
                error("spec.kafka.tieredStorage.type", "must be custom");
                return false;
            }
            RemoteStorageManager r = ts.getRemoteStorageManager();
            if (r == null) {
                error("spec.kafka.tieredStorage.remoteStorageManager", "missing: set className " + TSM_CLASS
                        + ", classPath " + o.pluginDir() + "* and config");
                return false;
            }
            String cls = r.getClassName();
            String f = "spec.kafka.tieredStorage.remoteStorageManager.className";
            if (cls == null || cls.isBlank()) {
                error(f, "missing: set it to " + TSM_CLASS);
            } else if (cls.equals(JAVA_PLUGIN_CLASS)) {
                error(f, cls + " is the Java plugin's class: set " + TSM_CLASS + " to run tsm (same config keys; "
                        + "docs/strimzi.md, \"Migrating from the Java plugin\")");
            } else if (!cls.equals(TSM_CLASS)) {
                error(f, cls + " is not tsm's class: set " + TSM_CLASS + " (the broker fails to start with "
                        + "ClassNotFoundException otherwise)");
            }
            classPath(r.getClassPath());
            if (r.getConfig() == null || r.getConfig().isEmpty()) {
                error(RsmConfig.CONFIG_PATH, "missing: the plugin needs at least storage.backend.class, chunk.size and "
                        + "the backend's bucket (docs/configuration.md)");
            }
            return true;
        }

        void classPath(String cp) {
            String f = "spec.kafka.tieredStorage.remoteStorageManager.classPath";
            String dir = o.pluginDir();
            String want = dir + "*";
            if (cp == null || cp.isBlank()) {
                error(f, "missing: the broker would look for " + TSM_CLASS + " on its own classpath (/opt/kafka/libs); "
                        + "set it to " + want + ", the directory the image copies the plugin into (--plugin-dir if "
                        + "your image uses another)");
                return;
            }
            boolean found = false;
            List<String> others = new ArrayList<>();
            for (String entry : cp.split(":")) {
                String e = entry.strip();
                if (e.isEmpty()) {
                    continue;
                }
                String parent = e.contains("/") ? e.substring(0, e.lastIndexOf('/') + 1) : "";
                String file = e.substring(parent.length());
                boolean inDir = parent.equals(dir);
                if (inDir && (file.equals("*") || file.matches("tsm-kafka-plugin-.*\\.jar"))) {
                    found = true;
                } else if ((e + "/").equals(dir) || e.equals(dir)) {
                    error(f, "'" + e + "' names the plugin directory without '*': a directory entry of a class path finds "
                            + ".class files only, not the jar in it; write " + want);
                    found = true;
                } else {
                    others.add(e);
                }
            }
            if (!found) {
                error(f, "'" + cp + "' does not reach the plugin directory " + dir + ": set it to " + want
                        + " (or pass --plugin-dir if your image puts tsm-kafka-plugin-<version>.jar and libtsm_jni.so elsewhere)");
            } else if (!others.isEmpty()) {
                warning(f, "also holds " + others + ": the plugin's class loader searches them before the broker's "
                        + "classpath; tsm needs only " + want);
            }
        }

        void image() {
            String image = spec.getImage();
            if (image == null || image.isBlank()) {
                error("spec.kafka.image", "missing: Strimzi's own image has no tsm plugin; build one from "
                        + "examples/strimzi/Dockerfile, push it and name it here");
                return;
            }
            int slash = image.lastIndexOf('/');
            int colon = image.lastIndexOf(':');
            String tag = colon > slash ? image.substring(colon + 1) : "";
            if (image.contains("@sha256:")) {
                tag = "";
            }
            String version = spec.getVersion();
            if (version == null) {
                warning("spec.kafka.version", "missing: Strimzi then assumes its default Kafka version, which must be "
                        + "the image's; state the image's Kafka version");
            } else {
                Matcher v = KAFKA_VERSION.matcher(version);
                if (!v.matches()) {
                    error("spec.kafka.version", version + " is not a Kafka version (like 4.3.1)");
                } else {
                    int major = Integer.parseInt(v.group(1));
                    int minor = Integer.parseInt(v.group(2));
                    if (!((major == 3 && minor >= 6) || major == 4)) {
                        error("spec.kafka.version", "Kafka " + version + " is outside tsm's range, 3.6 to 4.x");
                    }
                }
            }
            Matcher k = KAFKA_IN_TAG.matcher(tag);
            if (k.find() && version != null && !k.group(1).equals(version)) {
                error("spec.kafka.version", version + ", but the image's tag names Kafka " + k.group(1)
                        + ": they must be the same (Strimzi configures the brokers for spec.kafka.version); "
                        + "change one of them");
            }
            Matcher t = EXAMPLE_TAG.matcher(tag);
            if (!t.matches()) {
                warning("spec.kafka.image", (tag.isEmpty() ? "no tag" : "tag '" + tag + "'") + ": recommended is "
                        + "<strimzi>-kafka-<kafka>-tsm-<tsm version> (e.g. 1.2.0-kafka-4.3.1-tsm-0.1.0), one tag per build "
                        + "(docs/strimzi.md): a new plugin then means a new tag, and a roll shows what each broker runs");
            } else if (o.tsmVersion() != null && !t.group(3).equals(o.tsmVersion())) {
                note("spec.kafka.image", "the tag names tsm " + t.group(3) + "; this repository builds tsm "
                        + o.tsmVersion());
            }
        }

        void clusterConfig() {
            Map<String, Object> config = spec.getConfig() == null ? Map.of() : spec.getConfig();
            Object enable = config.get("remote.log.storage.system.enable");
            if (enable != null && !Boolean.TRUE.equals(enable) && !"true".equals(enable)) {
                error("spec.kafka.config.remote.log.storage.system.enable", enable + " turns tiered storage off on every "
                        + "broker: remove it (Strimzi sets it to true with tieredStorage)");
            }
            Object retention = config.get("rlmm.config.remote.log.metadata.topic.retention.ms");
            if (retention != null && !Integer.valueOf(-1).equals(retention) && !"-1".equals(retention)) {
                warning("spec.kafka.config.rlmm.config.remote.log.metadata.topic.retention.ms", retention
                        + ": the __remote_log_metadata topic indexes every tiered segment; keep it forever (-1)");
            }
        }

        void rlmmReplicas(List<KafkaNodePool> brokers, int pools) {
            if (brokers.isEmpty()) {
                return;
            }
            Map<String, Object> config = spec.getConfig() == null ? Map.of() : spec.getConfig();
            Object rf = config.get("rlmm.config.remote.log.metadata.topic.replication.factor");
            int want = rf instanceof Number n ? n.intValue() : rf == null ? 3 : parseInt(rf.toString(), 3);
            long count = brokers.stream().mapToLong(p -> p.getSpec().getReplicas()).sum();
            if (count < want) {
                error("spec.kafka.config.rlmm.config.remote.log.metadata.topic.replication.factor", "the RLMM topic "
                        + "needs " + want + " replicas" + (rf == null ? " (Kafka's default)" : "") + " but the broker pools "
                        + "have " + count + " brokers: the brokers cannot create __remote_log_metadata and nothing tiers; "
                        + "add brokers or lower the replication factor");
            }
        }

        void pluginConfig() {
            Map<String, String> c = rsm;
            for (Map.Entry<String, String> e : c.entrySet()) {
                String v = e.getValue();
                if (v == null) {
                    error(RsmConfig.fieldPath(kafka, e.getKey()), "no value");
                    continue;
                }
                if (v.contains("\n") || v.contains("\\")) {
                    error(RsmConfig.fieldPath(kafka, e.getKey()), "Strimzi writes the value unescaped into a properties "
                            + "file: a newline ends it and a backslash escapes the next character; remove them");
                } else if (!v.strip().equals(v)) {
                    warning(RsmConfig.fieldPath(kafka, e.getKey()), "surrounding whitespace: remove it");
                }
            }
            String backend = c.get("storage.backend.class");
            required("storage.backend.class", "s3, gcs, azure or filesystem (or the Java plugin's class name)");
            required("chunk.size", "the chunk size in bytes, e.g. \"4194304\"");
            if (backend != null) {
                String b = backend.strip();
                if (b.equals("s3") || b.endsWith(".s3.S3Storage")) {
                    required("storage.s3.bucket.name", "the bucket");
                } else if (b.equals("gcs") || b.endsWith(".gcs.GcsStorage")) {
                    required("storage.gcs.bucket.name", "the bucket");
                } else if (b.equals("azure") || b.endsWith(".azure.AzureBlobStorage")) {
                    required("storage.azure.container.name", "the container");
                } else if (b.equals("filesystem") || b.endsWith(".filesystem.FileSystemStorage")) {
                    required("storage.root", "the directory, on a volume every broker mounts");
                }
            }
            if ("true".equals(c.getOrDefault("encryption.enabled", "false").strip())) {
                required("encryption.key.pairs", "the ids of every key pair on the ring, comma-separated");
                required("encryption.key.pair.id", "the id of the pair new segments are encrypted with");
                String ids = c.get("encryption.key.pairs");
                if (ids != null) {
                    for (String id : ids.split(",")) {
                        if (id.isBlank()) {
                            continue;
                        }
                        for (String which : List.of("public", "private")) {
                            required("encryption.key.pairs." + id.strip() + "." + which + ".key.file",
                                    "the PEM file of key pair " + id.strip() + " in the pod (a Secret mounted under /mnt)");
                        }
                    }
                }
            }
            for (String k : SECRET_KEYS) {
                String v = c.get(k);
                if (v != null && !CONFIG_PROVIDER.matcher(v.strip()).matches()) {
                    warning(RsmConfig.fieldPath(kafka, k), "a credential inline: the Kafka resource is not a Secret "
                            + "(Strimzi copies the broker configuration into a ConfigMap); give it as env from a Secret "
                            + "(valueFrom.secretKeyRef), a credentials file on a Secret volume, or IRSA / EKS Pod Identity "
                            + "(docs/strimzi.md, \"Credentials\")");
                }
            }
        }

        /** A required plugin key; when missing, a present key close to it is named (a typo). */
        void required(String key, String what) {
            String v = rsm.get(key);
            if (v != null && !v.isBlank()) {
                return;
            }
            String guess = DidYouMean.closest(key, rsm.keySet());
            String typo = guess == null ? "" : " (the config has '" + guess + "': a typo of " + key + "?)";
            error(RsmConfig.fieldPath(kafka, key), (v == null ? "missing" : "empty") + ": tsm requires it: " + what + typo);
        }

        /** Credentials: both static keys and IRSA set is a warning; none at all, a note (Pod Identity, instance role). */
        void credentials(List<KafkaNodePool> brokers) {
            String backend = rsm.getOrDefault("storage.backend.class", "").strip();
            if (!(backend.equals("s3") || backend.endsWith(".s3.S3Storage"))) {
                return;
            }
            boolean inline = rsm.containsKey("storage.aws.access.key.id") || rsm.containsKey("storage.aws.credentials.file");
            boolean envKeys = false;
            for (KafkaNodePool pool : brokers) {
                envKeys |= Manifests.containerTemplate(kafka, pool).map(t -> env(t.value()).stream()
                        .anyMatch(e -> e.getName().equals("AWS_ACCESS_KEY_ID"))).orElse(false);
            }
            String role = Optional.ofNullable(spec.getTemplate()).map(t -> t.getServiceAccount())
                    .map(s -> s.getMetadata()).map(md -> md.getAnnotations()).map(a -> a.get(IRSA_ANNOTATION)).orElse(null);
            boolean staticKeys = inline || envKeys;
            if (staticKeys && role != null) {
                warning("spec.kafka.template.serviceAccount.metadata.annotations." + IRSA_ANNOTATION, "static keys ("
                        + (inline ? "storage.aws.* keys" : "AWS_ACCESS_KEY_ID env") + ") and an IRSA role are both set: static "
                        + "keys come first in the SDK's chain, so the role is not used; keep one (docs/strimzi.md, \"Credentials\")");
            } else if (!staticKeys && role == null && !brokers.isEmpty()) {
                note("", "no S3 credentials in these manifests (no storage.aws.* keys, no AWS_* env, no IRSA annotation): "
                        + "the AWS SDK's default chain must find them in the pod (EKS Pod Identity, an instance role)");
            }
        }

        void pullSecrets(List<StrictYaml.Doc> pools) {
            List<String> with = new ArrayList<>();
            List<String> without = new ArrayList<>();
            for (StrictYaml.Doc d : pools) {
                KafkaNodePool pool = d.as(KafkaNodePool.class);
                Optional<Manifests.Located<PodTemplate>> pod = Manifests.podTemplate(kafka, pool);
                List<LocalObjectReference> secrets = pod.map(p -> p.value().getImagePullSecrets()).orElse(null);
                (secrets == null || secrets.isEmpty() ? without : with).add(Manifests.name(pool));
            }
            if (!with.isEmpty() && !without.isEmpty()) {
                warning("", "the pods of pool(s) " + with + " get imagePullSecrets, those of " + without + " none; every "
                        + "pool runs spec.kafka.image: give each pool's template.pod the pull secrets (a pool's "
                        + "template.pod replaces the Kafka resource's spec.kafka.template.pod), or the Cluster Operator's "
                        + "STRIMZI_IMAGE_PULL_SECRETS");
            }
        }

        /** The checks of one broker pool: memory, env, volumes for key files and the disk cache, Secrets. */
        private final class OnePool {
            final StrictYaml.Doc poolDoc;
            final KafkaNodePool pool;
            final String poolWhere;
            final Optional<Manifests.Located<ContainerTemplate>> container;
            final Optional<Manifests.Located<PodTemplate>> pod;

            OnePool(StrictYaml.Doc poolDoc, KafkaNodePool pool) {
                this.poolDoc = poolDoc;
                this.pool = pool;
                this.poolWhere = poolDoc.where();
                this.container = Manifests.containerTemplate(kafka, pool);
                this.pod = Manifests.podTemplate(kafka, pool);
            }

            void error(String field, String message) {
                out.add(Finding.error(poolWhere, field, message));
            }

            void warning(String field, String message) {
                out.add(Finding.warning(poolWhere, field, message));
            }

            /** The path of a template section, prefixed with its resource when it is the Kafka resource's. */
            String at(Optional<? extends Manifests.Located<?>> section, String suffix, String fallback) {
                return section.map(s -> (s.resource().equals("KafkaNodePool " + Manifests.name(pool)) ? "" : s.resource() + " ")
                        + s.path() + suffix).orElse(fallback);
            }

            String envPath() {
                return at(container, ".env", "spec.template.kafkaContainer.env");
            }

            void check(boolean tsm) {
                if (tsm) {
                    memory();
                }
                env();
                if (tsm) {
                    keyFiles();
                    diskCache();
                }
                secretRefs();
            }

            void memory() {
                long tsmNative;
                try {
                    tsmNative = Memory.tsmNative(rsm);
                } catch (Memory.Unsizable e) {
                    out.add(Finding.error(where, RsmConfig.fieldPath(kafka, e.key), e.getMessage()));
                    return;
                }
                Long limit;
                Long heap;
                try {
                    limit = Memory.limit(pool);
                    heap = Memory.heap(kafka, pool);
                } catch (Memory.Unsizable e) {
                    error("spec." + e.key, e.getMessage());
                    return;
                }
                String sum = "heap (-Xmx) + tsm's native memory " + Memory.mib(tsmNative) + " (tsm.memory.budget.bytes + "
                        + "caches + 64 MiB)";
                if (limit == null) {
                    warning("spec.resources.limits.memory", "missing: tsm's native memory is outside the heap; set a "
                            + "limit of at least " + sum + " + 1 GiB of JVM non-heap (docs/strimzi.md, \"Sizing\")");
                    return;
                }
                if (heap == null) {
                    warning("spec.jvmOptions.-Xmx", "missing: Strimzi then derives the heap from the memory limit and "
                            + "the limit cannot be checked against " + sum + "; set -Xmx (and -Xms) explicitly");
                    return;
                }
                long need = heap + tsmNative;
                if (limit < need) {
                    error("spec.resources.limits.memory", Memory.mib(limit) + " does not hold " + sum + " = "
                            + Memory.mib(need) + ": the kernel kills the broker when tsm uses its budget; raise the limit "
                            + "to at least " + Memory.mib(need + Memory.JVM_NON_HEAP) + ", or lower -Xmx or "
                            + "tsm.memory.budget.bytes (docs/strimzi.md, \"Sizing\")");
                } else if (limit < need + Memory.JVM_NON_HEAP) {
                    warning("spec.resources.limits.memory", Memory.mib(limit) + " leaves " + Memory.mib(limit - need)
                            + " beyond " + sum + " for the JVM's own non-heap (metaspace, threads, direct buffers; "
                            + "allow 1 GiB): raise it to " + Memory.mib(need + Memory.JVM_NON_HEAP) + " or more");
                }
            }

            void env() {
                List<ContainerEnvVar> env = container.map(c -> Rules.env(c.value())).orElse(List.of());
                Optional<ContainerEnvVar> arena = env.stream().filter(e -> e.getName().equals("MALLOC_ARENA_MAX")).findFirst();
                if (arena.isEmpty()) {
                    warning(envPath(), "no MALLOC_ARENA_MAX: add MALLOC_ARENA_MAX=2 (glibc otherwise keeps freed native "
                            + "buffers in per-thread arenas and the pod's memory grows; README, \"Timeouts, memory and clean-up\")");
                } else if (arena.get().getValue() != null && parseInt(arena.get().getValue(), 0) > 4) {
                    warning(envPath() + "[MALLOC_ARENA_MAX]", arena.get().getValue() + ": 2 is recommended");
                }
                Optional<ContainerEnvVar> jdk = env.stream().filter(e -> e.getName().equals("JDK_JAVA_OPTIONS")).findFirst();
                String opts = jdk.map(ContainerEnvVar::getValue).orElse("");
                boolean enable = opts.contains("--enable-native-access=");
                if (opts.contains("--illegal-native-access=deny") && !enable) {
                    error(envPath() + "[JDK_JAVA_OPTIONS]", "--illegal-native-access=deny without "
                            + "--enable-native-access=ALL-UNNAMED: the JVM refuses to load libtsm_jni.so and the plugin "
                            + "fails configure; add --enable-native-access=ALL-UNNAMED");
                } else if (!enable) {
                    warning(envPath(), "no JDK_JAVA_OPTIONS=--enable-native-access=ALL-UNNAMED: on Java 24+ (JEP 472) the "
                            + "JVM warns at every start when the plugin loads its native library, and will refuse it once "
                            + "--illegal-native-access=deny is the default; add it (Java 17 accepts it)");
                } else if (!opts.matches(".*--enable-native-access=([^ ]*,)?ALL-UNNAMED\\b.*")) {
                    warning(envPath() + "[JDK_JAVA_OPTIONS]", "--enable-native-access without ALL-UNNAMED: the plugin "
                            + "is loaded in an unnamed module; use --enable-native-access=ALL-UNNAMED");
                }
                for (ContainerEnvVar e : env) {
                    if (CREDENTIAL_ENV.matcher(e.getName()).matches() && e.getValue() != null && !e.getValue().isBlank()) {
                        warning(envPath() + "[" + e.getName() + "]", "a literal value: take it from a Secret "
                                + "(valueFrom.secretKeyRef), the manifest is not one");
                    }
                }
            }

            /** Every key file of the ring lies under a volume mount of the broker container. */
            void keyFiles() {
                if (!"true".equals(rsm.getOrDefault("encryption.enabled", "false").strip())) {
                    return;
                }
                for (Map.Entry<String, String> e : rsm.entrySet()) {
                    if (e.getKey().startsWith("encryption.key.pairs.") && e.getKey().endsWith(".key.file") && e.getValue() != null) {
                        fileOnVolume(e.getKey(), e.getValue().strip(), true);
                    }
                }
            }

            void diskCache() {
                if (!Memory.isDiskChunkCache(rsm.getOrDefault("fetch.chunk.cache.class", "").strip())) {
                    return;
                }
                String dir = rsm.get("fetch.chunk.cache.path");
                if (dir != null) {
                    fileOnVolume("fetch.chunk.cache.path", dir.strip(), false);
                }
            }

            /**
             * {@code file} (the value of plugin key {@code key}) lies under a volume mount of the
             * broker container whose volume the pod template defines, under /mnt; read-only for
             * key files, writable for the cache; a Secret volume's Secret, when given, has the key.
             */
            void fileOnVolume(String key, String file, boolean keyFile) {
                String field = RsmConfig.fieldPath(kafka, key);
                Path path = Paths.get(file);
                if (!path.isAbsolute()) {
                    out.add(Finding.error(where, field, file + " is not an absolute path; the broker's working directory "
                            + "is not where you think: give the full path under the volume's mountPath"));
                    return;
                }
                List<VolumeMount> mounts = container.map(c -> c.value().getVolumeMounts()).orElse(null);
                String mountsPath = at(container, ".volumeMounts", "spec.template.kafkaContainer.volumeMounts");
                Optional<VolumeMount> mount = (mounts == null ? List.<VolumeMount>of() : mounts).stream()
                        .filter(vm -> vm.getMountPath() != null && path.startsWith(Paths.get(vm.getMountPath())))
                        .max((a, b) -> Integer.compare(a.getMountPath().length(), b.getMountPath().length()));
                if (mount.isEmpty()) {
                    error(mountsPath, key + "=" + file + " is under no volume mount of the broker container of pool "
                            + Manifests.name(pool) + ": the file does not exist in the pod and the plugin fails configure; "
                            + (keyFile ? "mount the key ring Secret (template.pod.volumes + kafkaContainer.volumeMounts, "
                                    + "docs/strimzi.md, \"Key pairs on Strimzi\")"
                                    : "mount a writable volume there (an emptyDir with a sizeLimit, docs/strimzi.md, \"Sizing\")"));
                    return;
                }
                VolumeMount vm = mount.get();
                if (!vm.getMountPath().startsWith("/mnt/")) {
                    error(mountsPath + "[" + vm.getName() + "].mountPath", vm.getMountPath() + ": Strimzi mounts additional "
                            + "volumes under /mnt only; mount it under /mnt and change " + key);
                }
                if (keyFile && !Boolean.TRUE.equals(vm.getReadOnly())) {
                    warning(mountsPath + "[" + vm.getName() + "].readOnly", "not set: mount the key ring read-only");
                }
                if (!keyFile && Boolean.TRUE.equals(vm.getReadOnly())) {
                    error(mountsPath + "[" + vm.getName() + "].readOnly", "true, but " + key + " must be writable: the "
                            + "chunk cache writes its files there");
                }
                List<AdditionalVolume> volumes = pod.map(p -> p.value().getVolumes()).orElse(null);
                String volumesPath = at(pod, ".volumes", "spec.template.pod.volumes");
                Optional<AdditionalVolume> volume = (volumes == null ? List.<AdditionalVolume>of() : volumes).stream()
                        .filter(v -> vm.getName().equals(v.getName())).findFirst();
                if (volume.isEmpty()) {
                    error(volumesPath, "no volume named " + vm.getName() + " (mounted at " + vm.getMountPath() + " for "
                            + key + "): add it" + (pod.isPresent() && pod.get().path().startsWith("spec.template")
                            ? "" : " (the pool has no template.pod of its own, so the Kafka resource's applies)"));
                    return;
                }
                if (keyFile && volume.get().getSecret() != null) {
                    String secretName = volume.get().getSecret().getSecretName();
                    Optional<Secret> secret = secretName == null ? Optional.empty() : m.secret(secretName);
                    if (secret.isPresent()) {
                        String relative = Paths.get(vm.getMountPath()).relativize(path).toString();
                        List<KeyToPath> items = volume.get().getSecret().getItems();
                        Optional<String> secretKey = items == null || items.isEmpty() ? Optional.of(relative)
                                : items.stream().filter(i -> relative.equals(i.getPath())).map(KeyToPath::getKey).findFirst();
                        List<String> keys = Manifests.keys(secret.get());
                        if (secretKey.isEmpty()) {
                            error(volumesPath + "[" + vm.getName() + "].secret.items", "no item maps to " + relative
                                    + ": " + key + " does not exist in the pod");
                        } else if (!keys.contains(secretKey.get())) {
                            error(volumesPath + "[" + vm.getName() + "]", "the Secret " + secretName + " has no key "
                                    + secretKey.get() + " (keys: " + keys + "): " + key + "=" + file + " does not exist in "
                                    + "the pod; add the file to the Secret");
                        }
                    }
                }
            }

            /** Env from a secretKeyRef to a Secret that is among the files must name one of its keys. */
            void secretRefs() {
                for (ContainerEnvVar e : container.map(c -> Rules.env(c.value())).orElse(List.of())) {
                    if (e.getValueFrom() == null || e.getValueFrom().getSecretKeyRef() == null) {
                        continue;
                    }
                    var ref = e.getValueFrom().getSecretKeyRef();
                    Optional<Secret> s = ref.getName() == null ? Optional.empty() : m.secret(ref.getName());
                    if (s.isPresent() && !Manifests.keys(s.get()).contains(ref.getKey()) && !Boolean.TRUE.equals(ref.getOptional())) {
                        error(envPath() + "[" + e.getName() + "].valueFrom.secretKeyRef", "the Secret " + ref.getName()
                                + " has no key " + ref.getKey() + " (keys: " + Manifests.keys(s.get()) + "): the pod does "
                                + "not start (CreateContainerConfigError)");
                    }
                }
            }
        }
    }

    static List<ContainerEnvVar> env(ContainerTemplate t) {
        return t == null || t.getEnv() == null ? List.of() : t.getEnv();
    }

    static int parseInt(String s, int dflt) {
        try {
            return Integer.parseInt(s.strip());
        } catch (NumberFormatException e) {
            return dflt;
        }
    }

    /** The findings by level, in order: errors, warnings, notes. */
    static Map<Finding.Level, List<Finding>> byLevel(List<Finding> all) {
        Map<Finding.Level, List<Finding>> out = new LinkedHashMap<>();
        for (Finding.Level l : Finding.Level.values()) {
            out.put(l, all.stream().filter(f -> f.level() == l).toList());
        }
        return out;
    }
}
