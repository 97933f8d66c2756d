package io.tsm.interop;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata.CustomMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;

/**
 * A segment one plugin copied: what the broker's remote log metadata keeps about it (ids,
 * offsets, the custom metadata the copy returned), so that later JVM runs, on other Kafka
 * versions, can fetch and delete it. A group of them is saved as {@code <state>/<group>.properties}.
 */
record CopiedSegment(String mode, String set, boolean txn, String activeKey, String writer, String kafka,
                     String topic, Uuid topicId, Uuid segmentId, Optional<byte[]> customMetadata) {
    /** eventTimestampMs of every metadata (the driver's; no plugin keys on it). */
    static final long EVENT_TS = 1_764_374_400_000L;

    String label() {
        return writer + "@" + kafka + " " + mode + " " + set + (txn ? " +txnindex" : " (no txnindex)")
                + (activeKey.isEmpty() ? "" : " key " + activeKey) + " " + segmentId;
    }

    private RemoteLogSegmentId id() {
        return new RemoteLogSegmentId(new TopicIdPartition(topicId, new TopicPartition(topic, 0)), segmentId);
    }

    /** The metadata copy gets (COPY_SEGMENT_STARTED, no custom metadata yet). */
    RemoteLogSegmentMetadata forCopy(SegmentFiles f) {
        return new RemoteLogSegmentMetadata(id(), f.baseOffset, f.endOffset, f.maxTimestampMs, 0, EVENT_TS,
                f.logBytes, Map.of(0, f.baseOffset), !txn);
    }

    /** The metadata fetches and deletes get: {@code state}, with the custom metadata copy returned. */
    RemoteLogSegmentMetadata with(SegmentFiles f, RemoteLogSegmentState state) {
        return new RemoteLogSegmentMetadata(id(), f.baseOffset, f.endOffset, f.maxTimestampMs, 0, EVENT_TS,
                f.logBytes, customMetadata.map(CustomMetadata::new), state, Map.of(0, f.baseOffset), !txn);
    }

    CopiedSegment withCustomMetadata(Optional<CustomMetadata> cm) {
        return new CopiedSegment(mode, set, txn, activeKey, writer, kafka, topic, topicId, segmentId,
                cm.map(CustomMetadata::value));
    }

    static void save(Path file, List<CopiedSegment> segments) throws IOException {
        Properties p = new Properties();
        p.setProperty("segments", Integer.toString(segments.size()));
        for (int i = 0; i < segments.size(); i++) {
            CopiedSegment s = segments.get(i);
            String k = "seg." + i + ".";
            p.setProperty(k + "mode", s.mode);
            p.setProperty(k + "set", s.set);
            p.setProperty(k + "txn", Boolean.toString(s.txn));
            p.setProperty(k + "activeKey", s.activeKey);
            p.setProperty(k + "writer", s.writer);
            p.setProperty(k + "kafka", s.kafka);
            p.setProperty(k + "topic", s.topic);
            p.setProperty(k + "topicId", s.topicId.toString());
            p.setProperty(k + "segmentId", s.segmentId.toString());
            s.customMetadata.ifPresent(b -> p.setProperty(k + "customMetadata", Base64.getEncoder().encodeToString(b)));
        }
        Files.createDirectories(file.getParent());
        try (OutputStream out = Files.newOutputStream(file)) {
            p.store(out, "segments copied by the interop driver (tests/interop)");
        }
    }

    static List<CopiedSegment> load(Path file) throws IOException {
        if (!Files.isRegularFile(file)) {
            throw new IOException(file + " does not exist: no earlier step copied this group");
        }
        Properties p = new Properties();
        try (InputStream in = Files.newInputStream(file)) {
            p.load(in);
        }
        int n = Integer.parseInt(req(p, file, "segments"));
        List<CopiedSegment> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String k = "seg." + i + ".";
            String cm = p.getProperty(k + "customMetadata");
            out.add(new CopiedSegment(req(p, file, k + "mode"), req(p, file, k + "set"),
                    Boolean.parseBoolean(req(p, file, k + "txn")), p.getProperty(k + "activeKey", ""),
                    req(p, file, k + "writer"), req(p, file, k + "kafka"), req(p, file, k + "topic"),
                    Uuid.fromString(req(p, file, k + "topicId")), Uuid.fromString(req(p, file, k + "segmentId")),
                    cm == null ? Optional.empty() : Optional.of(Base64.getDecoder().decode(cm))));
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
