package io.tsm.bench.baseline;

import java.io.IOException;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The manifest's {@code chunkIndex} (docs/object-format.md "Manifest"): where each chunk of the
 * {@code .log} object lives. Chunking is on the original side: every chunk holds
 * {@code originalChunkSize} original bytes except the last. {@code fixed} when every stored
 * chunk but the last has the same size (no transform, or encryption only), {@code variable}
 * (one stored size per chunk, {@link ChunkSizesCodec}) when compression is on.
 * Memory: one {@code long} per chunk (256 for 1 GiB at 4 MiB).
 */
final class ChunkIndex {
    private final boolean fixed;
    private final int originalChunkSize;
    private final long originalFileSize;
    /** Stored offsets: chunk i is [positions[i], positions[i+1]). */
    private final long[] positions;

    private ChunkIndex(boolean fixed, int originalChunkSize, long originalFileSize, long[] positions) {
        this.fixed = fixed;
        this.originalChunkSize = originalChunkSize;
        this.originalFileSize = originalFileSize;
        this.positions = positions;
    }

    static int chunkCount(long fileSize, int chunkSize) throws IOException {
        long n = (fileSize + chunkSize - 1) / chunkSize;
        if (n > Integer.MAX_VALUE - 1) {
            throw new IOException("segment of " + fileSize + " bytes has too many chunks of " + chunkSize);
        }
        return (int) n;
    }

    /** Builds the index from the stored size of every chunk, as the copy pipeline saw them. */
    static ChunkIndex of(boolean variable, int chunkSize, long fileSize, int[] storedSizes) {
        long[] pos = new long[storedSizes.length + 1];
        for (int i = 0; i < storedSizes.length; i++) {
            pos[i + 1] = pos[i] + storedSizes[i];
        }
        return new ChunkIndex(!variable, chunkSize, fileSize, pos);
    }

    int count() {
        return positions.length - 1;
    }

    int originalChunkSize() {
        return originalChunkSize;
    }

    long originalFileSize() {
        return originalFileSize;
    }

    /** Original bytes in chunk {@code i}. */
    int originalSize(int i) {
        return (int) Math.min(originalChunkSize, originalFileSize - (long) i * originalChunkSize);
    }

    long storedStart(int i) {
        return positions[i];
    }

    int storedSize(int i) {
        return (int) (positions[i + 1] - positions[i]);
    }

    /** Stored size of the whole {@code .log} object. */
    long storedTotal() {
        return positions[positions.length - 1];
    }

    ObjectNode toJson(int transformOverhead) {
        ObjectNode n = JsonNodeFactory.instance.objectNode();
        n.put("type", fixed ? "fixed" : "variable");
        n.put("originalChunkSize", originalChunkSize);
        n.put("originalFileSize", originalFileSize);
        if (fixed) {
            int full = originalChunkSize + transformOverhead;
            n.put("transformedChunkSize", full);
            // An empty segment has no chunk: the final size is then the full one (as tsm).
            n.put("finalTransformedChunkSize", count() == 0 ? full : storedSize(count() - 1));
        } else {
            int[] sizes = new int[count()];
            for (int i = 0; i < sizes.length; i++) {
                sizes[i] = storedSize(i);
            }
            n.put("transformedChunks", ChunkSizesCodec.encode(sizes));
        }
        return n;
    }

    static ChunkIndex fromJson(JsonNode n) throws IOException {
        String type = text(n, "type");
        long chunk = number(n, "originalChunkSize");
        long file = number(n, "originalFileSize");
        if (chunk < 1 || chunk > Integer.MAX_VALUE) {
            throw new IOException("chunkIndex.originalChunkSize " + chunk + " is out of range");
        }
        int count = chunkCount(file, (int) chunk);
        int[] sizes;
        switch (type) {
            case "fixed" -> {
                long t = number(n, "transformedChunkSize");
                long f = number(n, "finalTransformedChunkSize");
                if (t > Integer.MAX_VALUE || f > Integer.MAX_VALUE) {
                    throw new IOException("chunkIndex transformed sizes out of range");
                }
                sizes = new int[count];
                for (int i = 0; i < count; i++) {
                    sizes[i] = i == count - 1 ? (int) f : (int) t;
                }
            }
            case "variable" -> {
                sizes = ChunkSizesCodec.decode(text(n, "transformedChunks"));
                if (sizes.length != count) {
                    throw new IOException("chunkIndex.transformedChunks has " + sizes.length
                            + " sizes but the file has " + count + " chunks");
                }
            }
            default -> throw new IOException("chunkIndex.type '" + type + "' is neither fixed nor variable");
        }
        return of("variable".equals(type), (int) chunk, file, sizes);
    }

    static String text(JsonNode n, String field) throws IOException {
        JsonNode v = n.get(field);
        if (v == null || !v.isTextual()) {
            throw new IOException("manifest field " + field + " is missing or not a string");
        }
        return v.asText();
    }

    static long number(JsonNode n, String field) throws IOException {
        JsonNode v = n.get(field);
        if (v == null || !v.canConvertToLong() || v.asLong() < 0) {
            throw new IOException("manifest field " + field + " is missing or not a non-negative integer");
        }
        return v.asLong();
    }
}
