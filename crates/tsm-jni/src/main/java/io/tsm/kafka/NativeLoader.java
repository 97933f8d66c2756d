package io.tsm.kafka;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads libtsm_jni once per class loader.
 *
 * <p>A native library can be bound to only one class loader per JVM, so every loader (two
 * brokers in one JVM, or a plugin reloaded) extracts its own copy under a unique name
 * {@code tsm-jni-<pid>-<random>.so}, loads it and deletes the file (the mapping stays valid on
 * Linux). Copies left by crashed processes (their pid no longer alive) are removed first.
 *
 * <p>Library inside the jar: {@code /io/tsm/kafka/native/<os>-<arch>/libtsm_jni.so}, e.g.
 * {@code linux-x86_64}. Extraction directory, first found wins: the plugin config key
 * {@value #DIR_CONFIG}, the system property {@value #DIR_PROPERTY}, the environment variable
 * {@code TSM_NATIVE_DIR}, {@code java.io.tmpdir} (use one of the first three when /tmp is
 * mounted noexec). The system property {@value #LIBRARY_PROPERTY} loads a given file instead.
 */
final class NativeLoader {
    private NativeLoader() {}

    /** rsm.config key (prefix stripped) naming the extraction directory. */
    static final String DIR_CONFIG = "tsm.jni.native.dir";
    /** System property naming the extraction directory. */
    static final String DIR_PROPERTY = "tsm.native.dir";
    /** System property naming a library file to load as is (development). */
    static final String LIBRARY_PROPERTY = "tsm.native.library";

    private static final Logger LOG = LoggerFactory.getLogger(NativeLoader.class);
    private static final Pattern COPY = Pattern.compile("tsm-jni-(\\d+)-.*\\.so");
    private static boolean loaded;

    /** Loads the library if this class loader has not yet; {@code configDir} may be null. */
    static synchronized void ensureLoaded(String configDir) {
        if (loaded) {
            return;
        }
        String explicit = System.getProperty(LIBRARY_PROPERTY);
        if (explicit != null && !explicit.isBlank()) {
            System.load(Paths.get(explicit).toAbsolutePath().toString());
        } else {
            loadFromJar(configDir);
        }
        loaded = true;
        NativeLog.start();
    }

    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        String o = os.contains("linux") ? "linux" : os.contains("mac") ? "macos" : os.replace(' ', '_');
        String a = arch.equals("amd64") || arch.equals("x86_64") ? "x86_64"
                : arch.equals("aarch64") || arch.equals("arm64") ? "aarch64" : arch;
        return o + "-" + a;
    }

    static String libraryFileName() {
        return platform().startsWith("macos") ? "libtsm_jni.dylib" : "libtsm_jni.so";
    }

    private static Path extractionDir(String configDir) {
        String dir = configDir;
        if (dir == null || dir.isBlank()) {
            dir = System.getProperty(DIR_PROPERTY);
        }
        if (dir == null || dir.isBlank()) {
            dir = System.getenv("TSM_NATIVE_DIR");
        }
        if (dir == null || dir.isBlank()) {
            dir = System.getProperty("java.io.tmpdir");
        }
        return Paths.get(dir);
    }

    private static void loadFromJar(String configDir) {
        String resource = "/io/tsm/kafka/native/" + platform() + "/" + libraryFileName();
        Path dir = extractionDir(configDir);
        Path file = null;
        try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new UnsatisfiedLinkError("tsm: no native library for platform " + platform()
                        + " in the plugin jar (looked for " + resource + ")");
            }
            Files.createDirectories(dir);
            removeStaleCopies(dir);
            file = Files.createTempFile(dir, "tsm-jni-" + ProcessHandle.current().pid() + "-", ".so");
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            System.load(file.toAbsolutePath().toString());
        } catch (IOException e) {
            UnsatisfiedLinkError err = new UnsatisfiedLinkError("tsm: cannot extract " + resource + " into "
                    + dir + " (set rsm.config." + DIR_CONFIG + " or -D" + DIR_PROPERTY
                    + " to a writable, exec-mounted directory): " + e);
            err.initCause(e);
            throw err;
        } finally {
            if (file != null) {
                try {
                    Files.deleteIfExists(file);
                } catch (IOException e) {
                    file.toFile().deleteOnExit();
                }
            }
        }
    }

    /** Deletes copies extracted by processes that are gone. */
    private static void removeStaleCopies(Path dir) {
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "tsm-jni-*.so")) {
            for (Path f : files) {
                Matcher m = COPY.matcher(f.getFileName().toString());
                if (!m.matches()) {
                    continue;
                }
                long pid;
                try {
                    pid = Long.parseLong(m.group(1));
                } catch (NumberFormatException e) {
                    continue;
                }
                Optional<ProcessHandle> p = ProcessHandle.of(pid);
                if (p.isEmpty() || !p.get().isAlive()) {
                    try {
                        Files.deleteIfExists(f);
                    } catch (IOException e) {
                        LOG.debug("cannot remove stale native copy {}: {}", f, e.toString());
                    }
                }
            }
        } catch (IOException e) {
            LOG.debug("cannot list {} for stale native copies: {}", dir, e.toString());
        }
    }
}
