package io.tsm.bench.baseline;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.GeneralSecurityException;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import javax.crypto.spec.SecretKeySpec;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.LogSegmentData;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;

/**
 * A BENCHMARK BASELINE, not a product: a KIP-405 {@code RemoteStorageManager} written the
 * way Aiven's tiered-storage-for-apache-kafka 1.x plugin works (Aiven's artifacts are not on
 * Maven Central), writing and reading object format v1 byte for byte
 * (docs/object-format.md), with the same {@code rsm.config.*} keys as
 * Aiven's plugin and tsm (see {@link BaselineConfig}). Backends: filesystem and S3.
 *
 * <p><b>copy</b>: {@code .log} is streamed chunk by chunk (read {@code chunk.size} bytes,
 * zstd, AES-GCM) into the storage's upload ({@link TransformingInputStream}); then the five
 * indexes (each encrypted as one chunk, never compressed) as {@code .indexes}; then the
 * manifest, last. On failure the three objects are deleted best-effort. Memory: a few chunk
 * buffers + the storage's upload buffer (S3: one multipart part) + the indexes of one segment
 * (Kafka caps each index at {@code segment.index.bytes}, 10 MiB by default).
 *
 * <p><b>fetch</b>: manifest (cached, DEK unwrapped once, up to 1000 segments, like Aiven's
 * manifest cache), then a lazy {@link ChunkFetchInputStream}: one ranged GET per chunk as the
 * caller reads. No chunk cache and no prefetch.
 *
 * <p>Not implemented (not needed for the benchmark): custom metadata (always
 * {@code Optional.empty()}), {@code object_prefix}/{@code object_key} overrides, GCS/Azure,
 * rate limiting, metrics. Thread-safe: every call uses its own buffers and contexts.
 */
public final class JavaBaselineRsm implements RemoteStorageManager {
    private static final int MANIFEST_CACHE_SIZE = 1000;

    private final java.util.concurrent.atomic.LongAdder uploaded = new java.util.concurrent.atomic.LongAdder();
    private volatile BaselineConfig config;
    private volatile Storage storage;
    private final Map<Uuid, Loaded> manifests = Collections.synchronizedMap(
            new LinkedHashMap<>(16, 0.75f, true) {
                private static final long serialVersionUID = 1L;

                @Override
                protected boolean removeEldestEntry(Map.Entry<Uuid, Loaded> eldest) {
                    return size() > MANIFEST_CACHE_SIZE;
                }
            });

    /** A parsed manifest with its unwrapped data key (null when not encrypted). */
    private record Loaded(Manifest manifest, SecretKeySpec key) {}

    public JavaBaselineRsm() {}

    @Override
    public void configure(Map<String, ?> configs) {
        BaselineConfig c = BaselineConfig.parse(configs);
        Storage s;
        try {
            s = c.fsRoot() != null ? new FileSystemStorage(c.fsRoot()) : new S3Storage(c.s3());
        } catch (IOException e) {
            throw new org.apache.kafka.common.config.ConfigException("storage.root", c.fsRoot().toString(),
                    "cannot create the directory: " + e.getMessage());
        }
        Storage old = storage;
        config = c;
        storage = s;
        if (old != null) {
            old.close();
        }
    }

    private Storage storage() throws RemoteStorageException {
        Storage s = storage;
        if (s == null) {
            throw new RemoteStorageException("JavaBaselineRsm is not configured (or closed)");
        }
        return s;
    }

    /** Bytes stored by uploads so far (every object: .log, .indexes, manifest). */
    public long bytesUploaded() {
        return uploaded.sum();
    }

    /** Bytes read from the backend by fetches so far (for downloaded/delivered ratios). */
    public long bytesDownloaded() {
        Storage s = storage;
        return s == null ? 0 : s.bytesDownloaded();
    }

