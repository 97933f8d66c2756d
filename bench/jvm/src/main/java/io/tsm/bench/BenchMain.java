package io.tsm.bench;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;

import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.LogSegmentData;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The JVM benchmark harness (issue 8): drives a {@link RemoteStorageManager} (the tsm plugin
 * jar, the Java baseline or the real Java plugin, {@link AivenPlugin}) exactly as a broker does: {@code configure} with the
 * {@code rsm.config.*} map, then {@code copyLogSegmentData} / {@code fetchLogSegment} on a
 * segment set from {@code tsm-bench gen}. One measured case per JVM (bench/jvm/run.sh starts
 * one per case) so CPU and peak RSS belong to that case; one JSON line per result is appended
 * to {@code --out}.
 *
 * <p>Commands: {@code copy}, {@code fetch-1mib}, {@code fetch-seq}, {@code fetch-seq-cached},
 * {@code fetch-stream} (measured; fetched bytes are checked against the file outside the timed
 * sections); {@code copy-concurrent} (N copies at once through one plugin instance: peak RSS
 * against {@code tsm.memory.budget.bytes}; {@link CopyConcurrent}); {@code delete}, {@code crosscheck}, {@code keygen}, {@code gen} (not measured).
 * Exit code 0 on success, 1 on a failed case or a cross-check mismatch, 2 on bad usage.
 */
@Command(name = "BenchMain", mixinStandardHelpOptions = true,
        subcommands = {BenchMain.Copy.class, BenchMain.Fetch1Mib.class, BenchMain.FetchSeq.class,
                BenchMain.FetchSeqCached.class, BenchMain.FetchStream.class, CopyConcurrent.class, BenchMain.Delete.class, CrossCheck.class, BenchMain.KeyGen.class,
                BenchMain.Gen.class},
        description = "JVM side of the tsm benchmark: the tsm plugin jar vs the Java baseline RSM and the real Java plugin.")
public final class BenchMain implements Callable<Integer> {
    static final int MIB = 1024 * 1024;

    /**
     * The Java plugin's manifest cache (Caffeine) logs every expected not-found (after a
     * delete) as a java.util.logging WARNING with a stack trace; kept referenced so the level holds.
     */
    private static final java.util.logging.Logger CAFFEINE = java.util.logging.Logger.getLogger("com.github.benmanes.caffeine");

    public static void main(String[] args) {
        CAFFEINE.setLevel(java.util.logging.Level.SEVERE);
        System.exit(new CommandLine(new BenchMain()).execute(args));
    }

    @Override
    public Integer call() {
        CommandLine.usage(this, System.err);
        return 2;
    }

    /** Options every case shares. */
    static final class Common {
        @Option(names = "--plugin", required = true, description = "tsm (the JNI plugin jar), java (the baseline) or aiven (the real Java plugin, from "
                + "$TSM_AIVEN_PLUGIN_DIR; run it on Kafka <= 4.2 classes)")
        String plugin;
        @Option(names = "--backend", defaultValue = "filesystem", description = "filesystem or s3 (MinIO)")
        String backend;
        @Option(names = "--data", required = true, description = "a segment set dir: DIR/compressible or DIR/incompressible")
        Path data;
        @Option(names = "--mode", defaultValue = "plain", description = "plain, zstd, aes or zstd+aes")
        String mode;
        @Option(names = "--out", defaultValue = "${env:TSM_BENCH_OUT:-/var/tmp/tsm-bench/results.jsonl}",
                description = "results file (JSON lines, appended)")
        Path out;
        @Option(names = "--work", defaultValue = "${env:TSM_BENCH_WORK:-/var/tmp/tsm-bench/jvm-work}",
                description = "scratch dir: RSA keys, filesystem storage root")
        Path work;

        @Option(names = "--no-warmup", description = "skip the JIT warm-up before the measured calls")
        boolean noWarmup;

        SegmentSet set;
        RemoteStorageManager rsm;
        int jceWarmupRounds;
        boolean peakReset;
        Long rssAtStart;
        RemoteLogSegmentMetadata meta;

