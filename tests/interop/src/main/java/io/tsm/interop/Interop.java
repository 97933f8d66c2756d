package io.tsm.interop;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata.CustomMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;

/**
 * The interop driver (issue 16): one JVM run of steps against ONE store, with the two real
 * plugins loaded as a broker loads them ({@link LoadedPlugin}) and configured from the SAME
 * properties file per mode ({@code <configs>/<mode>.properties}, {@code rsm.config.*} keys as
 * in server.properties; prefix stripped and {@code broker.id} added as an Integer, as the
 * broker passes them).
 *
 * <pre>
 * Interop --kafka VERSION --configs DIR --data DIR --state DIR --aiven-plugin DIR --tsm-plugin DIR
 *         [--modes plain,zstd,aes,zstd-aes] STEP...
 * STEP: copy:PLUGIN:GROUP    copy two segments per mode (compressible with a transaction index,
 *                            under the ring's other key pair when encrypted; incompressible without
 *                            one, under the active pair); saves &lt;state&gt;/GROUP.properties
 *       read:PLUGIN:GROUP    every check of {@link ReadChecks} on every segment of GROUP
 *       delete:PLUGIN:GROUP  delete every segment of GROUP (twice: delete is idempotent)
 *       gone:PLUGIN:GROUP    a fresh instance finds none of GROUP (RemoteResourceNotFoundException)
 *       same:PLUGIN:GROUP    segments a broker tiered ({@link ClusterSegment}, config {@code <configs>/cluster.properties}):
 *                            PLUGIN and the other plugin fetch the whole log and every index, byte-compared
 * PLUGIN: aiven | tsm
 * </pre>
 *
 * {@code --kafka} must be the version of the kafka-clients jar on the class path (checked), so
 * a run cannot pass on other Kafka classes than it claims. Exit 0 when every check passed, 1
 * when any failed (each printed), 2 on bad arguments.
 */
public final class Interop {
    private final Map<String, String> opts = new HashMap<>();
    private final List<String> steps = new ArrayList<>();
    private final Map<LoadedPlugin.Kind, LoadedPlugin> plugins = new EnumMap<>(LoadedPlugin.Kind.class);
    private final Report report = new Report();
    private String kafka;
    /**
     * The Java plugin's manifest cache (Caffeine) logs every expected not-found (the "gone"
     * probes) as a java.util.logging WARNING with a stack trace; kept referenced so the level holds.
     */
    private static final java.util.logging.Logger CAFFEINE = java.util.logging.Logger.getLogger("com.github.benmanes.caffeine");

    public static void main(String[] args) {
        CAFFEINE.setLevel(java.util.logging.Level.SEVERE);
        Interop i = new Interop();
        try {
            i.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("[interop] " + e.getMessage());
            System.exit(2);
        }
        int rc;
        try {
            rc = i.run();
        } catch (Exception e) {
            System.err.println("[interop] FAILED: " + e);
            e.printStackTrace();
            rc = 1;
        }
        System.exit(rc);
    }

    private void parse(String[] args) {
        for (int k = 0; k < args.length; k++) {
            if (args[k].startsWith("--")) {
                if (k + 1 >= args.length) {
                    throw new IllegalArgumentException(args[k] + " needs a value");
                }
                opts.put(args[k].substring(2), args[++k]);
            } else {
                steps.add(args[k]);
            }
        }
        for (String o : new String[] {"kafka", "configs", "data", "state", "aiven-plugin", "tsm-plugin"}) {
            if (!opts.containsKey(o)) {
                throw new IllegalArgumentException("--" + o + " is required (see the Interop class doc)");
            }
        }
        if (steps.isEmpty()) {
            throw new IllegalArgumentException("no steps given (copy|read|delete|gone:PLUGIN:GROUP)");
        }
    }

