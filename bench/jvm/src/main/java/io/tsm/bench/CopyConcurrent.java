package io.tsm.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.server.log.remote.storage.LogSegmentData;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;

import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code copy-concurrent}: N threads copy N distinct segments at the same time through ONE
 * plugin instance, as a broker's copier threads ({@code remote.log.manager.copier.thread.pool.size})
 * do. The segments are the set's files under N segment ids (the files are read-only inputs;
 * each copy is a separate remote segment). Measures native memory against the memory budget:
 * the RSS of this JVM right before the first copy (idle, plugin configured, after the warm-up,
 * a GC and a reset of the peak-RSS mark) and the peak RSS (VmHWM) over the copies.
 *
 * <p>tsm gets {@code tsm.memory.budget.bytes} (default 512 MiB) in the same configuration map;
 * the Java baseline has no budget (the key is not passed). Not measured: configure, the
 * warm-up, deleting leftovers before and the N segments after.
 */
@Command(name = "copy-concurrent",
        description = "N copyLogSegmentData calls at once through one plugin instance: peak RSS vs tsm.memory.budget.bytes (measured)")
final class CopyConcurrent implements Callable<Integer> {
    static final long DEFAULT_BUDGET = 256L * BenchMain.MIB;
    /** S3 defaults of both plugins: 25 MiB parts, 4 in flight (tsm reserves parts + 1). */
    static final long S3_PART_SIZE = 25L * BenchMain.MIB;
    static final int S3_PARTS_IN_FLIGHT = 4;

    @Mixin
    BenchMain.Common c;

    @Option(names = "--concurrency", defaultValue = "10", description = "copies at once (threads), each its own segment id")
    int concurrency;

    @Option(names = "--memory-budget-bytes", defaultValue = "536870912",
            description = "tsm.memory.budget.bytes for tsm (bytes, or with a KiB/MiB/GiB suffix); ignored by --plugin java")
    String budgetArg;

    @Option(names = "--set", description = "extra KEY=VALUE for the configuration map (recorded in extra.overrides; never secrets)")
    List<String> sets = new ArrayList<>();

    @Option(names = "--sample-ms", defaultValue = "50", description = "RSS sampling interval during the copies (ms)")
    int sampleMs;

