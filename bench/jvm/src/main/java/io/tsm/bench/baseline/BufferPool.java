package io.tsm.bench.baseline;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

import com.github.luben.zstd.Zstd;

/**
 * Reuses the chunk-sized buffers of copy and fetch streams. Without it every fetch stream
 * allocated ~17 MB (a 4 MiB chunk, its stored form, two zstd/GCM work buffers); the broker
 * opens one stream per ~1 MiB read, so a catching-up consumer made the JVM grow its heap to
 * -Xmx (peak RSS near 900 MiB at -Xmx1g) on garbage alone. At most {@value #MAX_POOLED} sets
 * are kept (~17 MB each at 4 MiB chunks); a stream takes one when opened and returns it on
 * close. Buffers are allocated lazily, so plain mode never allocates the work buffers.
 */
final class BufferPool {
    static final int MAX_POOLED = 4;
    static final BufferPool SHARED = new BufferPool();

    private final ConcurrentLinkedQueue<Buffers> free = new ConcurrentLinkedQueue<>();
    private final AtomicInteger pooled = new AtomicInteger();

    /** One stream's buffers for chunks of {@code chunkSize} original bytes. */
    static final class Buffers {
        final int chunkSize;
        /** Largest stored chunk: zstd bound + IV + tag. */
        final int storedMax;
        private byte[] original;
        private byte[] stored;
        private byte[] mid;
        private byte[] out;

        Buffers(int chunkSize) {
            this.chunkSize = chunkSize;
            long bound = Math.max(chunkSize, Zstd.compressBound(chunkSize));
            this.storedMax = (int) Math.min(Integer.MAX_VALUE - 64, bound + ChunkTransform.GCM_OVERHEAD);
        }

        /** {@code chunkSize} bytes: one original chunk. */
        byte[] original() {
            if (original == null) {
                original = new byte[chunkSize];
            }
            return original;
        }

        /** At least {@code n} bytes for one stored chunk (n <= storedMax keeps it pooled). */
        byte[] stored(int n) {
            if (stored == null || stored.length < n) {
                stored = new byte[n <= storedMax ? storedMax : n];
            }
            return stored;
        }

        /** Work buffer between compression and encryption (storedMax bytes). */
        byte[] mid() {
            if (mid == null) {
                mid = new byte[storedMax];
            }
            return mid;
        }

        /** Output of a transform / plaintext of a decrypted compressed chunk (storedMax bytes). */
        byte[] out() {
            if (out == null) {
                out = new byte[storedMax];
            }
            return out;
        }
    }

    Buffers acquire(int chunkSize) {
        Buffers b;
        while ((b = free.poll()) != null) {
            pooled.decrementAndGet();
            if (b.chunkSize == chunkSize) {
                return b;
            }
        }
        return new Buffers(chunkSize);
    }

    void release(Buffers b) {
        if (b.stored != null && b.stored.length > b.storedMax) {
            return; // an oversized stored chunk (corrupt manifest): do not keep it
        }
        if (pooled.incrementAndGet() <= MAX_POOLED) {
            free.offer(b);
        } else {
            pooled.decrementAndGet();
        }
    }
}
