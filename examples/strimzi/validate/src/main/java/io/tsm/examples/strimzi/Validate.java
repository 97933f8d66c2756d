package io.tsm.examples.strimzi;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.strimzi.api.kafka.model.kafka.Kafka;

/**
 * The validator's command line: {@code examples/strimzi/validate/validate.sh [OPTIONS] FILE...}.
 * Reads the manifests strictly, applies {@link Rules}, writes each Kafka resource's plugin
 * configuration as the brokers get it ({@code rsm.config.<key>=<value>}) to a properties
 * file, runs {@code tsm config check} on it and prints every problem with the file, the
 * resource and the field's path. Exit 0: no error (warnings may remain); 1: errors; 2: usage;
 * 3: {@code tsm config check} could not run (no error found otherwise).
 */
public final class Validate {
    private Validate() {}

    static final String USAGE = """
            Usage: examples/strimzi/validate/validate.sh [OPTIONS] FILE...

            Checks Strimzi manifests for tsm: the Kafka resource (kafka.strimzi.io/v1), its
            KafkaNodePools and, optionally, the Secrets they mount. Every document is read with
            Strimzi's API model (an unknown or misspelt field is an error); then what tsm needs
            (errors) and what docs/strimzi.md recommends (warnings). Each Kafka resource's plugin
            configuration is written as the brokers get it (rsm.config.<key>=<value>) and checked
            with `tsm config check`.

            Options:
              --tsm PATH           the tsm binary for `tsm config check` (default: $TSM_BIN, else
                                   `cargo build --locked -p tsm-cli` in this repository)
              --skip-config-check  do not run `tsm config check` (the plugin keys and values are
                                   then unchecked)
              --plugin-dir DIR     where the image puts tsm-kafka-plugin-<version>.jar and
                                   libtsm_jni.so (default: examples/strimzi/Dockerfile's,
                                   /opt/kafka/plugins/tsm/)
              --out DIR            where to write the rsm.config properties files
                                   (default: examples/strimzi/validate/target/validated)
              --print              also print each properties file
              -h, --help           this text

            Exit: 0 no error (warnings may remain), 1 errors, 2 usage, 3 `tsm config check` could
            not run.
            """;

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /** The options of one run. */
    record Options(List<Path> files, Path tsm, boolean skipConfigCheck, String pluginDir, Path out, boolean print) {}

    static int run(String[] args, PrintStream out, PrintStream err) {
        Options opts;
        try {
            opts = parse(args);
        } catch (IllegalArgumentException e) {
            err.println("validate: " + e.getMessage());
            err.println();
            err.print(USAGE);
            return 2;
        }
        if (opts == null) {
            out.print(USAGE);
            return 0;
        }
        Path root = repoRoot();
        String pluginDir = opts.pluginDir() != null ? opts.pluginDir() : defaultPluginDir(root);
        Rules.Options rules = new Rules.Options(pluginDir, root == null ? null : tsmVersion(root));

        Manifests m = Manifests.read(opts.files());
        List<Finding> findings = new ArrayList<>(m.findings);
        findings.addAll(Rules.check(m, rules));

        // The plugin configuration of each Kafka resource, written as the brokers get it.
        Map<StrictYaml.Doc, Path> written = new LinkedHashMap<>();
        List<String> report = new ArrayList<>();
        Set<String> names = new HashSet<>();
        for (StrictYaml.Doc d : m.ofKind("Kafka")) {
            Kafka k = d.as(Kafka.class);
            LinkedHashMap<String, String> props = RsmConfig.brokerProperties(k);
            if (props.isEmpty()) {
                continue;
            }
            String ns = k.getMetadata().getNamespace();
            String base = (ns == null ? "" : ns + ".") + k.getMetadata().getName();
            String name = base;
            for (int i = 2; !names.add(name); i++) {
                name = base + "-" + i;
            }
            Path file = opts.out().resolve(name + ".properties").toAbsolutePath().normalize();
            try {
                RsmConfig.write(file, "rsm.config.* of Kafka " + k.getMetadata().getName() + " (" + d.source() + "), as Strimzi "
                        + "writes them into the broker configuration\n(examples/strimzi/validate/validate.sh; `tsm --config "
                        + file.getFileName() + " ...` reads it: point the key files at local copies)", props);
            } catch (RuntimeException e) {
                findings.add(Finding.error(d.where(), "", "cannot write " + file + ": " + e.getMessage()));
                continue;
            }
            written.put(d, file);
            report.add("rsm.config of Kafka " + k.getMetadata().getName() + " (" + props.size() + " keys): " + file);
            if (opts.print()) {
                try {
                    report.add(Files.readString(file, StandardCharsets.UTF_8).stripTrailing());
                } catch (IOException e) {
                    report.add("(cannot read it back: " + e + ")");
                }
            }
        }

        String unavailable = null;
        if (opts.skipConfigCheck()) {
            if (!written.isEmpty()) {
                findings.add(Finding.note("", "", "tsm config check not run (--skip-config-check): the plugin's keys and values "
                        + "are unchecked"));
            }
        } else if (!written.isEmpty()) {
            try {
                TsmCli tsm = tsm(opts, root, err);
                for (Map.Entry<StrictYaml.Doc, Path> e : written.entrySet()) {
                    TsmCli.Outcome o = tsm.check(e.getValue());
                    Kafka k = e.getKey().as(Kafka.class);
                    report.add("tsm config check of Kafka " + k.getMetadata().getName() + ": "
                            + (o.problems().isEmpty() ? "accepted" : o.problems().size() + " problem(s)") + " (" + o.command() + ")");
                    for (TsmCli.Problem p : o.problems()) {
                        Finding f = fromTsm(e.getKey(), k, p);
                        // A required key the rules already reported missing: one message is enough.
                        boolean known = findings.stream().anyMatch(x -> x.level() == Finding.Level.ERROR
                                && x.where().equals(f.where()) && x.field().equals(f.field()));
                        if (!known) {
                            findings.add(f);
                        }
                    }
                }
            } catch (TsmCli.Unavailable e) {
                unavailable = e.getMessage();
            }
        }

        findings.sort(Comparator.comparing(Finding::level));
        for (Finding f : findings) {
            out.println(f.format());
        }
        if (!findings.isEmpty()) {
            out.println();
        }
        report.forEach(out::println);
        Map<Finding.Level, List<Finding>> by = Rules.byLevel(findings);
        int errors = by.get(Finding.Level.ERROR).size();
        int warnings = by.get(Finding.Level.WARNING).size();
        if (unavailable != null) {
            err.println("validate: cannot run `tsm config check`: " + unavailable);
        }
        String summary = opts.files().size() + " file(s): " + errors + " error(s), " + warnings + " warning(s)";
        if (errors > 0) {
            out.println(summary + ": fix the errors before applying");
            return 1;
        }
        if (unavailable != null) {
            out.println(summary + ", but the plugin configuration was not checked (tsm config check could not run)");
            return 3;
        }
        out.println(summary + (warnings > 0 ? ": tsm would run; the warnings are recommendations (docs/strimzi.md)" : ""));
        return 0;
    }

