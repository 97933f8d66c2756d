package io.tsm.bench.baseline;

import java.io.IOException;
import java.io.InputStream;

/**
 * The fetch pipeline of the {@code .log} object: a lazy stream over original bytes
 * {@code [start, endInclusive]} of a segment. Chunk by chunk, as the caller reads: one ranged
 * GET of the chunk's stored bytes (positions from the manifest's chunk index), detransform
 * ({@link ChunkTransform}), serve the requested part. Nothing is downloaded before the first
 * {@code read}, nothing after {@code close}. This is Aiven's fetch path without a chunk
 * cache ({@code FetchChunkEnumeration} over {@code DefaultChunkManager}).
 *
 * <p>Memory: one pooled buffer set ({@link BufferPool}): a stored and an original chunk
 * buffer plus the transform's work buffers; returned to the pool on close.
 * {@code read} blocks until at least one byte is available or returns -1, never 0.
 */
final class ChunkFetchInputStream extends InputStream {
    private final Storage storage;
    private final String key;
    private final ChunkIndex index;
    private final ChunkTransform transform;
    private final long end;
    private long next;
    private int chunkId;
    private byte[] stored;
    private final byte[] original;
    private int pos;
    private int limit;
    private boolean closed;

    ChunkFetchInputStream(Storage storage, String key, ChunkIndex index, ChunkTransform transform,
                          long start, long endInclusive) {
        this.storage = storage;
        this.key = key;
        this.index = index;
        this.transform = transform;
        this.end = Math.min(endInclusive, index.originalFileSize() - 1);
        this.next = start;
        this.chunkId = (int) (start / index.originalChunkSize());
        this.original = transform.buffers().original();
    }

    private boolean fill() throws IOException {
        if (closed) {
            throw new IOException("fetch stream of " + key + " is closed");
        }
        if (pos < limit) {
            return true;
        }
        if (next > end || chunkId >= index.count()) {
            return false;
        }
        int storedSize = index.storedSize(chunkId);
        long from = index.storedStart(chunkId);
        stored = transform.buffers().stored(storedSize);
        String what = key + " chunk " + chunkId + " (stored bytes " + from + "-" + (from + storedSize - 1) + ")";
        try (InputStream in = storage.fetch(key, from, storedSize)) {
            int n = in.readNBytes(stored, 0, storedSize);
            if (n != storedSize) {
                throw new IOException(what + ": object ended after " + n + " bytes");
            }
        }
        int originalSize = index.originalSize(chunkId);
        transform.detransform(stored, storedSize, original, originalSize, what);
        long chunkStart = (long) chunkId * index.originalChunkSize();
        pos = (int) (next - chunkStart);
        limit = (int) Math.min(originalSize, end - chunkStart + 1);
        next = chunkStart + limit;
        chunkId++;
        return pos < limit;
    }

    @Override
    public int read() throws IOException {
        if (!fill()) {
            return -1;
        }
        return original[pos++] & 0xFF;
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
        System.arraycopy(original, pos, b, off, n);
        pos += n;
        return n;
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            transform.close();
        }
    }
}
