package io.tsm.bench;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager.IndexType;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Cross-check (issue 8): for every mode and every pair of {@code --pairs} (default
 * {@code tsm:java}; {@code tsm:aiven} pairs tsm with the real Java plugin, on Kafka 4.2.2
 * classes), a segment copied by one plugin is fetched by the other, both directions
 * (tsm -> java, java -> tsm): the whole log, ranged fetches across a
 * chunk boundary and from offset-index positions, and {@code fetchIndex} for every
 * {@link IndexType} must be byte-identical to what copy was given (TRANSACTION with a
 * synthetic {@code .txnindex}; without one, both must throw
 * {@link RemoteResourceNotFoundException}). Then the reader deletes and a fresh writer
 * instance must find nothing. On the filesystem backend the stored objects are checked
 * against docs/object-format.md too (plain {@code .log} == the segment file; manifest version,
 * chunk index type and encryption fields). Streams are compared 1 MiB at a time.
 * A pair with {@code aiven} gets the map as the Java plugin takes it (full backend class
 * names, {@link Plugins#configFor}); tsm reads the same map, as in a mixed cluster.
 * Any mismatch: printed precisely, exit code 1.
 */
@Command(name = "crosscheck", description = "segments written by one plugin are read by the other and vice versa")
final class CrossCheck implements Callable<Integer> {
    @Option(names = "--backend", defaultValue = "filesystem")
    String backend;
    @Option(names = "--data", required = true, arity = "1..*", description = "segment set dirs")
    List<Path> data;
    @Option(names = "--modes", defaultValue = "plain,zstd,aes,zstd+aes", split = ",")
    List<String> modes;
    @Option(names = "--work", defaultValue = "${env:TSM_BENCH_WORK:-/var/tmp/tsm-bench/jvm-work}")
    Path work;
    @Option(names = "--pairs", defaultValue = "tsm:java", split = ",",
            description = "plugin pairs A:B (tsm, java, aiven), each read in both directions")
    List<String> pairs;

    /** Makes a plugin by name ("tsm", "java", "aiven"); tests swap in fault-injecting wrappers. */
    interface Factory {
        RemoteStorageManager create(String plugin) throws ReflectiveOperationException, IOException;
    }

    Factory factory = Plugins::create;

    private final List<String> failures = new ArrayList<>();
    private int checks;

    @Override
    public Integer call() throws Exception {
        Pem.ensureKeyPair(work.resolve("keys"));
        if (backend.equals("s3")) {
            Plugins.S3Env.fromEnv().ensureBucket();
        }
        Path txn = work.resolve("crosscheck.txnindex");
        Files.write(txn, syntheticTxnIndex());
        for (String pair : pairs) {
            String[] ab = pair.split(":");
            if (ab.length != 2 || ab[0].equals(ab[1])) {
                throw new IllegalArgumentException("--pairs: '" + pair + "' is not A:B with two different plugins");
            }
            String[][] directions = {{ab[0], ab[1]}, {ab[1], ab[0]}};
            for (Path dir : data) {
                SegmentSet set = SegmentSet.load(dir);
                for (String mode : modes) {
                    for (String[] dirn : directions) {
                        run(set, mode, dirn[0], dirn[1], Optional.of(txn));
                    }
                }
                for (String[] dirn : directions) {
                    run(set, "plain", dirn[0], dirn[1], Optional.empty());
                }
            }
        }
        System.err.printf("[bench-jvm] crosscheck %s (%s, Kafka %s): %d checks, %d failed%n", pairs, backend,
                Plugins.kafkaVersion(), checks, failures.size());
        for (String f : failures) {
            System.err.println("[bench-jvm] MISMATCH: " + f);
        }
        return failures.isEmpty() ? 0 : 1;
    }

    /** Three 40-byte aborted-transaction entries (version i16, producerId i64, first/last/lastStable offsets i64). */
    static byte[] syntheticTxnIndex() {
        ByteBuffer b = ByteBuffer.allocate(3 * 40);
        for (int i = 0; i < 3; i++) {
            b.putShort((short) 0).putLong(1000 + i).putLong(10L * i).putLong(10L * i + 5).putLong(10L * i + 6).putInt(0);
        }
        return b.array();
    }

    /** The mismatches found by the last {@link #call}. */
    List<String> failures() {
        return failures;
    }

    private void check(boolean ok, String what) {
        checks++;
        if (!ok) {
            failures.add(what);
        }
    }

    private void run(SegmentSet set, String mode, String writer, String reader, Optional<Path> txn) throws Exception {
        String label = set.name + " " + mode + " " + writer + "->" + reader + (txn.isPresent() ? "" : " (no txnindex)");
        boolean aiven = writer.equals("aiven") || reader.equals("aiven");
        Map<String, Object> config = Plugins.configFor(aiven ? "aiven" : writer, backend, mode, work);
        RemoteStorageManager w = factory.create(writer);
        RemoteStorageManager r = factory.create(reader);
        RemoteStorageManager w2 = null;
        RemoteLogSegmentMetadata meta = set.metadata(Uuid.randomUuid());
        try {
            w.configure(config);
            r.configure(config);
            w.copyLogSegmentData(meta, set.data(txn));
            if (backend.equals("filesystem")) {
                checkObjects(set, mode, writer, txn.isPresent(), meta, label);
            }
            // Whole segment.
            try (InputStream in = r.fetchLogSegment(meta, 0)) {
                compare(in, set.log(), 0, set.logBytes, label + " fetchLogSegment(0)");
            }
            // Across the first chunk boundary (both ends inclusive) and past the end (clamped).
            long b = Math.min(Plugins.CHUNK_SIZE, set.logBytes);
            int s = (int) Math.max(0, b - 1000);
            int e = (int) Math.min(set.logBytes - 1, b + 999);
            try (InputStream in = r.fetchLogSegment(meta, s, e)) {
                compare(in, set.log(), s, e - s + 1L, label + " fetchLogSegment(" + s + "," + e + ")");
            }
            int tail = (int) Math.max(0, set.logBytes - 10);
            try (InputStream in = r.fetchLogSegment(meta, tail, Integer.MAX_VALUE)) {
                compare(in, set.log(), tail, set.logBytes - tail, label + " fetchLogSegment(" + tail + ",MAX) clamped");
            }
            int[] positions = set.indexPositions();
            for (int k = 0; k < positions.length; k += Math.max(1, positions.length / 5)) {
                int p = positions[k];
                byte[] buf = new byte[BenchMain.MIB];
                long got = BenchMain.Fetch1Mib.readRange(r, meta, p, buf, null);
                long want = Math.min(BenchMain.MIB, set.logBytes - p);
                check(got == want && equalsFile(buf, (int) got, set.log(), p),
                        label + " 1 MiB read from index position " + p + " (" + got + " bytes)");
            }
            // Every index.
            LogSegmentDataBytes expected = new LogSegmentDataBytes(set, txn);
            for (IndexType t : IndexType.values()) {
                byte[] want = expected.get(t);
                if (want == null) {
                    try (InputStream in = r.fetchIndex(meta, t)) {
                        check(false, label + " fetchIndex(" + t + ") returned a stream (" + in.available()
                                + "+ bytes) for a missing index");
                    } catch (RemoteResourceNotFoundException ok) {
                        check(true, "");
                    }
                    continue;
                }
                byte[] got;
                try (InputStream in = r.fetchIndex(meta, t)) {
                    got = in.readAllBytes();
                }
                check(Arrays.equals(got, want), label + " fetchIndex(" + t + "): " + got.length + " bytes, expected "
                        + want.length + (got.length == want.length ? " (same size, different bytes)" : ""));
            }
            // The reader deletes; a fresh writer instance finds nothing.
            r.deleteLogSegmentData(meta);
            r.deleteLogSegmentData(meta);
            w2 = factory.create(writer);
            w2.configure(config);
            try (InputStream in = w2.fetchLogSegment(meta, 0)) {
                check(false, label + " fetch after the other plugin's delete still found the segment (read "
                        + in.read() + ")");
            } catch (RemoteResourceNotFoundException ok) {
                check(true, "");
            }
            System.err.println("[bench-jvm] crosscheck " + label + ": done");
        } catch (Exception ex) {
            check(false, label + ": " + ex);
            ex.printStackTrace();
        } finally {
            w.close();
            r.close();
            if (w2 != null) {
                w2.close();
            }
        }
    }

    /** docs/object-format.md checks of what {@code writer} stored on the filesystem. */
    private void checkObjects(SegmentSet set, String mode, String writer, boolean txn, RemoteLogSegmentMetadata meta,
                              String label) throws IOException {
        Path root = work.resolve("fs-root");
        String offset = String.format(java.util.Locale.ROOT, "%020d", meta.startOffset());
        String main = "bench-jvm/" + meta.topicIdPartition().topic() + "-" + meta.topicIdPartition().topicId() + "/"
                + meta.topicIdPartition().partition() + "/" + offset + "-" + meta.remoteLogSegmentId().id();
        Path log = root.resolve(main + ".log");
        Path manifest = root.resolve(main + ".rsm-manifest");
        check(Files.isRegularFile(log) && Files.isRegularFile(root.resolve(main + ".indexes"))
                && Files.isRegularFile(manifest), label + " " + writer + " wrote " + main + ".{log,indexes,rsm-manifest}");
        if (!Files.isRegularFile(manifest)) {
            return;
        }
        boolean zstd = mode.startsWith("zstd");
        boolean aes = mode.endsWith("aes");
        if (!zstd && !aes) {
            try (InputStream in = Files.newInputStream(log)) {
                compare(in, set.log(), 0, set.logBytes, label + " plain .log object == segment file");
            }
        }
        JsonNode m = Results.JSON.readTree(manifest.toFile());
        check(m.path("version").isTextual() && m.path("version").asText().equals("1"),
                label + " manifest version is the string \"1\": " + m.path("version"));
        JsonNode ci = m.path("chunkIndex");
        check(ci.path("type").asText().equals(zstd ? "variable" : "fixed"),
                label + " chunkIndex.type " + ci.path("type") + " for mode " + mode);
        check(ci.path("originalChunkSize").asLong() == Plugins.CHUNK_SIZE
                        && ci.path("originalFileSize").asLong() == set.logBytes,
                label + " chunkIndex original sizes " + ci);
        if (!zstd) {
            long full = Plugins.CHUNK_SIZE + (aes ? 28 : 0);
            long chunks = (set.logBytes + Plugins.CHUNK_SIZE - 1) / Plugins.CHUNK_SIZE;
            long last = set.logBytes - (chunks - 1) * Plugins.CHUNK_SIZE + (aes ? 28 : 0);
            check(ci.path("transformedChunkSize").asLong() == full
                            && ci.path("finalTransformedChunkSize").asLong() == last
                            && Files.size(log) == (chunks - 1) * full + last,
                    label + " fixed chunk index sizes " + ci + " vs .log of " + Files.size(log) + " bytes");
        }
        if (zstd) {
            int[] sizes = io.tsm.bench.baseline.ChunkSizesCodec.decode(ci.path("transformedChunks").asText());
            long chunks = (set.logBytes + Plugins.CHUNK_SIZE - 1) / Plugins.CHUNK_SIZE;
            long sum = 0;
            for (int v : sizes) {
                sum += v;
            }
            check(sizes.length == chunks && sum == Files.size(log), label + " transformedChunks: " + sizes.length
                    + " sizes summing to " + sum + ", .log object has " + Files.size(log) + " bytes in " + chunks + " chunks");
        }
        // .indexes: OFFSET, TIMESTAMP, PRODUCER_SNAPSHOT, LEADER_EPOCH, TRANSACTION, back to back from 0.
        long next = 0;
        for (String name : new String[] {"offset", "timestamp", "producerSnapshot", "leaderEpoch", "transaction"}) {
            JsonNode entry = m.path("segmentIndexes").path(name);
            if (entry.isNull() || entry.isMissingNode()) {
                continue;
            }
            check(entry.path("position").asLong() == next, label + " segmentIndexes." + name + ".position "
                    + entry.path("position") + ", expected " + next + " (indexes back to back in spec order)");
            next = entry.path("position").asLong() + entry.path("size").asLong();
        }
        check(Files.size(root.resolve(main + ".indexes")) == next, label + " .indexes object size "
                + Files.size(root.resolve(main + ".indexes")) + " != end of the last index " + next);
        check(m.path("compression").isBoolean() && m.path("compression").asBoolean() == zstd,
                label + " manifest compression " + m.path("compression"));
        JsonNode enc = m.get("encryption");
        check(aes ? enc != null && enc.path("dataKey").asText().startsWith(Plugins.KEY_ID + ":")
                        && Base64Len.of(enc.path("aad").asText()) == 32
                        : enc == null || enc.isNull(),
                label + " manifest encryption " + (enc == null ? "absent" : "{dataKey: " + enc.path("dataKey").asText().split(":")[0] + ":...}"));
        JsonNode t = m.path("segmentIndexes").path("transaction");
        check(txn ? t.isObject() : t.isNull(), label + " segmentIndexes.transaction " + t);
    }

    /** Decoded length of standard base64, or -1. */
    static final class Base64Len {
        static int of(String s) {
            try {
                return java.util.Base64.getDecoder().decode(s).length;
            } catch (IllegalArgumentException e) {
                return -1;
            }
        }
    }

    private void compare(InputStream in, Path file, long from, long length, String what) throws IOException {
        byte[] a = new byte[BenchMain.MIB];
        byte[] b = new byte[BenchMain.MIB];
        long done = 0;
        try (InputStream f = Files.newInputStream(file)) {
            f.skipNBytes(from);
            while (true) {
                int want = (int) Math.min(a.length, length - done);
                int na = in.readNBytes(a, 0, a.length);
                int nb = f.readNBytes(b, 0, Math.max(0, want));
                if (na != nb) {
                    check(false, what + ": got " + (done + na) + "+ bytes, expected " + length);
                    return;
                }
                int mismatch = Arrays.mismatch(a, 0, na, b, 0, nb);
                if (mismatch >= 0) {
                    check(false, what + ": first differing byte at segment position " + (from + done + mismatch));
                    return;
                }
                done += na;
                if (na == 0) {
                    break;
                }
            }
        }
        check(done == length, what + ": " + done + " bytes, expected " + length);
    }

    private static boolean equalsFile(byte[] buf, int n, Path file, long from) throws IOException {
        try (InputStream f = Files.newInputStream(file)) {
            f.skipNBytes(from);
            byte[] want = f.readNBytes(n);
            return want.length == n && Arrays.equals(buf, 0, n, want, 0, n);
        }
    }

    /** The bytes copy was given for each index (null: no such index). */
    static final class LogSegmentDataBytes {
        private final Map<IndexType, byte[]> bytes = new java.util.EnumMap<>(IndexType.class);

        LogSegmentDataBytes(SegmentSet set, Optional<Path> txn) throws IOException {
            bytes.put(IndexType.OFFSET, Files.readAllBytes(set.offsetIndex()));
            bytes.put(IndexType.TIMESTAMP, Files.readAllBytes(set.timeIndex()));
            bytes.put(IndexType.PRODUCER_SNAPSHOT, Files.readAllBytes(set.snapshot()));
            bytes.put(IndexType.LEADER_EPOCH, set.leaderEpochBytes());
            Optional<Path> t = txn.isPresent() ? txn : (Files.exists(set.txnIndex()) ? Optional.of(set.txnIndex()) : Optional.empty());
            if (t.isPresent()) {
                bytes.put(IndexType.TRANSACTION, Files.readAllBytes(t.get()));
            }
        }

        byte[] get(IndexType t) {
            return bytes.get(t);
        }
    }
}
