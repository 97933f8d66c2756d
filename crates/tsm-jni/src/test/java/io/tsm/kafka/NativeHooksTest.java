package io.tsm.kafka;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The plugin under forced failures: native panics (in an entry point, in a task), ops that
 * never finish (interrupts), native log lines (SLF4J, redaction). They are forced through
 * {@code NativeBridge.testHook}, which only a library built with the cargo feature
 * {@code test-hooks} exports; the shipped one does not (scripts/test.d/50-jni.sh checks).
 * This class runs in its own surefire execution (pom.xml, {@code native-hooks}) with
 * {@code -Dtsm.native.library} set to that dev build (crates/tsm-jni/build.sh builds it).
 */
class NativeHooksTest {
    /** The dev library NativeLoader loads ({@code tsm.native.library}). */
    private static Path library;

    private Path work;
    private TsmRemoteStorageManager rsm;

    @BeforeAll
    static void requireHooksLibrary() {
        String lib = System.getProperty(NativeLoader.LIBRARY_PROPERTY, "");
        assertTrue(!lib.isBlank() && Files.isRegularFile(Path.of(lib)),
                "NativeHooksTest needs a libtsm_jni built with the cargo feature test-hooks, given as "
                        + "-Dtsm.test.hooks.library=<file> (crates/tsm-jni/build.sh does it); got '" + lib + "'");
        library = Path.of(lib).toAbsolutePath();
    }

    @BeforeEach
    void setUp() throws IOException {
        work = Fixtures.work("hooks");
        rsm = new TsmRemoteStorageManager();
        rsm.configure(Fixtures.config(work.resolve("bucket")));
    }

    @AfterEach
    void tearDown() {
        rsm.close();
    }

    @Test
    void nativePanicsBecomeExceptions() throws Exception {
        long h = rsm.nativeHandle();
        RuntimeException direct = assertThrows(RuntimeException.class, () -> NativeBridge.testHook(h, 1, "boom-entry"));
        assertTrue(direct.getMessage().contains("boom-entry"), direct.getMessage());
        assertTrue(direct.getMessage().contains("exports.rs"), "location: " + direct.getMessage());
        assertRawFramesResolve(direct.getMessage());

        long op = NativeBridge.testHook(h, 2, "boom-task");
        RemoteStorageException inTask = assertThrows(RemoteStorageException.class, () -> Calls.await(op, "test"));
        assertTrue(inTask.getMessage().contains("native panic"), inTask.getMessage());
        assertTrue(inTask.getMessage().contains("boom-task"), inTask.getMessage());
        assertRawFramesResolve(inTask.getMessage());

        // The plugin still works afterwards.
        Fixtures.Segment s = Fixtures.segment(work.resolve("local"), 5000, false, 7);
        rsm.copyLogSegmentData(s.metadata, s.data);
        try (InputStream in = rsm.fetchLogSegment(s.metadata, 0)) {
            assertArrayEquals(s.log, in.readAllBytes());
        }
        NativeBridge.testHook(0, 3, "warn and error from native code (expected in the test log)");
    }

