package io.tsm.kafka;

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.security.CodeSource;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.ProtectionDomain;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads libtsm_jni once per class loader.
 *
 * <p>In place first: when {@code libtsm_jni.so} sits beside the plugin jar (the jar's own
 * directory, from this class's code source: the plugin directory build.sh lays out under
 * {@code target/plugin/}), is readable and is the library this jar was built with (its
 * SHA-256 matches the jar's {@code libtsm_jni.so.sha256}), it is loaded from there with no
 * copy: nothing needs to be writable, only that directory exec-mounted.
 *
 * <p>Otherwise (no such file, another build, a noexec mount, or a second class loader in
 * this JVM: a native library file can be bound to only one class loader per JVM, e.g. two
 * brokers in one JVM or a plugin reloaded) the loader extracts its own copy of the jar's
 * library under a unique name {@code tsm-jni-<pid>-<random>.so}, loads it and deletes the
 * file (the mapping stays valid on Linux). Copies left by crashed processes (their pid no
 * longer alive) are removed first.
 *
 * <p>Library inside the jar: {@code /io/tsm/kafka/native/<os>-<arch>/libtsm_jni.so}, e.g.
 * {@code linux-x86_64}. Extraction directory (writable and exec-mounted), first found wins:
 * the plugin config key {@value #DIR_CONFIG}, the system property {@value #DIR_PROPERTY}, the
 * environment variable {@code TSM_NATIVE_DIR}, {@code java.io.tmpdir}. The system property
 * {@value #LIBRARY_PROPERTY} loads a given file instead of both.
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

    /** The JVM option that lets the plugin (an unnamed module) load native code (JEP 472). */
    static final String NATIVE_ACCESS_FLAG = "--enable-native-access=ALL-UNNAMED";

    /**
     * Loads the library if this class loader has not yet; {@code configDir} may be null.
     *
     * @throws IllegalCallerException naming {@value #NATIVE_ACCESS_FLAG} when the JVM refuses
     *     native access to unnamed modules ({@code --illegal-native-access=deny}, JDK 24+)
     */
    static synchronized void ensureLoaded(String configDir) {
        if (loaded) {
            return;
        }
        try {
            String explicit = System.getProperty(LIBRARY_PROPERTY);
            if (explicit != null && !explicit.isBlank()) {
                System.load(Paths.get(explicit).toAbsolutePath().toString());
            } else if (!loadBesideJar()) {
                loadFromJar(configDir);
            }
        } catch (IllegalCallerException e) {
            throw new IllegalCallerException("tsm: this JVM refuses to load the plugin's native library ("
                    + e.getMessage() + "): start the broker with " + NATIVE_ACCESS_FLAG
                    + ", e.g. the environment variable JDK_JAVA_OPTIONS=" + NATIVE_ACCESS_FLAG
                    + " (Strimzi: spec.template.kafkaContainer.env of the broker node pool)", e);
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

    /** The jar this class was loaded from, or null (a classes directory, no code source). */
    static Path ownJar() {
        try {
            ProtectionDomain pd = NativeLoader.class.getProtectionDomain();
            CodeSource cs = pd == null ? null : pd.getCodeSource();
            URL url = cs == null ? null : cs.getLocation();
            if (url == null || !"file".equalsIgnoreCase(url.getProtocol())) {
                return null;
            }
            Path jar = Paths.get(url.toURI()).toAbsolutePath();
            return Files.isRegularFile(jar) ? jar : null;
        } catch (SecurityException | java.net.URISyntaxException | IllegalArgumentException
                | java.nio.file.FileSystemNotFoundException e) {
            return null;
        }
    }

    /**
     * Loads the library beside the plugin jar in place; false (after logging why) when there
     * is none or it cannot be used, and the caller extracts a copy from the jar instead.
     */
    private static boolean loadBesideJar() {
        Path jar = ownJar();
        if (jar == null || jar.getParent() == null) {
            return false;
        }
        Path lib = jar.getParent().resolve(libraryFileName());
        if (!Files.isRegularFile(lib)) {
            return false;
        }
        if (!Files.isReadable(lib)) {
            LOG.warn("tsm: {} is not readable; extracting the jar's native library instead", lib);
            return false;
        }
        String expected = expectedSha256();
        if (expected != null) {
            String actual;
            try {
                actual = sha256(lib);
            } catch (IOException e) {
                LOG.warn("tsm: cannot read {} ({}); extracting the jar's native library instead", lib, e.toString());
                return false;
            }
            if (!expected.equals(actual)) {
                LOG.warn("tsm: {} is not the native library of {} (SHA-256 {}, the jar's is {}): "
                        + "extracting the jar's own copy instead; replace the file with the one built with the jar",
                        lib, jar.getFileName(), actual, expected);
                return false;
            }
        }
        try {
            System.load(lib.toString());
        } catch (UnsatisfiedLinkError e) {
            // Already bound to another class loader of this JVM (a second plugin instance),
            // or the directory is mounted noexec: fall back to a private copy.
            LOG.info("tsm: cannot load {} in place ({}); extracting a copy", lib, e.getMessage());
            return false;
        }
        LOG.info("tsm: loaded native library {} in place (beside the plugin jar)", lib);
        return true;
    }

    /** The SHA-256 (hex) build.sh recorded for the jar's library, or null if the jar has none. */
    private static String expectedSha256() {
        String resource = "/io/tsm/kafka/native/" + platform() + "/" + libraryFileName() + ".sha256";
        try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
            if (in == null) {
                return null;
            }
            String text = new String(in.readAllBytes(), StandardCharsets.US_ASCII).trim();
            int space = text.indexOf(' ');
            return (space < 0 ? text : text.substring(0, space)).toLowerCase(Locale.ROOT);
        } catch (IOException e) {
            return null;
        }
    }

    static String sha256(Path file) throws IOException {
        MessageDigest md;
        try {
            md = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IOException(e);
        }
        byte[] buf = new byte[1 << 16];
        try (InputStream in = Files.newInputStream(file)) {
            for (int n; (n = in.read(buf)) > 0; ) {
                md.update(buf, 0, n);
            }
        }
        return HexFormat.of().formatHex(md.digest());
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
            LOG.info("tsm: loaded native library {} extracted from the plugin jar (file removed once loaded)", file);
        } catch (IOException e) {
            UnsatisfiedLinkError err = new UnsatisfiedLinkError("tsm: cannot extract " + resource + " into "
                    + dir + " (put " + libraryFileName() + " beside the plugin jar, as in build.sh's"
                    + " target/plugin/, to load it in place; or set rsm.config." + DIR_CONFIG + ", -D"
                    + DIR_PROPERTY + " or TSM_NATIVE_DIR to a writable, exec-mounted directory): " + e);
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
