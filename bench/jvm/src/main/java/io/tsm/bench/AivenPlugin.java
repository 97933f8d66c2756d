package io.tsm.bench;

import java.io.IOException;
import java.lang.reflect.Constructor;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.apache.kafka.server.log.remote.storage.ClassLoaderAwareRemoteStorageManager;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;

/**
 * The real Java plugin (Aiven tiered-storage-for-apache-kafka, class {@value #CLASS}) loaded
 * the way a broker loads {@code remote.log.storage.manager.class.path}: Kafka's own
 * {@code ChildFirstClassLoader} over {@code DIR/*} (the plugin jar and its dependencies, no
 * Kafka classes) with the harness's loader as parent, wrapped in Kafka's
 * {@link ClassLoaderAwareRemoteStorageManager}, which sets the thread context class loader to
 * the plugin's during every call (the plugin needs it to resolve {@code storage.backend.class}).
 * The same approach as tests/interop's driver; the harness's own AWS SDK is hidden from the
 * plugin ({@link HarnessOnlyHidden}), as a broker's class path has none.
 *
 * <p>DIR: {@code TSM_AIVEN_PLUGIN_DIR} (bench/jvm/run.sh sets it; default there
 * {@code $TSM_ROOT/../shared/aiven-rsm-1.1.1/plugin}). It runs on Kafka &lt;= 4.2 classes
 * (4.4.0's lack {@code common.utils.ByteBufferInputStream}): run.sh starts its JVMs on 4.2.2.
 */
final class AivenPlugin {
    static final String CLASS = "io.aiven.kafka.tieredstorage.RemoteStorageManager";
    static final String ENV_DIR = "TSM_AIVEN_PLUGIN_DIR";
    static final String JAR_PREFIX = "aiven-tiered-storage-for-apache-kafka-";
    /** Its backends, by full class name (it accepts no short names). */
    static final String FILESYSTEM = "io.aiven.kafka.tieredstorage.storage.filesystem.FileSystemStorage";
    static final String S3 = "io.aiven.kafka.tieredstorage.storage.s3.S3Storage";

    private static AivenPlugin loaded;

    private final Path dir;
    private final String version;
    private final ClassLoader loader;

    private AivenPlugin(Path dir, String version, ClassLoader loader) {
        this.dir = dir;
        this.version = version;
        this.loader = loader;
    }

    /** The plugin of {@code TSM_AIVEN_PLUGIN_DIR}, loaded once per JVM. */
    static synchronized AivenPlugin get() throws ReflectiveOperationException, IOException {
        if (loaded == null) {
            String d = System.getenv(ENV_DIR);
            if (d == null || d.isBlank()) {
                throw new IllegalStateException(ENV_DIR + " is not set: point it at the Java plugin's plugin/ directory "
                        + "(aiven-rsm-1.1.1/plugin; bench/jvm/run.sh sets it)");
            }
            loaded = load(Path.of(d));
        }
        return loaded;
    }

    /** Loads the plugin directory {@code dir}; errors name the directory. */
    static AivenPlugin load(Path dir) throws ReflectiveOperationException, IOException {
        String version = version(dir);
        String classPath = dir.toAbsolutePath().resolve("*").toString();
        ClassLoader parent = new HarnessOnlyHidden(AivenPlugin.class.getClassLoader());
        // Kafka moved it from common.utils (4.2) to common.utils.internals (4.4).
        ReflectiveOperationException last = null;
        for (String name : new String[] {"org.apache.kafka.common.utils.ChildFirstClassLoader",
                "org.apache.kafka.common.utils.internals.ChildFirstClassLoader"}) {
            try {
                Constructor<?> c = Class.forName(name).getConstructor(String.class, ClassLoader.class);
                return new AivenPlugin(dir, version, (ClassLoader) c.newInstance(classPath, parent));
            } catch (ClassNotFoundException e) {
                last = e;
            }
        }
        throw last;
    }

    /**
     * The harness's class loader without the harness's own AWS SDK (it needs one for MinIO;
     * a broker's class path has none). Child-first loading still lists the parent's
     * {@code META-INF/services} files: the plugin's SDK (2.34) then found the harness's
     * {@code Apache5SdkHttpService} (2.59), a class of the parent's SDK, and its S3 client
     * failed with "not a subtype". Hidden: classes and resources under software.amazon.awssdk.
     */
    static final class HarnessOnlyHidden extends ClassLoader {
        private static final String CLASSES = "software.amazon.awssdk.";
        private static final String[] RESOURCES = {"software/amazon/awssdk/", "META-INF/services/software.amazon.awssdk."};

        static {
            registerAsParallelCapable();
        }

        HarnessOnlyHidden(ClassLoader parent) {
            super(parent);
        }

        private static boolean hidden(String resource) {
            for (String p : RESOURCES) {
                if (resource.startsWith(p)) {
                    return true;
                }
            }
            return false;
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (name.startsWith(CLASSES)) {
                throw new ClassNotFoundException(name + " (the harness's AWS SDK is hidden from the Java plugin)");
            }
            return super.loadClass(name, resolve);
        }

        @Override
        public java.net.URL getResource(String name) {
            return hidden(name) ? null : super.getResource(name);
        }

        @Override
        public java.util.Enumeration<java.net.URL> getResources(String name) throws IOException {
            return hidden(name) ? java.util.Collections.emptyEnumeration() : super.getResources(name);
        }
    }

    /** The version in the plugin jar's name ({@value #JAR_PREFIX}VERSION.jar). */
    static String version(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            throw new IOException("the Java plugin directory " + dir + " (" + ENV_DIR + ") does not exist");
        }
        try (DirectoryStream<Path> jars = Files.newDirectoryStream(dir, JAR_PREFIX + "*.jar")) {
            for (Path jar : jars) {
                String n = jar.getFileName().toString();
                return n.substring(JAR_PREFIX.length(), n.length() - ".jar".length());
            }
        }
        throw new IOException("no " + JAR_PREFIX + "*.jar in " + dir + " (" + ENV_DIR + "): not the Java plugin's plugin/ directory");
    }

    /** The result subject, e.g. {@code aiven-1.1.1}. */
    String subject() {
        return "aiven-" + version;
    }

    /** A new, unconfigured instance inside the broker's class-loader-aware wrapper. */
    RemoteStorageManager create() throws ReflectiveOperationException {
        ClassLoader before = Thread.currentThread().getContextClassLoader();
        Thread.currentThread().setContextClassLoader(loader);
        try {
            Class<?> c = Class.forName(CLASS, true, loader);
            return new ClassLoaderAwareRemoteStorageManager((RemoteStorageManager) c.getDeclaredConstructor().newInstance(),
                    loader);
        } catch (ClassNotFoundException e) {
            throw new ClassNotFoundException(CLASS + " is not in " + dir, e);
        } finally {
            Thread.currentThread().setContextClassLoader(before);
        }
    }

    /**
     * {@code config} (the harness's map, tsm's short backend names) as the Java plugin takes
     * it: full backend class names; {@code storage.root} created (it must exist there). Every
     * other key (chunk.size, compression.*, encryption.*, key.prefix, storage.s3.*,
     * storage.aws.*) has the same name in both plugins. tsm reads the result too.
     */
    static Map<String, Object> translate(Map<String, Object> config) throws IOException {
        Object backend = config.get("storage.backend.class");
        if ("filesystem".equals(backend)) {
            config.put("storage.backend.class", FILESYSTEM);
            Files.createDirectories(Path.of(String.valueOf(config.get("storage.root"))));
        } else if ("s3".equals(backend)) {
            config.put("storage.backend.class", S3);
        }
        return config;
    }
}