    /** A problem of {@code tsm config check}, on the field of the Kafka resource that sets the key. */
    static Finding fromTsm(StrictYaml.Doc d, Kafka k, TsmCli.Problem p) {
        String key = p.key().startsWith(RsmConfig.PREFIX) ? p.key().substring(RsmConfig.PREFIX.length()) : p.key();
        String field = RsmConfig.fieldPath(k, key);
        String message = field.startsWith(RsmConfig.CONFIG_PATH) ? p.message().replace(RsmConfig.PREFIX, "") : p.message();
        return Finding.error(d.where(), field, message + " (tsm config check)");
    }

    private static TsmCli tsm(Options opts, Path root, PrintStream err) throws TsmCli.Unavailable {
        if (opts.tsm() != null) {
            return TsmCli.binary(opts.tsm());
        }
        String env = System.getenv("TSM_BIN");
        if (env != null && !env.isBlank()) {
            return TsmCli.binary(Paths.get(env));
        }
        if (root == null) {
            throw new TsmCli.Unavailable("no tsm binary given (--tsm PATH or TSM_BIN) and no repository to build one in "
                    + "(run examples/strimzi/validate/validate.sh, which sets tsm.repo.root)");
        }
        err.println("validate: building the tsm CLI (cargo build --locked -p tsm-cli; minutes the first time; --tsm PATH "
                + "or TSM_BIN to use a built one)");
        return TsmCli.build(root);
    }

    static Options parse(String[] args) {
        List<Path> files = new ArrayList<>();
        Path tsm = null;
        boolean skip = false;
        String pluginDir = null;
        String outDefault = System.getProperty("tsm.validate.out");
        Path out = outDefault == null || outDefault.isBlank() ? Paths.get("tsm-rsm-config") : Paths.get(outDefault);
        boolean print = false;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "-h", "--help" -> {
                    return null;
                }
                case "--tsm" -> tsm = Paths.get(value(args, ++i, a));
                case "--skip-config-check" -> skip = true;
                case "--plugin-dir" -> pluginDir = value(args, ++i, a);
                case "--out" -> out = Paths.get(value(args, ++i, a));
                case "--print" -> print = true;
                default -> {
                    if (a.startsWith("-") && !a.equals("-")) {
                        throw new IllegalArgumentException("unknown option " + a);
                    }
                    files.add(Paths.get(a));
                }
            }
        }
        if (files.isEmpty()) {
            throw new IllegalArgumentException("no FILE given");
        }
        if (pluginDir != null && !pluginDir.startsWith("/")) {
            throw new IllegalArgumentException("--plugin-dir must be an absolute path in the image: " + pluginDir);
        }
        return new Options(files, tsm, skip, pluginDir, out, print);
    }

    private static String value(String[] args, int i, String option) {
        if (i >= args.length) {
            throw new IllegalArgumentException(option + " needs a value");
        }
        return args[i];
    }

    /** The repository root (system property tsm.repo.root, set by validate.sh and the pom), or null. */
    static Path repoRoot() {
        String v = System.getProperty("tsm.repo.root");
        return v == null || v.isBlank() ? null : Paths.get(v).toAbsolutePath().normalize();
    }

    /** The plugin directory examples/strimzi/Dockerfile copies into, else Rules.DEFAULT_PLUGIN_DIR. */
    static String defaultPluginDir(Path root) {
        if (root == null) {
            return Rules.DEFAULT_PLUGIN_DIR;
        }
        try {
            Dockerfile df = new Dockerfile(Files.readString(root.resolve("examples/strimzi/Dockerfile")),
                    Map.of("TSM_VERSION", "VERSION"));
            return df.copies.size() == 1 ? df.copies.get(0).destination() : Rules.DEFAULT_PLUGIN_DIR;
        } catch (IOException | AssertionError e) {
            return Rules.DEFAULT_PLUGIN_DIR;
        }
    }

    /** The plugin version crates/tsm-jni/pom.xml builds, or null. */
    static String tsmVersion(Path root) {
        try {
            Matcher v = Pattern.compile("<version>([^<]+)</version>").matcher(Files.readString(root.resolve("crates/tsm-jni/pom.xml")));
            return v.find() ? v.group(1) : null;
        } catch (IOException e) {
            return null;
        }
    }
}
