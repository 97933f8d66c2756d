package io.tsm.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Request cost and connection use of one measured case, seen from outside the plugin, the
 * same for every subject (tsm, the Java baseline, the real Java plugin); the twin of the Rust
 * harness's crates/tsm-bench/src/probe.rs, with the same environment and fields:
 *
 * <ul>
 *   <li>{@code TSM_BENCH_STORE_METRICS_URL}: MinIO's Prometheus endpoint
 *       {@code /minio/metrics/v3/api/requests} (public with {@code MINIO_PROMETHEUS_AUTH_TYPE=public});
 *       {@code minio_api_requests_total{name=API}}, {@code minio_api_requests_traffic_sent_bytes}
 *       and {@code ..._received_bytes} are read before the first measured call and after the last;
 *       the differences go to {@code extra.store} ({@code requests} per API, {@code sent_bytes},
 *       {@code received_bytes}).</li>
 *   <li>{@code TSM_BENCH_CONN_PORT} + {@code TSM_BENCH_CONN_SAMPLER} (the cloud proxy's port and
 *       bench/cloud/conn-sampler.sh): "ACTIVE ESTABLISHED" per 50 ms sample during the same window;
 *       {@code extra.connections}: mean ACTIVE over samples with any, max ACTIVE, max ESTABLISHED,
 *       and the proxy's per-connection rate from {@code TSM_BENCH_CONN_RATE_BPS} (bytes/s).</li>
 *   <li>{@code TSM_BENCH_BACKEND_LABEL}: the records' {@code backend} (e.g. {@code s3-cloud}).</li>
 * </ul>
 * Unset: nothing measured. Set but not working: the case fails (a gap would look free).
 */
final class StoreProbe {
    private final String url;
    private final Counters before;
    private final Process sampler;
    private final Thread reader;
    private final int port;
    private final long[] stats = new long[5]; // samples, samples_active, active_sum, max_active, max_established
    private volatile String samplerError;

    private StoreProbe(String url, Counters before, Process sampler, int port) {
        this.url = url;
        this.before = before;
        this.sampler = sampler;
        this.port = port;
        if (sampler != null) {
            reader = new Thread(this::readSamples, "conn-sampler-reader");
            reader.setDaemon(true);
            reader.start();
        } else {
            reader = null;
        }
    }

    /** The backend label for records: {@code TSM_BENCH_BACKEND_LABEL} or {@code backend}. */
    static String backendLabel(String backend) {
        String l = System.getenv("TSM_BENCH_BACKEND_LABEL");
        return l == null || l.isEmpty() ? backend : l;
    }

    /** Starts what the environment asks for, right before the first measured call. */
    static StoreProbe start() throws IOException, InterruptedException {
        String url = System.getenv("TSM_BENCH_STORE_METRICS_URL");
        Counters before = null;
        if (url != null && !url.isEmpty()) {
            before = Counters.fetch(url);
        } else {
            url = null;
        }
        Process p = null;
        int port = 0;
        String ps = System.getenv("TSM_BENCH_CONN_PORT");
        if (ps != null && !ps.isEmpty()) {
            try {
                port = Integer.parseInt(ps);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("TSM_BENCH_CONN_PORT=" + ps + " is not a port");
            }
            String cmd = System.getenv("TSM_BENCH_CONN_SAMPLER");
            if (cmd == null || cmd.isEmpty()) {
                throw new IllegalArgumentException("TSM_BENCH_CONN_PORT is set but TSM_BENCH_CONN_SAMPLER (the sampler) is not");
            }
            p = new ProcessBuilder(cmd, Integer.toString(port), "0.05")
                    .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        }
        return new StoreProbe(url, before, p, port);
    }

