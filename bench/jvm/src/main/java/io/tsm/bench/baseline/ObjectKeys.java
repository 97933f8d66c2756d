package io.tsm.bench.baseline;

import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;

/**
 * Object keys of a segment (docs/object-format.md "Objects per segment"):
 * {@code <key.prefix><topic>-<topicId>/<partition>/<startOffset:020>-<segmentId>.<suffix>},
 * suffixes {@code log}, {@code indexes}, {@code rsm-manifest}; ids are Kafka
 * {@code Uuid.toString()} (URL-safe base64, 22 chars).
 */
final class ObjectKeys {
    final String log;
    final String indexes;
    final String manifest;

    ObjectKeys(String prefix, RemoteLogSegmentMetadata m) {
        String offset = Long.toString(m.startOffset());
        StringBuilder b = new StringBuilder(prefix)
                .append(m.topicIdPartition().topic()).append('-').append(m.topicIdPartition().topicId())
                .append('/').append(m.topicIdPartition().partition()).append('/');
        for (int i = offset.length(); i < 20; i++) {
            b.append('0');
        }
        String main = b.append(offset).append('-').append(m.remoteLogSegmentId().id()).toString();
        log = main + ".log";
        indexes = main + ".indexes";
        manifest = main + ".rsm-manifest";
    }
}
