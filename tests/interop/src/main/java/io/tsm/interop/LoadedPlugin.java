package io.tsm.interop;

import java.lang.reflect.Constructor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;

/**
 * One plugin loaded the way a broker loads {@code remote.log.storage.manager.class.path}:
 * Kafka's own {@code ChildFirstClassLoader} over {@code DIR/*} with this driver's loader
 * (Kafka's classes) as parent, and the thread context class loader set to it during every
 * call, as Kafka's {@code ClassLoaderAwareRemoteStorageManager} does (the Java plugin needs
 * that to resolve {@code storage.backend.class}). Reads of returned streams run without it,
 * as in the broker.
 */
final class LoadedPlugin {
    /** The two plugins: name on the command line, class name, plugin directory. */
    enum Kind {
        AIVEN("io.aiven.kafka.tieredstorage.RemoteStorageManager"),
        TSM("io.tsm.kafka.TsmRemoteStorageManager");

        final String className;

        Kind(String className) {
            this.className = className;
        }

        static Kind of(String name) {
            return switch (name) {
                case "aiven" -> AIVEN;
                case "tsm" -> TSM;
                default -> throw new IllegalArgumentException("plugin must be aiven or tsm, not '" + name + "'");
            };
        }

        String label() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /** A call into the plugin that may throw the RSM's checked exception. */
    interface Call<T> {
        T run(RemoteStorageManager rsm) throws RemoteStorageException;
    }

    final Kind kind;
    private final ClassLoader loader;

    private LoadedPlugin(Kind kind, ClassLoader loader) {
        this.kind = kind;
        this.loader = loader;
    }

    /**
     * Creates the class loader for {@code dir} (a plugin directory: the plugin jar and its
     * dependencies, no Kafka classes). Kafka moved {@code ChildFirstClassLoader} from
     * {@code common.utils} (4.2) to {@code common.utils.internals} (4.4): both are tried.
     */
    static LoadedPlugin load(Kind kind, Path dir) throws ReflectiveOperationException {
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException(kind.label() + " plugin directory " + dir + " does not exist");
        }
        String classPath = dir.toAbsolutePath().resolve("*").toString();
        ClassLoader parent = LoadedPlugin.class.getClassLoader();
        ReflectiveOperationException last = null;
        for (String name : new String[] {"org.apache.kafka.common.utils.internals.ChildFirstClassLoader",
                "org.apache.kafka.common.utils.ChildFirstClassLoader"}) {
            try {
                Constructor<?> c = Class.forName(name).getConstructor(String.class, ClassLoader.class);
                return new LoadedPlugin(kind, (ClassLoader) c.newInstance(classPath, parent));
            } catch (ClassNotFoundException e) {
                last = e;
            }
        }
        throw last;
    }

    /** A new, configured instance (the broker makes one per broker; tests make one per config). */
    RemoteStorageManager create(Map<String, ?> config) throws Exception {
        ClassLoader before = Thread.currentThread().getContextClassLoader();
        Thread.currentThread().setContextClassLoader(loader);
        try {
            Class<?> c = Class.forName(kind.className, true, loader);
            RemoteStorageManager rsm = (RemoteStorageManager) c.getDeclaredConstructor().newInstance();
            rsm.configure(config);
            return rsm;
        } finally {
            Thread.currentThread().setContextClassLoader(before);
        }
    }

    /** Runs {@code call} on {@code rsm} with the thread context class loader set to the plugin's. */
    <T> T call(RemoteStorageManager rsm, Call<T> call) throws RemoteStorageException {
        ClassLoader before = Thread.currentThread().getContextClassLoader();
        Thread.currentThread().setContextClassLoader(loader);
        try {
            return call.run(rsm);
        } finally {
            Thread.currentThread().setContextClassLoader(before);
        }
    }

    /** Closes {@code rsm} with the plugin's context class loader. */
    void close(RemoteStorageManager rsm) throws java.io.IOException {
        ClassLoader before = Thread.currentThread().getContextClassLoader();
        Thread.currentThread().setContextClassLoader(loader);
        try {
            rsm.close();
        } finally {
            Thread.currentThread().setContextClassLoader(before);
        }
    }
}
