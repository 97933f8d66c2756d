package io.tsm.examples.strimzi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.function.Predicate;

import org.junit.jupiter.api.Test;

/**
 * The validator's rules ({@link Rules}) on a user's variants of examples/strimzi/kafka.yaml:
 * what a user may do differently passes (their own image tag, IRSA without static keys, no
 * Secrets given), real mistakes are errors naming the field and what to do, recommendations
 * are warnings. Each variant is kafka.yaml with one edit (the edit must change the file).
 */
class ValidatorTest {
    static final String KAFKA = Examples.KAFKA;

    /** kafka.yaml with {@code from} replaced by {@code to}, read as a user's file (alone, no Secrets). */
    static List<Finding> variant(String from, String to) {
        return check(new Manifests().add("my-kafka.yaml", edit(from, to)));
    }

    /** What the validator reports on {@code m}: the documents that do not read, then the rules. */
    static List<Finding> check(Manifests m) {
        return check(m, Examples.rulesOptions());
    }

    static List<Finding> check(Manifests m, Rules.Options o) {
        List<Finding> all = new java.util.ArrayList<>(m.findings);
        all.addAll(Rules.check(m, o));
        return all;
    }

    static String edit(String from, String to) {
        String text = Repo.read(KAFKA);
        String changed = text.replace(from, to);
        assertNotEquals(text, changed, "the edit '" + from + "' -> '" + to + "' must change " + KAFKA);
        return changed;
    }

    static List<Finding> errors(List<Finding> all) {
        return all.stream().filter(f -> f.level() == Finding.Level.ERROR).toList();
    }

    static List<Finding> warnings(List<Finding> all) {
        return all.stream().filter(f -> f.level() == Finding.Level.WARNING).toList();
    }

    /** The one finding of {@code level} on {@code field}; fails listing all of them otherwise. */
    static Finding only(List<Finding> all, Finding.Level level, String field) {
        List<Finding> hits = all.stream().filter(f -> f.level() == level && field.equals(f.field())).toList();
        assertEquals(1, hits.size(), "one " + level + " on " + field + " in " + all);
        return hits.get(0);
    }

    static void assertNone(List<Finding> all, Predicate<Finding> p, String what) {
        assertEquals(List.of(), all.stream().filter(p).toList(), what);
    }

    static final String IMAGE = "    image: registry.example.com/payments/kafka-tsm:1.2.0-kafka-4.3.1-tsm-" ;

    private static String exampleImageLine() {
        return IMAGE + PluginBuild.version() + "\n";
    }

    @Test
    void theExampleAloneHasNoErrors() {
        assertEquals(List.of(), errors(check(new Manifests().add(KAFKA, Repo.read(KAFKA)))));
    }

    @Test
    void anOperatorsOwnImageTagPassesWithAWarning() {
        List<Finding> f = variant(exampleImageLine(), "    image: registry.acme.internal/kafka/brokers:prod-2025-06\n");
        assertEquals(List.of(), errors(f));
        Finding w = only(f, Finding.Level.WARNING, "spec.kafka.image");
        assertTrue(w.message().contains("tag 'prod-2025-06'") && w.message().contains("-tsm-"), w.format());
        assertNone(f, x -> x.message().contains("MALLOC_ARENA_MAX"), "the env is unrelated to the image");
    }

    @Test
    void anImageTagNamingAnotherKafkaThanSpecKafkaVersionIsAnError() {
        List<Finding> f = variant(exampleImageLine(), "    image: registry.acme.internal/kafka:1.2.0-kafka-4.2.2-tsm-0.1.0\n");
        Finding e = only(f, Finding.Level.ERROR, "spec.kafka.version");
        assertTrue(e.message().contains("names Kafka 4.2.2"), e.format());
    }

    @Test
    void noImageIsAnError() {
        Finding e = only(variant(exampleImageLine(), ""), Finding.Level.ERROR, "spec.kafka.image");
        assertTrue(e.message().contains("examples/strimzi/Dockerfile"), e.format());
    }

