package io.tsm.kafka;

import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.lang.ref.Cleaner;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A fetched segment range, read lazily from native code (bytes are downloaded as they are
 * read, never the whole range up front).
 *
 * <p>{@link #read(byte[], int, int)} blocks until at least one byte is available or returns -1
 * at the end, never 0 for a non-empty request (0 makes the broker spin). Native waits last at
 * most {@link Calls#SLICE_MS} ms; an interrupted thread gets {@link InterruptedIOException}. A
 * failed stream throws {@link IOException} whose cause is the exception the call would have
 * thrown ({@link Calls#map}: retriable for a transient failure such as a deadline hit).
 * {@link #close()} is cheap, idempotent and thread-safe; a {@link Cleaner} frees the native
 * stream if the broker never closes it.
 */
final class NativeInputStream extends InputStream {
    private static final Cleaner CLEANER = Cleaner.create();

    /** Frees the native stream once; must not reference the stream object. */
    private static final class Release implements Runnable {
        private final long handle;
        private final AtomicBoolean closed = new AtomicBoolean();

        Release(long handle) {
            this.handle = handle;
        }

        @Override
        public void run() {
            if (closed.compareAndSet(false, true)) {
                NativeBridge.closeStream(handle);
            }
        }
    }

    private final Release release;
    private final Cleaner.Cleanable cleanable;
    private final String what;

    NativeInputStream(long handle, String what) {
        this.release = new Release(handle);
        this.cleanable = CLEANER.register(this, release);
        this.what = what;
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        int n = read(one, 0, 1);
        return n < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        Objects.checkFromIndexSize(off, len, b.length);
        if (len == 0) {
            return 0;
        }
        try {
            while (true) {
                if (release.closed.get()) {
                    throw new IOException(what + ": stream closed");
                }
                if (Thread.interrupted()) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException(what + ": interrupted");
                }
                int n = NativeBridge.read(release.handle, b, off, len, Calls.SLICE_MS);
                if (n > 0) {
                    return n;
                }
                switch (n) {
                    case NativeBridge.READ_PENDING:
                        continue;
                    case NativeBridge.READ_EOF:
                        return -1;
                    case NativeBridge.READ_ERROR: {
                        // The cause says what kind of failure it was, as for the other calls: a
                        // transient one (a deadline hit, a dropped connection) is a
                        // RetriableRemoteStorageException where the broker has the class.
                        String message = what + ": " + NativeBridge.streamError(release.handle);
                        throw new IOException(message,
                                Calls.map(NativeBridge.streamErrorStatus(release.handle), message));
                    }
                    default:
                        throw new IOException(what + ": stream closed");
                }
            }
        } catch (RuntimeException e) {
            throw new IOException(what + ": native failure: " + e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        cleanable.clean();
    }
}
