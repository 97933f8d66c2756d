package io.tsm.bench.baseline;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Collection;
import java.util.concurrent.atomic.LongAdder;

/**
 * {@code storage.backend.class=filesystem} ({@code storage.root}): object key {@code a/b/c}
 * is the file {@code <root>/a/b/c}, as in Aiven's {@code FileSystemStorage}.
 *
 * <p>Upload streams through a 64 KiB buffer into {@code <name>.tmp-<nanos>}, fsyncs it and
 * renames it over the target, so the object is durable on return (as tsm's filesystem backend;
 * Aiven's copies without fsync, which would flatter the baseline). Fetch reads a byte range
 * of the file through a {@link FileChannel}.
 */
final class FileSystemStorage implements Storage {
    private static final int BUFFER = 64 * 1024;
    private final Path root;
    private final LongAdder downloaded = new LongAdder();

    FileSystemStorage(Path root) throws IOException {
        this.root = root.toAbsolutePath().normalize();
        Files.createDirectories(this.root);
    }

    private Path path(String key) throws IOException {
        Path p = root.resolve(key).normalize();
        if (!p.startsWith(root) || p.equals(root)) {
            throw new IOException("object key " + key + " escapes storage.root");
        }
        return p;
    }

    @Override
    public long upload(InputStream in, String key) throws IOException {
        Path target = path(key);
        Files.createDirectories(target.getParent());
        Path tmp = target.resolveSibling(target.getFileName() + ".tmp-" + System.nanoTime());
        long total = 0;
        try (FileChannel out = FileChannel.open(tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            byte[] buf = new byte[BUFFER];
            ByteBuffer bb = ByteBuffer.wrap(buf);
            int n;
            while ((n = in.read(buf)) >= 0) {
                bb.clear().limit(n);
                while (bb.hasRemaining()) {
                    out.write(bb);
                }
                total += n;
            }
            out.force(true);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp);
            throw new IOException("upload of " + key + " to " + target + " failed", e);
        }
        Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        return total;
    }

    @Override
    public InputStream fetch(String key, long from, long length) throws IOException {
        Path p = path(key);
        FileChannel ch;
        try {
            ch = FileChannel.open(p, StandardOpenOption.READ);
        } catch (NoSuchFileException e) {
            throw new ObjectNotFoundException(key, e);
        }
        try {
            long size = ch.size();
            if (from > size) {
                throw new IOException("range starting at byte " + from + " of " + key + " is past its end (" + size + " bytes)");
            }
            ch.position(from);
        } catch (IOException e) {
            ch.close();
            throw e;
        }
        InputStream raw = Channels.newInputStream(ch);
        return new CountingInputStream(new BoundedInputStream(raw, length), downloaded);
    }

    @Override
    public void delete(Collection<String> keys) throws IOException {
        for (String key : keys) {
            Files.deleteIfExists(path(key));
        }
    }

    @Override
    public long bytesDownloaded() {
        return downloaded.sum();
    }

    @Override
    public void close() {}

    @Override
    public String toString() {
        return "FileSystemStorage(" + root + ")";
    }
}
