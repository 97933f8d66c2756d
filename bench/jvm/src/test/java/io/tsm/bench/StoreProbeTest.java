package io.tsm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** MinIO's Prometheus text as StoreProbe reads it (the same lines as the Rust probe's test). */
class StoreProbeTest {
    static final String TEXT = "# HELP x\n"
            + "minio_api_requests_incoming_total{server=\"127.0.0.1:9980\",type=\"s3\"} 3\n"
            + "minio_api_requests_total{name=\"GetObject\",server=\"127.0.0.1:9980\",type=\"s3\"} 3\n"
            + "minio_api_requests_total{name=\"PutObject\",server=\"127.0.0.1:9980\",type=\"s3\"} 2\n"
            + "minio_api_requests_traffic_received_bytes{server=\"127.0.0.1:9980\",type=\"s3\"} 4e+07\n"
            + "minio_api_requests_traffic_sent_bytes{server=\"127.0.0.1:9980\",type=\"s3\"} 8.0000738e+07\n";

    @Test
    void parsesRequestsPerApiAndTraffic() {
        StoreProbe.Counters c = StoreProbe.Counters.parse(TEXT);
        assertEquals(3L, c.requests.get("GetObject"));
        assertEquals(2L, c.requests.get("PutObject"));
        assertEquals(80_000_738L, c.sent);
        assertEquals(40_000_000L, c.received);
    }

    @Test
    void badValueNamesTheSeries() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> StoreProbe.Counters.parse("minio_api_requests_total{name=\"GetObject\"} x\n"));
        assertTrue(e.getMessage().contains("GetObject"), e.getMessage());
    }
}
