package io.tsm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java plugin's configuration and directory handling (the plugin itself runs in
 * bench/jvm/run.sh's cases and cross-check, on Kafka 4.2.2 classes).
 */
class AivenPluginTest {
    @TempDir
    Path work;

    @Test
    void filesystemMapGetsTheFullClassNameAndAnExistingRoot() throws IOException {
        Map<String, Object> c = Plugins.configFor("aiven", "filesystem", "zstd+aes", work);
        assertEquals(AivenPlugin.FILESYSTEM, c.get("storage.backend.class"));
        assertTrue(Files.isDirectory(Path.of((String) c.get("storage.root"))), "storage.root must exist for it");
        // Everything else is the map the other subjects get.
        Map<String, Object> tsm = Plugins.configFor("tsm", "filesystem", "zstd+aes", work);
        tsm.remove("storage.backend.class");
        c.remove("storage.backend.class");
        assertEquals(tsm, c);
    }

    @Test
    void versionComesFromTheJarNameAndAMissingDirectoryIsNamed() throws IOException {
        Path dir = Files.createDirectories(work.resolve("plugin"));
        IOException none = assertThrows(IOException.class, () -> AivenPlugin.version(dir));
        assertTrue(none.getMessage().contains(dir.toString()), none.getMessage());
        Files.createFile(dir.resolve(AivenPlugin.JAR_PREFIX + "1.1.1.jar"));
        assertEquals("1.1.1", AivenPlugin.version(dir));
        Path missing = work.resolve("nope");
        IOException e = assertThrows(IOException.class, () -> AivenPlugin.version(missing));
        assertTrue(e.getMessage().contains(missing.toString()) && e.getMessage().contains(AivenPlugin.ENV_DIR),
                e.getMessage());
    }
}