    private int run() throws Exception {
        kafka = kafkaVersion();
        if (!kafka.equals(opts.get("kafka"))) {
            throw new IllegalStateException("--kafka " + opts.get("kafka") + " but the class path has kafka-clients " + kafka);
        }
        System.err.println("[interop] Kafka " + kafka + " classes; steps " + steps);
        for (String step : steps) {
            String[] p = step.split(":");
            if (p.length != 3) {
                throw new IllegalArgumentException("step '" + step + "' is not ACTION:PLUGIN:GROUP");
            }
            LoadedPlugin plugin = plugin(LoadedPlugin.Kind.of(p[1]));
            Path groupFile = Path.of(opts.get("state")).resolve(p[2] + ".properties");
            int before = report.failures.size();
            long t0 = System.nanoTime();
            switch (p[0]) {
                case "copy" -> copy(plugin, groupFile);
                case "read" -> read(plugin, groupFile);
                case "delete" -> delete(plugin, groupFile);
                case "gone" -> gone(plugin, groupFile);
                case "same" -> same(plugin, groupFile);
                default -> throw new IllegalArgumentException("unknown action '" + p[0] + "' in step " + step);
            }
            System.err.printf("[interop] %s on Kafka %s: %s (%.1f s)%n", step, kafka,
                    report.failures.size() == before ? "ok" : (report.failures.size() - before) + " FAILED",
                    (System.nanoTime() - t0) / 1e9);
        }
        System.err.printf("[interop] Kafka %s: %d checks, %d failed%n", kafka, report.checks, report.failures.size());
        for (String f : report.failures) {
            System.err.println("[interop] FAILED: " + f);
        }
        return report.failures.isEmpty() ? 0 : 1;
    }

