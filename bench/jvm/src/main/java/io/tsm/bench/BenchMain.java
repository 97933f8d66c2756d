package io.tsm.bench;

import java.io.InputStream;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;

import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The JVM benchmark harness (issue 8): drives a {@link RemoteStorageManager} (the tsm plugin
 * jar or the Java baseline) exactly as a broker does: {@code configure} with the
 * {@code rsm.config.*} map, then {@code copyLogSegmentData} / {@code fetchLogSegment} on a
 * segment set from {@code tsm-bench gen}. One measured case per JVM (bench/jvm/run.sh starts
 * one per case) so CPU and peak RSS belong to that case; one JSON line per result is appended
 * to {@code --out}.
 *
 * <p>Commands: {@code copy}, {@code fetch-1mib}, {@code fetch-seq}, {@code fetch-seq-cached}
 * (measured); {@code delete}, {@code crosscheck}, {@code keygen}, {@code gen} (not measured).
 * Exit code 0 on success, 1 on a failed case or a cross-check mismatch, 2 on bad usage.
 */
@Command(name = "BenchMain", mixinStandardHelpOptions = true,
        subcommands = {BenchMain.Copy.class, BenchMain.Fetch1Mib.class, BenchMain.FetchSeq.class,
                BenchMain.FetchSeqCached.class, BenchMain.Delete.class, CrossCheck.class, BenchMain.KeyGen.class,
                BenchMain.Gen.class},
        description = "JVM side of the tsm benchmark: the tsm plugin jar vs the Java baseline RSM.")
public final class BenchMain implements Callable<Integer> {
    static final int MIB = 1024 * 1024;

    public static void main(String[] args) {
        System.exit(new CommandLine(new BenchMain()).execute(args));
    }

    @Override
    public Integer call() {
        CommandLine.usage(this, System.err);
        return 2;
    }

    /** Options every case shares. */
    static final class Common {
        @Option(names = "--plugin", required = true, description = "tsm (the JNI plugin jar) or java (the baseline)")
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

        SegmentSet set;
        RemoteStorageManager rsm;
        RemoteLogSegmentMetadata meta;

        /** Loads the set, makes the keys, configures the plugin (not measured). */
        void open(boolean cached) throws Exception {
            set = SegmentSet.load(data);
            Pem.ensureKeyPair(work.resolve("keys"));
            Map<String, Object> config = Plugins.config(backend, mode, work);
            if (cached) {
                Plugins.addChunkCache(config);
            }
            if (backend.equals("s3")) {
                Plugins.S3Env.fromEnv().ensureBucket();
            }
            rsm = Plugins.create(plugin);
            rsm.configure(config);
            meta = set.metadata(segmentId());
        }

        /** Same id in every JVM of one (plugin, backend, mode, set): fetch cases read what copy wrote. */
        Uuid segmentId() {
            return SegmentSet.uuid("segment:" + plugin + ":" + backend + ":" + mode + ":" + set.name);
        }

        ObjectNode line(String op) {
            ObjectNode n = Results.line(Plugins.subject(plugin), backend, set.name, mode, op);
            return n;
        }

        ObjectNode extra(ObjectNode line, Long rssBefore) {
            ObjectNode e = line.putObject("extra");
            e.put("jvm", System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
            e.put("xmx_bytes", Runtime.getRuntime().maxMemory());
            e.put("chunk_size", Plugins.CHUNK_SIZE);
            if (rssBefore != null) {
                e.put("rss_before_bytes", rssBefore);
            }
            return e;
        }

        void finish(ObjectNode line, long t0, long cpu0, long bytes, Long downloaded) throws Exception {
            long t1 = System.nanoTime();
            long cpu1 = ProcessStats.cpuNanos();
            line.put("bytes", bytes);
            line.put("seconds", (t1 - t0) / 1e9);
            if (cpu0 >= 0 && cpu1 >= 0) {
                line.put("cpu_seconds", (cpu1 - cpu0) / 1e9);
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
                    (t1 - t0) / 1e9, bytes / (double) MIB / ((t1 - t0) / 1e9), line.get("cpu_seconds").asText(),
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
                Long rss = ProcessStats.rssBytes();
                long cpu0 = ProcessStats.cpuNanos();
                long t0 = System.nanoTime();
                c.rsm.copyLogSegmentData(c.meta, c.set.data(Optional.empty()));
                ObjectNode line = c.line("copy");
                c.extra(line, rss);
                c.finish(line, t0, cpu0, c.set.logBytes, null);
                return 0;
            } finally {
                c.close();
            }
        }
    }