        /** Loads the set, makes the keys, configures the plugin (not measured). */
        void open(boolean cached) throws Exception {
            open(cached, Map.of());
        }

        /** As {@link #open(boolean)}, with {@code overrides} put into the configuration map last. */
        void open(boolean cached, Map<String, Object> overrides) throws Exception {
            rssAtStart = ProcessStats.rssBytes();
            set = SegmentSet.load(data);
            Pem.ensureKeyPair(work.resolve("keys"));
            Map<String, Object> config = Plugins.configFor(plugin, backend, mode, work);
            if (cached) {
                Plugins.addChunkCache(config);
            }
            config.putAll(overrides);
            if (backend.equals("s3")) {
                Plugins.S3Env.fromEnv().ensureBucket();
            }
            rsm = Plugins.create(plugin);
            rsm.configure(config);
            meta = set.metadata(segmentId());
        }

        /** Warm-up rounds: at least this many (JIT tiers need repetitions, not one pass). */
        static final int WARMUP_MIN_ROUNDS = 3;
        /** ... and at most {@code TSM_BENCH_WARMUP_MAX_ROUNDS} (default 12). */
        static final int WARMUP_MAX_ROUNDS = Integer.parseInt(System.getenv().getOrDefault("TSM_BENCH_WARMUP_MAX_ROUNDS", "12"));
        /** Stable: the last two rounds within this fraction of each other. */
        static final double WARMUP_STABLE = 0.10;

        int warmupRounds;
        double[] warmupSeconds = new double[0];

        /**
         * JIT warm-up (not measured; the broker's JVM is long-lived and its plugin hot): rounds
         * of the same work as the measured cases on a prefix of the log (up to 8 chunks) under
         * another segment id: copy it, read it back whole and by 1 MiB fetches, delete it.
         * Rounds repeat until the per-round time is stable (the last two within
         * {@value #WARMUP_STABLE} of each other) after at least {@value #WARMUP_MIN_ROUNDS},
         * at most {@code TSM_BENCH_WARMUP_MAX_ROUNDS} (12); every round's seconds go to
         * {@code extra.warmup_round_seconds}. Same for every plugin. Before that, {@link JceWarmup}
         * (the JDK's AES-GCM).
         */
        void warmUp() throws Exception {
            if (noWarmup) {
                return;
            }
            if (mode.endsWith("aes")) {
                jceWarmupRounds = JceWarmup.run();
            }
            long n = Math.min(set.logBytes, 8L * Plugins.CHUNK_SIZE);
            Path dir = work.resolve("warmup-" + ProcessHandle.current().pid());
            Files.createDirectories(dir);
            Path log = dir.resolve(SegmentSet.BASE + ".log");
            try (InputStream in = Files.newInputStream(set.log());
                 java.io.OutputStream out = Files.newOutputStream(log)) {
                byte[] buf = new byte[MIB];
                long left = n;
                while (left > 0) {
                    int r = in.read(buf, 0, (int) Math.min(buf.length, left));
                    if (r < 0) {
                        break;
                    }
                    out.write(buf, 0, r);
                    left -= r;
                }
            }
            java.util.List<Double> rounds = new java.util.ArrayList<>();
            try {
                while (rounds.size() < Math.max(WARMUP_MIN_ROUNDS, 1)
                        || (rounds.size() < WARMUP_MAX_ROUNDS && !stable(rounds))) {
                    long t0 = System.nanoTime();
                    warmUpRound(log, n);
                    rounds.add((System.nanoTime() - t0) / 1e9);
                }
            } finally {
                Files.deleteIfExists(log);
                Files.deleteIfExists(dir);
            }
            warmupRounds = rounds.size();
            warmupSeconds = rounds.stream().mapToDouble(Double::doubleValue).toArray();
            // The warm-up's garbage must not count as the measured call's peak memory.
            System.gc();
            peakReset = ProcessStats.resetPeakRss();
        }

        static boolean stable(java.util.List<Double> rounds) {
            int k = rounds.size();
            if (k < 2) {
                return false;
            }
            double a = rounds.get(k - 2);
            double b = rounds.get(k - 1);
            return Math.abs(a - b) <= WARMUP_STABLE * Math.max(a, b);
        }

