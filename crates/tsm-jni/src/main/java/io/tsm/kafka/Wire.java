package io.tsm.kafka;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;

/**
 * Encodes the broker's objects into the compact big-endian buffers decoded by
 * {@code src/wire.rs} (layout documented there): one byte[] per call instead of many JNI calls.
 */
final class Wire {
    private Wire() {}

    static byte[] props(Map<String, String> props) {
        return encode(out -> {
            out.writeInt(props.size());
            for (Map.Entry<String, String> e : props.entrySet()) {
                str(out, e.getKey());
                str(out, e.getValue());
            }
        });
    }

    static byte[] metadata(RemoteLogSegmentMetadata m) {
        return encode(out -> {
            Uuid topicId = m.remoteLogSegmentId().topicIdPartition().topicId();
            out.writeLong(topicId.getMostSignificantBits());
            out.writeLong(topicId.getLeastSignificantBits());
            str(out, m.remoteLogSegmentId().topicIdPartition().topic());
            out.writeInt(m.remoteLogSegmentId().topicIdPartition().partition());
            Uuid id = m.remoteLogSegmentId().id();
            out.writeLong(id.getMostSignificantBits());
            out.writeLong(id.getLeastSignificantBits());
            out.writeLong(m.startOffset());
            out.writeLong(m.endOffset());
            out.writeLong(m.maxTimestampMs());
            out.writeInt(m.brokerId());
            out.writeLong(m.eventTimestampMs());
            out.writeInt(m.segmentSizeInBytes());
            Map<Integer, Long> epochs = m.segmentLeaderEpochs();
            out.writeInt(epochs.size());
            for (Map.Entry<Integer, Long> e : epochs.entrySet()) {
                out.writeInt(e.getKey());
                out.writeLong(e.getValue());
            }
            byte[] custom = m.customMetadata().map(RemoteLogSegmentMetadata.CustomMetadata::value).orElse(null);
            if (custom == null) {
                out.writeInt(-1);
            } else {
                out.writeInt(custom.length);
                out.write(custom);
            }
        });
    }

    private interface Body {
        void write(DataOutputStream out) throws IOException;
    }

    private static byte[] encode(Body body) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            body.write(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // cannot happen: in-memory stream
        }
        return bytes.toByteArray();
    }

    private static void str(DataOutputStream out, String s) throws IOException {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        out.writeInt(b.length);
        out.write(b);
    }
}
