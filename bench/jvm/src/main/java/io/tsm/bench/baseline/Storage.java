package io.tsm.bench.baseline;

import java.io.IOException;
import java.io.InputStream;
import java.util.Collection;

/**
 * The object store under the baseline plugin, shaped like Aiven's {@code StorageBackend}
 * ({@code upload(InputStream, key)}, ranged {@code fetch}, {@code delete}). Implementations:
 * {@link FileSystemStorage} and {@link S3Storage}.
 *
 * <p>Every implementation counts the bytes it hands out of {@link #fetch} so the harness can
 * report bytes downloaded against bytes delivered.
 */
interface Storage extends AutoCloseable {
    /**
     * Streams {@code in} to the object {@code key} (replacing it) and returns the number of
     * bytes stored. Durable when it returns. Memory: bounded by the implementation's buffer
     * (filesystem 64 KiB, S3 one multipart part), never by the object size.
     */
    long upload(InputStream in, String key) throws IOException;

    /**
     * Opens bytes {@code [from, from + length)} of {@code key}. Throws
     * {@link ObjectNotFoundException} when the object does not exist. {@code length} may be 0.
     */
    InputStream fetch(String key, long from, long length) throws IOException;

    /** Deletes the objects; a missing object is not an error. */
    void delete(Collection<String> keys) throws IOException;

    /** Bytes returned by {@link #fetch} streams so far (read by callers, not requested). */
    long bytesDownloaded();

    @Override
    void close();

    /** The requested object does not exist. */
    final class ObjectNotFoundException extends IOException {
        private static final long serialVersionUID = 1L;

        ObjectNotFoundException(String key, Throwable cause) {
            super("object not found: " + key, cause);
        }
    }
}
