package io.tsm.bench.baseline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Base64;
import java.util.HexFormat;

import com.github.luben.zstd.ZstdCompressCtx;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

import org.junit.jupiter.api.Test;

/** docs/object-format.md "transformedChunks: chunk-size codec", including its test vector. */
class ChunkSizesCodecTest {
    @Test
    void specTestVector() throws IOException {
        int[] sizes = {10, 20, 30};
        assertEquals("000000030000000a01000a0000001e", HexFormat.of().formatHex(ChunkSizesCodec.encodeRaw(sizes)));
        // The Java writer's manifest string: zstd level 3, single segment, content size 15.
        assertEquals("KLUv/SAPeQAAAAAAAwAAAAoBAAoAAAAe", ChunkSizesCodec.encode(sizes));
        assertArrayEquals(sizes, ChunkSizesCodec.decode("KLUv/SAPeQAAAAAAAwAAAAoBAAoAAAAe"));
    }

    @Test
    void zeroAndOneValue() throws IOException {
        assertEquals("00000000", HexFormat.of().formatHex(ChunkSizesCodec.encodeRaw(new int[0])));
        assertEquals("0000000100000007", HexFormat.of().formatHex(ChunkSizesCodec.encodeRaw(new int[] {7})));
        assertArrayEquals(new int[0], ChunkSizesCodec.decode(ChunkSizesCodec.encode(new int[0])));
        assertArrayEquals(new int[] {7}, ChunkSizesCodec.decode(ChunkSizesCodec.encode(new int[] {7})));
    }

    @Test
    void widthFollowsTheLargestNonLastDelta() {
        // base 100, deltas 0 and 0x10000 -> 3 bytes per value; the last value is stored in full.
        byte[] raw = ChunkSizesCodec.encodeRaw(new int[] {100, 100 + 0x10000, 5});
        assertEquals("00000003" + "00000064" + "03" + "000000" + "010000" + "00000005", HexFormat.of().formatHex(raw));
    }

    @Test
    void rejectsAFrameWithoutContentSize() {
        byte[] frame;
        try (ZstdCompressCtx c = new ZstdCompressCtx().setLevel(3).setContentSize(false)) {
            frame = c.compress(ChunkSizesCodec.encodeRaw(new int[] {1, 2}));
        }
        IOException e = assertThrows(IOException.class,
                () -> ChunkSizesCodec.decode(Base64.getEncoder().encodeToString(frame)));
        assertTrue(e.getMessage().contains("content size"), e.getMessage());
    }

    @Test
    void rejectsGarbage() {
        assertThrows(IOException.class, () -> ChunkSizesCodec.decode("not base64 !"));
        assertThrows(IOException.class, () -> ChunkSizesCodec.decode(Base64.getEncoder().encodeToString(new byte[] {1, 2, 3})));
        assertThrows(IOException.class, () -> ChunkSizesCodec.decodeRaw(new byte[] {0, 0, 0, 3, 0, 0}));
        assertThrows(IOException.class, () -> ChunkSizesCodec.decodeRaw(new byte[] {0, 0, 0, 1, 0, 0, 0, 1, 9}));
    }

    @Property(tries = 300)
    void roundTrips(@ForAll @Size(max = 300) int[] raw, @ForAll @IntRange(min = 0, max = 30) int shift) throws IOException {
        int[] sizes = new int[raw.length];
        for (int i = 0; i < raw.length; i++) {
            sizes[i] = (raw[i] & 0x7fffffff) >>> shift;
        }
        assertArrayEquals(sizes, ChunkSizesCodec.decode(ChunkSizesCodec.encode(sizes)));
    }
}