    @Override
    public Optional<RemoteLogSegmentMetadata.CustomMetadata> copyLogSegmentData(RemoteLogSegmentMetadata meta,
                                                                               LogSegmentData data)
            throws RemoteStorageException {
        BaselineConfig c = config;
        Storage s = storage();
        ObjectKeys keys = new ObjectKeys(c.keyPrefix(), meta);
        byte[] dek = null;
        try {
            boolean compress = c.compression() && (!c.heuristic() || firstBatchUncompressed(data.logSegment()));
            SecretKeySpec key = null;
            byte[] aad = null;
            String dataKey = null;
            if (c.encryption() != null) {
                dek = new byte[32];
                aad = new byte[32];
                KeyRing.randomBytes(dek);
                KeyRing.randomBytes(aad);
                key = new SecretKeySpec(dek, "AES");
                dataKey = c.encryption().wrap(dek);
            }
            ChunkIndex chunkIndex;
            try (ChunkTransform t = new ChunkTransform(compress, key, aad, c.chunkSize());
                 TransformingInputStream in = new TransformingInputStream(
                         Files.newInputStream(data.logSegment()), t, c.chunkSize())) {
                uploaded.add(s.upload(in, keys.log));
                chunkIndex = ChunkIndex.of(compress, c.chunkSize(), in.originalBytes(), in.storedSizes());
            }
            Map<IndexType, Manifest.Entry> entries = new EnumMap<>(IndexType.class);
            ByteArrayOutputStream indexes = new ByteArrayOutputStream();
            addIndex(indexes, entries, IndexType.OFFSET, Files.readAllBytes(data.offsetIndex()), key, aad);
            addIndex(indexes, entries, IndexType.TIMESTAMP, Files.readAllBytes(data.timeIndex()), key, aad);
            addIndex(indexes, entries, IndexType.PRODUCER_SNAPSHOT,
                    Files.readAllBytes(data.producerSnapshotIndex()), key, aad);
            ByteBuffer epochs = data.leaderEpochIndex().duplicate();
            byte[] epochBytes = new byte[epochs.remaining()];
            epochs.get(epochBytes);
            addIndex(indexes, entries, IndexType.LEADER_EPOCH, epochBytes, key, aad);
            if (data.transactionIndex().isPresent()) {
                addIndex(indexes, entries, IndexType.TRANSACTION,
                        Files.readAllBytes(data.transactionIndex().get()), key, aad);
            }
            uploaded.add(s.upload(new ByteArrayInputStream(indexes.toByteArray()), keys.indexes));
            Manifest m = new Manifest(chunkIndex, entries, compress, dataKey, aad);
            uploaded.add(s.upload(new ByteArrayInputStream(m.toJson(meta)), keys.manifest));
            return Optional.empty();
        } catch (IOException | GeneralSecurityException | RuntimeException e) {
            RemoteStorageException error = new RemoteStorageException("copy of " + meta.remoteLogSegmentId()
                    + " to " + keys.log + " (+ .indexes, .rsm-manifest) on " + s + " failed: " + e.getMessage(), e);
            try {
                s.delete(List.of(keys.log, keys.indexes, keys.manifest));
            } catch (IOException | RuntimeException cleanup) {
                error.addSuppressed(cleanup);
            }
            throw error;
        } finally {
            if (dek != null) {
                Arrays.fill(dek, (byte) 0);
            }
        }
    }

    private static void addIndex(ByteArrayOutputStream out, Map<IndexType, Manifest.Entry> entries, IndexType type,
                                 byte[] plain, SecretKeySpec key, byte[] aad) throws IOException {
        byte[] stored = key == null || plain.length == 0 ? plain : ChunkTransform.encryptIndex(key, aad, plain);
        entries.put(type, new Manifest.Entry(out.size(), stored.length));
        out.write(stored);
    }

    /**
     * compression.heuristic: true when the first record batch's attributes (bytes 21-22 of the
     * v2 batch header) say "no compression"; any failure means "do not compress", as Aiven's.
     */
    private static boolean firstBatchUncompressed(Path log) {
        try (FileChannel ch = FileChannel.open(log, StandardOpenOption.READ)) {
            ByteBuffer b = ByteBuffer.allocate(23);
            while (b.hasRemaining() && ch.read(b) > 0) {
                // fill
            }
            if (b.hasRemaining() || b.get(16) != 2) {
                return false;
            }
            return (b.getShort(21) & 0x7) == 0;
        } catch (IOException e) {
            return false;
        }
    }