    @Command(name = "fetch-1mib", description = "the broker's fetch: from offset-index positions, read 1 MiB, close (measured)")
    static final class Fetch1Mib implements Callable<Integer> {
        @Mixin
        Common c;
        @Option(names = "--samples", defaultValue = "32", description = "fetches (positions spread over the offset index)")
        int samples;

        @Override
        public Integer call() throws Exception {
            try {
                c.open(false);
                int[] all = c.set.indexPositions();
                if (all.length == 0) {
                    all = new int[] {0};
                }
                int n = Math.min(samples, all.length);
                int[] positions = new int[n];
                for (int i = 0; i < n; i++) {
                    positions[i] = all[(int) ((long) i * all.length / n)];
                }
                byte[] buf = new byte[MIB];
                // Warm-up (not measured): loads the manifest (and unwraps the DEK) and JIT-compiles.
                readRange(c.rsm, c.meta, positions[n / 2], buf, null);
                Long down0 = Plugins.bytesDownloaded(c.rsm);
                Long rss = ProcessStats.rssBytes();
                long[] ttfb = new long[n];
                long delivered = 0;
                long cpu0 = ProcessStats.cpuNanos();
                long t0 = System.nanoTime();
                for (int i = 0; i < n; i++) {
                    long[] first = new long[1];
                    long s = System.nanoTime();
                    delivered += readRange(c.rsm, c.meta, positions[i], buf, first);
                    ttfb[i] = first[0] - s;
                }
                Long down1 = Plugins.bytesDownloaded(c.rsm);
                ObjectNode line = c.line("fetch-1mib");
                ObjectNode e = c.extra(line, rss);
                Arrays.sort(ttfb);
                e.put("samples", n);
                e.put("read_bytes", MIB);
                e.put("warmup_fetches", 1);
                e.put("ttfb_ms_p50", ttfb[n / 2] / 1e6);
                e.put("ttfb_ms_p99", ttfb[Math.min(n - 1, (int) Math.ceil(n * 0.99) - 1)] / 1e6);
                e.put("ttfb_ms_max", ttfb[n - 1] / 1e6);
                e.put("downloaded_per_fetch_bytes", down0 == null || down1 == null ? null
                        : (double) (down1 - down0) / n);
                c.finish(line, t0, cpu0, delivered, down0 == null || down1 == null ? null : down1 - down0);
                return 0;
            } finally {
                c.close();
            }
        }

        /** fetchLogSegment(meta, pos), read up to buf.length bytes with read(byte[],off,len), close. */
        static long readRange(RemoteStorageManager rsm, RemoteLogSegmentMetadata meta, int pos, byte[] buf, long[] first)
                throws Exception {
            long total = 0;
            try (InputStream in = rsm.fetchLogSegment(meta, pos)) {
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

    /** Sequential whole-segment read (consumer catching up), 1 MiB reads. */
    static Integer sequential(Common c, boolean cached, String op) throws Exception {
        try {
            c.open(cached);
            byte[] buf = new byte[MIB];
            Long down0 = Plugins.bytesDownloaded(c.rsm);
            Long rss = ProcessStats.rssBytes();
            long cpu0 = ProcessStats.cpuNanos();
            long t0 = System.nanoTime();
            long total = 0;
            try (InputStream in = c.rsm.fetchLogSegment(c.meta, 0)) {
                int r;
                while ((r = in.read(buf, 0, buf.length)) >= 0) {
                    if (r == 0) {
                        throw new IllegalStateException("read returned 0 at position " + total);
                    }
                    total += r;
                }
            }
            if (total != c.set.logBytes) {
                System.err.println("[bench-jvm] FAIL: " + op + " of " + c.set.name + " delivered " + total
                        + " bytes, the segment has " + c.set.logBytes);
                return 1;
            }
            Long down1 = Plugins.bytesDownloaded(c.rsm);
            ObjectNode line = c.line(op);
            ObjectNode e = c.extra(line, rss);
            e.put("read_bytes", MIB);
            if (cached) {
                e.put("chunk_cache", "memory 256 MiB, prefetch 16 MiB");
            }
            c.finish(line, t0, cpu0, total, down0 == null || down1 == null ? null : down1 - down0);
            return 0;
        } finally {
            c.close();
        }
    }

    @Command(name = "fetch-seq", description = "read the whole segment from byte 0, no chunk cache (measured)")
    static final class FetchSeq implements Callable<Integer> {
        @Mixin
        Common c;

        @Override
        public Integer call() throws Exception {
            return sequential(c, false, "fetch-seq");
        }
    }

    @Command(name = "fetch-seq-cached", description = "fetch-seq with tsm's chunk cache + prefetch (tsm only; measured)")
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
