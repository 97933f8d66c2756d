package io.tsm.examples.strimzi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

import io.strimzi.api.kafka.model.common.template.ContainerEnvVar;
import io.strimzi.api.kafka.model.kafka.Kafka;
import io.strimzi.api.kafka.model.kafka.KafkaClusterSpec;
import io.strimzi.api.kafka.model.kafka.tieredstorage.RemoteStorageManager;
import io.strimzi.api.kafka.model.kafka.tieredstorage.TieredStorageCustom;
import io.strimzi.api.kafka.model.nodepool.KafkaNodePool;
import io.strimzi.api.kafka.model.nodepool.ProcessRoles;

/**
 * examples/strimzi/kafka.yaml: tiered storage names tsm's class and the image's plugin
 * directory, the brokers' rsm config is tsm's (and never holds credentials), the key ring
 * comes from the mounted Secret, the cluster is KRaft with node pools, the RLMM is set up,
 * and the broker's memory leaves room for tsm's native memory outside the heap.
 */
class KafkaExampleTest {
    /** Plugin keys that hold credentials (docs/configuration.md: "Secret: never logged"). */
    static final List<String> SECRET_KEYS = List.of(
            "storage.aws.access.key.id", "storage.aws.secret.access.key", "storage.aws.session.token",
            "storage.azure.account.key", "storage.azure.sas.token", "storage.azure.connection.string",
            "storage.gcs.credentials.json");
    /** Environment variables the SDKs read credentials from: only ever from a Secret. */
    static final Pattern CREDENTIAL_ENV = Pattern.compile("AWS_(ACCESS_KEY_ID|SECRET_ACCESS_KEY|SESSION_TOKEN)|AZURE_CLIENT_SECRET|.*(PASSWORD|SECRET|TOKEN).*");
    /** What a literal credential looks like: an AWS access key id, a PEM block. */
    static final Pattern LITERAL_CREDENTIAL = Pattern.compile("\\b(AKIA|ASIA)[0-9A-Z]{16}\\b|-----BEGIN ");

    private final Kafka kafka = Examples.kafka();
    private final KafkaClusterSpec spec = kafka.getSpec().getKafka();

    private RemoteStorageManager rsm() {
        TieredStorageCustom ts = assertInstanceOf(TieredStorageCustom.class, spec.getTieredStorage(),
                "spec.kafka.tieredStorage must be type custom");
        return Checks.present(ts.getRemoteStorageManager(), "tieredStorage.remoteStorageManager");
    }

    @Test
    void tieredStorageLoadsTsmFromTheImagesPluginDirectory() {
        RemoteStorageManager rsm = rsm();
        assertEquals(PluginBuild.RSM_CLASS, rsm.getClassName());
        assertTrue(Pattern.compile("public class TsmRemoteStorageManager implements RemoteStorageManager\\b")
                .matcher(Repo.read(PluginBuild.RSM_SOURCE)).find(), PluginBuild.RSM_SOURCE + " declares the class");
        String dir = DockerfileTest.pluginDirectoryInImage();
        assertEquals(dir + "*", rsm.getClassPath(), "classPath is the Dockerfile's plugin directory, every jar in it");
    }

    @Test
    void theImageIsTheOneTheDockerfileBuilds() {
        DockerfileTest.BaseImage base = DockerfileTest.baseImage();
        String image = Checks.present(spec.getImage(), "spec.kafka.image (the image built from the Dockerfile)");
        String tag = image.substring(image.lastIndexOf(':') + 1);
        assertEquals(base.tag() + "-tsm-" + PluginBuild.version(), tag, "spec.kafka.image's tag: <base tag>-tsm-<plugin version>");
        assertEquals(base.kafka(), spec.getVersion(), "spec.kafka.version is the image's Kafka version");
    }

