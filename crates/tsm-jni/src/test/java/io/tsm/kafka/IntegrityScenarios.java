package io.tsm.kafka;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongUnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager.IndexType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Segment integrity (docs/security.md, {@code crates/tsm-core/tests/engine_integrity.rs})
 * checked through the plugin jar: {@link TsmRemoteStorageManager} (Java, JNI, the native engine)
 * configured as the broker does, while the test plays a writer of the bucket and changes the
 * stored objects directly through a {@link Bucket} (files under {@code storage.root} for
 * {@link IntegrityTest}, S3 calls to MinIO for {@link IntegrityIT}). Every read after a change
 * is made by a fresh instance (nothing cached), in each mode: plain, zstd
 * ({@code compression.enabled}), aes ({@code encryption.enabled}, RSA key pair generated here),
 * zstd+aes.
 *
 * <ol>
 *   <li>positive control: a copied segment, and each of its five indexes, reads back
 *       byte-identical, and its manifest carries {@code tsmIntegrity} (one digest per chunk, a
 *       MAC exactly when encrypted); every other case repeats this check before it tampers;
 *   <li>a flipped bit in the middle of {@code .log}: reading the segment fails (at
 *       fetchLogSegment or in the stream) naming the {@code .log} object and the chunk, and never
 *       serves a wrong byte; a range of an untouched chunk still reads;
 *   <li>two stored chunks of equal size swapped (plain, aes): refused, naming chunk 0;
 *   <li>{@code chunkIndex.originalFileSize} in the manifest reduced by 1: refused (encrypted:
 *       the MAC or a chunkIndex bound; plain: a chunkIndex bound; zstd: the last chunk's decoded
 *       length);
 *   <li>another topic's segment (other topic id and partition) copied over this segment's three
 *       keys: fetchLogSegment and fetchIndex refuse it as "not for the segment asked for";
 *   <li>a plaintext segment at an encrypted segment's keys (copied, deleted, copied again by an
 *       instance without encryption): the encrypted instance refuses it naming
 *       {@code tsm.encryption.plaintext.reads}; with that key {@code true} it reads;
 *   <li>a hostile manifest (a {@code fixed} chunk index of chunk size 1 and file size 2^62 or
 *       2^40, and one of 2^24 chunks of 128 bytes the objects do not hold): fetchLogSegment,
 *       fetchIndex and deleteLogSegmentData each end within 10 s (the first two with an error
 *       naming chunkIndex over the bounds), and the delete removes every object of the segment.
 * </ol>
 */
abstract class IntegrityScenarios {
    /** {@code chunk.size}. */
    static final int CHUNK = 4096;
    /** A segment: ten whole chunks and a short last one. */
    static final int SIZE = 10 * CHUNK + 1234;
    /** What AES-GCM adds to each stored chunk (IV and tag). */
    static final int AES_OVERHEAD = 28;
    /** {@code key.prefix}. */
    static final String KEY_PREFIX = "integrity/";
    /** Every call on a hostile manifest ends within this. */
    static final Duration LIMIT = Duration.ofSeconds(10);
    /** The key pair's id. */
    static final String KEY_PAIR = "k1";

    /** One mode of the format. */
    enum Mode {
        PLAIN(false, false),
        ZSTD(true, false),
        AES(false, true),
        ZSTD_AES(true, true);

        final boolean zstd;
        final boolean aes;

        Mode(boolean zstd, boolean aes) {
            this.zstd = zstd;
            this.aes = aes;
        }

        /** The same compression, without encryption. */
        Mode plaintext() {
            return zstd ? ZSTD : PLAIN;
        }
    }

    /**
     * The store under test, read and written directly (as a writer of the bucket would, not
     * through the plugin). Keys are object keys ({@code key.prefix} included).
     */
    interface Bucket extends AutoCloseable {
        /** The plugin's backend keys ({@code storage.*}) for this store. */
        Map<String, Object> backend();

        byte[] get(String key) throws IOException;

        void put(String key, byte[] bytes) throws IOException;

        /** Every key in the store. */
        List<String> list() throws IOException;

        /** Best effort: leaves the store as found. */
        @Override
        default void close() {}
    }

    /** The store of one test; {@code test} is a name for it (lower case, digits, '-'). */
    protected abstract Bucket bucket(Path work, String test) throws Exception;

    private static KeyPair keyPair;

