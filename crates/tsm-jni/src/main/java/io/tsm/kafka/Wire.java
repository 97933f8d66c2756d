package io.tsm.kafka;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
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

    /** One object a copy uploaded: type tag ({@code log}, {@code indexes}, {@code rsm-manifest}), stored bytes. */
    static final class Upload {
        final String type;
        final long bytes;

        Upload(String type, long bytes) {
            this.type = type;
            this.bytes = bytes;
        }
    }

    /** A copy's result: custom metadata (null = none) and the objects it uploaded. */
    static final class CopyResult {
        final byte[] customMetadata;
        final List<Upload> uploads;

        CopyResult(byte[] customMetadata, List<Upload> uploads) {
            this.customMetadata = customMetadata;
            this.uploads = uploads;
        }
    }

    private static final String[] OBJECT_TYPES = {"log", "indexes", "rsm-manifest"};

    /** Decodes {@code wire::encode_copy_outcome} (layout in src/wire.rs). */
    static CopyResult copyResult(byte[] b) {
        if (b == null) {
            return new CopyResult(null, List.of());
        }
        ByteBuffer in = ByteBuffer.wrap(b);
        try {
            int n = in.getInt();
            byte[] custom = null;
            if (n >= 0) {
                custom = new byte[n];
                in.get(custom);
            }
            int count = in.getInt();
            List<Upload> uploads = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                int t = in.get();
                long bytes = in.getLong();
                uploads.add(new Upload(t >= 0 && t < OBJECT_TYPES.length ? OBJECT_TYPES[t] : "unknown", bytes));
            }
            return new CopyResult(custom, uploads);
        } catch (BufferUnderflowException | NegativeArraySizeException e) {
            throw new IllegalStateException("tsm: malformed copy result of " + b.length + " bytes", e);
        }
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