    @Override
    public Integer call() throws Exception {
        if (concurrency < 1) {
            throw new IllegalArgumentException("--concurrency must be at least 1");
        }
        boolean tsm = c.plugin.equals("tsm");
        long budget = parseBytes(budgetArg);
        Map<String, Object> overrides = new LinkedHashMap<>();
        if (tsm) {
            overrides.put("tsm.memory.budget.bytes", Long.toString(budget));
        }
        for (String kv : sets) {
            int eq = kv.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("--set needs KEY=VALUE, not " + kv);
            }
            overrides.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        List<RemoteLogSegmentMetadata> metas = new ArrayList<>();
        try {
            c.open(false, overrides);
            Long rssConfigured = ProcessStats.rssBytes();
            for (int i = 0; i < concurrency; i++) {
                metas.add(c.set.metadata(SegmentSet.uuid("copy-concurrent:" + c.plugin + ":" + c.backend + ":"
                        + c.mode + ":" + c.set.name + ":" + i)));
            }
            for (RemoteLogSegmentMetadata m : metas) {
                c.rsm.deleteLogSegmentData(m); // leftovers of an interrupted run
            }
            c.warmUp();
            System.gc();
            c.peakReset = ProcessStats.resetPeakRss();
            Long idle = ProcessStats.rssBytes();
            long heapIdle = heapCommitted();
            long nonHeapIdle = nonHeapCommitted();

            CountDownLatch ready = new CountDownLatch(concurrency);
            CountDownLatch go = new CountDownLatch(1);
            long[] startNs = new long[concurrency];
            long[] endNs = new long[concurrency];
            long[] rssAtEnd = new long[concurrency];
            Throwable[] errors = new Throwable[concurrency];
            List<Thread> threads = new ArrayList<>();
            List<LogSegmentData> inputs = new ArrayList<>();
            for (int i = 0; i < concurrency; i++) {
                inputs.add(c.set.data(Optional.empty())); // one each: the leader-epoch ByteBuffer is not shared
            }
            for (int i = 0; i < concurrency; i++) {
                final int n = i;
                Thread t = new Thread(() -> {
                    try {
                        ready.countDown();
                        go.await();
                        startNs[n] = System.nanoTime();
                        c.rsm.copyLogSegmentData(metas.get(n), inputs.get(n));
                    } catch (Throwable e) {
                        errors[n] = e;
                    } finally {
                        endNs[n] = System.nanoTime();
                        Long r = ProcessStats.rssBytes();
                        rssAtEnd[n] = r == null ? -1 : r;
                    }
                }, "copier-" + i);
                threads.add(t);
                t.start();
            }
            ready.await();
            Sampler sampler = new Sampler(sampleMs);
            sampler.start();
            Long up0 = Plugins.bytesUploaded(c.rsm);
            long cpu0 = ProcessStats.cpuNanos();
            long t0 = System.nanoTime();
            go.countDown();
            for (Thread t : threads) {
                t.join();
            }
            long t1 = System.nanoTime();
            long cpu1 = ProcessStats.cpuNanos();
            Long peak = ProcessStats.peakRssBytes();
            sampler.stop();
            Long rssAfter = ProcessStats.rssBytes();
            long heapAfter = heapCommitted();
            long nonHeapAfter = nonHeapCommitted();
            Long up1 = Plugins.bytesUploaded(c.rsm);

            int failed = 0;
            for (int i = 0; i < concurrency; i++) {
                if (errors[i] != null) {
                    failed++;
                    System.err.println("[bench-jvm] copy-concurrent: copy " + i + " failed: " + errors[i]);
                    errors[i].printStackTrace();
                }
            }
            if (failed > 0) {
                throw new IllegalStateException(failed + " of " + concurrency + " concurrent copies failed");
            }

            double seconds = (t1 - t0) / 1e9;
            long bytes = c.set.logBytes * concurrency;
            ObjectNode line = c.line("copy-concurrent");
            line.put("bytes", bytes);
            line.put("seconds", seconds);
            if (cpu0 >= 0 && cpu1 >= 0) {
                line.put("cpu_seconds", (cpu1 - cpu0) / 1e9);
            } else {
                line.putNull("cpu_seconds");
            }
            if (peak == null) {
                line.putNull("peak_rss_bytes");
            } else {
                line.put("peak_rss_bytes", peak);
            }
            line.putNull("downloaded_bytes");
            ObjectNode e = c.extra(line, idle);
            e.put("concurrency", concurrency);
            e.put("segment_bytes", c.set.logBytes);
            if (tsm) {
                e.put("memory_budget_bytes", budget);
            } else {
                e.putNull("memory_budget_bytes");
            }
            if (!overrides.isEmpty()) {
                ObjectNode o = e.putObject("overrides");
                overrides.forEach((k, v) -> o.put(k, v.toString()));
            }
            if (rssConfigured != null) {
                e.put("rss_configured_bytes", rssConfigured);
            }
            if (idle != null) {
                e.put("idle_rss_bytes", idle);
            }
            if (idle != null && peak != null) {
                long over = peak - idle;
                e.put("peak_minus_idle_bytes", over);
                if (tsm) {
                    e.put("peak_minus_idle_over_budget", over / (double) budget);
                }
            }
            e.put("sampled_max_rss_bytes", sampler.max.get());
            e.put("rss_samples", sampler.samples.get());
            if (rssAfter != null) {
                e.put("rss_after_bytes", rssAfter);
            }
            // The JVM's own share of the RSS (committed, not necessarily touched): Java heap and
            // metaspace/code cache/threads' bookkeeping as the JVM reports it.
            e.put("heap_committed_idle_bytes", heapIdle);
            e.put("heap_committed_after_bytes", heapAfter);
            e.put("nonheap_committed_idle_bytes", nonHeapIdle);
            e.put("nonheap_committed_after_bytes", nonHeapAfter);
            if (up0 != null && up1 != null) {
                e.put("uploaded_bytes", up1 - up0);
            }
            long reservation = copyReservation(c.backend, c.set);
            e.put("copy_reservation_estimate_bytes", reservation);
            if (tsm) {
                e.put("copies_at_once_by_budget", Math.max(1L, budget / reservation));
            }
            ArrayNode ends = e.putArray("copy_end_seconds");
            ArrayNode starts = e.putArray("copy_start_seconds");
            ArrayNode rssEnds = e.putArray("rss_at_copy_end_bytes"); // VmRSS as each copy returned
            for (int i = 0; i < concurrency; i++) {
                starts.add(Math.round((startNs[i] - t0) / 1e6) / 1e3);
                ends.add(Math.round((endNs[i] - t0) / 1e6) / 1e3);
                rssEnds.add(rssAtEnd[i]);
            }
            String malloc = System.getenv("GLIBC_TUNABLES");
            if (malloc != null && !malloc.isBlank()) {
                e.put("glibc_tunables", malloc);
            }
            // Field order of the agreed format: extra last.
            line.remove("extra");
            line.set("extra", e);
            Results.append(c.out, line);
            System.err.printf(Locale.ROOT,
                    "[bench-jvm] %-13s %-10s %-14s %-8s copy-concurrent x%d: %.1f MiB in %.3f s = %.1f MB/s; budget %s; "
                            + "idle rss %s MiB, peak rss %s MiB, peak - idle %s MiB%s%n",
                    line.get("subject").asText(), c.backend, c.set.name, c.mode, concurrency, bytes / (double) BenchMain.MIB,
                    seconds, bytes / 1e6 / seconds, tsm ? (budget / BenchMain.MIB) + " MiB" : "none",
                    mib(idle), mib(peak), idle == null || peak == null ? "?" : mib(peak - idle),
                    tsm && idle != null && peak != null
                            ? String.format(Locale.ROOT, " (%.2f x budget)", (peak - idle) / (double) budget) : "");
            return 0;
        } finally {
            Exception first = null;
            if (c.rsm != null) {
                for (RemoteLogSegmentMetadata m : metas) {
                    try {
                        c.rsm.deleteLogSegmentData(m);
                    } catch (Exception ex) {
                        if (first == null) {
                            first = ex;
                        }
                    }
                }
            }
            c.close();
            if (first != null) {
                System.err.println("[bench-jvm] copy-concurrent: deleting the segments failed: " + first);
            }
        }
    }

