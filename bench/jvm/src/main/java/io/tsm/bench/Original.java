package io.tsm.bench;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Path;
import java.util.Arrays;

/** The original segment file, to check fetched bytes against (outside the timed sections). */
final class Original implements AutoCloseable {
    private final RandomAccessFile file;
    private final Path path;
    private byte[] scratch = new byte[0];

    Original(Path path) throws IOException {
        this.path = path;
        this.file = new RandomAccessFile(path.toFile(), "r");
    }

    /** Throws naming the position when {@code got[0, n)} differs from the file at {@code pos}. */
    void check(long pos, byte[] got, int n) throws IOException {
        if (scratch.length < n) {
            scratch = new byte[n];
        }
        file.seek(pos);
        file.readFully(scratch, 0, n);
        int m = Arrays.mismatch(got, 0, n, scratch, 0, n);
        if (m >= 0) {
            throw new IOException("fetched bytes differ from " + path + " at position " + (pos + m));
        }
    }

    /**
     * Start positions of every record batch (v2 header: baseOffset i64, batchLength i32;
     * next = pos + 12 + batchLength), for the broker-like sequential fetch.
     */
    long[] batchStarts() throws IOException {
        long size = file.length();
        long[] out = new long[1024];
        int n = 0;
        long pos = 0;
        while (pos + 12 <= size) {
            if (n == out.length) {
                out = Arrays.copyOf(out, n * 2);
            }
            out[n++] = pos;
            file.seek(pos + 8);
            int len = file.readInt();
            if (len < 0) {
                throw new IOException(path + ": negative batch length at position " + pos);
            }
            pos += 12L + len;
        }
        return Arrays.copyOf(out, n);
    }

    @Override
    public void close() throws IOException {
        file.close();
    }
}