    @Test
    void theRsmConfigIsTsmsAndComplete() {
        Map<String, String> c = RsmConfig.pluginConfig(kafka);
        assertEquals("s3", c.get("storage.backend.class"));
        for (String k : List.of("storage.s3.bucket.name", "storage.s3.region", "chunk.size")) {
            assertNotNull(c.get(k), k);
        }
        assertEquals("true", c.get("compression.enabled"));
        assertEquals("true", c.get("encryption.enabled"));
        c.forEach((k, v) -> assertEquals(v.strip(), v, "rsm config " + k + " has surrounding whitespace"));
        c.forEach((k, v) -> assertFalse(v.contains("\n") || v.contains("\\"),
                "rsm config " + k + ": Strimzi writes values unescaped into a properties file; no newline or backslash"));
    }

    @Test
    void credentialsNeverAppearInline() {
        List<String> problems = new ArrayList<>();
        RsmConfig.pluginConfig(kafka).keySet().stream().filter(SECRET_KEYS::contains)
                .forEach(k -> problems.add("rsm config sets " + k + " (credentials come from the SDK chain: env from a Secret, IRSA)"));
        for (KafkaNodePool pool : Examples.pools()) {
            Examples.containerTemplate(kafka, pool).ifPresent(t -> {
                for (ContainerEnvVar e : t.getEnv() == null ? List.<ContainerEnvVar>of() : t.getEnv()) {
                    if (CREDENTIAL_ENV.matcher(e.getName()).matches()) {
                        if (e.getValue() != null || e.getValueFrom() == null || e.getValueFrom().getSecretKeyRef() == null) {
                            problems.add("pool " + pool.getMetadata().getName() + ": env " + e.getName() + " must come from a secretKeyRef");
                        } else {
                            String name = e.getValueFrom().getSecretKeyRef().getName();
                            String key = e.getValueFrom().getSecretKeyRef().getKey();
                            boolean found = Examples.secret(name).map(s -> s.getStringData() != null && s.getStringData().containsKey(key)).orElse(false);
                            if (!found) {
                                problems.add("env " + e.getName() + ": Secret " + name + " key " + key + " is not in the example Secrets");
                            }
                        }
                    }
                }
            });
        }
        for (StrictYaml.Doc d : Examples.docs(Examples.KAFKA)) {
            if (LITERAL_CREDENTIAL.matcher(d.tree().toString()).find()) {
                problems.add(d.where() + " holds something that looks like a literal credential (an AWS key id or a PEM block)");
            }
        }
        assertEquals(List.of(), problems);
        // Both credential paths of the example are there: (a) env from the Secret, (b) IRSA.
        String roleArn = spec.getTemplate().getServiceAccount().getMetadata().getAnnotations().get("eks.amazonaws.com/role-arn");
        assertTrue(roleArn != null && roleArn.startsWith("arn:aws:iam::"), "template.serviceAccount IRSA annotation: " + roleArn);
        for (KafkaNodePool pool : Examples.brokerPools()) {
            List<String> env = Examples.containerTemplate(kafka, pool).map(t -> t.getEnv()).orElse(List.of())
                    .stream().map(ContainerEnvVar::getName).toList();
            assertTrue(env.containsAll(List.of("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")), "pool " + pool.getMetadata().getName() + " env: " + env);
        }
    }

    @Test
    void theExampleSecretsHoldOnlyPlaceholders() {
        for (var s : Examples.secrets()) {
            assertTrue(s.getData() == null || s.getData().isEmpty(), "Secret " + s.getMetadata().getName() + ": stringData only (readable placeholders)");
            assertFalse(s.getStringData() == null || s.getStringData().isEmpty(), "Secret " + s.getMetadata().getName() + " has stringData");
            s.getStringData().forEach((k, v) -> assertTrue(v.contains("PLACEHOLDER"),
                    "Secret " + s.getMetadata().getName() + " key " + k + " must be a PLACEHOLDER"));
        }
    }

    @Test
    void keyFilesAreTheMountedKeyRingSecret() {
        Map<String, String> c = RsmConfig.pluginConfig(kafka);
        List<String> ids = List.of(c.get("encryption.key.pairs").split(","));
        assertTrue(ids.contains(c.get("encryption.key.pair.id")), "encryption.key.pair.id is on the ring " + ids);
        assertFalse(Examples.brokerPools().isEmpty(), "a broker pool");
        for (String id : ids) {
            for (String which : List.of("public", "private")) {
                String key = "encryption.key.pairs." + id.strip() + "." + which + ".key.file";
                String path = Checks.present(c.get(key), key);
                for (KafkaNodePool pool : Examples.brokerPools()) {
                    KeyRingMount.check(kafka, pool, key, path);
                }
            }
        }
    }