        private void warmUpRound(Path log, long n) throws Exception {
            RemoteLogSegmentMetadata wm = set.metadata(Uuid.randomUuid(), (int) n);
            try {
                rsm.copyLogSegmentData(wm, new LogSegmentData(log, set.offsetIndex(), set.timeIndex(),
                        Optional.empty(), set.snapshot(), java.nio.ByteBuffer.wrap(set.leaderEpochBytes())));
                try (InputStream in = rsm.fetchLogSegment(wm, 0)) {
                    in.transferTo(java.io.OutputStream.nullOutputStream());
                }
                byte[] buf = new byte[MIB];
                for (long p = 1000; p < n; p += Plugins.CHUNK_SIZE) {
                    Fetch1Mib.readRange(rsm, wm, p, buf, null);
                }
            } finally {
                rsm.deleteLogSegmentData(wm);
            }
        }

        /** Same id in every JVM of one (plugin, backend, mode, set): fetch cases read what copy wrote. */
        Uuid segmentId() {
            return SegmentSet.uuid("segment:" + plugin + ":" + backend + ":" + mode + ":" + set.name);
        }

        ObjectNode line(String op) throws ReflectiveOperationException, java.io.IOException {
            ObjectNode n = Results.line(Plugins.subject(plugin), StoreProbe.backendLabel(backend), set.name, mode, op);
            return n;
        }

        /** Fetch records carry the stored .log size so the report can compare downloads with it. */
        void storedSizes(ObjectNode extra) {
            Long stored = Plugins.storedLogBytes(backend, work, meta);
            if (stored != null) {
                extra.put("stored_log_bytes", stored);
            }
            extra.put("segment_bytes", set.logBytes);
        }

        ObjectNode extra(ObjectNode line, Long rssBefore) {
            ObjectNode e = line.putObject("extra");
            e.put("jvm", System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
            // The Kafka classes the plugin ran on (the Java plugin needs <= 4.2; bench/jvm/run.sh).
            e.put("kafka_version", Plugins.kafkaVersion());
            e.put("xmx_bytes", Runtime.getRuntime().maxMemory());
            e.put("chunk_size", Plugins.CHUNK_SIZE);
            e.put("jit_warmup", !noWarmup);
            if (warmupRounds > 0) {
                e.put("warmup_rounds", warmupRounds);
                com.fasterxml.jackson.databind.node.ArrayNode w = e.putArray("warmup_round_seconds");
                for (double x : warmupSeconds) {
                    w.add(Math.round(x * 1e4) / 1e4);
                }
            }
            e.put("peak_rss_reset_after_warmup", peakReset);
            if (jceWarmupRounds > 0) {
                e.put("jce_gcm_warmup_rounds", jceWarmupRounds);
            }
            if (rssAtStart != null) {
                e.put("rss_jvm_start_bytes", rssAtStart);
            }
            if (rssBefore != null) {
                e.put("rss_before_bytes", rssBefore);
            }
            return e;
        }

        void finish(ObjectNode line, Clock clock, long bytes, Long downloaded) throws Exception {
            double seconds = clock.seconds();
            line.put("bytes", bytes);
            line.put("seconds", seconds);
            Double cpu = clock.cpuSeconds();
            if (cpu != null) {
                line.put("cpu_seconds", cpu);
            } else {
                line.putNull("cpu_seconds");
            }
            Long peak = ProcessStats.peakRssBytes();
            if (peak == null) {
                line.putNull("peak_rss_bytes");
            } else {
                line.put("peak_rss_bytes", peak);
            }
            if (downloaded == null) {
                line.putNull("downloaded_bytes");
            } else {
                line.put("downloaded_bytes", downloaded);
            }
            // Field order of the agreed format: extra last.
            ObjectNode extra = (ObjectNode) line.remove("extra");
            line.set("extra", extra);
            Results.append(out, line);
            System.err.printf("[bench-jvm] %-13s %-10s %-14s %-8s %-16s %8.1f MiB in %7.3f s = %8.1f MiB/s, cpu %s s, peak rss %s MiB%n",
                    line.get("subject").asText(), backend, set.name, mode, line.get("op").asText(), bytes / (double) MIB,
                    seconds, bytes / (double) MIB / seconds, line.get("cpu_seconds").asText(),
                    peak == null ? "?" : Long.toString(peak / MIB));
        }

        void close() throws java.io.IOException {
            if (rsm != null) {
                rsm.close();
            }
        }
    }

