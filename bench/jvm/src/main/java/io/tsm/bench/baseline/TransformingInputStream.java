package io.tsm.bench.baseline;

import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;

/**
 * The copy pipeline of the {@code .log} object: reads the local segment file
 * {@code chunk.size} original bytes at a time, transforms each chunk
 * ({@link ChunkTransform}) and serves the stored bytes to the storage's upload, recording each
 * chunk's stored size for the chunk index. Like Aiven's {@code TransformChunkEnumeration}
 * chain seen through {@code TransformFinisher} as an {@code InputStream}.
 *
 * <p>Memory: one pooled buffer set ({@link BufferPool}: an original chunk plus the transform's
 * work buffers), whatever the segment size.
 */
final class TransformingInputStream extends InputStream {
    private final InputStream source;
    private final ChunkTransform transform;
    private final byte[] chunk;
    private byte[] current = new byte[0];
    private int pos;
    private int limit;
    private boolean eof;
    private int[] sizes = new int[16];
    private int count;
    private long originalBytes;

    TransformingInputStream(InputStream source, ChunkTransform transform, int chunkSize) {
        this.source = source;
        this.transform = transform;
        this.chunk = transform.buffers().original();
    }

    private boolean fill() throws IOException {
        while (pos >= limit) {
            if (eof) {
                return false;
            }
            int n = source.readNBytes(chunk, 0, chunk.length);
            if (n < chunk.length) {
                eof = true;
            }
            if (n == 0) {
                return false;
            }
            originalBytes += n;
            int stored = transform.transform(chunk, n);
            byte[] out = transform.output();
            current = out == null ? chunk : out;
            pos = 0;
            limit = stored;
            if (count == sizes.length) {
                sizes = Arrays.copyOf(sizes, count * 2);
            }
            sizes[count++] = stored;
        }
        return true;
    }

    @Override
    public int read() throws IOException {
        if (!fill()) {
            return -1;
        }
        return current[pos++] & 0xFF;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (len == 0) {
            return 0;
        }
        if (!fill()) {
            return -1;
        }
        int n = Math.min(len, limit - pos);
        System.arraycopy(current, pos, b, off, n);
        pos += n;
        return n;
    }

    /** Stored size of every chunk produced so far (all of them once EOF was returned). */
    int[] storedSizes() {
        return Arrays.copyOf(sizes, count);
    }

    /** Original bytes read from the segment file. */
    long originalBytes() {
        return originalBytes;
    }

    @Override
    public void close() throws IOException {
        source.close();
    }
}
