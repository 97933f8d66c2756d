package io.tsm.bench.baseline;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.BufferUnderflowException;
import java.util.Base64;

import com.github.luben.zstd.Zstd;

/**
 * The {@code transformedChunks} string of a variable chunk index (docs/object-format.md
 * "{@code transformedChunks}: chunk-size codec"): {@code base64(zstd_frame(codec bytes))},
 * integers big-endian. Count 0: {@code count:i32}; 1: {@code count, value}; 2 or more:
 * {@code count, base:i32, bytesPerValue:u8, (count-1) x (v - base) in bytesPerValue bytes,
 * last:i32}, base = min of the non-last values. The zstd frame records its content size
 * (level 3), and the reader rejects frames without it or over 10 MiB, as the Java reader.
 */
public final class ChunkSizesCodec {
    /** Largest decoded codec payload accepted (bytes), as the Java reader. */
    static final int MAX_DECODED = 10 * 1024 * 1024;

    private ChunkSizesCodec() {}

    /** Codec bytes of {@code sizes} (every value non-negative). */
    static byte[] encodeRaw(int[] sizes) {
        int count = sizes.length;
        if (count == 0) {
            return ByteBuffer.allocate(4).putInt(0).array();
        }
        if (count == 1) {
            return ByteBuffer.allocate(8).putInt(1).putInt(sizes[0]).array();
        }
        int base = Integer.MAX_VALUE;
        for (int i = 0; i < count - 1; i++) {
            base = Math.min(base, sizes[i]);
        }
        int width = 1;
        for (int i = 0; i < count - 1; i++) {
            width = Math.max(width, bytesNeeded(sizes[i] - base));
        }
        ByteBuffer b = ByteBuffer.allocate(4 + 4 + 1 + (count - 1) * width + 4);
        b.putInt(count).putInt(base).put((byte) width);
        for (int i = 0; i < count - 1; i++) {
            int d = sizes[i] - base;
            for (int k = width - 1; k >= 0; k--) {
                b.put((byte) (d >>> (8 * k)));
            }
        }
        b.putInt(sizes[count - 1]);
        return b.array();
    }

    private static int bytesNeeded(int v) {
        if (v <= 0xFF) {
            return 1;
        }
        if (v <= 0xFFFF) {
            return 2;
        }
        if (v <= 0xFFFFFF) {
            return 3;
        }
        return 4;
    }

    /** The manifest string for {@code sizes}. */
    static String encode(int[] sizes) {
        return Base64.getEncoder().encodeToString(Zstd.compress(encodeRaw(sizes), 3));
    }

    /** Decodes a manifest string; errors say what is wrong with it. */
    public static int[] decode(String transformedChunks) throws IOException {
        byte[] frame;
        try {
            frame = Base64.getDecoder().decode(transformedChunks);
        } catch (IllegalArgumentException e) {
            throw new IOException("transformedChunks is not base64", e);
        }
        long size = Zstd.getFrameContentSize(frame);
        if (size < 0) {
            throw new IOException("transformedChunks zstd frame does not record its content size (or is not zstd)");
        }
        if (size > MAX_DECODED) {
            throw new IOException("transformedChunks content size " + size + " exceeds " + MAX_DECODED + " bytes");
        }
        byte[] raw = new byte[(int) size];
        long n = Zstd.decompressByteArray(raw, 0, raw.length, frame, 0, frame.length);
        if (Zstd.isError(n) || n != size) {
            throw new IOException("transformedChunks zstd frame is corrupt: "
                    + (Zstd.isError(n) ? Zstd.getErrorName(n) : n + " of " + size + " bytes"));
        }
        return decodeRaw(raw);
    }

    static int[] decodeRaw(byte[] raw) throws IOException {
        try {
            ByteBuffer b = ByteBuffer.wrap(raw);
            int count = b.getInt();
            if (count < 0 || count > raw.length) {
                throw new IOException("transformedChunks count " + count + " is invalid");
            }
            int[] out = new int[count];
            if (count == 1) {
                out[0] = b.getInt();
            } else if (count >= 2) {
                int base = b.getInt();
                int width = b.get() & 0xFF;
                if (width < 1 || width > 4 || base < 0) {
                    throw new IOException("transformedChunks base " + base + " / bytesPerValue " + width + " is invalid");
                }
                for (int i = 0; i < count - 1; i++) {
                    long d = 0;
                    for (int k = 0; k < width; k++) {
                        d = (d << 8) | (b.get() & 0xFF);
                    }
                    long v = base + d;
                    if (v > Integer.MAX_VALUE) {
                        throw new IOException("transformedChunks value " + v + " of chunk " + i + " overflows");
                    }
                    out[i] = (int) v;
                }
                out[count - 1] = b.getInt();
            }
            for (int i = 0; i < count; i++) {
                if (out[i] < 0) {
                    throw new IOException("transformedChunks size of chunk " + i + " is negative");
                }
            }
            if (b.hasRemaining()) {
                throw new IOException("transformedChunks has " + b.remaining() + " trailing bytes");
            }
            return out;
        } catch (BufferUnderflowException e) {
            throw new IOException("transformedChunks is truncated", e);
        }
    }
}