    @Command(name = "copy", description = "copyLogSegmentData of the segment set (measured)")
    static final class Copy implements Callable<Integer> {
        @Mixin
        Common c;

        @Override
        public Integer call() throws Exception {
            try {
                c.open(false);
                c.rsm.deleteLogSegmentData(c.meta);
                c.warmUp();
                Long rss = ProcessStats.rssBytes();
                Long up0 = Plugins.bytesUploaded(c.rsm);
                StoreProbe probe = StoreProbe.start();
                Clock clock = new Clock();
                clock.start();
                c.rsm.copyLogSegmentData(c.meta, c.set.data(Optional.empty()));
                clock.stop();
                Long up1 = Plugins.bytesUploaded(c.rsm);
                ObjectNode line = c.line("copy");
                ObjectNode e = c.extra(line, rss);
                probe.finish(e);
                if (up0 != null && up1 != null) {
                    e.put("uploaded_bytes", up1 - up0);
                }
                c.finish(line, clock, c.set.logBytes, null);
                return 0;
            } finally {
                c.close();
            }
        }
    }

    @Command(name = "fetch-1mib", description = "the broker's fetch: from random offset-index positions, read 1 MiB, close (measured)")
    static final class Fetch1Mib implements Callable<Integer> {
        @Mixin
        Common c;
        @Option(names = "--samples", defaultValue = "32", description = "fetches (random offset-index positions, seed 42)")
        int samples;

        @Override
        public Integer call() throws Exception {
            try (Original original = new Original(c.data.resolve(SegmentSet.BASE + ".log"))) {
                c.open(false);
                int[] all = c.set.indexPositions();
                if (all.length == 0) {
                    throw new IllegalStateException(c.set.offsetIndex() + " has no entries");
                }
                java.util.Random random = new java.util.Random(42);
                byte[] buf = new byte[MIB];
                c.warmUp();
                // Not measured: loads this segment's manifest (and unwraps the DEK); the broker
                // fetches a segment many times.
                readRange(c.rsm, c.meta, all[all.length / 2], buf, null);
                Long down0 = Plugins.bytesDownloaded(c.rsm);
                Long rss = ProcessStats.rssBytes();
                long[] ttfb = new long[samples];
                long delivered = 0;
                long maxDown = 0;
                Long gets0 = Plugins.getRequests(c.rsm);
                StoreProbe probe = StoreProbe.start();
                Clock clock = new Clock();
                for (int i = 0; i < samples; i++) {
                    int pos = all[random.nextInt(all.length)];
                    Long before = Plugins.bytesDownloaded(c.rsm);
                    long[] first = new long[1];
                    clock.start();
                    long s = System.nanoTime();
                    int got = (int) readRange(c.rsm, c.meta, pos, buf, first);
                    clock.stop();
                    Long after = Plugins.bytesDownloaded(c.rsm);
                    if (before != null && after != null) {
                        maxDown = Math.max(maxDown, after - before);
                    }
                    ttfb[i] = first[0] - s;
                    long want = Math.min(MIB, c.set.logBytes - pos);
                    if (got != want) {
                        throw new IllegalStateException("fetch from " + pos + " delivered " + got + " bytes, expected " + want);
                    }
                    original.check(pos, buf, got);
                    delivered += got;
                }
                Long down1 = Plugins.bytesDownloaded(c.rsm);
                ObjectNode line = c.line("fetch-1mib");
                ObjectNode e = c.extra(line, rss);
                probe.finish(e);
                putGets(e, gets0, Plugins.getRequests(c.rsm));
                c.storedSizes(e);
                Arrays.sort(ttfb);
                e.put("fetches", samples);
                e.put("read_bytes", MIB);
                e.put("warmup_fetches", 1);
                e.put("ttfb_p50_ms", pct(ttfb, 0.5) / 1e6);
                e.put("ttfb_p99_ms", pct(ttfb, 0.99) / 1e6);
                e.put("ttfb_max_ms", ttfb[samples - 1] / 1e6);
                if (down0 != null && down1 != null) {
                    e.put("max_downloaded_per_fetch", maxDown);
                }
                c.finish(line, clock, delivered, down0 == null || down1 == null ? null : down1 - down0);
                return 0;
            } finally {
                c.close();
            }
        }