    @Test
    void remoteStorageAndTheTopicBasedRlmmAreConfigured() {
        Map<String, Object> config = spec.getConfig();
        Object enable = config.get("remote.log.storage.system.enable");
        assertTrue(enable == null || Boolean.TRUE.equals(enable), "remote.log.storage.system.enable may only be true");
        long brokers = Examples.brokerPools().stream().mapToLong(p -> p.getSpec().getReplicas()).sum();
        Object rf = config.get("rlmm.config.remote.log.metadata.topic.replication.factor");
        assertEquals(3, rf, "rlmm.config.remote.log.metadata.topic.replication.factor");
        assertTrue(brokers >= 3, "at least 3 brokers for RF 3, has " + brokers);
        Object retention = config.get("rlmm.config.remote.log.metadata.topic.retention.ms");
        assertTrue(retention == null || Integer.valueOf(-1).equals(retention), "the RLMM topic keeps its records forever (-1)");
    }

    @Test
    void kraftWithControllerAndBrokerPoolsOfThisCluster() {
        String cluster = kafka.getMetadata().getName();
        int controllers = 0;
        for (KafkaNodePool p : Examples.pools()) {
            assertEquals(cluster, p.getMetadata().getLabels().get("strimzi.io/cluster"), "pool " + p.getMetadata().getName() + " label");
            assertFalse(p.getSpec().getRoles() == null || p.getSpec().getRoles().isEmpty(), "pool " + p.getMetadata().getName() + " roles");
            assertNotNull(p.getSpec().getStorage(), "pool " + p.getMetadata().getName() + " storage");
            if (p.getSpec().getRoles().contains(ProcessRoles.CONTROLLER)) {
                controllers += p.getSpec().getReplicas();
            }
        }
        assertTrue(controllers >= 3 && controllers % 2 == 1, "an odd quorum of at least 3 controllers, has " + controllers);
        assertNotNull(kafka.getSpec().getEntityOperator().getTopicOperator(), "the Topic Operator manages kafka-topic.yaml");
    }

    @Test
    void brokerMemoryLeavesRoomForTsmOutsideTheHeap() {
        Map<String, String> c = RsmConfig.pluginConfig(kafka);
        for (KafkaNodePool pool : Examples.brokerPools()) {
            Memory.Sizing s = Memory.sizing(kafka, pool, c);
            assertTrue(s.fits(), s.toString());
            assertTrue(Examples.containerTemplate(kafka, pool).map(t -> t.getEnv()).orElse(List.of()).stream()
                    .anyMatch(e -> e.getName().equals("MALLOC_ARENA_MAX") && "2".equals(e.getValue())),
                    "pool " + pool.getMetadata().getName() + " sets MALLOC_ARENA_MAX=2");
            assertTrue(Examples.containerTemplate(kafka, pool).map(t -> t.getEnv()).orElse(List.of()).stream()
                    .anyMatch(e -> e.getName().equals("JDK_JAVA_OPTIONS")
                            && e.getValue().contains("--enable-native-access=ALL-UNNAMED")),
                    "pool " + pool.getMetadata().getName()
                            + " sets JDK_JAVA_OPTIONS=--enable-native-access=ALL-UNNAMED (Java 24+, JEP 472)");
        }
    }

    @Test
    void noTmpDirSizeLimitBecauseTheLibraryLoadsInPlace() {
        for (KafkaNodePool pool : Examples.pools()) {
            assertNull(Examples.podTemplate(kafka, pool).map(t -> t.getTmpDirSizeLimit()).orElse(null),
                    "pool " + pool.getMetadata().getName() + ": no template.pod.tmpDirSizeLimit (nothing is extracted to /tmp)");
        }
    }
}
