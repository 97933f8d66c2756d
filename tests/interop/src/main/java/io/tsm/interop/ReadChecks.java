package io.tsm.interop;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager.IndexType;

/**
 * What a reader must return for a segment another plugin copied, byte for byte against the
 * local files the copy was given: the whole log, ranges within, at and across chunk
 * boundaries (both ends inclusive), the last byte, an end past the segment (clamped, per the
 * RSM contract), 1 MiB broker-style reads from offset-index positions, and every
 * {@link IndexType} (TRANSACTION of a segment without one: RemoteResourceNotFoundException).
 */
final class ReadChecks {
    private static final int MIB = 1024 * 1024;

    private final LoadedPlugin plugin;
    private final RemoteStorageManager rsm;
    private final SegmentFiles f;
    private final RemoteLogSegmentMetadata m;
    private final int chunk;
    private final Interop.Report report;
    private final String label;

    ReadChecks(LoadedPlugin plugin, RemoteStorageManager rsm, SegmentFiles f, RemoteLogSegmentMetadata m, int chunk,
               Interop.Report report, String label) {
        this.plugin = plugin;
        this.rsm = rsm;
        this.f = f;
        this.m = m;
        this.chunk = chunk;
        this.report = report;
        this.label = label;
    }

    void run() throws Exception {
        int len = f.logBytes;
        if (len < 3 * chunk) {
            throw new IllegalStateException(f.log() + " (" + len + " bytes) is shorter than 3 chunks of " + chunk
                    + ": the ranges would not cross chunk boundaries");
        }
        compare(plugin.call(rsm, r -> r.fetchLogSegment(m, 0)), 0, len, "fetchLogSegment(0)");
        List<int[]> ranges = new ArrayList<>(List.of(
                new int[] {0, chunk - 1},                 // exactly the first chunk
                new int[] {chunk - 1, chunk},             // two bytes across the first boundary
                new int[] {chunk, 2 * chunk - 1},         // exactly the second chunk
                new int[] {chunk - 100, 2 * chunk + 99},  // across two boundaries (three chunks)
                new int[] {len / 2 + 7, len - 2},         // mid-chunk to the last-but-one byte
                new int[] {len - 1, len - 1},             // the last byte
                new int[] {0, len - 1}));                 // whole segment as a range
        for (int[] r : ranges) {
            compare(plugin.call(rsm, x -> x.fetchLogSegment(m, r[0], r[1])), r[0], r[1] - r[0] + 1L,
                    "fetchLogSegment(" + r[0] + ", " + r[1] + ")");
        }
        compare(plugin.call(rsm, x -> x.fetchLogSegment(m, len - 1)), len - 1, 1, "fetchLogSegment(" + (len - 1) + ")");
        compare(plugin.call(rsm, x -> x.fetchLogSegment(m, len - 10, Integer.MAX_VALUE)), len - 10, 10,
                "fetchLogSegment(" + (len - 10) + ", MAX_VALUE) (end clamped)");
        // The broker's read: fetchLogSegment(position) at an index entry, ~1 MiB, then close.
        int[] pos = f.indexPositions();
        for (int k = 0; k < pos.length; k += Math.max(1, pos.length / 6)) {
            int p = pos[k];
            try (InputStream in = plugin.call(rsm, x -> x.fetchLogSegment(m, p))) {
                byte[] got = in.readNBytes(MIB);
                report.check(Arrays.equals(got, fileBytes(f.log(), p, (int) Math.min(MIB, len - (long) p))),
                        label + ": 1 MiB read at index position " + p + " (" + got.length + " bytes) differs");
            }
        }
        Map<IndexType, byte[]> want = f.indexes();
        for (IndexType t : IndexType.values()) {
            byte[] w = want.get(t);
            if (w == null) {
                expectNotFound(plugin, rsm, x -> x.fetchIndex(m, t), report, label + ": fetchIndex(" + t + ") of a segment without one");
                continue;
            }
            byte[] got;
            try (InputStream in = plugin.call(rsm, x -> x.fetchIndex(m, t))) {
                got = in.readAllBytes();
            }
            report.check(Arrays.equals(got, w), label + ": fetchIndex(" + t + ") returned " + got.length
                    + " bytes, expected " + w.length + (got.length == w.length ? " (same size, other bytes)" : ""));
        }
        System.err.println("[interop] " + label + ": read");
    }

    /** {@code call} must throw RemoteResourceNotFoundException (not return a stream, not another error). */
    static void expectNotFound(LoadedPlugin plugin, RemoteStorageManager rsm, LoadedPlugin.Call<InputStream> call,
                               Interop.Report report, String what) {
        try (InputStream in = plugin.call(rsm, call)) {
            report.check(false, what + ": returned a stream (first byte " + in.read() + "), expected RemoteResourceNotFoundException");
        } catch (RemoteResourceNotFoundException expected) {
            report.check(true, "");
        } catch (Exception e) {
            report.check(false, what + ": expected RemoteResourceNotFoundException, got " + e);
        }
    }

    private void compare(InputStream stream, long from, long length, String what) throws IOException {
        byte[] a = new byte[MIB];
        byte[] b = new byte[MIB];
        long done = 0;
        try (InputStream in = stream; InputStream file = Files.newInputStream(f.log())) {
            file.skipNBytes(from);
            while (true) {
                int na = in.readNBytes(a, 0, a.length);
                int nb = file.readNBytes(b, 0, (int) Math.min(b.length, length - done));
                int mismatch = Arrays.mismatch(a, 0, na, b, 0, nb);
                if (mismatch >= 0) {
                    report.check(false, label + ": " + what + ": " + (na != nb && mismatch == Math.min(na, nb)
                            ? "returned " + (done + na) + (na == a.length ? "+" : "") + " bytes, expected " + length
                            : "first differing byte at segment position " + (from + done + mismatch)));
                    return;
                }
                done += na;
                if (na < a.length) {
                    break;
                }
            }
        }
        report.check(done == length, label + ": " + what + ": " + done + " bytes, expected " + length);
    }

    private static byte[] fileBytes(Path file, long from, int n) throws IOException {
        try (InputStream in = Files.newInputStream(file)) {
            in.skipNBytes(from);
            return in.readNBytes(n);
        }
    }
}