        /** fetchLogSegment(meta, pos), read up to buf.length bytes with read(byte[],off,len), close. */
        static long readRange(RemoteStorageManager rsm, RemoteLogSegmentMetadata meta, long pos, byte[] buf, long[] first)
                throws Exception {
            long total = 0;
            try (InputStream in = rsm.fetchLogSegment(meta, (int) pos)) {
                while (total < buf.length) {
                    int r = in.read(buf, (int) total, buf.length - (int) total);
                    if (r < 0) {
                        break;
                    }
                    if (r == 0) {
                        throw new IllegalStateException("read returned 0 at position " + (pos + total)
                                + " (the broker would spin)");
                    }
                    if (first != null && total == 0) {
                        first[0] = System.nanoTime();
                    }
                    total += r;
                }
            }
            return total;
        }
    }

    /** tsm's own count of object reads in the measured window (cross-checks the store's), when known. */
    static void putGets(ObjectNode e, Long before, Long after) {
        if (before != null && after != null) {
            e.put("tsm_get_requests", after - before);
        }
    }

    static long pct(long[] sorted, double p) {
        int i = (int) Math.round((sorted.length - 1) * p);
        return sorted[Math.min(sorted.length - 1, Math.max(0, i))];
    }

    /**
     * A consumer catching up, as the broker serves it: consecutive fetches, each
     * {@code fetchLogSegment(start)}, read ~1 MiB, close; the next starts at the last batch
     * start the previous read covered (the broker delivers whole batches), as the Rust harness.
     */
    static Integer sequential(Common c, boolean cached, String op) throws Exception {
        try (Original original = new Original(c.data.resolve(SegmentSet.BASE + ".log"))) {
            c.open(cached);
            long[] starts = original.batchStarts();
            long size = c.set.logBytes;
            c.warmUp();
            byte[] buf = new byte[MIB];
            Long down0 = Plugins.bytesDownloaded(c.rsm);
            Long rss = ProcessStats.rssBytes();
            Long gets0 = Plugins.getRequests(c.rsm);
            StoreProbe probe = StoreProbe.start();
            Clock clock = new Clock();
            long pos = 0;
            long fetches = 0;
            long readTotal = 0;
            while (pos < size) {
                clock.start();
                int got = (int) Fetch1Mib.readRange(c.rsm, c.meta, pos, buf, null);
                clock.stop();
                original.check(pos, buf, got);
                readTotal += got;
                fetches++;
                long end = pos + got;
                int i = Arrays.binarySearch(starts, end);
                int covered = i >= 0 ? i : -i - 2; // last batch start <= end
                long next = covered < 0 ? end : starts[covered];
                pos = end >= size ? size : (next > pos ? next : end);
            }
            Long down1 = Plugins.bytesDownloaded(c.rsm);
            ObjectNode line = c.line(op);
            ObjectNode e = c.extra(line, rss);
            probe.finish(e);
            putGets(e, gets0, Plugins.getRequests(c.rsm));
            c.storedSizes(e);
            e.put("fetches", fetches);
            e.put("read_bytes", readTotal);
            if (cached) {
                e.put("chunk_cache_bytes", Plugins.CHUNK_CACHE_BYTES);
                e.put("prefetch_bytes", Plugins.PREFETCH_BYTES);
            }
            c.finish(line, clock, size, down0 == null || down1 == null ? null : down1 - down0);
            return 0;
        } finally {
            c.close();
        }
    }

