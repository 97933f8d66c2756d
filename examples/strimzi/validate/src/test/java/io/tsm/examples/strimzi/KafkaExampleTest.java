package io.tsm.examples.strimzi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

import io.strimzi.api.kafka.model.common.template.ContainerEnvVar;
import io.strimzi.api.kafka.model.kafka.Kafka;
import io.strimzi.api.kafka.model.kafka.KafkaClusterSpec;
import io.strimzi.api.kafka.model.kafka.tieredstorage.TieredStorageCustom;
import io.strimzi.api.kafka.model.nodepool.KafkaNodePool;
import io.strimzi.api.kafka.model.nodepool.ProcessRoles;

/**
 * examples/strimzi/kafka.yaml: the validator ({@link Rules}, what a user's manifests get)
 * finds no error in it, and warns only that it shows both credential paths; on top, what only
 * the example must hold: tsm's class as the plugin declares it, the image the Dockerfile
 * builds, both credential variants shown, the Secrets it references, no literal credential,
 * the RLMM, KRaft pools, the Java 24+ flag, no tmpDirSizeLimit.
 */
class KafkaExampleTest {
    /** What a literal credential looks like: an AWS access key id, a PEM block. */
    static final Pattern LITERAL_CREDENTIAL = Pattern.compile("\\b(AKIA|ASIA)[0-9A-Z]{16}\\b|-----BEGIN ");

    private final Kafka kafka = Examples.kafka();
    private final KafkaClusterSpec spec = kafka.getSpec().getKafka();

    @Test
    void theValidatorFindsNoErrorAndWarnsOnlyThatBothCredentialPathsAreShown() {
        List<Finding> findings = Rules.check(Examples.manifests(), Examples.rulesOptions());
        List<Finding> notBoth = findings.stream().filter(f -> f.level() != Finding.Level.NOTE)
                .filter(f -> !(f.level() == Finding.Level.WARNING && f.message().contains("are both set"))).toList();
        assertEquals(List.of(), notBoth, "the example is valid and follows every recommendation");
        assertEquals(1, findings.stream().filter(f -> f.message().contains("are both set")).count(),
                "the one warning: (a) static keys and (b) IRSA are both shown, the comments say to keep one: " + findings);
    }

    @Test
    void tsmsClassIsTheOneThePluginDeclares() {
        assertEquals(Rules.TSM_CLASS, PluginBuild.RSM_CLASS);
        assertTrue(Pattern.compile("public class TsmRemoteStorageManager implements RemoteStorageManager\\b")
                .matcher(Repo.read(PluginBuild.RSM_SOURCE)).find(), PluginBuild.RSM_SOURCE + " declares the class");
        TieredStorageCustom ts = (TieredStorageCustom) spec.getTieredStorage();
        assertEquals(DockerfileTest.pluginDirectoryInImage() + "*", ts.getRemoteStorageManager().getClassPath(),
                "classPath is the Dockerfile's plugin directory, every jar in it");
    }

    @Test
    void theImageIsTheOneTheDockerfileBuilds() {
        DockerfileTest.BaseImage base = DockerfileTest.baseImage();
        String image = Checks.present(spec.getImage(), "spec.kafka.image (the image built from the Dockerfile)");
        String tag = image.substring(image.lastIndexOf(':') + 1);
        assertEquals(base.tag() + "-tsm-" + PluginBuild.version(), tag, "kafka.yaml's spec.kafka.image tag: the Dockerfile's "
                + "base tag + -tsm-<plugin version> (crates/tsm-jni/pom.xml); update the example with the version");
        assertEquals(base.kafka(), spec.getVersion(), "kafka.yaml's spec.kafka.version is the Dockerfile base image's Kafka version");
    }

    @Test
    void theExampleShowsBothCredentialPathsFromItsSecretAndNoLiteral() {
        List<String> problems = new ArrayList<>();
        for (StrictYaml.Doc d : Examples.docs(Examples.KAFKA)) {
            if (LITERAL_CREDENTIAL.matcher(d.tree().toString()).find()) {
                problems.add(d.where() + " holds something that looks like a literal credential (an AWS key id or a PEM block)");
            }
        }
        String roleArn = spec.getTemplate().getServiceAccount().getMetadata().getAnnotations().get(Rules.IRSA_ANNOTATION);
        if (roleArn == null || !roleArn.startsWith("arn:aws:iam::")) {
            problems.add("(b) IRSA: spec.kafka.template.serviceAccount annotation " + Rules.IRSA_ANNOTATION + " is " + roleArn);
        }
        for (KafkaNodePool pool : Examples.brokerPools()) {
            List<ContainerEnvVar> env = Examples.containerTemplate(kafka, pool).map(t -> t.getEnv()).orElse(List.of());
            for (String name : List.of("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")) {
                var ref = env.stream().filter(e -> e.getName().equals(name) && e.getValueFrom() != null
                        && e.getValueFrom().getSecretKeyRef() != null).map(e -> e.getValueFrom().getSecretKeyRef()).findFirst();
                if (ref.isEmpty()) {
                    problems.add("(a) pool " + pool.getMetadata().getName() + ": env " + name + " from a secretKeyRef");
                } else if (Examples.secret(ref.get().getName()).isEmpty()) {
                    problems.add("(a) env " + name + ": Secret " + ref.get().getName() + " is not one of the example Secrets");
                }
            }
        }
        assertEquals(List.of(), problems);
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
    void theRsmConfigIsTsmsWithCompressionAndEncryption() {
        Map<String, String> c = RsmConfig.pluginConfig(kafka);
        assertEquals("s3", c.get("storage.backend.class"), "kafka.yaml: storage.backend.class");
        assertEquals("true", c.get("compression.enabled"), "kafka.yaml: compression.enabled");
        assertEquals("true", c.get("encryption.enabled"), "kafka.yaml: encryption.enabled");
        assertNotNull(c.get("storage.s3.region"), "kafka.yaml: storage.s3.region");
    }

    @Test
    void theRlmmAndKraftPoolsAreSetUp() {
        Map<String, Object> config = spec.getConfig();
        assertEquals(3, config.get("rlmm.config.remote.log.metadata.topic.replication.factor"), "kafka.yaml: RLMM replication factor");
        assertEquals(-1, config.get("rlmm.config.remote.log.metadata.topic.retention.ms"), "kafka.yaml: the RLMM topic is kept forever");
        String cluster = kafka.getMetadata().getName();
        int controllers = 0;
        for (KafkaNodePool p : Examples.pools()) {
            assertEquals(cluster, p.getMetadata().getLabels().get("strimzi.io/cluster"), "pool " + p.getMetadata().getName() + " label");
            assertNotNull(p.getSpec().getStorage(), "pool " + p.getMetadata().getName() + " storage");
            if (p.getSpec().getRoles().contains(ProcessRoles.CONTROLLER)) {
                controllers += p.getSpec().getReplicas();
            }
        }
        assertTrue(controllers >= 3 && controllers % 2 == 1, "an odd quorum of at least 3 controllers, has " + controllers);
        assertNotNull(kafka.getSpec().getEntityOperator().getTopicOperator(), "the Topic Operator manages kafka-topic.yaml");
    }

    @Test
    void noTmpDirSizeLimitBecauseTheLibraryLoadsInPlace() {
        for (KafkaNodePool pool : Examples.pools()) {
            String limit = Examples.podTemplate(kafka, pool).map(t -> t.getTmpDirSizeLimit()).orElse(null);
            assertEquals(null, limit, "pool " + pool.getMetadata().getName()
                    + ": no template.pod.tmpDirSizeLimit (nothing is extracted to /tmp)");
        }
    }
}