    @Test
    void irsaWithoutStaticKeysPasses() {
        String text = Repo.read(KAFKA);
        int from = text.indexOf("        - name: AWS_ACCESS_KEY_ID\n");
        int to = text.indexOf("              key: AWS_SECRET_ACCESS_KEY\n") + "              key: AWS_SECRET_ACCESS_KEY\n".length();
        assertTrue(from > 0 && to > from, "kafka.yaml's AWS_* env entries");
        String irsa = text.substring(0, from) + text.substring(to);
        List<Finding> f = check(new Manifests().add("my-kafka.yaml", irsa), Examples.rulesOptions());
        assertEquals(List.of(), errors(f));
        assertEquals(List.of(), warnings(f), "IRSA alone follows every recommendation");
        assertTrue(irsa.contains(Rules.IRSA_ANNOTATION));
    }

    @Test
    void irsaWithoutStaticKeysOrAnnotationIsANoteForPodIdentity() {
        String text = edit("            eks.amazonaws.com/role-arn: arn:aws:iam::111122223333:role/payments-kafka-tsm\n", "");
        text = text.replaceAll("(?s)        - name: AWS_ACCESS_KEY_ID\n.*?key: AWS_SECRET_ACCESS_KEY\n", "");
        text = text.replace("    template:\n", "").replace("      serviceAccount:\n        metadata:\n          annotations:\n", "");
        List<Finding> f = check(new Manifests().add("pod-identity.yaml", text), Examples.rulesOptions());
        assertEquals(List.of(), errors(f));
        assertTrue(f.stream().anyMatch(x -> x.level() == Finding.Level.NOTE && x.message().contains("EKS Pod Identity")), f.toString());
    }

    @Test
    void staticKeysInlineAreAWarningNotAnError() {
        List<Finding> f = variant("          storage.s3.region: eu-west-1\n",
                "          storage.s3.region: eu-west-1\n          storage.aws.access.key.id: ${secrets:kafka/tsm-s3-credentials:AWS_ACCESS_KEY_ID}\n"
                        + "          storage.aws.secret.access.key: not-a-real-secret\n");
        assertEquals(List.of(), errors(f));
        Finding w = only(f, Finding.Level.WARNING, RsmConfig.CONFIG_PATH + ".storage.aws.secret.access.key");
        assertTrue(w.message().contains("not a Secret"), w.format());
        assertNone(f, x -> x.field().endsWith("storage.aws.access.key.id"), "a config provider reference is not a literal");
    }

    @Test
    void aTypoInAPluginKeyNamesTheFieldAndTheTypo() {
        Finding e = only(variant("          chunk.size: \"4194304\"\n", "          chunk.sise: \"4194304\"\n"),
                Finding.Level.ERROR, RsmConfig.CONFIG_PATH + ".chunk.size");
        assertTrue(e.message().startsWith("missing: tsm requires it"), e.format());
        assertTrue(e.message().contains("'chunk.sise': a typo of chunk.size?"), e.format());
        assertTrue(e.format().startsWith("error: my-kafka.yaml document 3 (Kafka payments, line "), e.format());
    }

    @Test
    void aTypoInAStrimziFieldNamesTheFieldAndSuggestsTheRightOne() {
        List<Finding> f = variant("        classPath: /opt", "        classpath: /opt");
        assertEquals(1, errors(f).size(), f.toString());
        String m = errors(f).get(0).format();
        assertTrue(m.contains("unknown field 'classpath' at spec.kafka.tieredStorage.remoteStorageManager.classpath: did you mean 'classPath'?"), m);
        assertTrue(m.contains("my-kafka.yaml document 3 (line "), m);
    }

    @Test
    void aMissingRequiredKeyFailsNamingIt() {
        Finding e = only(variant("          storage.s3.bucket.name: payments-tiered-storage\n", ""),
                Finding.Level.ERROR, RsmConfig.CONFIG_PATH + ".storage.s3.bucket.name");
        assertTrue(e.message().contains("tsm requires it: the bucket"), e.format());
    }

    @Test
    void aMissingKeyFileOfTheRingFailsNamingIt() {
        Finding e = only(variant("          encryption.key.pairs.k1.private.key.file: /mnt/tsm-key-pairs/k1-private.pem\n", ""),
                Finding.Level.ERROR, RsmConfig.CONFIG_PATH + ".encryption.key.pairs.k1.private.key.file");
        assertTrue(e.message().contains("key pair k1"), e.format());
    }