    /** version= of the kafka-clients jar on the class path (kafka/kafka-version.properties). */
    private static String kafkaVersion() throws IOException {
        try (InputStream in = Interop.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in == null) {
                throw new IOException("no kafka/kafka-version.properties on the class path: kafka-clients is missing");
            }
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version", "unknown");
        }
    }

    private LoadedPlugin plugin(LoadedPlugin.Kind kind) throws ReflectiveOperationException {
        LoadedPlugin p = plugins.get(kind);
        if (p == null) {
            p = LoadedPlugin.load(kind, Path.of(opts.get(kind == LoadedPlugin.Kind.AIVEN ? "aiven-plugin" : "tsm-plugin")));
            plugins.put(kind, p);
        }
        return p;
    }

    private List<String> modes() {
        return List.of(opts.getOrDefault("modes", "plain,zstd,aes,zstd-aes").split(","));
    }

    /** The rsm.config.* keys of {@code <configs>/<mode>.properties}, prefix stripped, plus broker.id. */
    private Map<String, Object> config(String mode) throws IOException {
        Path file = Path.of(opts.get("configs")).resolve(mode + ".properties");
        Properties p = new Properties();
        try (InputStream in = Files.newInputStream(file)) {
            p.load(in);
        }
        Map<String, Object> c = new LinkedHashMap<>();
        for (String k : p.stringPropertyNames()) {
            if (k.startsWith("rsm.config.")) {
                c.put(k.substring("rsm.config.".length()), p.getProperty(k));
            }
        }
        if (c.isEmpty()) {
            throw new IOException(file + " has no rsm.config.* keys");
        }
        c.put("broker.id", 0);
        return c;
    }

    private static boolean encrypted(Map<String, Object> c) {
        return "true".equals(c.get("encryption.enabled"));
    }

    /** The ring's first key pair id that is not the active one (the "older" pair). */
    private static String otherKey(Map<String, Object> c, Path file) {
        String active = String.valueOf(c.get("encryption.key.pair.id"));
        for (String id : String.valueOf(c.get("encryption.key.pairs")).split(",")) {
            if (!id.isBlank() && !id.trim().equals(active)) {
                return id.trim();
            }
        }
        throw new IllegalArgumentException(file + ": encryption.key.pairs needs a second pair besides " + active);
    }

    private SegmentFiles files(CopiedSegment s) throws IOException {
        return SegmentFiles.load(Path.of(opts.get("data")), s.set(), s.txn());
    }

    private void copy(LoadedPlugin plugin, Path groupFile) throws Exception {
        List<CopiedSegment> done = new ArrayList<>();
        try {
            for (String mode : modes()) {
                Map<String, Object> c = config(mode);
                boolean enc = encrypted(c);
                // compressible + transaction index under the older pair; incompressible, none, active pair.
                String[][] specs = {
                    {"compressible", "true", enc ? otherKey(c, groupFile) : ""},
                    {"incompressible", "false", enc ? String.valueOf(c.get("encryption.key.pair.id")) : ""},
                };
                for (String[] spec : specs) {
                    Map<String, Object> cc = new LinkedHashMap<>(c);
                    if (!spec[2].isEmpty()) {
                        cc.put("encryption.key.pair.id", spec[2]);
                    }
                    String topic = "ix-" + spec[0].charAt(0);
                    CopiedSegment s = new CopiedSegment(mode, spec[0], Boolean.parseBoolean(spec[1]), spec[2],
                            plugin.kind.label(), kafka, topic, Uuid.randomUuid(), Uuid.randomUuid(), Optional.empty());
                    SegmentFiles f = files(s);
                    RemoteStorageManager rsm = plugin.create(cc);
                    try {
                        var data = f.data();
                        Optional<CustomMetadata> cm = plugin.call(rsm, r -> r.copyLogSegmentData(s.forCopy(f), data));
                        CopiedSegment copied = s.withCustomMetadata(cm);
                        done.add(copied);
                        checkCustomMetadata(copied, c);
                    } finally {
                        plugin.close(rsm);
                    }
                }
            }
        } finally {
            CopiedSegment.save(groupFile, done);
        }
    }

    /** With custom.metadata.fields.include set, copy returns it, within the broker's default 128-byte limit. */
    private void checkCustomMetadata(CopiedSegment s, Map<String, Object> c) {
        Object fields = c.get("custom.metadata.fields.include");
        if (fields == null || String.valueOf(fields).isBlank()) {
            report.check(s.customMetadata().isEmpty(), s.label() + ": custom metadata returned though none is configured");
            return;
        }
        report.check(s.customMetadata().isPresent(), s.label() + ": copy returned no custom metadata (fields " + fields + ")");
        s.customMetadata().ifPresent(b -> report.check(b.length <= 128, s.label() + ": custom metadata of " + b.length
                + " bytes is over remote.log.metadata.custom.metadata.max.bytes (128): the broker would delete the segment"));
    }

    private void read(LoadedPlugin plugin, Path groupFile) throws Exception {
        for (CopiedSegment s : CopiedSegment.load(groupFile)) {
            Map<String, Object> c = config(s.mode());
            int chunk = Integer.parseInt(String.valueOf(c.get("chunk.size")));
            SegmentFiles f = files(s);
            RemoteStorageManager rsm = plugin.create(c);
            String label = plugin.kind.label() + "@" + kafka + " reads " + s.label();
            try {
                new ReadChecks(plugin, rsm, f, s.with(f, RemoteLogSegmentState.COPY_SEGMENT_FINISHED), chunk, report, label).run();
            } catch (Exception e) {
                report.check(false, label + ": " + e);
                e.printStackTrace();
            } finally {
                plugin.close(rsm);
            }
        }
    }

    private void delete(LoadedPlugin plugin, Path groupFile) throws Exception {
        for (CopiedSegment s : CopiedSegment.load(groupFile)) {
            SegmentFiles f = files(s);
            RemoteLogSegmentMetadata m = s.with(f, RemoteLogSegmentState.DELETE_SEGMENT_STARTED);
            RemoteStorageManager rsm = plugin.create(config(s.mode()));
            String label = plugin.kind.label() + "@" + kafka + " deletes " + s.label();
            try {
                for (int round = 1; round <= 2; round++) {
                    try {
                        plugin.call(rsm, r -> {
                            r.deleteLogSegmentData(m);
                            return null;
                        });
                        report.check(true, "");
                    } catch (Exception e) {
                        report.check(false, label + " (delete #" + round + "): " + e);
                    }
                }
            } finally {
                plugin.close(rsm);
            }
        }
    }

    private void gone(LoadedPlugin plugin, Path groupFile) throws Exception {
        for (CopiedSegment s : CopiedSegment.load(groupFile)) {
            SegmentFiles f = files(s);
            RemoteLogSegmentMetadata m = s.with(f, RemoteLogSegmentState.COPY_SEGMENT_FINISHED);
            RemoteStorageManager rsm = plugin.create(config(s.mode()));
            String label = plugin.kind.label() + "@" + kafka + " after the delete of " + s.label();
            try {
                ReadChecks.expectNotFound(plugin, rsm, r -> r.fetchLogSegment(m, 0), report, label + ": fetchLogSegment(0)");
                ReadChecks.expectNotFound(plugin, rsm,
                        r -> r.fetchIndex(m, RemoteStorageManager.IndexType.OFFSET), report, label + ": fetchIndex(OFFSET)");
            } finally {
                plugin.close(rsm);
            }
        }
    }

    /**
     * Both plugins read the segments of a {@link ClusterSegment} group: the whole log (its length
     * must be the manifest's original size) and every index, compared byte for byte; an index
     * one plugin does not find (a segment without a transaction index) the other must not find
     * either.
     */
    private void same(LoadedPlugin plugin, Path groupFile) throws Exception {
        LoadedPlugin other = plugin(plugin.kind == LoadedPlugin.Kind.AIVEN ? LoadedPlugin.Kind.TSM : LoadedPlugin.Kind.AIVEN);
        Map<String, Object> c = config("cluster");
        RemoteStorageManager a = plugin.create(c);
        RemoteStorageManager b = other.create(c);
        try {
            for (ClusterSegment s : ClusterSegment.load(groupFile)) {
                RemoteLogSegmentMetadata m = s.metadata();
                String label = plugin.kind.label() + " and " + other.kind.label() + "@" + kafka + " read " + s.label();
                byte[] x = readOrNull(plugin, a, r -> r.fetchLogSegment(m, 0));
                byte[] y = readOrNull(other, b, r -> r.fetchLogSegment(m, 0));
                report.check(x != null && x.length == s.size(), label + ": " + plugin.kind.label() + " read "
                        + (x == null ? "nothing" : x.length + " bytes") + " of the log, manifest says " + s.size());
                report.check(x != null && java.util.Arrays.equals(x, y), label + ": the logs differ");
                StringBuilder idx = new StringBuilder();
                for (RemoteStorageManager.IndexType t : RemoteStorageManager.IndexType.values()) {
                    byte[] ix = readOrNull(plugin, a, r -> r.fetchIndex(m, t));
                    byte[] iy = readOrNull(other, b, r -> r.fetchIndex(m, t));
                    report.check(java.util.Arrays.equals(ix, iy), label + ": index " + t + " differs ("
                            + (ix == null ? "absent" : ix.length) + " vs " + (iy == null ? "absent" : iy.length) + ")");
                    report.check(ix != null || t == RemoteStorageManager.IndexType.TRANSACTION, label + ": no " + t + " index");
                    idx.append(' ').append(t).append('=').append(ix == null ? "absent" : ix.length);
                }
                System.err.printf("[interop] %s: log %d bytes, indexes%s, identical%n", label, x == null ? -1 : x.length, idx);
            }
        } finally {
            plugin.close(a);
            other.close(b);
        }
    }

    /** All bytes {@code call} streams, or null when the plugin says the resource does not exist. */
    private static byte[] readOrNull(LoadedPlugin plugin, RemoteStorageManager rsm, LoadedPlugin.Call<InputStream> call)
            throws Exception {
        try (InputStream in = plugin.call(rsm, call)) {
            return in.readAllBytes();
        } catch (org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException e) {
            return null;
        }
    }

    /** Checks made and the failures among them, each described precisely. */
    static final class Report {
        int checks;
        final List<String> failures = new ArrayList<>();

        void check(boolean ok, String what) {
            checks++;
            if (!ok) {
                failures.add(what);
                System.err.println("[interop] FAILED: " + what);
            }
        }
    }
}