    /**
     * A panic message must carry the build-id and the raw frame offsets (all a stripped
     * shipped library can give), and (when addr2line is installed) those offsets must
     * resolve to the panicking source file in the library's debug info.
     */
    private static void assertRawFramesResolve(String message) throws Exception {
        if (!NativeLoader.platform().startsWith("linux")) {
            return;
        }
        java.util.regex.Matcher m = java.util.regex.Pattern
                .compile("native frames \\(libtsm_jni build-id ([0-9a-f]{16,}), load base 0x[0-9a-f]+, [^)]*\\):((?: 0x[0-9a-f]+)+)")
                .matcher(message);
        assertTrue(m.find(), "build-id and raw frames in: " + message);
        // The library under test is the dev build, not stripped: it carries its own DWARF.
        Path debug = library;
        java.util.List<String> cmd = new java.util.ArrayList<>(java.util.List.of("addr2line", "-Cfipe", debug.toString()));
        cmd.addAll(java.util.List.of(m.group(2).trim().split(" ")));
        Process p;
        try {
            p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        } catch (java.io.IOException e) {
            return; // no addr2line (binutils) here
        }
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), out);
        assertTrue(out.contains("exports.rs"), "addr2line " + m.group(2) + " on " + debug + ":\n" + out);
    }

    @Test
    void interruptedThreadGetsExceptionAndNativeOpIsCancelled() throws Exception {
        long op = NativeBridge.testHook(rsm.nativeHandle(), 4, "");
        Thread.currentThread().interrupt();
        RemoteStorageException e = assertThrows(RemoteStorageException.class, () -> Calls.await(op, "never ending"));
        assertTrue(e.getMessage().contains("interrupted"), e.getMessage());
        assertTrue(Thread.interrupted(), "interrupt flag restored");
        assertEquals(NativeBridge.CLOSED, NativeBridge.await(op, 1), "op freed");

        // A blocked reader is interrupted too.
        Fixtures.Segment s = Fixtures.segment(work.resolve("local"), 50_000, false, 8);
        rsm.copyLogSegmentData(s.metadata, s.data);
        try (InputStream in = rsm.fetchLogSegment(s.metadata, 0)) {
            Thread.currentThread().interrupt();
            assertThrows(java.io.InterruptedIOException.class, () -> in.read(new byte[10], 0, 10));
            assertTrue(Thread.interrupted());
            assertEquals(s.log[0], (byte) in.read(), "stream still usable after the interrupt");
        }
        Fixtures.assertNoLeaks();
    }

    @Test
    void interruptDuringANativeWaitEndsItPromptly() throws Exception {
        long op = NativeBridge.testHook(rsm.nativeHandle(), 4, "");
        CountDownLatch waiting = new CountDownLatch(1);
        Throwable[] outcome = new Throwable[1];
        boolean[] flagRestored = new boolean[1];
        Thread waiter = new Thread(() -> {
            waiting.countDown();
            try {
                Calls.await(op, "never ending");
            } catch (Throwable t) {
                outcome[0] = t;
                flagRestored[0] = Thread.currentThread().isInterrupted();
            }
        });
        waiter.start();
        waiting.await();
        waiter.interrupt();
        waiter.join();
        assertTrue(outcome[0] instanceof RemoteStorageException, String.valueOf(outcome[0]));
        assertTrue(outcome[0].getMessage().contains("interrupted"), outcome[0].getMessage());
        assertTrue(flagRestored[0], "interrupt flag restored");
        Fixtures.assertNoLeaks();
    }

    @Test
    void nativeWarningsAndErrorsReachSlf4j() throws Exception {
        String logFile = System.getProperty("org.slf4j.simpleLogger.logFile");
        org.junit.jupiter.api.Assumptions.assumeTrue(logFile != null && !logFile.equals("System.err"),
                "slf4j-simple writes to a file only under the Maven build (pom.xml)");
        String marker = "native-log-marker-" + java.util.UUID.randomUUID();
        NativeBridge.testHook(0, 3, marker);
        Path file = Path.of(logFile);
        // The log pump drains asynchronously: poll, bounded.
        String text = "";
        for (int i = 0; i < 200 && !(text.contains("WARN io.tsm.kafka.native.tsm_jni.test - " + marker)
                && text.contains("ERROR io.tsm.kafka.native.tsm_jni.test - " + marker)); i++) {
            Thread.sleep(25);
            text = java.nio.file.Files.exists(file) ? java.nio.file.Files.readString(file) : "";
        }
        assertTrue(text.contains("WARN io.tsm.kafka.native.tsm_jni.test - " + marker), "warn reached SLF4J");
        assertTrue(text.contains("ERROR io.tsm.kafka.native.tsm_jni.test - " + marker), "error reached SLF4J");
    }

    @Test
    void startupLineReachesSlf4jAndSecretsAreRedacted() throws Exception {
        String logFile = System.getProperty("org.slf4j.simpleLogger.logFile");
        org.junit.jupiter.api.Assumptions.assumeTrue(logFile != null && !logFile.equals("System.err"),
                "slf4j-simple writes to a file only under the Maven build (pom.xml)");
        String secret = "junit-secret-" + java.util.UUID.randomUUID();
        Map<String, Object> config = Fixtures.config(work.resolve("bucket-redaction"));
        // Unknown to the filesystem backend, but named like a secret: registered for redaction.
        config.put("storage.sas.token", secret);
        config.put("tsm.log.filter", "tsm_jni=info");
        TsmRemoteStorageManager other = new TsmRemoteStorageManager();
        other.configure(config);
        other.close();
        String marker = "redaction-marker-" + java.util.UUID.randomUUID();
        NativeBridge.testHook(0, 3, marker + " " + secret + " Authorization: Bearer abc.def.ghi");
        Path file = Path.of(logFile);
        String text = "";
        for (int i = 0; i < 200 && !text.contains(marker); i++) {
            Thread.sleep(25);
            text = java.nio.file.Files.exists(file) ? java.nio.file.Files.readString(file) : "";
        }
        assertTrue(text.contains(marker + " **** Authorization: ****"), "redacted record reached SLF4J");
        assertFalse(text.contains(secret), "a registered secret reached the log");
        assertFalse(text.contains("abc.def.ghi"), "a bearer token reached the log");
        assertTrue(text.contains("INFO io.tsm.kafka.native.tsm_jni.instance - tsm ") && text.contains(
                " configured: backend filesystem, native log filter warn,tsm_core=info,"), "startup line");
        assertTrue(text.contains(",tsm_jni=info, settings storage.backend.class=filesystem, chunk.size="),
                "startup line lists the settings");
    }
}
