package io.tsm.kafka;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Segment integrity through the plugin jar on the filesystem backend: the cases of
 * {@link IntegrityScenarios} (a flipped bit, swapped chunks, a shrunk size, another segment's
 * objects at a segment's keys, a plaintext segment at encrypted keys, a hostile manifest, in
 * every mode) are refused with an error naming what is wrong, never served as wrong bytes, and
 * end within 10 s. The test changes the objects as files under {@code storage.root}. Part of
 * build.sh's test run; {@link IntegrityIT} runs the same cases on MinIO.
 */
class IntegrityTest extends IntegrityScenarios {
    @Override
    protected Bucket bucket(Path work, String test) throws IOException {
        Path root = work.resolve("bucket");
        Files.createDirectories(root);
        return new FileBucket(root);
    }

    /** Objects as files: key {@code a/b/c} is {@code <storage.root>/a/b/c}. */
    private static final class FileBucket implements Bucket {
        private final Path root;

        FileBucket(Path root) {
            this.root = root;
        }

        @Override
        public Map<String, Object> backend() {
            Map<String, Object> c = new HashMap<>();
            c.put("storage.backend.class", "filesystem");
            c.put("storage.root", root.toString());
            return c;
        }

        private Path file(String key) {
            Path f = root.resolve(key).normalize();
            if (!f.startsWith(root)) {
                throw new IllegalArgumentException("key " + key + " is outside " + root);
            }
            return f;
        }

        @Override
        public byte[] get(String key) throws IOException {
            return Files.readAllBytes(file(key));
        }

        @Override
        public void put(String key, byte[] bytes) throws IOException {
            Path f = file(key);
            Files.createDirectories(f.getParent());
            Files.write(f, bytes);
        }

        @Override
        public List<String> list() throws IOException {
            List<String> keys = new ArrayList<>();
            Files.walkFileTree(root, new SimpleFileVisitor<Path>() {
                @Override
                public FileVisitResult visitFile(Path f, BasicFileAttributes a) {
                    if (a.isRegularFile()) {
                        keys.add(root.relativize(f).toString().replace(f.getFileSystem().getSeparator(), "/"));
                    }
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFileFailed(Path f, IOException e) throws IOException {
                    if (e instanceof NoSuchFileException) {
                        return FileVisitResult.CONTINUE;
                    }
                    throw e;
                }
            });
            return keys;
        }
    }
}
