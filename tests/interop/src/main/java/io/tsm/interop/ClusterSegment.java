package io.tsm.interop;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;

/**
 * A segment a broker tiered (scripts/test.d/67-cluster.sh, step 7): what {@code tsm ls --json}
 * reads from its manifest (topic, topic id, partition, segment id, start and end offset, the
 * original size), saved as {@code <state>/<group>.properties} ({@code segments=N},
 * {@code seg.<i>.topic|topicId|partition|segmentId|startOffset|endOffset|size}). Neither
 * plugin's fetch uses the leader epochs or timestamps, so they are left empty / 0.
 */
record ClusterSegment(String topic, Uuid topicId, int partition, Uuid segmentId, long startOffset, long endOffset,
                      int size) {
    String label() {
        return topic + "-" + partition + " [" + startOffset + ", " + endOffset + "] " + segmentId;
    }

    RemoteLogSegmentMetadata metadata() {
        return new RemoteLogSegmentMetadata(
                new RemoteLogSegmentId(new TopicIdPartition(topicId, new TopicPartition(topic, partition)), segmentId),
                startOffset, endOffset, 0L, 0, 0L, size, Optional.empty(), RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
                Map.of(0, startOffset));
    }

    static List<ClusterSegment> load(Path file) throws IOException {
        Properties p = new Properties();
        try (InputStream in = Files.newInputStream(file)) {
            p.load(in);
        }
        int n = Integer.parseInt(req(p, file, "segments"));
        List<ClusterSegment> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String k = "seg." + i + ".";
            out.add(new ClusterSegment(req(p, file, k + "topic"), Uuid.fromString(req(p, file, k + "topicId")),
                    Integer.parseInt(req(p, file, k + "partition")), Uuid.fromString(req(p, file, k + "segmentId")),
                    Long.parseLong(req(p, file, k + "startOffset")), Long.parseLong(req(p, file, k + "endOffset")),
                    Integer.parseInt(req(p, file, k + "size"))));
        }
        if (out.isEmpty()) {
            throw new IOException(file + " lists no segments");
        }
        return out;
    }

    private static String req(Properties p, Path file, String key) throws IOException {
        String v = p.getProperty(key);
        if (v == null) {
            throw new IOException(file + ": " + key + " is missing");
        }
        return v;
    }
}