    @Command(name = "fetch-seq", description = "consecutive ~1 MiB broker fetches over the whole segment, no chunk cache (measured)")
    static final class FetchSeq implements Callable<Integer> {
        @Mixin
        Common c;

        @Override
        public Integer call() throws Exception {
            return sequential(c, false, "fetch-seq");
        }
    }

    @Command(name = "fetch-seq-cached", description = "fetch-seq with tsm's memory chunk cache + prefetch (tsm only; measured)")
    static final class FetchSeqCached implements Callable<Integer> {
        @Mixin
        Common c;

        @Override
        public Integer call() throws Exception {
            if (!c.plugin.equals("tsm")) {
                System.err.println("[bench-jvm] fetch-seq-cached: the Java baseline has no chunk cache; tsm only");
                return 2;
            }
            return sequential(c, true, "fetch-seq-cached");
        }
    }

    @Command(name = "fetch-stream", description = "one fetchLogSegment(0) stream read to the end in 1 MiB reads (measured)")
    static final class FetchStream implements Callable<Integer> {
        @Mixin
        Common c;

        @Override
        public Integer call() throws Exception {
            try (Original original = new Original(c.data.resolve(SegmentSet.BASE + ".log"))) {
                c.open(false);
                c.warmUp();
                byte[] buf = new byte[MIB];
                Long down0 = Plugins.bytesDownloaded(c.rsm);
                Long rss = ProcessStats.rssBytes();
                Long gets0 = Plugins.getRequests(c.rsm);
                StoreProbe probe = StoreProbe.start();
                Clock clock = new Clock();
                long total = 0;
                clock.start();
                try (InputStream in = c.rsm.fetchLogSegment(c.meta, 0)) {
                    while (true) {
                        int n = in.readNBytes(buf, 0, buf.length);
                        clock.stop();
                        if (n == 0) {
                            break;
                        }
                        original.check(total, buf, n);
                        total += n;
                        clock.start();
                    }
                }
                if (total != c.set.logBytes) {
                    throw new IllegalStateException("fetch-stream delivered " + total + " bytes, the segment has "
                            + c.set.logBytes);
                }
                Long down1 = Plugins.bytesDownloaded(c.rsm);
                ObjectNode line = c.line("fetch-stream");
                ObjectNode e = c.extra(line, rss);
                probe.finish(e);
                putGets(e, gets0, Plugins.getRequests(c.rsm));
                c.storedSizes(e);
                e.put("read_bytes", MIB);
                c.finish(line, clock, total, down0 == null || down1 == null ? null : down1 - down0);
                return 0;
            } finally {
                c.close();
            }
        }
    }

    @Command(name = "delete", description = "deleteLogSegmentData of what copy wrote (cleanup, not measured)")
    static final class Delete implements Callable<Integer> {
        @Mixin
        Common c;

        @Override
        public Integer call() throws Exception {
            try {
                c.open(false);
                c.rsm.deleteLogSegmentData(c.meta);
                return 0;
            } finally {
                c.close();
            }
        }
    }

    @Command(name = "keygen", description = "make the RSA 2048 key pair under WORK/keys (idempotent)")
    static final class KeyGen implements Callable<Integer> {
        @Option(names = "--work", defaultValue = "${env:TSM_BENCH_WORK:-/var/tmp/tsm-bench/jvm-work}")
        Path work;

        @Override
        public Integer call() throws Exception {
            Pem.ensureKeyPair(work.resolve("keys"));
            return 0;
        }
    }

    @Command(name = "gen", description = "small stand-in for `tsm-bench gen`: DIR/compressible and DIR/incompressible")
    static final class Gen implements Callable<Integer> {
        @Option(names = "--out", required = true)
        Path out;
        @Option(names = "--size-mib", defaultValue = "16")
        int sizeMib;

        @Override
        public Integer call() throws Exception {
            SegmentSetWriter.write(out.resolve("compressible"), (long) sizeMib * MIB, false, 1);
            SegmentSetWriter.write(out.resolve("incompressible"), (long) sizeMib * MIB, true, 2);
            return 0;
        }
    }
}