    private static long heapCommitted() {
        return java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getCommitted();
    }

    private static long nonHeapCommitted() {
        return java.lang.management.ManagementFactory.getMemoryMXBean().getNonHeapMemoryUsage().getCommitted();
    }

    private static String mib(Long b) {
        return b == null ? "?" : Long.toString(Math.round(b / (double) BenchMain.MIB));
    }

    /**
     * What one tsm copy reserves from the budget (docs/configuration.md, "Deadlines, memory,
     * clean-up"): {@code (F + 2) x (C + S) + 2 x largest index + P}, F = tsm.max.in.flight's
     * default (cores, at least 2), S3 P = part size x (parts in flight + 1) at the defaults. The
     * harness's own reckoning, for the record (the engine does not report it).
     */
    static long copyReservation(String backend, SegmentSet set) throws java.io.IOException {
        long chunk = Plugins.CHUNK_SIZE;
        long stored = chunk + chunk / 128 + 1024;
        int f = Math.max(2, Math.min(32, Runtime.getRuntime().availableProcessors()));
        long largest = set.leaderEpochBytes().length;
        for (Path p : new Path[] {set.offsetIndex(), set.timeIndex(), set.snapshot(), set.txnIndex()}) {
            if (Files.exists(p)) {
                largest = Math.max(largest, Files.size(p));
            }
        }
        long parts = backend.equals("s3") ? S3_PART_SIZE * (S3_PARTS_IN_FLIGHT + 1) : 0;
        return (f + 2) * (chunk + stored) + 2 * largest + parts;
    }

    /** Bytes, or a number with a KiB / MiB / GiB suffix (also k / m / g). */
    static long parseBytes(String s) {
        String t = s.trim().toLowerCase(Locale.ROOT);
        long mult = 1;
        for (String[] suffix : new String[][] {{"kib", "1024"}, {"mib", "1048576"}, {"gib", "1073741824"},
                {"k", "1024"}, {"m", "1048576"}, {"g", "1073741824"}}) {
            if (t.endsWith(suffix[0])) {
                mult = Long.parseLong(suffix[1]);
                t = t.substring(0, t.length() - suffix[0].length()).trim();
                break;
            }
        }
        long v = Long.parseLong(t) * mult;
        if (v < BenchMain.MIB) {
            throw new IllegalArgumentException("--memory-budget-bytes must be at least 1 MiB (tsm's minimum), not " + s);
        }
        return v;
    }

    /** Samples VmRSS while the copies run (VmHWM is the peak; this shows it was reached). */
    private static final class Sampler {
        final AtomicLong max = new AtomicLong();
        final AtomicLong samples = new AtomicLong();
        private final Thread thread;
        private volatile boolean stop;

        Sampler(int everyMs) {
            thread = new Thread(() -> {
                while (!stop) {
                    Long r = ProcessStats.rssBytes();
                    if (r != null) {
                        max.accumulateAndGet(r, Math::max);
                        samples.incrementAndGet();
                    }
                    try {
                        Thread.sleep(Math.max(1, everyMs));
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }, "rss-sampler");
            thread.setDaemon(true);
        }

        void start() {
            thread.start();
        }

        void stop() throws InterruptedException {
            stop = true;
            thread.interrupt();
            thread.join();
        }
    }
}
