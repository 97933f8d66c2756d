package io.tsm.bench.baseline;

import java.io.IOException;
import java.util.EnumMap;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager.IndexType;

/**
 * The {@code .rsm-manifest} object, UTF-8 JSON v1 (docs/object-format.md "Manifest"): version
 * {@code "1"}, chunkIndex, segmentIndexes (stored positions/sizes in {@code .indexes};
 * {@code transaction} null when absent), compression, encryption (omitted when off:
 * {@code dataKey} = {@code <keyPairId>:<base64 wrapped DEK>}, {@code aad} base64), and the
 * informational remoteLogSegmentMetadata (ignored on read). Not encrypted.
 */
final class Manifest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** One index's place in {@code .indexes} (stored bytes). */
    record Entry(long position, long size) {}

    final ChunkIndex chunkIndex;
    final Map<IndexType, Entry> indexes;
    final boolean compression;
    /** Null when not encrypted. */
    final String dataKey;
    /** Null when not encrypted. */
    final byte[] aad;

    Manifest(ChunkIndex chunkIndex, Map<IndexType, Entry> indexes, boolean compression, String dataKey, byte[] aad) {
        this.chunkIndex = chunkIndex;
        this.indexes = indexes;
        this.compression = compression;
        this.dataKey = dataKey;
        this.aad = aad;
    }

    byte[] toJson(RemoteLogSegmentMetadata meta) throws IOException {
        JsonNodeFactory f = JsonNodeFactory.instance;
        ObjectNode root = f.objectNode();
        root.put("version", "1");
        root.set("chunkIndex", chunkIndex.toJson(dataKey == null ? 0 : ChunkTransform.GCM_OVERHEAD));
        ObjectNode si = root.putObject("segmentIndexes");
        put(si, "offset", indexes.get(IndexType.OFFSET));
        put(si, "timestamp", indexes.get(IndexType.TIMESTAMP));
        put(si, "producerSnapshot", indexes.get(IndexType.PRODUCER_SNAPSHOT));
        put(si, "leaderEpoch", indexes.get(IndexType.LEADER_EPOCH));
        put(si, "transaction", indexes.get(IndexType.TRANSACTION));
        root.put("compression", compression);
        if (dataKey != null) {
            ObjectNode e = root.putObject("encryption");
            e.put("dataKey", dataKey);
            e.put("aad", java.util.Base64.getEncoder().encodeToString(aad));
        }
        root.set("remoteLogSegmentMetadata", metadataJson(meta));
        return JSON.writeValueAsBytes(root);
    }

    private static void put(ObjectNode parent, String name, Entry e) {
        if (e == null) {
            parent.putNull(name);
        } else {
            parent.putObject(name).put("position", e.position()).put("size", e.size());
        }
    }

    static ObjectNode metadataJson(RemoteLogSegmentMetadata m) {
        ObjectNode n = JsonNodeFactory.instance.objectNode();
        ObjectNode id = n.putObject("remoteLogSegmentId");
        ObjectNode tip = id.putObject("topicIdPartition");
        tip.put("topicId", m.topicIdPartition().topicId().toString());
        tip.putObject("topicPartition").put("topic", m.topicIdPartition().topic())
                .put("partition", m.topicIdPartition().partition());
        id.put("id", m.remoteLogSegmentId().id().toString());
        n.put("startOffset", m.startOffset());
        n.put("endOffset", m.endOffset());
        n.put("maxTimestampMs", m.maxTimestampMs());
        n.put("brokerId", m.brokerId());
        n.put("eventTimestampMs", m.eventTimestampMs());
        ObjectNode epochs = n.putObject("segmentLeaderEpochs");
        m.segmentLeaderEpochs().forEach((e, o) -> epochs.put(e.toString(), o));
        return n;
    }

    /** Parses a manifest; {@code key} is named in errors. */
    static Manifest parse(byte[] json, String key) throws IOException {
        try {
            JsonNode root = JSON.readTree(json);
            if (root == null || !root.isObject()) {
                throw new IOException("not a JSON object");
            }
            JsonNode v = root.get("version");
            if (v == null || !("1".equals(v.asText()) && (v.isTextual() || v.isIntegralNumber()))) {
                throw new IOException("unsupported manifest version " + v + "; this reader knows \"1\"");
            }
            JsonNode ci = root.get("chunkIndex");
            if (ci == null || !ci.isObject()) {
                throw new IOException("chunkIndex is missing");
            }
            ChunkIndex chunkIndex = ChunkIndex.fromJson(ci);
            JsonNode si = root.get("segmentIndexes");
            if (si == null || !si.isObject()) {
                throw new IOException("segmentIndexes is missing");
            }
            Map<IndexType, Entry> idx = new EnumMap<>(IndexType.class);
            entry(si, "offset", IndexType.OFFSET, idx, true);
            entry(si, "timestamp", IndexType.TIMESTAMP, idx, true);
            entry(si, "producerSnapshot", IndexType.PRODUCER_SNAPSHOT, idx, true);
            entry(si, "leaderEpoch", IndexType.LEADER_EPOCH, idx, true);
            entry(si, "transaction", IndexType.TRANSACTION, idx, false);
            JsonNode c = root.get("compression");
            if (c == null || !c.isBoolean()) {
                throw new IOException("compression is missing or not a boolean");
            }
            JsonNode enc = root.get("encryption");
            String dataKey = null;
            byte[] aad = null;
            if (enc != null && !enc.isNull()) {
                dataKey = ChunkIndex.text(enc, "dataKey");
                try {
                    aad = java.util.Base64.getDecoder().decode(ChunkIndex.text(enc, "aad"));
                } catch (IllegalArgumentException e) {
                    throw new IOException("encryption.aad is not base64", e);
                }
            }
            return new Manifest(chunkIndex, idx, c.asBoolean(), dataKey, aad);
        } catch (IOException e) {
            throw new IOException("manifest " + key + " is invalid: " + e.getMessage(), e);
        }
    }

    private static void entry(JsonNode si, String name, IndexType type, Map<IndexType, Entry> out, boolean required)
            throws IOException {
        JsonNode e = si.get(name);
        if (e == null || e.isNull()) {
            if (required) {
                throw new IOException("segmentIndexes." + name + " is missing");
            }
            return;
        }
        out.put(type, new Entry(ChunkIndex.number(e, "position"), ChunkIndex.number(e, "size")));
    }
}
