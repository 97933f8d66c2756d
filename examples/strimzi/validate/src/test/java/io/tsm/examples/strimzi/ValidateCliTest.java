package io.tsm.examples.strimzi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The validator's command line ({@link Validate}, what validate.sh runs) end to end, with the
 * real {@code tsm config check}: the repository's examples pass, a user's IRSA variant passes,
 * a typo in a plugin key fails with tsm's own message on the field, the properties file is
 * written where it says, and a missing tsm binary is a clear exit 3. The tsm binary is the
 * system property tsm.bin (the step script's), else built once with cargo.
 */
class ValidateCliTest {
    static Path tsm;
    static Path dir;

    @BeforeAll
    static void tsmBinary() throws Exception {
        String bin = System.getProperty("tsm.bin", "");
        tsm = bin.isBlank() ? TsmCli.build(Repo.root()).binaryPath() : Paths.get(bin);
        dir = Paths.get(System.getProperty("tsm.validate.out")).toAbsolutePath();
        Files.createDirectories(dir);
    }

    record Run(int exit, String out, String err) {}

    static Run validate(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = Validate.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        Run r = new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        if (exit != 2 && !List.of(args).contains("--help")) {
            System.out.println("--- validate " + String.join(" ", args) + " (exit " + exit + ")\n" + r.out + r.err);
        }
        return r;
    }

    /** A user's file: kafka.yaml with one edit, written under target/. */
    static String userFile(String name, String from, String to) throws IOException {
        Path f = dir.resolve("inputs").resolve(name);
        Files.createDirectories(f.getParent());
        Files.writeString(f, ValidatorTest.edit(from, to), StandardCharsets.UTF_8);
        return f.toString();
    }

    static String[] args(String out, String... files) {
        List<String> a = new ArrayList<>(List.of("--tsm", tsm.toString(), "--out", dir.resolve(out).toString()));
        a.addAll(List.of(files));
        return a.toArray(String[]::new);
    }

    static String repo(String rel) {
        return Repo.path(rel).toString();
    }

    @Test
    void theRepositorysExamplesPassAndTheirConfigIsWrittenAndAccepted() throws IOException {
        Run r = validate(args("examples", repo(Examples.KAFKA), repo(Examples.KEYS_SECRET), repo(Examples.S3_SECRET), repo(Examples.TOPIC),
                repo(Examples.METRICS)));
        assertEquals(0, r.exit(), r.out() + r.err());
        assertTrue(r.out().contains("tsm config check of Kafka payments: accepted"), r.out());
        Path props = dir.resolve("examples").resolve("payments.properties");
        assertTrue(r.out().contains("rsm.config of Kafka payments (13 keys): " + props), r.out());
        String text = Files.readString(props);
        assertTrue(text.contains("\nrsm.config.storage.backend.class=s3\n") && text.contains("\nrsm.config.chunk.size=4194304\n"), text);
        assertTrue(r.out().contains("0 error(s), 1 warning(s)"), r.out());
    }

    @Test
    void irsaWithoutStaticKeysPasses() throws IOException {
        String text = Repo.read(Examples.KAFKA).replaceAll("(?s)        - name: AWS_ACCESS_KEY_ID\n.*?key: AWS_SECRET_ACCESS_KEY\n", "");
        Path f = dir.resolve("inputs").resolve("irsa.yaml");
        Files.createDirectories(f.getParent());
        Files.writeString(f, text);
        Run r = validate(args("irsa", f.toString()));
        assertEquals(0, r.exit(), r.out());
        assertTrue(r.out().contains("1 file(s): 0 error(s), 0 warning(s)"), r.out());
        assertTrue(r.out().contains("tsm config check of Kafka payments: accepted"), r.out());
    }

    @Test
    void aTypoInAPluginKeyFailsWithTsmsMessageOnTheField() throws IOException {
        String f = userFile("typo.yaml", "          compression.enabled: \"true\"\n", "          compresion.enabled: \"true\"\n");
        Run r = validate(args("typo", f));
        assertEquals(1, r.exit(), r.out());
        assertTrue(r.out().contains("spec.kafka.tieredStorage.remoteStorageManager.config.compresion.enabled: unknown key: "
                + "did you mean compression.enabled? (tsm config check)"), r.out());
        assertTrue(r.out().contains("error: " + f + " document 3 (Kafka payments, line "), r.out());
    }

    @Test
    void aTypoInARequiredKeyIsNamedByTheValidatorAndByTsm() throws IOException {
        String f = userFile("typo-required.yaml", "          chunk.size: \"4194304\"\n", "          chunk.sise: \"4194304\"\n");
        Run r = validate(args("typo-required", f));
        assertEquals(1, r.exit(), r.out());
        assertTrue(r.out().contains("config.chunk.size: missing: tsm requires it"), r.out());
        assertTrue(r.out().contains("config.chunk.sise: unknown key: did you mean chunk.size? (tsm config check)"), r.out());
    }

    @Test
    void anOwnImageTagPasses() throws IOException {
        String f = userFile("own-tag.yaml", "kafka-tsm:1.2.0-kafka-4.3.1-tsm-" + PluginBuild.version() + "\n", "broker:2025.06.1\n");
        Run r = validate(args("own-tag", f, "--print"));
        assertEquals(0, r.exit(), r.out());
        assertTrue(r.out().contains("warning: " + f + " document 3 (Kafka payments, line "), r.out());
        assertTrue(r.out().contains("spec.kafka.image: tag '2025.06.1'"), r.out());
        assertTrue(r.out().contains("\nrsm.config.storage.s3.bucket.name=payments-tiered-storage\n"), "--print prints the file: " + r.out());
    }

    @Test
    void withoutATsmBinaryItSaysSoAndExits3() {
        Run r = validate("--tsm", dir.resolve("no-such-tsm").toString(), "--out", dir.resolve("none").toString(), repo(Examples.KAFKA));
        assertEquals(3, r.exit(), r.out() + r.err());
        assertTrue(r.err().contains("cannot run `tsm config check`: the tsm binary") && r.err().contains("does not exist"), r.err());
        assertTrue(r.out().contains("the plugin configuration was not checked"), r.out());
    }

    @Test
    void usageErrorsExit2() {
        assertEquals(2, validate().exit());
        assertEquals(2, validate("--bogus", "x.yaml").exit());
        assertEquals(0, validate("--help").exit());
    }
}
