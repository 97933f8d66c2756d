package io.tsm.bench.baseline;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;

import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3ClientBuilder;
import software.amazon.awssdk.services.s3.model.CompletedPart;
import software.amazon.awssdk.services.s3.model.Delete;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;

/**
 * {@code storage.backend.class=s3}: AWS SDK v2 sync client (Apache HTTP client, the SDK
 * default, as in Aiven's {@code S3Storage}).
 *
 * <p>Upload: reads the stream one part ({@code storage.s3.multipart.upload.part.size},
 * default 25 MiB) at a time into ONE reusable buffer; an object that fits in one part goes in a
 * single PutObject, a larger one in a multipart upload whose parts are sent one after
 * another (Aiven's {@code S3UploadOutputStream} does the same: one part buffer, synchronous
 * UploadPart). Memory: one part buffer per upload in flight. A failed multipart upload is
 * aborted. Fetch: one ranged GetObject per call. Checksums "when required" (MinIO and other
 * S3-compatible stores reject the SDK's default trailers).
 */
final class S3Storage implements Storage {
    private final S3Client client;
    private final String bucket;
    private final int partSize;
    private final LongAdder downloaded = new LongAdder();

    S3Storage(BaselineConfig.S3 c) {
        S3ClientBuilder b = S3Client.builder()
                .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED);
        if (c.region() != null) {
            b.region(Region.of(c.region()));
        }
        if (c.endpoint() != null) {
            b.endpointOverride(URI.create(c.endpoint()));
        }
        if (c.pathStyle() != null) {
            b.forcePathStyle(c.pathStyle());
        }
        if (c.accessKeyId() != null) {
            b.credentialsProvider(StaticCredentialsProvider.create(
                    AwsBasicCredentials.create(c.accessKeyId(), c.secretAccessKey())));
        } else {
            b.credentialsProvider(DefaultCredentialsProvider.builder().build());
        }
        this.client = b.build();
        this.bucket = c.bucket();
        this.partSize = c.partSize();
    }

    private static RequestBody body(byte[] buf, int len) {
        // No copy of the part: the SDK re-opens the provider's stream on a retry.
        return RequestBody.fromContentProvider(() -> new ByteArrayInputStream(buf, 0, len), len,
                "application/octet-stream");
    }

    @Override
    public long upload(InputStream in, String key) throws IOException {
        byte[] part = new byte[partSize];
        final int first = in.readNBytes(part, 0, partSize);
        int n = first;
        try {
            if (first < partSize) {
                client.putObject(r -> r.bucket(bucket).key(key).contentLength((long) first), body(part, first));
                return first;
            }
            String uploadId = client.createMultipartUpload(r -> r.bucket(bucket).key(key)).uploadId();
            try {
                List<CompletedPart> parts = new ArrayList<>();
                long total = 0;
                int number = 1;
                while (n > 0) {
                    final int len = n;
                    final int partNumber = number;
                    String etag = client.uploadPart(r -> r.bucket(bucket).key(key).uploadId(uploadId)
                            .partNumber(partNumber).contentLength((long) len), body(part, len)).eTag();
                    parts.add(CompletedPart.builder().partNumber(partNumber).eTag(etag).build());
                    total += len;
                    number++;
                    n = in.readNBytes(part, 0, partSize);
                }
                client.completeMultipartUpload(r -> r.bucket(bucket).key(key).uploadId(uploadId)
                        .multipartUpload(m -> m.parts(parts)));
                return total;
            } catch (IOException | RuntimeException e) {
                try {
                    client.abortMultipartUpload(r -> r.bucket(bucket).key(key).uploadId(uploadId));
                } catch (SdkException abort) {
                    e.addSuppressed(abort);
                }
                throw e;
            }
        } catch (SdkException e) {
            throw new IOException("upload of s3://" + bucket + "/" + key + " failed", e);
        }
    }

    @Override
    public InputStream fetch(String key, long from, long length) throws IOException {
        if (length <= 0) {
            return InputStream.nullInputStream();
        }
        String range = "bytes=" + from + "-" + (from + length - 1);
        try {
            InputStream in = client.getObject(r -> r.bucket(bucket).key(key).range(range));
            return new CountingInputStream(in, downloaded);
        } catch (NoSuchKeyException e) {
            throw new ObjectNotFoundException("s3://" + bucket + "/" + key, e);
        } catch (SdkException e) {
            throw new IOException("GET s3://" + bucket + "/" + key + " " + range + " failed", e);
        }
    }

    @Override
    public void delete(Collection<String> keys) throws IOException {
        if (keys.isEmpty()) {
            return;
        }
        List<ObjectIdentifier> ids = keys.stream().map(k -> ObjectIdentifier.builder().key(k).build()).toList();
        try {
            var resp = client.deleteObjects(r -> r.bucket(bucket).delete(Delete.builder().objects(ids).quiet(true).build()));
            if (resp.hasErrors() && !resp.errors().isEmpty()) {
                var e = resp.errors().get(0);
                throw new IOException("delete of s3://" + bucket + "/" + e.key() + " failed: " + e.code() + " " + e.message());
            }
        } catch (SdkException e) {
            throw new IOException("delete of " + keys.size() + " objects in s3://" + bucket + " failed", e);
        }
    }

    @Override
    public long bytesDownloaded() {
        return downloaded.sum();
    }

    @Override
    public void close() {
        client.close();
    }

    @Override
    public String toString() {
        return "S3Storage(" + bucket + ")";
    }
}