    private Path work;
    private Bucket bucket;
    private final List<TsmRemoteStorageManager> instances = new ArrayList<>();

    @BeforeEach
    void setUp(TestInfo info) throws Exception {
        String method = info.getTestMethod().map(java.lang.reflect.Method::getName).orElse("test");
        String test = (method.replaceAll("([a-z])([A-Z])", "$1-$2") + "-"
                + info.getDisplayName().replaceAll("[^A-Za-z0-9]+", "-")).toLowerCase(Locale.ROOT)
                .replaceAll("-+", "-").replaceAll("-$", "");
        work = Fixtures.work("integrity-" + test);
        bucket = bucket(work, test);
    }

    @AfterEach
    void tearDown() {
        for (TsmRemoteStorageManager rsm : instances) {
            rsm.close();
        }
        instances.clear();
        if (bucket != null) {
            bucket.close();
        }
        Fixtures.assertNoLeaks();
    }

    void log(String format, Object... args) {
        System.err.printf("[" + getClass().getSimpleName() + "] " + format + "%n", args);
    }

    // ---- plugin instances, segments, keys -------------------------------------------------

    private static synchronized KeyPair keyPair() throws NoSuchAlgorithmException {
        if (keyPair == null) {
            KeyPairGenerator g = KeyPairGenerator.getInstance("RSA");
            g.initialize(2048);
            keyPair = g.generateKeyPair();
        }
        return keyPair;
    }