    @Test
    void theJavaPluginsClassIsAnErrorPointingAtTheMigration() {
        Finding e = only(variant("className: io.tsm.kafka.TsmRemoteStorageManager", "className: io.aiven.kafka.tieredstorage.RemoteStorageManager"),
                Finding.Level.ERROR, "spec.kafka.tieredStorage.remoteStorageManager.className");
        assertTrue(e.message().contains("Java plugin") && e.message().contains(Rules.TSM_CLASS), e.format());
    }

    @Test
    void aClassPathWithoutThePluginDirectoryIsAnError() {
        Finding e = only(variant("classPath: /opt/kafka/plugins/tsm/*", "classPath: /opt/kafka/plugins/tiered-storage/*"),
                Finding.Level.ERROR, "spec.kafka.tieredStorage.remoteStorageManager.classPath");
        assertTrue(e.message().contains("set it to /opt/kafka/plugins/tsm/*") && e.message().contains("--plugin-dir"), e.format());
        Finding dir = only(variant("classPath: /opt/kafka/plugins/tsm/*", "classPath: /opt/kafka/plugins/tsm/"),
                Finding.Level.ERROR, "spec.kafka.tieredStorage.remoteStorageManager.classPath");
        assertTrue(dir.message().contains("without '*'"), dir.format());
        List<Finding> elsewhere = check(new Manifests().add("my-kafka.yaml", edit("classPath: /opt/kafka/plugins/tsm/*",
                "classPath: /opt/tsm/*")), new Rules.Options("/opt/tsm", PluginBuild.version()));
        assertEquals(List.of(), errors(elsewhere), "--plugin-dir /opt/tsm");
    }

    @Test
    void tieredStorageOffIsAnError() {
        Finding e = only(variant("      remote.log.storage.system.enable: true\n", "      remote.log.storage.system.enable: false\n"),
                Finding.Level.ERROR, "spec.kafka.config.remote.log.storage.system.enable");
        assertTrue(e.message().contains("remove it"), e.format());
    }

    @Test
    void aMemoryLimitThatDoesNotHoldHeapAndTsmIsAnErrorAndNoRoomForNonHeapAWarning() {
        String limits = "    limits:\n      memory: 8Gi\n  jvmOptions:\n    -Xms: 3g\n    -Xmx: 3g\n";
        Finding e = only(variant(limits, limits.replace("8Gi", "3584Mi")), Finding.Level.ERROR, "spec.resources.limits.memory");
        assertTrue(e.message().contains("3584 MiB does not hold") && e.message().contains("raise the limit to at least 4682 MiB"), e.format());
        assertTrue(e.where().contains("KafkaNodePool broker"), e.format());
        Finding w = only(variant(limits, limits.replace("8Gi", "4Gi")), Finding.Level.WARNING, "spec.resources.limits.memory");
        assertTrue(w.message().contains("JVM's own non-heap"), w.format());
        Finding budget = only(variant("          tsm.memory.budget.bytes: \"536870912\"\n", "          tsm.memory.budget.bytes: \"5368709120\"\n"),
                Finding.Level.ERROR, "spec.resources.limits.memory");
        assertTrue(budget.message().contains("tsm.memory.budget.bytes"), budget.format());
    }

    @Test
    void recommendationsAreWarnings() {
        List<Finding> f = variant("        - name: MALLOC_ARENA_MAX\n          value: \"2\"\n", "");
        assertEquals(List.of(), errors(f));
        assertTrue(only(f, Finding.Level.WARNING, "spec.template.kafkaContainer.env").message()
                .contains("MALLOC_ARENA_MAX=2"), f.toString());
        List<Finding> g = variant("        - name: JDK_JAVA_OPTIONS\n          value: \"--enable-native-access=ALL-UNNAMED\"\n", "");
        assertEquals(List.of(), errors(g));
        assertTrue(only(g, Finding.Level.WARNING, "spec.template.kafkaContainer.env").message()
                .contains("--enable-native-access=ALL-UNNAMED"), g.toString());
    }

