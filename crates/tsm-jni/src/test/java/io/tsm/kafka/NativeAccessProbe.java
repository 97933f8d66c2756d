package io.tsm.kafka;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Configures and closes one plugin instance on a filesystem bucket, outside JUnit, so that
 * {@code scripts/test.d/50-jni.sh} can run it on JDK 25 with {@code --illegal-native-access=deny}
 * (JEP 472): with {@code --enable-native-access=ALL-UNNAMED} it must print {@code ok}; without,
 * the plugin must fail {@code configure} with a message naming that flag. Prints one line:
 * {@code ok}, or the exception's class and message; exits 0 or 3.
 */
public final class NativeAccessProbe {
    private NativeAccessProbe() {}

    public static void main(String[] args) throws Exception {
        Path root = Files.createTempDirectory("tsm-native-access");
        TsmRemoteStorageManager rsm = new TsmRemoteStorageManager();
        try {
            rsm.configure(Fixtures.config(root));
            rsm.close();
            System.out.println("ok");
        } catch (Throwable e) {
            System.out.println(e.getClass().getName() + ": " + e.getMessage());
            System.exit(3);
        }
    }
}