    /** PEM of {@code der}: base64 in lines of 64 characters. */
    static String pem(String type, byte[] der) {
        String body = Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der);
        return "-----BEGIN " + type + "-----\n" + body + "\n-----END " + type + "-----\n";
    }

    /** The encryption keys, the key pair written to the test's folder as PEM files. */
    private Map<String, Object> encryption() throws IOException, NoSuchAlgorithmException {
        Path pub = work.resolve(KEY_PAIR + "-public.pem");
        Path priv = work.resolve(KEY_PAIR + "-private.pem");
        if (!Files.exists(priv)) {
            KeyPair pair = keyPair();
            // getEncoded(): X.509 SubjectPublicKeyInfo and PKCS#8.
            Files.writeString(pub, pem("PUBLIC KEY", pair.getPublic().getEncoded()));
            Files.writeString(priv, pem("PRIVATE KEY", pair.getPrivate().getEncoded()));
        }
        Map<String, Object> c = new HashMap<>();
        c.put("encryption.enabled", "true");
        c.put("encryption.key.pair.id", KEY_PAIR);
        c.put("encryption.key.pairs", KEY_PAIR);
        c.put("encryption.key.pairs." + KEY_PAIR + ".public.key.file", pub.toString());
        c.put("encryption.key.pairs." + KEY_PAIR + ".private.key.file", priv.toString());
        return c;
    }

    /** A new configured instance of {@code mode} on the test's store, closed after the test. */
    TsmRemoteStorageManager open(Mode mode, Map<String, String> extra) throws Exception {
        Map<String, Object> c = new HashMap<>(bucket.backend());
        c.put("chunk.size", Integer.toString(CHUNK));
        c.put("key.prefix", KEY_PREFIX);
        c.put("broker.id", 1);
        c.put("compression.enabled", Boolean.toString(mode.zstd));
        if (mode.aes) {
            c.putAll(encryption());
        }
        c.putAll(extra);
        TsmRemoteStorageManager rsm = new TsmRemoteStorageManager();
        rsm.configure(c);
        instances.add(rsm);
        return rsm;
    }

    TsmRemoteStorageManager open(Mode mode) throws Exception {
        return open(mode, Map.of());
    }

    /** A segment of topic-a partition 3 (random bytes, all five indexes). */
    Fixtures.Segment segment(long seed) throws IOException {
        return Fixtures.segment(work.resolve("seg-" + seed), SIZE, true, seed);
    }

    /** A segment of {@code tip}. */
    Fixtures.Segment segment(long seed, TopicIdPartition tip) throws IOException {
        return Fixtures.segment(work.resolve("seg-" + seed), SIZE, true, seed, tip);
    }

    /** The three object keys of a segment. */
    record Keys(String log, String indexes, String manifest) {
        /** The keys without {@code key.prefix}: what errors are checked to name. */
        String tail(String key) {
            return key.substring(KEY_PREFIX.length());
        }
    }

    /** The keys of {@code s} as docs/object-format.md "Objects per segment" has them (object_keys.rs). */
    static Keys keysOf(Fixtures.Segment s) {
        RemoteLogSegmentMetadata m = s.metadata;
        TopicIdPartition tip = m.remoteLogSegmentId().topicIdPartition();
        String main = KEY_PREFIX + tip.topic() + "-" + tip.topicId() + "/" + tip.partition() + "/"
                + String.format("%020d", m.startOffset()) + "-" + m.remoteLogSegmentId().id();
        return new Keys(main + ".log", main + ".indexes", main + ".rsm-manifest");
    }

    /** The keys in the store of the segment {@code s} (matched on its segment id). */
    List<String> stored(Fixtures.Segment s) throws IOException {
        String id = s.metadata.remoteLogSegmentId().id().toString();
        List<String> out = new ArrayList<>();
        for (String k : bucket.list()) {
            if (k.contains(id)) {
                out.add(k);
            }
        }
        out.sort(null);
        return out;
    }

    /** The keys of {@code s}, checked to be exactly the three objects in the store. */
    Keys keys(Fixtures.Segment s) throws IOException {
        Keys k = keysOf(s);
        List<String> expected = new ArrayList<>(List.of(k.log(), k.indexes(), k.manifest()));
        expected.sort(null);
        assertEquals(expected, stored(s), "the objects of segment " + s.metadata.remoteLogSegmentId());
        return k;
    }

    /** Copies {@code s} with {@code writer} and checks it reads back through a fresh instance. */
    Keys copy(TsmRemoteStorageManager writer, Mode mode, Fixtures.Segment s) throws Exception {
        writer.copyLogSegmentData(s.metadata, s.data);
        Keys k = keys(s);
        TsmRemoteStorageManager check = open(mode);
        assertReadsBack(check, s, mode + ": before tampering");
        check.close();
        return k;
    }

    /** The whole segment, a range across chunks and every index, byte-identical. */
    void assertReadsBack(TsmRemoteStorageManager rsm, Fixtures.Segment s, String what) throws Exception {
        try (InputStream in = rsm.fetchLogSegment(s.metadata, 0)) {
            assertArrayEquals(s.log, Fixtures.readAll(in, 3000), what + ": the whole segment");
        }
        int from = CHUNK - 100;
        int to = 3 * CHUNK + 17;
        try (InputStream in = rsm.fetchLogSegment(s.metadata, from, to)) {
            assertArrayEquals(Fixtures.slice(s.log, from, to), Fixtures.readAll(in, 1000), what + ": a range");
        }
        for (IndexType t : IndexType.values()) {
            try (InputStream in = rsm.fetchIndex(s.metadata, t)) {
                assertArrayEquals(index(s, t), in.readAllBytes(), what + ": the " + t + " index");
            }
        }
    }

    static byte[] index(Fixtures.Segment s, IndexType t) {
        switch (t) {
            case OFFSET:
                return s.offsetIndex;
            case TIMESTAMP:
                return s.timeIndex;
            case PRODUCER_SNAPSHOT:
                return s.snapshot;
            case LEADER_EPOCH:
                return Fixtures.LEADER_EPOCH;
            case TRANSACTION:
                return s.txnIndex;
            default:
                throw new AssertionError(t);
        }
    }

    // ---- expected failures -----------------------------------------------------------------

    static List<Throwable> chain(Throwable e) {
        List<Throwable> chain = new ArrayList<>();
        for (Throwable t = e; t != null && !chain.contains(t); t = t.getCause()) {
            chain.add(t);
        }
        return chain;
    }

    static String describe(Throwable e) {
        StringBuilder b = new StringBuilder();
        for (Throwable t : chain(e)) {
            b.append(b.length() == 0 ? "" : " <- caused by ").append(t.getClass().getName()).append(": ")
                    .append(t.getMessage());
        }
        return b.toString();
    }

    /**
     * Reads bytes {@code from}-{@code to} of {@code s} ({@code to} {@link Integer#MAX_VALUE}:
     * to the end) with {@code rsm}, which must fail: fetchLogSegment throws a
     * RemoteStorageException or the stream an IOException. Every byte served before the failure
     * is checked against the segment (a wrong byte fails the test). Returns the failure.
     */
    Throwable readRefused(TsmRemoteStorageManager rsm, Fixtures.Segment s, int from, int to, String what) {
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        Throwable error = null;
        try (InputStream in = to == Integer.MAX_VALUE ? rsm.fetchLogSegment(s.metadata, from)
                : rsm.fetchLogSegment(s.metadata, from, to)) {
            byte[] buf = new byte[3000];
            for (int n; (n = in.read(buf, 0, buf.length)) != -1;) {
                got.write(buf, 0, n);
            }
        } catch (RemoteStorageException | IOException e) {
            error = e;
        }
        byte[] b = got.toByteArray();
        long end = Math.min(to + 1L, s.log.length);
        assertTrue(from + b.length <= end && Arrays.equals(b, 0, b.length, s.log, from, from + b.length),
                what + ": WRONG BYTES served (" + b.length + " bytes from " + from + ")");
        assertNotNull(error, what + ": read " + b.length + " bytes and no error; expected the read refused");
        assertFalse(chain(error).stream().anyMatch(RemoteResourceNotFoundException.class::isInstance),
                what + ": refused as not found: " + describe(error));
        log("%s: %d bytes served, then refused: %s", what, b.length, describe(error));
        return error;
    }

    Throwable readRefused(TsmRemoteStorageManager rsm, Fixtures.Segment s, String what) {
        return readRefused(rsm, s, 0, Integer.MAX_VALUE, what);
    }

    /** fetchIndex of {@code t} must fail; returns the failure. */
    Throwable indexRefused(TsmRemoteStorageManager rsm, Fixtures.Segment s, IndexType t, String what) {
        try (InputStream in = rsm.fetchIndex(s.metadata, t)) {
            byte[] b = in.readAllBytes();
            return fail(what + ": fetchIndex(" + t + ") returned " + b.length + " bytes ("
                    + (Arrays.equals(b, index(s, t)) ? "the right ones" : "WRONG BYTES") + "); expected an error");
        } catch (RemoteStorageException | IOException e) {
            log("%s: fetchIndex(%s) refused: %s", what, t, describe(e));
            return e;
        }
    }

    /** The messages of {@code e} contain every one of {@code words}. */
    static void assertNames(Throwable e, String what, String... words) {
        String text = describe(e);
        for (String w : words) {
            assertTrue(text.contains(w), what + ": the error does not contain \"" + w + "\": " + text);
        }
    }

    /** The messages of {@code e} contain at least one of {@code words}. */
    static void assertNamesOneOf(Throwable e, String what, List<String> words) {
        String text = describe(e);
        assertTrue(words.stream().anyMatch(text::contains),
                what + ": the error contains none of " + words + ": " + text);
    }

    /**
     * Runs {@code call} on its own thread and waits at most {@link #LIMIT}: a call still running
     * then fails the test (and is interrupted) instead of hanging the build.
     */
    <T> T bounded(String what, Callable<T> call) throws Exception {
        ExecutorService pool = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "integrity-bounded");
            t.setDaemon(true);
            return t;
        });
        long started = System.nanoTime();
        try {
            Future<T> f = pool.submit(call);
            try {
                return f.get(LIMIT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                f.cancel(true);
                return fail(what + ": still running " + LIMIT.toSeconds() + " s after it started");
            } catch (ExecutionException e) {
                Throwable c = e.getCause();
                if (c instanceof Error) {
                    throw (Error) c;
                }
                throw c instanceof Exception ? (Exception) c : e;
            }
        } finally {
            log("%s: ended after %d ms", what, (System.nanoTime() - started) / 1_000_000);
            pool.shutdownNow();
        }
    }

    // ---- manifest text (no JSON library on the test class path) ---------------------------

    static String text(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }

    /** {@code text} with the one match of {@code regex} (group 1: a number) replaced by {@code f(number)}. */
    static String editNumber(String text, String regex, LongUnaryOperator f) {
        Matcher m = Pattern.compile(regex).matcher(text);
        assertTrue(m.find(), "no " + regex + " in " + text);
        int start = m.start(1);
        int end = m.end(1);
        long edited = f.applyAsLong(Long.parseLong(m.group(1)));
        assertFalse(m.find(), "more than one " + regex + " in " + text);
        return text.substring(0, start) + edited + text.substring(end);
    }

    /** The value ({@code {...}}, braces matched outside strings) of the first {@code "field":{}. */
    static String jsonObject(String text, String field) {
        Matcher m = Pattern.compile("\"" + Pattern.quote(field) + "\"\\s*:\\s*\\{").matcher(text);
        assertTrue(m.find(), "no object " + field + " in " + text);
        int start = m.end() - 1;
        int depth = 0;
        boolean inString = false;
        for (int i = start; i < text.length(); i++) {
            char c = text.charAt(i);
            if (inString) {
                if (c == '\\') {
                    i++;
                } else if (c == '"') {
                    inString = false;
                }
            } else if (c == '"') {
                inString = true;
            } else if (c == '{') {
                depth++;
            } else if (c == '}' && --depth == 0) {
                return text.substring(start, i + 1);
            }
        }
        return fail("unbalanced object " + field + " in " + text);
    }

    /** The string value of the first {@code "field":"..."}. */
    static String jsonString(String text, String field) {
        Matcher m = Pattern.compile("\"" + Pattern.quote(field) + "\"\\s*:\\s*\"([^\"]*)\"").matcher(text);
        assertTrue(m.find(), "no string " + field + " in " + text);
        return m.group(1);
    }

    // ---- the cases ------------------------------------------------------------------------

    /** (1) Positive control: everything reads back, and the manifest carries the integrity data. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Mode.class)
    void everyModeReadsBackWithIntegrityData(Mode mode) throws Exception {
        TsmRemoteStorageManager writer = open(mode);
        Fixtures.Segment s = segment(1);
        Keys k = copy(writer, mode, s);
        assertReadsBack(writer, s, mode + ": the writer");
        String manifest = text(bucket.get(k.manifest()));
        String integrity = jsonObject(jsonObject(manifest, "remoteLogSegmentMetadata"), "tsmIntegrity");
        assertEquals("xxh3-64", jsonString(integrity, "digest"), integrity);
        assertEquals(s.metadata.remoteLogSegmentId().id().toString(), jsonString(integrity, "segmentId"), integrity);
        assertEquals(s.metadata.topicIdPartition().topicId().toString(), jsonString(integrity, "topicId"), integrity);
        int chunks = (SIZE + CHUNK - 1) / CHUNK;
        assertEquals(8 * chunks, Base64.getDecoder().decode(jsonString(integrity, "chunkDigests")).length,
                "one 8-byte digest per chunk: " + integrity);
        assertEquals(mode.aes, integrity.contains("\"mac\""), "a MAC exactly when encrypted: " + integrity);
        assertEquals(mode.aes, manifest.contains("\"encryption\""), manifest);
        log("%s: manifest of %d bytes, integrity %s", mode, manifest.length(), integrity);
    }

    /** (2) A flipped bit in the middle of .log: refused naming the object and chunk, no wrong byte. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Mode.class)
    void aFlippedBitIsRefused(Mode mode) throws Exception {
        Fixtures.Segment s = segment(2);
        Keys k = copy(open(mode), mode, s);
        byte[] log = bucket.get(k.log());
        log[log.length / 2] ^= 0x10;
        bucket.put(k.log(), log);

        TsmRemoteStorageManager reader = open(mode);
        String what = mode + " bit flip";
        Throwable e = readRefused(reader, s, what);
        // Plain: the chunk's digest. AES-GCM and zstd chunks check their own content (their
        // digest is their tail token, which a flip mid-chunk leaves alone).
        String words = mode.aes ? "AES-GCM authentication failed" : mode.zstd ? "zstd" : "do not match the digest";
        assertNames(e, what, k.tail(k.log()), "chunk ", words);
        // A range in a chunk left alone still reads.
        try (InputStream in = reader.fetchLogSegment(s.metadata, 0, 99)) {
            assertArrayEquals(Fixtures.slice(s.log, 0, 99), Fixtures.readAll(in, 50), what + ": untouched chunk");
        }
    }

    /** (3) Two stored chunks of equal size swapped (fixed-size chunks: plain and aes). */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = Mode.class, names = {"PLAIN", "AES"})
    void swappedChunksAreRefused(Mode mode) throws Exception {
        Fixtures.Segment s = segment(3);
        Keys k = copy(open(mode), mode, s);
        byte[] log = bucket.get(k.log());
        int stored = CHUNK + (mode.aes ? AES_OVERHEAD : 0);
        assertTrue(log.length > 2 * stored, log.length + " stored bytes");
        byte[] swapped = log.clone();
        System.arraycopy(log, stored, swapped, 0, stored);
        System.arraycopy(log, 0, swapped, stored, stored);
        bucket.put(k.log(), swapped);

        String what = mode + " swap";
        Throwable e = readRefused(open(mode), s, what);
        assertNames(e, what, k.tail(k.log()), "chunk 0 (original bytes 0-" + (CHUNK - 1));
    }

    /** (4) The manifest's originalFileSize reduced by 1. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Mode.class)
    void aShrunkSizeIsRefused(Mode mode) throws Exception {
        Fixtures.Segment s = segment(4);
        Keys k = copy(open(mode), mode, s);
        String manifest = text(bucket.get(k.manifest()));
        String shrunk = editNumber(manifest, "\"originalFileSize\"\\s*:\\s*(\\d+)", n -> {
            assertEquals(SIZE, n, "originalFileSize");
            return n - 1;
        });
        bucket.put(k.manifest(), shrunk.getBytes(StandardCharsets.UTF_8));

        String what = mode + " size shrunk";
        // Encrypted: the MAC covers the sizes, or a chunkIndex bound fails first (fixed chunks:
        // the last one's stored size no longer fits). Plain: the chunkIndex bound. zstd: the
        // chunk table is unchanged, so the last chunk's digest matches; its decoded length does
        // not match the index (the zstd frame records 1 byte more).
        List<String> words = mode.aes
                ? List.of("MAC does not match", "chunkIndex")
                : mode.zstd
                        ? List.of("chunkIndex", "do not match the digest", "zstd frame records content size")
                        : List.of("chunkIndex", "do not match the digest", "chunk digests for the");
        TsmRemoteStorageManager reader = open(mode);
        Throwable e = readRefused(reader, s, what);
        assertNamesOneOf(e, what, words);
        assertNames(e, what, s.metadata.remoteLogSegmentId().id().toString());
        if (mode.aes) {
            // The manifest itself fails (MAC): fetchIndex of the same segment too.
            assertNamesOneOf(indexRefused(reader, s, IndexType.OFFSET, what), what, words);
        } else {
            // The indexes are untouched: refused with the manifest, or served right.
            try (InputStream in = reader.fetchIndex(s.metadata, IndexType.OFFSET)) {
                assertArrayEquals(s.offsetIndex, in.readAllBytes(), what + ": fetchIndex served wrong bytes");
                log("%s: fetchIndex(OFFSET) served the (untouched) index", what);
            } catch (RemoteStorageException | IOException x) {
                log("%s: fetchIndex(OFFSET) refused: %s", what, describe(x));
                assertNamesOneOf(x, what, words);
            }
        }
    }

    /** (5) Another topic's segment copied over this segment's keys. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Mode.class)
    void anotherSegmentsObjectsAtTheseKeysAreRefused(Mode mode) throws Exception {
        TsmRemoteStorageManager writer = open(mode);
        Fixtures.Segment victim = segment(5);
        Keys to = copy(writer, mode, victim);
        Fixtures.Segment other = segment(55, new TopicIdPartition(Uuid.randomUuid(), new TopicPartition("topic-b", 7)));
        Keys from = copy(writer, mode, other);
        bucket.put(to.log(), bucket.get(from.log()));
        bucket.put(to.indexes(), bucket.get(from.indexes()));
        bucket.put(to.manifest(), bucket.get(from.manifest()));

        String what = mode + " substituted";
        TsmRemoteStorageManager reader = open(mode);
        Throwable e = readRefused(reader, victim, what);
        assertNames(e, what, "not for the segment asked for");
        for (IndexType t : List.of(IndexType.OFFSET, IndexType.TRANSACTION)) {
            assertNames(indexRefused(reader, victim, t, what), what, "not for the segment asked for");
        }
        // The other segment still reads at its own keys.
        assertReadsBack(reader, other, what + ": the other segment");
    }

    /** (6) A plaintext segment planted at an encrypted segment's keys. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = Mode.class, names = {"AES", "ZSTD_AES"})
    void aPlaintextSegmentAtEncryptedKeysIsRefused(Mode mode) throws Exception {
        TsmRemoteStorageManager encrypted = open(mode);
        Fixtures.Segment s = segment(6);
        Keys k = copy(encrypted, mode, s);
        encrypted.deleteLogSegmentData(s.metadata);
        assertEquals(List.of(), stored(s), "objects left by the delete");
        TsmRemoteStorageManager plain = open(mode.plaintext());
        plain.copyLogSegmentData(s.metadata, s.data);
        assertEquals(k, keys(s), "the plaintext copy's keys");
        assertFalse(text(bucket.get(k.manifest())).contains("\"encryption\""), "the copy is plaintext");

        String what = mode + " plaintext at encrypted keys";
        Throwable e = readRefused(encrypted, s, what);
        assertNames(e, what, "tsm.encryption.plaintext.reads");
        assertNames(indexRefused(encrypted, s, IndexType.OFFSET, what), what, "tsm.encryption.plaintext.reads");
        TsmRemoteStorageManager fresh = open(mode);
        assertNames(readRefused(fresh, s, what + " (fresh instance)"), what, "tsm.encryption.plaintext.reads");
        // A cluster migrating to encryption reads its older plaintext segments.
        assertReadsBack(open(mode, Map.of("tsm.encryption.plaintext.reads", "true")), s,
                what + ", plaintext reads allowed");
    }

    /**
     * (7) Hostile chunk counts in a manifest: every call ends within 10 s, over a bound with an
     * error naming chunkIndex and the manifest; delete removes all. The hostile manifest has no
     * integrity data (it reads as a Java-plugin segment would): within the bounds, what it
     * serves is not checked.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Mode.class)
    void aHostileManifestEndsFast(Mode mode) throws Exception {
        // {chunk size, file size}: 2^62 chunks (over the 1 TiB file size bound), 2^40 chunks
        // (within that bound, over the 2^24 chunk count bound), then 2^24 chunks of 128 bytes
        // the objects do not hold (within both bounds: the manifest loads and is cached).
        long[][] hostile = {{1, 1L << 62}, {1, 1L << 40}, {128, 1L << 31}};
        TsmRemoteStorageManager writer = open(mode);
        for (int i = 0; i < hostile.length; i++) {
            long chunk = hostile[i][0];
            long file = hostile[i][1];
            boolean overBound = i < 2;
            Fixtures.Segment s = segment(70 + i);
            Keys k = copy(writer, mode, s);
            String original = text(bucket.get(k.manifest()));
            String manifest = "{\"version\":\"1\",\"chunkIndex\":{\"type\":\"fixed\",\"originalChunkSize\":" + chunk
                    + ",\"originalFileSize\":" + file + ",\"transformedChunkSize\":" + chunk
                    + ",\"finalTransformedChunkSize\":" + chunk + "},\"segmentIndexes\":"
                    + jsonObject(original, "segmentIndexes") + ",\"compression\":false}";
            bucket.put(k.manifest(), manifest.getBytes(StandardCharsets.UTF_8));

            String what = mode + " hostile manifest (chunk " + chunk + ", file " + file + ")";
            TsmRemoteStorageManager reader = open(mode);
            if (overBound) {
                Throwable e = bounded(what + ": fetchLogSegment", () -> readRefused(reader, s, 0, CHUNK - 1, what));
                assertNames(e, what, "chunkIndex", k.tail(k.manifest()));
                bounded(what + ": fetchIndex", () -> indexRefused(reader, s, IndexType.OFFSET, what));
            } else {
                bounded(what + ": fetchLogSegment", () -> {
                    try (InputStream in = reader.fetchLogSegment(s.metadata, 0, CHUNK - 1)) {
                        log("%s: fetchLogSegment served %d bytes", what, Fixtures.readAll(in, 1000).length);
                    } catch (RemoteStorageException | IOException e) {
                        log("%s: fetchLogSegment refused: %s", what, describe(e));
                    }
                    return null;
                });
                bounded(what + ": fetchIndex", () -> {
                    try (InputStream in = reader.fetchIndex(s.metadata, IndexType.OFFSET)) {
                        log("%s: fetchIndex served %d bytes", what, in.readAllBytes().length);
                    } catch (RemoteStorageException | IOException e) {
                        log("%s: fetchIndex refused: %s", what, describe(e));
                    }
                    return null;
                });
            }
            Throwable deleteError = bounded(what + ": deleteLogSegmentData", () -> {
                try {
                    reader.deleteLogSegmentData(s.metadata);
                    return null;
                } catch (RemoteStorageException e) {
                    return e;
                }
            });
            assertNull(deleteError, () -> what + ": delete failed: " + describe(deleteError));
            assertEquals(List.of(), stored(s), what + ": objects left by the delete");
        }
    }
}