    @Test
    void denyingNativeAccessWithoutEnablingItIsAnError() {
        Finding e = only(variant("\"--enable-native-access=ALL-UNNAMED\"", "\"--illegal-native-access=deny\""),
                Finding.Level.ERROR, "spec.template.kafkaContainer.env[JDK_JAVA_OPTIONS]");
        assertTrue(e.message().contains("add --enable-native-access=ALL-UNNAMED"), e.format());
    }

    @Test
    void aKeyFileOutsideTheMountedSecretIsAnError() {
        Finding e = only(variant("public.key.file: /mnt/tsm-key-pairs/k1-public.pem", "public.key.file: /etc/tsm/k1-public.pem"),
                Finding.Level.ERROR, "spec.template.kafkaContainer.volumeMounts");
        assertTrue(e.message().contains("encryption.key.pairs.k1.public.key.file=/etc/tsm/k1-public.pem is under no volume mount"), e.format());
    }

    @Test
    void withTheSecretsGivenAKeyTheSecretLacksIsAnError() {
        Manifests m = new Manifests().add("my-kafka.yaml", edit("/mnt/tsm-key-pairs/k1-private.pem", "/mnt/tsm-key-pairs/k1-secret.pem"));
        m.add(Examples.KEYS_SECRET, Repo.read(Examples.KEYS_SECRET)).add(Examples.S3_SECRET, Repo.read(Examples.S3_SECRET));
        Finding e = only(check(m), Finding.Level.ERROR, "spec.template.pod.volumes[tsm-key-pairs]");
        assertTrue(e.message().contains("the Secret tsm-key-pairs has no key k1-secret.pem"), e.format());
        Manifests env = new Manifests().add("my-kafka.yaml", edit("              key: AWS_SECRET_ACCESS_KEY\n", "              key: AWS_SECRET_KEY\n"));
        env.add(Examples.S3_SECRET, Repo.read(Examples.S3_SECRET));
        Finding s = only(check(env), Finding.Level.ERROR,
                "spec.template.kafkaContainer.env[AWS_SECRET_ACCESS_KEY].valueFrom.secretKeyRef");
        assertTrue(s.message().contains("CreateContainerConfigError"), s.format());
    }

    @Test
    void pullSecretsOnOnePoolOnlyAreAWarning() {
        List<Finding> f = variant("    pod:\n      # libtsm_jni.so", "    pod:\n      imagePullSecrets:\n        - name: registry-credentials\n      # libtsm_jni.so");
        assertEquals(List.of(), errors(f));
        assertTrue(warnings(f).stream().anyMatch(w -> w.message().contains("[controller] none")), f.toString());
    }

    @Test
    void withoutNodePoolsTheBrokerChecksAreSkippedWithANote() {
        String text = Repo.read(KAFKA);
        String kafkaOnly = text.substring(text.lastIndexOf("---\n"));
        List<Finding> f = check(new Manifests().add("kafka-only.yaml", kafkaOnly), Examples.rulesOptions());
        assertEquals(List.of(), errors(f));
        assertTrue(f.stream().anyMatch(x -> x.level() == Finding.Level.NOTE && x.message().contains("give the node pools")), f.toString());
    }

    @Test
    void noKafkaResourceIsAnError() {
        List<Finding> f = check(new Manifests().add(Examples.TOPIC, Repo.read(Examples.TOPIC)), Examples.rulesOptions());
        assertTrue(errors(f).get(0).message().startsWith("no Kafka resource"), f.toString());
    }

    @Test
    void otherKindsAreNotedAndAnOldApiVersionIsAnError() {
        Manifests m = new Manifests().add("mixed.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n---\n"
                + edit("apiVersion: kafka.strimzi.io/v1\nkind: Kafka\n", "apiVersion: kafka.strimzi.io/v1beta2\nkind: Kafka\n"));
        assertTrue(m.findings.stream().anyMatch(x -> x.level() == Finding.Level.NOTE && x.message().startsWith("Service (v1) not checked")), m.findings.toString());
        assertTrue(m.findings.stream().anyMatch(x -> x.level() == Finding.Level.ERROR && x.message().contains("change apiVersion to kafka.strimzi.io/v1")),
                m.findings.toString());
    }
}
