package io.tsm.kafka;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager.IndexType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.MultipartUpload;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * The brown-out guarantees of {@code crates/tsm-backend-s3/tests/brownout.rs}, checked through
 * the plugin jar: {@link TsmRemoteStorageManager} (Java, JNI, the native engine) configured as
 * the broker does, with the s3 backend pointed at a Toxiproxy proxy in front of MinIO. Each test
 * has its own bucket and proxy (created through Toxiproxy's HTTP API, deleted afterwards); the
 * bucket is inspected directly on MinIO (not through the proxy) with the AWS SDK.
 *
 * <ol>
 *   <li>a black hole ({@code timeout} toxic on the requests) while a segment copied before the
 *       toxic is fetched and read (manifest already cached): fails within 3 x the deadline,
 *       retriable, naming the deadline key; the same read returns the segment once the toxic is
 *       gone;
 *   <li>fetchIndex on a cold instance under the black hole: the same;
 *   <li>a copy of a segment larger than one multipart part on a 4 KB/s link, its thread
 *       interrupted once the multipart upload began: ends at once with a RemoteStorageException;
 *       once the link is healthy, no object of the segment and no incomplete multipart upload;
 *   <li>close() while such a copy runs (not interrupted): close returns within
 *       {@code tsm.close.timeout.ms}; the copy then ends on its own deadline and leaves nothing;
 *   <li>deleteLogSegmentData on an interrupted thread still deletes;
 *   <li>tier health (docs/metrics.md) through JMX: a copy under the black hole shows in flight
 *       with a growing age, then as a {@code timeout} failure; credentials MinIO denies are an
 *       {@code auth} failure the broker is not told to retry; a copy once the store is back
 *       resets the partition.
 * </ol>
 *
 * <p>Environment: {@code TSM_TEST_TOXIPROXY_URL} ({@code scripts/services/toxiproxy.sh env}) and
 * {@code TSM_TEST_S3_ENDPOINT}, {@code TSM_TEST_S3_ACCESS_KEY}, {@code TSM_TEST_S3_SECRET_KEY},
 * {@code TSM_TEST_S3_REGION} ({@code scripts/services/minio.sh env}), all on 127.0.0.1. Missing,
 * every test FAILS. Not part of build.sh's test run (surefire excludes {@code *IT});
 * {@code scripts/test.d/55-brownout-jar.sh} starts both servers and runs this class.
 */
class BrownoutIT {
    /** Every engine deadline (the {@code tsm.storage.*.timeout.ms} and cache-load bounds). */
    private static final long DEADLINE_MS = 2000;
    /** A call still running this long after the toxic was added is "hung". */
    private static final Duration HUNG = Duration.ofMillis(3 * DEADLINE_MS);
    /** How long the plugin's clean-up gets once the store is healthy again. */
    private static final Duration CLEANUP_WAIT = Duration.ofSeconds(15);
    /** {@code tsm.close.timeout.ms}. */
    private static final long CLOSE_TIMEOUT_MS = 10_000;
    /** Slack on top of {@code tsm.close.timeout.ms} for close() to return. */
    private static final long CLOSE_MARGIN_MS = 5_000;
    /** An interrupted copy must end within this ("promptly"; the plugin waits in 100 ms slices). */
    private static final Duration PROMPT = Duration.ofSeconds(2);
    /** {@code chunk.size}. */
    private static final int CHUNK = 1 << 20;
    /** {@code storage.s3.multipart.upload.part.size}: the S3 minimum, 5 MiB. */
    private static final int PART = 5 << 20;
    /** A copied segment: more than one part, so its {@code .log} is a multipart upload. */
    private static final int COPY_SIZE = PART + CHUNK + 4321;
    /** A fetched segment: four chunks. */
    private static final int FETCH_SIZE = 3 * CHUNK + 12_345;
    /** {@code key.prefix}. */
    private static final String KEY_PREFIX = "brownout-jar/";
    /** The deadline keys a timed-out call may name. */
    private static final List<String> DEADLINE_KEYS = List.of(
            "tsm.storage.get.first.byte.timeout.ms",
            "tsm.storage.get.idle.timeout.ms",
            "tsm.storage.get.timeout.ms",
            "tsm.storage.upload.timeout.ms",
            "tsm.storage.delete.timeout.ms",
            "fetch.manifest.cache.get.timeout.ms",
            "fetch.indexes.cache.get.timeout.ms",
            "fetch.chunk.cache.get.timeout.ms");
    private static final String RETRIABLE =
            "org.apache.kafka.server.log.remote.storage.RetriableRemoteStorageException";

    // ---- environment ----------------------------------------------------------------------

    /** The servers of this run. */
    private static final class Env {
        final String toxiproxy;
        final String endpoint;
        final String accessKey;
        final String secretKey;
        final String region;
        /** MinIO's host:port, the proxies' upstream. */
        final String upstream;

        Env(String toxiproxy, String endpoint, String accessKey, String secretKey, String region) {
            this.toxiproxy = toxiproxy.replaceAll("/+$", "");
            this.endpoint = endpoint.replaceAll("/+$", "");
            this.accessKey = accessKey;
            this.secretKey = secretKey;
            this.region = region;
            this.upstream = hostPort(this.endpoint);
        }
    }

    private static String required(String name) {
        String v = System.getenv(name);
        if (v == null || v.isBlank()) {
            fail(name + " is not set: BrownoutIT needs MinIO and Toxiproxy. Run "
                    + "scripts/test.d/55-brownout-jar.sh, or start scripts/services/minio.sh and "
                    + "scripts/services/toxiproxy.sh and eval the output of their `env` subcommand");
        }
        return v;
    }

    private static String optional(String name, String dflt) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? dflt : v;
    }

    private static Env env() {
        Env e = new Env(required("TSM_TEST_TOXIPROXY_URL"), required("TSM_TEST_S3_ENDPOINT"),
                optional("TSM_TEST_S3_ACCESS_KEY", "tsm-minio"),
                optional("TSM_TEST_S3_SECRET_KEY", "tsm-minio-secret"),
                optional("TSM_TEST_S3_REGION", "us-east-1"));
        assertLoopback("TSM_TEST_TOXIPROXY_URL", hostPort(e.toxiproxy));
        assertLoopback("TSM_TEST_S3_ENDPOINT", e.upstream);
        return e;
    }

    /** {@code host:port} of {@code http://host:port[/...]}. */
    private static String hostPort(String url) {
        String rest = url.contains("://") ? url.substring(url.indexOf("://") + 3) : url;
        int slash = rest.indexOf('/');
        return slash < 0 ? rest : rest.substring(0, slash);
    }

    /** These tests only ever talk to servers on this machine. */
    private static void assertLoopback(String what, String hostPort) {
        int colon = hostPort.lastIndexOf(':');
        String host = colon < 0 ? hostPort : hostPort.substring(0, colon);
        assertTrue(host.equals("localhost") || host.equals("[::1]") || host.startsWith("127."),
                what + " (" + hostPort + ") is not on the loopback interface: BrownoutIT only sends "
                        + "traffic to 127.0.0.1");
    }

    private static final AtomicInteger SEQ = new AtomicInteger();

    /** A name no other test of this or an earlier run uses (lower case, S3-bucket safe). */
    private static String unique(String what) {
        String n = ("tsm-jar-" + what + "-" + ProcessHandle.current().pid() + "-"
                + (System.nanoTime() % 1_000_000_000L) + "-" + SEQ.incrementAndGet())
                .toLowerCase(Locale.ROOT).replace('_', '-');
        return n.length() > 63 ? n.substring(0, 63).replaceAll("-+$", "") : n;
    }

    private static void log(String format, Object... args) {
        System.err.printf("[BrownoutIT] " + format + "%n", args);
    }

    // ---- Toxiproxy ------------------------------------------------------------------------

    /** One proxy in front of MinIO ({@code listen 127.0.0.1:0}), deleted by {@link #delete}. */
    private static final class Proxy {
        private static final Pattern LISTEN = Pattern.compile("\"listen\"\\s*:\\s*\"([^\"]+)\"");
        private final HttpClient http = HttpClient.newBuilder()
                .proxy(HttpClient.Builder.NO_PROXY)
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(5))
                .build();
        private final String api;
        final String name;
        final String listen;

        Proxy(Env env, String test) throws Exception {
            this.api = env.toxiproxy;
            this.name = unique(test);
            String body = "{\"name\":\"" + name + "\",\"listen\":\"127.0.0.1:0\",\"upstream\":\""
                    + env.upstream + "\",\"enabled\":true}";
            HttpResponse<String> r = send("POST", "/proxies", body);
            assertEquals(201, r.statusCode(), "Toxiproxy: create proxy " + name + ": " + r.body());
            Matcher m = LISTEN.matcher(r.body());
            assertTrue(m.find(), "Toxiproxy: no listen address in " + r.body());
            this.listen = m.group(1);
            assertLoopback("the proxy", listen);
        }

        String endpoint() {
            return "http://" + listen;
        }

        private HttpResponse<String> send(String method, String path, String body) throws Exception {
            HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(api + path))
                    .timeout(Duration.ofSeconds(30));
            if (body == null) {
                b.method(method, HttpRequest.BodyPublishers.noBody());
            } else {
                b.header("Content-Type", "application/json")
                        .method(method, HttpRequest.BodyPublishers.ofString(body));
            }
            try {
                return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
            } catch (IOException e) {
                throw new IOException("Toxiproxy API " + api + ": " + method + " " + path + ": " + e, e);
            }
        }

        /** Adds toxic {@code name} of {@code type} on {@code stream} (upstream: the requests). */
        void add(String toxic, String type, String stream, String attributes) throws Exception {
            String body = "{\"name\":\"" + toxic + "\",\"type\":\"" + type + "\",\"stream\":\"" + stream
                    + "\",\"toxicity\":1.0,\"attributes\":" + attributes + "}";
            HttpResponse<String> r = send("POST", "/proxies/" + name + "/toxics", body);
            assertTrue(r.statusCode() / 100 == 2, "Toxiproxy: add toxic " + body + ": " + r.statusCode()
                    + " " + r.body());
        }

        void remove(String toxic) throws Exception {
            HttpResponse<String> r = send("DELETE", "/proxies/" + name + "/toxics/" + toxic, null);
            assertTrue(r.statusCode() / 100 == 2, "Toxiproxy: remove toxic " + toxic + ": "
                    + r.statusCode() + " " + r.body());
        }

        /** The black hole of brownout.rs: requests are swallowed, the connection stays open. */
        void blackHole() throws Exception {
            add("black-hole", "timeout", "upstream", "{\"timeout\":0}");
        }

        /** A 4 KB/s link for the requests (an upload still moves, far too slowly). */
        void slowUpload() throws Exception {
            add("slow-up", "bandwidth", "upstream", "{\"rate\":4}");
        }

        /** Best effort; closes the proxy's connections with it. */
        void delete() {
            try {
                send("DELETE", "/proxies/" + name, null);
            } catch (Exception e) {
                log("cannot delete proxy %s: %s", name, e);
            }
        }
    }

    // ---- the bucket, the plugin instances -------------------------------------------------

    private enum Route {
        /** Through the proxy: the instance under test. */
        PROXIED,
        /** Straight to MinIO: set-up before a toxic is added. */
        DIRECT
    }

    private Env env;
    private String bucket;
    private S3Client s3;
    private Proxy proxy;
    private Path work;
    private final List<TsmRemoteStorageManager> instances = new ArrayList<>();

    /** Bucket, proxy and scratch folder of one test; fails when the servers are not set. */
    private void world(TestInfo info) throws Exception {
        String test = info.getTestMethod().map(java.lang.reflect.Method::getName).orElse("test");
        env = env();
        s3 = S3Client.builder()
                .endpointOverride(URI.create(env.endpoint))
                .region(Region.of(env.region))
                .credentialsProvider(StaticCredentialsProvider.create(
                        AwsBasicCredentials.create(env.accessKey, env.secretKey)))
                .forcePathStyle(true)
                .build();
        bucket = unique(test.replaceAll("([a-z])([A-Z])", "$1-$2"));
        s3.createBucket(b -> b.bucket(bucket));
        proxy = new Proxy(env, "jar");
        work = Fixtures.work("brownout-" + test);
        log("%s: bucket %s, proxy %s on %s", test, bucket, proxy.name, proxy.listen);
    }

    /** The broker's {@code rsm.config.*} map (prefix stripped) over the test's bucket. */
    private Map<String, Object> config(Route route, Map<String, String> extra) {
        Map<String, Object> c = new TreeMap<>();
        String deadline = Long.toString(DEADLINE_MS);
        c.put("storage.backend.class", "s3");
        c.put("storage.s3.endpoint.url", route == Route.PROXIED ? proxy.endpoint() : env.endpoint);
        c.put("storage.s3.bucket.name", bucket);
        c.put("storage.s3.region", env.region);
        c.put("storage.s3.path.style.access.enabled", "true");
        c.put("storage.aws.access.key.id", env.accessKey);
        c.put("storage.aws.secret.access.key", env.secretKey);
        c.put("storage.s3.multipart.upload.part.size", Integer.toString(PART));
        c.put("storage.s3.multipart.upload.parts.in.flight", "2");
        c.put("chunk.size", Integer.toString(CHUNK));
        c.put("key.prefix", KEY_PREFIX);
        c.put("tsm.storage.get.first.byte.timeout.ms", deadline);
        c.put("tsm.storage.get.idle.timeout.ms", deadline);
        c.put("tsm.storage.get.timeout.ms", deadline);
        c.put("tsm.storage.upload.timeout.ms", deadline);
        c.put("tsm.storage.delete.timeout.ms", deadline);
        c.put("fetch.manifest.cache.get.timeout.ms", deadline);
        c.put("fetch.indexes.cache.get.timeout.ms", deadline);
        c.put("fetch.chunk.cache.get.timeout.ms", deadline);
        c.put("tsm.memory.budget.bytes", "268435456");
        c.put("tsm.close.timeout.ms", Long.toString(CLOSE_TIMEOUT_MS));
        c.put("broker.id", 1);
        c.putAll(extra);
        // The SDK's own timeouts stay unset: the engine's deadlines are what is under test.
        assertFalse(c.keySet().stream().anyMatch(k -> k.contains("api.call")), "SDK timeouts set");
        return c;
    }

    private TsmRemoteStorageManager rsm(Route route, Map<String, String> extra) {
        TsmRemoteStorageManager rsm = new TsmRemoteStorageManager();
        rsm.configure(config(route, extra));
        instances.add(rsm);
        return rsm;
    }

    private Fixtures.Segment segment(int size, long seed) throws IOException {
        return Fixtures.segment(work.resolve("seg-" + seed), size, false, seed);
    }

    private static String id(Fixtures.Segment s) {
        return s.metadata.remoteLogSegmentId().id().toString();
    }

    /** Every key in the bucket, read straight from MinIO. */
    private List<String> keys() {
        List<String> keys = new ArrayList<>();
        for (S3Object o : s3.listObjectsV2Paginator(b -> b.bucket(bucket)).contents()) {
            keys.add(o.key());
        }
        return keys;
    }

    private List<MultipartUpload> uploads() {
        return s3.listMultipartUploads(b -> b.bucket(bucket)).uploads();
    }

    /**
     * What is left behind: orphans (a {@code .log} or {@code .indexes} without its manifest),
     * objects of {@code gone} (the id of a copy that failed), incomplete multipart uploads.
     */
    private List<String> leftovers(String gone) {
        List<String> keys = keys();
        List<String> problems = new ArrayList<>();
        Map<String, boolean[]> segments = new TreeMap<>();
        for (String k : keys) {
            String[] suffixes = {".log", ".indexes", ".rsm-manifest"};
            boolean known = false;
            for (int i = 0; i < suffixes.length; i++) {
                if (k.endsWith(suffixes[i])) {
                    segments.computeIfAbsent(k.substring(0, k.length() - suffixes[i].length()),
                            x -> new boolean[3])[i] = true;
                    known = true;
                }
            }
            if (!known) {
                problems.add("unexpected object " + k);
            }
            if (gone != null && k.contains(gone)) {
                problems.add(k + ": left by the failed copy");
            }
        }
        segments.forEach((stem, has) -> {
            if ((has[0] || has[1]) && !has[2]) {
                problems.add("orphan: " + stem + (has[0] ? " .log" : "") + (has[1] ? " .indexes" : "")
                        + " without .rsm-manifest");
            }
        });
        for (MultipartUpload u : uploads()) {
            problems.add("incomplete multipart upload of " + u.key() + " (upload id " + u.uploadId() + ")");
        }
        return problems;
    }

    /** Waits up to {@link #CLEANUP_WAIT} until nothing is left behind. */
    private void assertClean(String gone, String what) throws InterruptedException {
        long until = System.nanoTime() + CLEANUP_WAIT.toNanos();
        long started = System.nanoTime();
        while (true) {
            List<String> problems = leftovers(gone);
            if (problems.isEmpty()) {
                log("%s: clean after %d ms", what, (System.nanoTime() - started) / 1_000_000);
                return;
            }
            if (System.nanoTime() >= until) {
                fail(what + ": still left behind after " + CLEANUP_WAIT.toSeconds() + " s:\n  "
                        + String.join("\n  ", problems));
            }
            Thread.sleep(200);
        }
    }

    /** Waits until a multipart upload exists on MinIO while {@code copier} still runs. */
    private void waitForMultipartUpload(Thread copier, AtomicReference<Throwable> error) throws Exception {
        long started = System.nanoTime();
        long until = started + Duration.ofSeconds(10).toNanos();
        while (uploads().isEmpty()) {
            assertTrue(copier.isAlive(), "the copy ended before its multipart upload began: " + error.get());
            assertTrue(System.nanoTime() < until, "no multipart upload began within 10 s");
            Thread.sleep(50);
        }
        log("multipart upload seen on MinIO %d ms after the copy started",
                (System.nanoTime() - started) / 1_000_000);
    }

    @AfterEach
    void tearDown() {
        for (TsmRemoteStorageManager rsm : instances) {
            // Bounded: a close that hangs is reported, not waited for forever.
            Thread t = new Thread(rsm::close, "brownout-close");
            t.setDaemon(true);
            t.start();
            try {
                t.join(CLOSE_TIMEOUT_MS + CLOSE_MARGIN_MS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (t.isAlive()) {
                log("close() of an instance still running after %d ms", CLOSE_TIMEOUT_MS + CLOSE_MARGIN_MS);
            }
        }
        instances.clear();
        if (proxy != null) {
            proxy.delete();
        }
        if (s3 != null) {
            // Best effort: leave MinIO as found.
            try {
                for (MultipartUpload u : uploads()) {
                    s3.abortMultipartUpload(b -> b.bucket(bucket).key(u.key()).uploadId(u.uploadId()));
                }
                for (String k : keys()) {
                    s3.deleteObject(b -> b.bucket(bucket).key(k));
                }
                s3.deleteBucket(b -> b.bucket(bucket));
            } catch (RuntimeException e) {
                log("cannot empty bucket %s: %s", bucket, e);
            }
            s3.close();
        }
    }

    // ---- bounded calls, expected failures -------------------------------------------------

    /** The end of a call run on its own thread. */
    private static final class Outcome<T> {
        T value;
        Throwable error;
        long tookMs;
    }

    /**
     * Runs {@code call} on a new thread and waits at most {@code limit}; a call still running
     * then is interrupted and the test fails as "hung".
     */
    private static <T> Outcome<T> bounded(String what, Duration limit, Callable<T> call) throws Exception {
        Outcome<T> o = new Outcome<>();
        long started = System.nanoTime();
        Thread t = new Thread(() -> {
            try {
                o.value = call.call();
            } catch (Throwable e) {
                o.error = e;
            }
        }, "brownout-call");
        t.setDaemon(true);
        t.start();
        t.join(limit.toMillis());
        o.tookMs = (System.nanoTime() - started) / 1_000_000;
        if (t.isAlive()) {
            t.interrupt();
            fail(what + ": hung: still running " + limit.toMillis() + " ms after it started (deadlines "
                    + DEADLINE_MS + " ms)");
        }
        return o;
    }

    private static Class<?> retriableClass() {
        try {
            return Class.forName(RETRIABLE, false, RemoteStorageException.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    private static List<Throwable> chain(Throwable e) {
        List<Throwable> chain = new ArrayList<>();
        for (Throwable t = e; t != null && !chain.contains(t); t = t.getCause()) {
            chain.add(t);
        }
        return chain;
    }

    private static String describe(Throwable e) {
        StringBuilder b = new StringBuilder();
        for (Throwable t : chain(e)) {
            b.append(b.length() == 0 ? "" : " <- caused by ").append(t.getClass().getName()).append(": ")
                    .append(t.getMessage());
        }
        return b.toString();
    }

    /**
     * {@code e} is the failure of a call that hit a deadline: an {@code allowed} type, the
     * retriable exception in its cause chain where this Kafka has the class, one of the deadline
     * keys in its messages.
     */
    private static void assertDeadlineHit(String what, Outcome<?> o, List<Class<?>> allowed) {
        Throwable e = o.error;
        assertNotNull(e, what + ": succeeded after " + o.tookMs + " ms under the toxic; expected a "
                + "retriable failure within " + HUNG.toMillis() + " ms");
        log("%s: failed after %d ms as expected: %s", what, o.tookMs, describe(e));
        assertTrue(allowed.stream().anyMatch(c -> c.isInstance(e)),
                what + ": failed with " + describe(e) + "; expected one of " + allowed);
        Class<?> retriable = retriableClass();
        if (retriable != null) {
            assertTrue(Calls.hasRetriable(), "the plugin did not find " + RETRIABLE + " on this classpath");
            assertTrue(chain(e).stream().anyMatch(retriable::isInstance),
                    what + ": no " + RETRIABLE + " in the cause chain of " + describe(e));
        }
        String text = describe(e);
        assertTrue(DEADLINE_KEYS.stream().anyMatch(text::contains),
                what + ": the error names none of the deadline keys " + DEADLINE_KEYS + ": " + text);
        assertTrue(o.tookMs <= HUNG.toMillis(), what + ": took " + o.tookMs + " ms");
    }

    // ---- the cases ------------------------------------------------------------------------

    /** (1) A black hole during fetchLogSegment + read of a segment copied before the toxic. */
    @Test
    void blackHoleDuringFetchAndRead(TestInfo info) throws Exception {
        world(info);
        Fixtures.Segment s = segment(FETCH_SIZE, 11);
        rsm(Route.DIRECT, Map.of()).copyLogSegmentData(s.metadata, s.data);
        TsmRemoteStorageManager rsm = rsm(Route.PROXIED, Map.of());
        // The manifest is loaded before the toxic: the toxic hits the chunk GETs.
        try (InputStream in = rsm.fetchLogSegment(s.metadata, 0, 0)) {
            assertArrayEquals(Fixtures.slice(s.log, 0, 0), Fixtures.readAll(in, 16));
        }

        proxy.blackHole();
        Outcome<byte[]> failed = bounded("fetchLogSegment + read under the black hole", HUNG, () -> {
            try (InputStream in = rsm.fetchLogSegment(s.metadata, 0)) {
                return Fixtures.readAll(in, 64 * 1024);
            }
        });
        proxy.remove("black-hole");
        assertDeadlineHit("fetchLogSegment + read under the black hole", failed,
                List.of(IOException.class, RemoteStorageException.class));

        Outcome<byte[]> ok = bounded("fetchLogSegment + read after the toxic", HUNG, () -> {
            try (InputStream in = rsm.fetchLogSegment(s.metadata, 0)) {
                return Fixtures.readAll(in, 64 * 1024);
            }
        });
        assertNull(ok.error, () -> "read after the toxic was removed: " + describe(ok.error));
        assertArrayEquals(s.log, ok.value, "read after the toxic was removed: wrong bytes");
        log("fetchLogSegment + read after the toxic: %d bytes in %d ms", ok.value.length, ok.tookMs);
        assertClean(null, "after the fetches");
    }

    /** (2) fetchIndex on a cold instance under the black hole. */
    @Test
    void blackHoleDuringFetchIndex(TestInfo info) throws Exception {
        world(info);
        Fixtures.Segment s = segment(FETCH_SIZE, 21);
        rsm(Route.DIRECT, Map.of()).copyLogSegmentData(s.metadata, s.data);
        TsmRemoteStorageManager rsm = rsm(Route.PROXIED, Map.of());

        proxy.blackHole();
        Outcome<byte[]> failed = bounded("fetchIndex under the black hole", HUNG, () -> {
            try (InputStream in = rsm.fetchIndex(s.metadata, IndexType.OFFSET)) {
                return in.readAllBytes();
            }
        });
        proxy.remove("black-hole");
        assertDeadlineHit("fetchIndex under the black hole", failed, List.of(RemoteStorageException.class));

        Outcome<byte[]> ok = bounded("fetchIndex after the toxic", HUNG, () -> {
            try (InputStream in = rsm.fetchIndex(s.metadata, IndexType.OFFSET)) {
                return in.readAllBytes();
            }
        });
        assertNull(ok.error, () -> "fetchIndex after the toxic was removed: " + describe(ok.error));
        assertArrayEquals(s.offsetIndex, ok.value, "fetchIndex after the toxic was removed: wrong bytes");
        assertClean(null, "after fetchIndex");
    }

    /** The copy of {@code s} on its own thread; its failure goes to {@code error}. */
    private static Thread startCopy(TsmRemoteStorageManager rsm, Fixtures.Segment s, AtomicReference<Throwable> error,
            AtomicBoolean interruptedAfter) {
        Thread t = new Thread(() -> {
            try {
                rsm.copyLogSegmentData(s.metadata, s.data);
            } catch (Throwable e) {
                error.set(e);
            }
            interruptedAfter.set(Thread.currentThread().isInterrupted());
        }, "brownout-copier");
        t.setDaemon(true);
        t.start();
        return t;
    }

    /** (3) A copy on a 4 KB/s link whose thread is interrupted mid multipart upload. */
    @Test
    void interruptedCopyLeavesNothing(TestInfo info) throws Exception {
        world(info);
        // Long upload deadlines: only the interrupt ends this copy.
        TsmRemoteStorageManager rsm = rsm(Route.PROXIED, Map.of(
                "tsm.storage.upload.timeout.ms", "120000",
                "tsm.storage.get.idle.timeout.ms", "120000"));
        Fixtures.Segment s = segment(COPY_SIZE, 31);
        proxy.slowUpload();
        AtomicReference<Throwable> error = new AtomicReference<>();
        AtomicBoolean interruptedAfter = new AtomicBoolean();
        Thread copier = startCopy(rsm, s, error, interruptedAfter);
        waitForMultipartUpload(copier, error);

        long started = System.nanoTime();
        copier.interrupt();
        copier.join(HUNG.toMillis());
        long tookMs = (System.nanoTime() - started) / 1_000_000;
        assertFalse(copier.isAlive(), "the copy is still running " + tookMs + " ms after its thread was interrupted");
        log("interrupted copy ended after %d ms: %s", tookMs, describe(error.get()));
        assertTrue(tookMs <= PROMPT.toMillis(), "the interrupted copy took " + tookMs + " ms to end");
        assertTrue(error.get() instanceof RemoteStorageException,
                "the interrupted copy: expected a RemoteStorageException, got " + describe(error.get()));
        assertTrue(interruptedAfter.get(), "the copy thread's interrupt flag was not restored");

        proxy.remove("slow-up");
        assertClean(id(s), "after the interrupted copy");

        // The same instance still works: the broker's retry, under a new segment id.
        Fixtures.Segment retry = segment(COPY_SIZE, 32);
        rsm.copyLogSegmentData(retry.metadata, retry.data);
        try (InputStream in = rsm.fetchLogSegment(retry.metadata, 0)) {
            assertArrayEquals(retry.log, Fixtures.readAll(in, 64 * 1024), "fetch of the retried copy");
        }
        assertClean(null, "after the retried copy");
    }

    /** (4) close() while a copy is mid multipart upload (its thread not interrupted). */
    @Test
    void closeDuringCopyLeavesNothing(TestInfo info) throws Exception {
        world(info);
        // The copy outlives close() (calls in flight finish or fail on their own deadlines):
        // long enough to be mid-upload when close() runs, short enough to end soon after.
        long copyDeadlineMs = 8000;
        TsmRemoteStorageManager rsm = rsm(Route.PROXIED, Map.of(
                "tsm.storage.upload.timeout.ms", Long.toString(copyDeadlineMs),
                "tsm.storage.get.idle.timeout.ms", Long.toString(copyDeadlineMs)));
        Fixtures.Segment s = segment(COPY_SIZE, 41);
        proxy.slowUpload();
        AtomicReference<Throwable> error = new AtomicReference<>();
        AtomicBoolean interruptedAfter = new AtomicBoolean();
        long copyStarted = System.nanoTime();
        Thread copier = startCopy(rsm, s, error, interruptedAfter);
        waitForMultipartUpload(copier, error);

        Outcome<Void> closed = bounded("close() with a copy in flight", Duration.ofMillis(CLOSE_TIMEOUT_MS
                + CLOSE_MARGIN_MS), () -> {
                    rsm.close();
                    return null;
                });
        assertNull(closed.error, () -> "close(): " + describe(closed.error));
        log("close() with a copy in flight returned after %d ms (copy alive: %s)", closed.tookMs, copier.isAlive());
        RemoteStorageException refused = assertThrows(RemoteStorageException.class,
                () -> rsm.deleteLogSegmentData(s.metadata), "a call after close()");
        assertTrue(refused.getMessage().contains("closed"), refused.getMessage());

        // The copy was not interrupted: it ends on its own deadline.
        copier.join(copyDeadlineMs + HUNG.toMillis());
        long copyMs = (System.nanoTime() - copyStarted) / 1_000_000;
        assertFalse(copier.isAlive(), "the copy is still running " + copyMs + " ms after it started");
        log("the copy in flight at close() ended after %d ms: %s", copyMs, describe(error.get()));
        assertTrue(error.get() instanceof RemoteStorageException,
                "the copy in flight at close(): expected a RemoteStorageException, got " + describe(error.get()));

        proxy.remove("slow-up");
        assertClean(id(s), "after close() with a copy in flight");
    }

    /** (5) The broker deletes on an interrupted thread: the delete still runs to its end. */
    @Test
    void deleteOnInterruptedThreadDeletes(TestInfo info) throws Exception {
        world(info);
        TsmRemoteStorageManager rsm = rsm(Route.PROXIED, Map.of());
        Fixtures.Segment s = segment(FETCH_SIZE, 51);
        rsm.copyLogSegmentData(s.metadata, s.data);
        String id = id(s);
        assertEquals(3, keys().stream().filter(k -> k.contains(id)).count(), "objects of the copy: " + keys());

        // Slow answers, so the delete spans several of the plugin's 100 ms waits, and the
        // thread is interrupted before the call and again while it runs.
        proxy.add("late", "latency", "downstream", "{\"latency\":150,\"jitter\":0}");
        AtomicReference<Throwable> error = new AtomicReference<>();
        AtomicBoolean interruptedAfter = new AtomicBoolean();
        AtomicBoolean done = new AtomicBoolean();
        long started = System.nanoTime();
        Thread deleter = new Thread(() -> {
            Thread.currentThread().interrupt();
            try {
                rsm.deleteLogSegmentData(s.metadata);
            } catch (Throwable e) {
                error.set(e);
            }
            interruptedAfter.set(Thread.currentThread().isInterrupted());
            done.set(true);
        }, "brownout-deleter");
        deleter.setDaemon(true);
        deleter.start();
        while (!done.get() && System.nanoTime() - started < HUNG.toNanos()) {
            deleter.interrupt();
            Thread.sleep(50);
        }
        deleter.join(HUNG.toMillis());
        long tookMs = (System.nanoTime() - started) / 1_000_000;
        assertFalse(deleter.isAlive(), "the delete is still running after " + tookMs + " ms");
        assertNull(error.get(), () -> "delete on an interrupted thread: " + describe(error.get()));
        assertTrue(interruptedAfter.get(), "the delete thread's interrupt flag was not restored");
        log("delete on an interrupted thread finished in %d ms", tookMs);
        List<String> left = new ArrayList<>();
        for (String k : keys()) {
            if (k.contains(id)) {
                left.add(k);
            }
        }
        assertTrue(left.isEmpty(), "delete on an interrupted thread left " + left);
        assertClean(null, "after the delete");
    }

    private static double mbean(String name, String attribute) throws Exception {
        Object v = java.lang.management.ManagementFactory.getPlatformMBeanServer()
                .getAttribute(new javax.management.ObjectName(name), attribute);
        return ((Number) v).doubleValue();
    }

    /** (6) Tiering never stops silently: the tier-health MBeans through the jar. */
    @Test
    void tierHealthShowsABlackHoledCopyAndDeniedCredentials(TestInfo info) throws Exception {
        world(info);
        TsmRemoteStorageManager rsm = rsm(Route.PROXIED, Map.of());
        String tier = "io.tsm.kafka:type=tsm-tier-metrics,topic=topic-a,partition=3";
        String tsm = "io.tsm.kafka:type=tsm-storage-metrics";
        Fixtures.Segment s = segment(FETCH_SIZE, 61);
        proxy.blackHole();
        AtomicReference<Throwable> error = new AtomicReference<>();
        Thread copier = new Thread(() -> {
            try {
                rsm.copyLogSegmentData(s.metadata, s.data);
            } catch (Throwable e) {
                error.set(e);
            }
        }, "brownout-copier");
        copier.setDaemon(true);
        copier.start();
        Thread.sleep(DEADLINE_MS / 4);
        rsm.metricsFeed().pollNow();
        double first = mbean(tier, "copy-oldest-in-flight-age-ms");
        assertEquals(1.0, mbean(tier, "copies-in-flight"));
        assertEquals(1.0, mbean(tsm, "copies-in-flight"));
        Thread.sleep(DEADLINE_MS / 4);
        rsm.metricsFeed().pollNow();
        double second = mbean(tier, "copy-oldest-in-flight-age-ms");
        assertTrue(first > 0 && second > first, "the copy's age grows: " + first + " then " + second);
        assertTrue(mbean(tsm, "copy-oldest-in-flight-age-ms") >= second);
        copier.join(HUNG.toMillis());
        assertFalse(copier.isAlive(), "the copy under the black hole is still running");
        assertNotNull(error.get(), "the copy under the black hole succeeded");
        rsm.metricsFeed().pollNow();
        assertEquals(1.0, mbean(tier, "copy-consecutive-failures"));
        assertEquals(1.0, mbean(tier, "copy-last-failure-class"), "timeout: " + describe(error.get()));
        assertEquals(-1.0, mbean(tier, "copy-oldest-in-flight-age-ms"));
        assertEquals(1.0, mbean(tsm + ",class=timeout", "copy-failures-total"));
        assertEquals(1.0, mbean(tsm, "tier-partitions-failing"));
        proxy.remove("black-hole");

        // MinIO refuses a wrong secret key (HTTP 403): auth, and not retriable.
        TsmRemoteStorageManager denied = rsm(Route.DIRECT,
                Map.of("storage.aws.secret.access.key", "not-the-" + env.secretKey));
        Fixtures.Segment d = segment(FETCH_SIZE, 62);
        RemoteStorageException e = assertThrows(RemoteStorageException.class,
                () -> denied.copyLogSegmentData(d.metadata, d.data));
        Class<?> retriable = retriableClass();
        if (retriable != null) {
            assertFalse(chain(e).stream().anyMatch(retriable::isInstance),
                    "denied credentials must not be retriable: " + describe(e));
        }
        assertTrue(describe(e).contains("HTTP 403"), describe(e));
        denied.metricsFeed().pollNow();
        assertEquals(4.0, mbean(tier + ",instance=2", "copy-last-failure-class"), "auth: " + describe(e));
        assertEquals(1.0, mbean(tsm + ",instance=2,class=auth", "copy-failures-total"));

        // The store is back: the next copy resets the partition.
        Fixtures.Segment ok = segment(FETCH_SIZE, 63);
        rsm.copyLogSegmentData(ok.metadata, ok.data);
        rsm.metricsFeed().pollNow();
        assertEquals(0.0, mbean(tier, "copy-consecutive-failures"));
        assertEquals(0.0, mbean(tier, "copy-last-failure-class"));
        assertTrue(mbean(tier, "copy-last-success-age-ms") >= 0);
        assertEquals(0.0, mbean(tsm, "tier-partitions-failing"));
        assertClean(id(s), "after the black-holed copy");
    }
}
