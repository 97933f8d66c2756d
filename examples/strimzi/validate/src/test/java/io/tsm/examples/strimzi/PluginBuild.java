package io.tsm.examples.strimzi;

import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the plugin's build says about the plugin directory, read from its sources: the jar's
 * version (crates/tsm-jni/pom.xml), the names crates/tsm-jni/build.sh gives the files of
 * {@code target/plugin/} on linux-x86_64, and the library name NativeLoader looks for beside
 * the jar. Each reader fails naming the file and what it looked for when the text changed.
 */
final class PluginBuild {
    private PluginBuild() {}

    static final String POM = "crates/tsm-jni/pom.xml";
    static final String BUILD_SH = "crates/tsm-jni/build.sh";
    static final String LOADER = "crates/tsm-jni/src/main/java/io/tsm/kafka/NativeLoader.java";
    static final String RSM_SOURCE = "crates/tsm-jni/src/main/java/io/tsm/kafka/TsmRemoteStorageManager.java";
    /** The plugin class the Kafka resource names. */
    static final String RSM_CLASS = "io.tsm.kafka.TsmRemoteStorageManager";

    /** The project version of the plugin's pom (its first {@code <version>}). */
    static String version() {
        return find(POM, "<version>([^<]+)</version>", "the project <version>");
    }

    /** The jar's file name: {@code tsm-kafka-plugin-<version>.jar} (build.sh's {@code jar=...}). */
    static String jarName() {
        String pattern = find(BUILD_SH, "jar=\"\\$here/target/(tsm-kafka-plugin-\\$version\\.jar)\"", "jar=\"$here/target/tsm-kafka-plugin-$version.jar\"");
        return pattern.replace("$version", version());
    }

    /** The library's file name on linux-x86_64 (build.sh's platform case). */
    static String libraryName() {
        return find(BUILD_SH, "Linux-x86_64\\)\\s*platform=linux-x86_64;\\s*lib=(\\S+?)\\s*;;", "the Linux-x86_64 case's lib=");
    }

    /** The files build.sh puts in target/plugin/: the jar and the library, nothing else. */
    static List<String> pluginFiles() {
        String sh = Repo.read(BUILD_SH);
        for (String needle : List.of("plugin=\"$here/target/plugin\"", "cp \"$jar\" \"$new/\"", "cp \"$native/$lib\" \"$new/$lib\"", "mv \"$new\" \"$plugin\"")) {
            if (!sh.contains(needle)) {
                throw new AssertionError(BUILD_SH + " no longer lays out target/plugin/ as this test knows it (no " + needle
                        + "); update PluginBuild and the Dockerfile together");
            }
        }
        long copies = Pattern.compile("(?m)^\\s*cp .*\"\\$new/").matcher(sh).results().count();
        if (copies != 2) {
            throw new AssertionError(BUILD_SH + " copies " + copies + " files into the plugin directory; this test knows two (jar, library)");
        }
        return List.of(jarName(), libraryName());
    }

    /** The library name NativeLoader resolves beside the jar on Linux. */
    static String loaderLibraryName() {
        String src = Repo.read(LOADER);
        if (!src.contains("jar.getParent().resolve(libraryFileName())")) {
            throw new AssertionError(LOADER + " no longer resolves libraryFileName() beside the jar");
        }
        return find(LOADER, "\\?\\s*\"libtsm_jni\\.dylib\"\\s*:\\s*\"([^\"]+)\"", "libraryFileName()'s non-macOS name");
    }

    private static String find(String file, String regex, String what) {
        Matcher m = Pattern.compile(regex).matcher(Repo.read(file));
        if (!m.find()) {
            throw new AssertionError(file + ": cannot find " + what);
        }
        return m.group(1);
    }
}