    private void readSamples() {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(sampler.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                String[] f = line.trim().split("\\s+");
                long active;
                long established;
                try {
                    if (f.length != 2) {
                        throw new NumberFormatException();
                    }
                    active = Long.parseLong(f[0]);
                    established = Long.parseLong(f[1]);
                } catch (NumberFormatException e) {
                    samplerError = "connection sampler printed \"" + line + "\", expected \"ACTIVE ESTABLISHED\"";
                    continue;
                }
                synchronized (stats) {
                    stats[0]++;
                    if (active > 0) {
                        stats[1]++;
                        stats[2] += active;
                    }
                    stats[3] = Math.max(stats[3], active);
                    stats[4] = Math.max(stats[4], established);
                }
            }
        } catch (IOException e) {
            // the sampler was stopped
        }
    }

    /** Stops the sampler, reads the counters again, adds {@code store} / {@code connections} to {@code extra}. */
    void finish(ObjectNode extra) throws IOException, InterruptedException {
        if (sampler != null) {
            // A shell loop piped into awk: end the whole tree, not just the shell.
            sampler.descendants().forEach(ProcessHandle::destroy);
            sampler.destroy();
            sampler.waitFor();
            reader.join(5000);
            if (samplerError != null) {
                throw new IllegalStateException(samplerError);
            }
            ObjectNode c = extra.putObject("connections");
            synchronized (stats) {
                c.put("port", port);
                String rate = System.getenv("TSM_BENCH_CONN_RATE_BPS");
                if (rate != null && !rate.isEmpty()) {
                    c.put("rate_per_connection_bytes_per_s", Double.parseDouble(rate));
                }
                c.put("mean_active", stats[1] == 0 ? 0.0 : stats[2] / (double) stats[1]);
                c.put("max_active", stats[3]);
                c.put("max_established", stats[4]);
                c.put("samples", stats[0]);
                c.put("samples_active", stats[1]);
            }
            c.put("how", "ss -tin dport = :port every 50 ms; active = bytes_received or bytes_acked changed since the previous sample; mean over samples with any active");
        }
        if (url != null) {
            Counters after = Counters.fetch(url);
            ObjectNode s = extra.putObject("store");
            ObjectNode req = s.putObject("requests");
            for (Map.Entry<String, Long> e : after.requests.entrySet()) {
                long d = e.getValue() - before.requests.getOrDefault(e.getKey(), 0L);
                if (d < 0) {
                    throw new IllegalStateException("store counter " + e.getKey() + " went down: did the store restart?");
                }
                if (d > 0) {
                    req.put(e.getKey(), d);
                }
            }
            if (after.sent < before.sent || after.received < before.received) {
                throw new IllegalStateException("store traffic counters went down: did the store restart?");
            }
            s.put("sent_bytes", after.sent - before.sent);
            s.put("received_bytes", after.received - before.received);
            s.put("source", "minio_api_requests_* (/minio/metrics/v3/api/requests)");
        }
    }

    /** MinIO's request counters at one moment. */
    static final class Counters {
        final Map<String, Long> requests = new TreeMap<>();
        long sent;
        long received;

        static Counters fetch(String url) throws IOException, InterruptedException {
            HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
            HttpResponse<String> r;
            try {
                r = client.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).GET().build(),
                        HttpResponse.BodyHandlers.ofString());
            } catch (IOException e) {
                throw new IOException("store metrics " + url + ": " + e.getMessage(), e);
            }
            if (r.statusCode() != 200) {
                throw new IOException("store metrics " + url + ": HTTP " + r.statusCode()
                        + " (MinIO needs MINIO_PROMETHEUS_AUTH_TYPE=public)");
            }
            return parse(r.body());
        }

        /** Prometheus text; values may be floats ({@code 8.0000738e+07}), exact below 2^53. */
        static Counters parse(String text) {
            Counters c = new Counters();
            for (String line : text.split("\n")) {
                if (line.startsWith("#") || line.isBlank()) {
                    continue;
                }
                int sp = line.lastIndexOf(' ');
                if (sp < 0) {
                    continue;
                }
                String series = line.substring(0, sp);
                String name = series.contains("{") ? series.substring(0, series.indexOf('{')) : series;
                String value = line.substring(sp + 1).trim();
                switch (name) {
                    case "minio_api_requests_total" -> {
                        String api = label(series, "name");
                        if (api == null) {
                            throw new IllegalArgumentException("store metrics: " + series + " has no name label");
                        }
                        c.requests.merge(api, number(series, value), Long::sum);
                    }
                    case "minio_api_requests_traffic_sent_bytes" -> c.sent += number(series, value);
                    case "minio_api_requests_traffic_received_bytes" -> c.received += number(series, value);
                    default -> { }
                }
            }
            return c;
        }

        private static long number(String series, String value) {
            try {
                return Math.round(Double.parseDouble(value));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("store metrics: " + series + " has value " + value);
            }
        }

        private static String label(String series, String key) {
            int open = series.indexOf('{');
            if (open < 0 || !series.endsWith("}")) {
                return null;
            }
            for (String kv : series.substring(open + 1, series.length() - 1).split(",")) {
                int eq = kv.indexOf('=');
                if (eq > 0 && kv.substring(0, eq).trim().equals(key)) {
                    return kv.substring(eq + 1).trim().replace("\"", "");
                }
            }
            return null;
        }
    }
}