    private Loaded manifest(RemoteLogSegmentMetadata meta) throws RemoteStorageException {
        Uuid id = meta.remoteLogSegmentId().id();
        Loaded cached = manifests.get(id);
        if (cached != null) {
            return cached;
        }
        BaselineConfig c = config;
        Storage s = storage();
        String key = new ObjectKeys(c.keyPrefix(), meta).manifest;
        try {
            byte[] json;
            try (InputStream in = s.fetch(key, 0, Integer.MAX_VALUE)) {
                json = in.readNBytes(16 * 1024 * 1024);
            }
            Manifest m = Manifest.parse(json, key);
            SecretKeySpec dek = null;
            if (m.dataKey != null) {
                if (c.encryption() == null) {
                    throw new IOException("manifest " + key + " is encrypted but encryption is not configured");
                }
                byte[] raw = c.encryption().unwrap(m.dataKey);
                dek = new SecretKeySpec(raw, "AES");
                Arrays.fill(raw, (byte) 0);
            }
            Loaded loaded = new Loaded(m, dek);
            manifests.put(id, loaded);
            return loaded;
        } catch (Storage.ObjectNotFoundException e) {
            throw new RemoteResourceNotFoundException("manifest " + key + " of " + meta.remoteLogSegmentId()
                    + " not found", e);
        } catch (IOException | GeneralSecurityException | RuntimeException e) {
            throw new RemoteStorageException("reading manifest " + key + " failed: " + e.getMessage(), e);
        }
    }

    @Override
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata meta, int startPosition) throws RemoteStorageException {
        return fetch(meta, startPosition, Long.MAX_VALUE);
    }

    @Override
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata meta, int startPosition, int endPosition)
            throws RemoteStorageException {
        return fetch(meta, startPosition, endPosition);
    }

    private InputStream fetch(RemoteLogSegmentMetadata meta, long start, long endInclusive)
            throws RemoteStorageException {
        if (start < 0 || endInclusive < start) {
            throw new RemoteStorageException("fetch of " + meta.remoteLogSegmentId() + ": invalid byte range "
                    + start + "-" + endInclusive);
        }
        Loaded l = manifest(meta);
        long size = l.manifest().chunkIndex.originalFileSize();
        if (start >= size && !(start == 0 && size == 0)) {
            throw new RemoteStorageException("fetch of " + meta.remoteLogSegmentId() + " from byte " + start
                    + ": the segment has " + size + " bytes");
        }
        BaselineConfig c = config;
        Manifest m = l.manifest();
        try {
            ChunkTransform t = new ChunkTransform(m.compression, l.key(), m.aad, m.chunkIndex.originalChunkSize());
            return new ChunkFetchInputStream(storage(), new ObjectKeys(c.keyPrefix(), meta).log, m.chunkIndex, t,
                    start, endInclusive);
        } catch (IOException e) {
            throw new RemoteStorageException("fetch of " + meta.remoteLogSegmentId() + ": " + e.getMessage(), e);
        }
    }

    @Override
    public InputStream fetchIndex(RemoteLogSegmentMetadata meta, IndexType indexType) throws RemoteStorageException {
        Loaded l = manifest(meta);
        Manifest.Entry e = l.manifest().indexes.get(indexType);
        String key = new ObjectKeys(config.keyPrefix(), meta).indexes;
        if (e == null) {
            throw new RemoteResourceNotFoundException("segment " + meta.remoteLogSegmentId() + " has no "
                    + indexType + " index");
        }
        if (e.size() == 0) {
            return InputStream.nullInputStream();
        }
        String what = indexType + " index in " + key + " (stored bytes " + e.position() + "-"
                + (e.position() + e.size() - 1) + ")";
        try {
            if (e.size() > Integer.MAX_VALUE - 64) {
                throw new IOException("index too large");
            }
            byte[] stored;
            try (InputStream in = storage().fetch(key, e.position(), e.size())) {
                stored = in.readNBytes((int) e.size());
            }
            if (stored.length != e.size()) {
                throw new IOException("object ended after " + stored.length + " bytes");
            }
            byte[] plain = l.key() == null ? stored : ChunkTransform.decryptIndex(l.key(), l.manifest().aad, stored, what);
            return new ByteArrayInputStream(plain);
        } catch (Storage.ObjectNotFoundException ex) {
            throw new RemoteResourceNotFoundException(what + ": object not found", ex);
        } catch (IOException ex) {
            throw new RemoteStorageException(what + ": " + ex.getMessage(), ex);
        }
    }

    @Override
    public void deleteLogSegmentData(RemoteLogSegmentMetadata meta) throws RemoteStorageException {
        ObjectKeys keys = new ObjectKeys(config.keyPrefix(), meta);
        manifests.remove(meta.remoteLogSegmentId().id());
        try {
            storage().delete(List.of(keys.log, keys.indexes, keys.manifest));
        } catch (IOException e) {
            throw new RemoteStorageException("delete of " + keys.log + " (+ .indexes, .rsm-manifest) failed: "
                    + e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        Storage s = storage;
        storage = null;
        manifests.clear();
        if (s != null) {
            s.close();
        }
    }
}
