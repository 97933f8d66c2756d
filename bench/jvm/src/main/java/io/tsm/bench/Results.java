package io.tsm.bench;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The shared results file (JSON lines; fields agreed with the Rust harness, see
 * bench/README.md): {@code harness, subject, backend, data, mode, op, bytes, seconds,
 * cpu_seconds, peak_rss_bytes, downloaded_bytes, extra}. Each line is appended under a file
 * lock in one write, so concurrent writers never interleave lines.
 */
final class Results {
    static final ObjectMapper JSON = new ObjectMapper();

    private Results() {}

    static ObjectNode line(String subject, String backend, String data, String mode, String op) {
        ObjectNode n = JSON.createObjectNode();
        n.put("harness", "jvm");
        n.put("subject", subject);
        n.put("backend", backend);
        n.put("data", data);
        if (mode == null) {
            n.putNull("mode");
        } else {
            n.put("mode", mode);
        }
        n.put("op", op);
        return n;
    }

    static void append(Path file, ObjectNode line) throws IOException {
        if (file.getParent() != null) {
            Files.createDirectories(file.getParent());
        }
        byte[] bytes = (JSON.writeValueAsString(line) + "\n").getBytes(java.nio.charset.StandardCharsets.UTF_8);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.APPEND)) {
            FileLock lock = ch.lock();
            try {
                ByteBuffer b = ByteBuffer.wrap(bytes);
                while (b.hasRemaining()) {
                    ch.write(b);
                }
            } finally {
                lock.release();
            }
        }
    }
}
