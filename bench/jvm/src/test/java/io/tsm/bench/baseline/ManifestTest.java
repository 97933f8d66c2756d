package io.tsm.bench.baseline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;

import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager.IndexType;
import org.junit.jupiter.api.Test;

/** The manifest reader against the example in docs/object-format.md "Manifest"; config errors. */
class ManifestTest {
    static final String SPEC = """
            {"version":"1",
             "chunkIndex":{"type":"fixed","originalChunkSize":100,"originalFileSize":1000,
                           "transformedChunkSize":110,"finalTransformedChunkSize":110},
             "segmentIndexes":{"offset":{"position":0,"size":1},"timestamp":{"position":1,"size":1},
                               "producerSnapshot":{"position":2,"size":1},"leaderEpoch":{"position":3,"size":1},
                               "transaction":{"position":4,"size":1}},
             "compression":false,
             "encryption":{"dataKey":"k1:AAAA","aad":"BBBB"},
             "remoteLogSegmentMetadata":{"anything":[1,2]}}""";

    @Test
    void parsesTheSpecExample() throws IOException {
        Manifest m = Manifest.parse(SPEC.getBytes(StandardCharsets.UTF_8), "k");
        assertEquals(10, m.chunkIndex.count());
        assertEquals(110, m.chunkIndex.storedSize(9));
        assertEquals(990, m.chunkIndex.storedStart(9));
        assertEquals(new Manifest.Entry(4, 1), m.indexes.get(IndexType.TRANSACTION));
        assertFalse(m.compression);
        assertEquals("k1:AAAA", m.dataKey);
    }

    @Test
    void transactionNullAndNoEncryption() throws IOException {
        String json = SPEC.replace("\"transaction\":{\"position\":4,\"size\":1}", "\"transaction\":null")
                .replace("\"encryption\":{\"dataKey\":\"k1:AAAA\",\"aad\":\"BBBB\"},", "");
        Manifest m = Manifest.parse(json.getBytes(StandardCharsets.UTF_8), "k");
        assertNull(m.indexes.get(IndexType.TRANSACTION));
        assertNull(m.dataKey);
    }

    @Test
    void errorsNameTheManifest() {
        IOException e = assertThrows(IOException.class,
                () -> Manifest.parse(SPEC.replace("\"version\":\"1\"", "\"version\":\"2\"").getBytes(StandardCharsets.UTF_8), "a/b.rsm-manifest"));
        assertTrue(e.getMessage().contains("a/b.rsm-manifest") && e.getMessage().contains("version"), e.getMessage());
        assertThrows(IOException.class, () -> Manifest.parse("{".getBytes(StandardCharsets.UTF_8), "k"));
        assertThrows(IOException.class, () -> Manifest.parse(SPEC.replace("fixed", "other").getBytes(StandardCharsets.UTF_8), "k"));
    }

    @Test
    void configErrorsNameTheKeyAndHideSecrets() {
        ConfigException e = assertThrows(ConfigException.class,
                () -> BaselineConfig.parse(Map.of("storage.backend.class", "filesystem", "storage.root", "/tmp/x")));
        assertTrue(e.getMessage().contains("chunk.size"), e.getMessage());
        e = assertThrows(ConfigException.class, () -> BaselineConfig.parse(Map.of("chunk.size", "x1",
                "storage.backend.class", "filesystem", "storage.root", "/tmp/x")));
        assertTrue(e.getMessage().contains("chunk.size"), e.getMessage());
        BaselineConfig c = BaselineConfig.parse(Map.of("chunk.size", "1024", "storage.backend.class", "s3",
                "storage.s3.bucket.name", "b", "storage.aws.access.key.id", "id",
                "storage.aws.secret.access.key", "very-secret-value"));
        assertFalse(c.toString().contains("very-secret-value"), c.toString());
        assertEquals(BaselineConfig.DEFAULT_PART_SIZE, c.s3().partSize());
    }
}
