package io.tsm.brokertest;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * An S3 bucket (MinIO in the tests) seen through the S3 REST API with path-style URLs:
 * ListObjectsV2 (paged by continuation token) and GetObject. Requests are signed
 * with AWS Signature Version 4 (header form, service {@code s3}), written here in a few
 * lines with the JDK's HMAC-SHA256 to keep the driver's class path free of the AWS SDK.
 *
 * <p>Spec: {@code s3:<endpoint>/<bucket>}, e.g. {@code s3:http://127.0.0.1:9900/tsm-broker};
 * credentials from {@code AWS_ACCESS_KEY_ID}, {@code AWS_SECRET_ACCESS_KEY}, region from
 * {@code AWS_REGION} (default us-east-1).
 */
final class S3RemoteStore implements RemoteStore {
  private static final String EMPTY_SHA256 =
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  private static final DateTimeFormatter AMZ_DATE =
      DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'");

  private final String endpoint;
  private final String bucket;
  private final String region;
  private final String accessKey;
  private final String secretKey;

  S3RemoteStore(String spec) {
    int slash = spec.lastIndexOf('/');
    if (!spec.startsWith("http") || slash < 8 || slash == spec.length() - 1) {
      throw new IllegalArgumentException("--remote-store s3:<endpoint>/<bucket>, got s3:" + spec);
    }
    this.endpoint = spec.substring(0, slash);
    this.bucket = spec.substring(slash + 1);
    String r = System.getenv("AWS_REGION");
    this.region = r == null || r.isEmpty() ? "us-east-1" : r;
    this.accessKey = HttpStore.env("AWS_ACCESS_KEY_ID");
    this.secretKey = HttpStore.env("AWS_SECRET_ACCESS_KEY");
  }

  @Override
  public List<RemoteObject> list(String fragment) throws IOException {
    List<RemoteObject> out = new ArrayList<>();
    String token = null;
    do {
      Map<String, String> q = new TreeMap<>();
      q.put("list-type", "2");
      if (token != null) {
        q.put("continuation-token", token);
      }
      Document d = HttpStore.xml(HttpStore.text(request("GET", "/" + bucket, q)));
      NodeList contents = d.getElementsByTagName("Contents");
      for (int i = 0; i < contents.getLength(); i++) {
        Element c = (Element) contents.item(i);
        String key = HttpStore.child(c, "Key");
        if (key != null && key.contains(fragment)) {
          out.add(new RemoteObject(key, Long.parseLong(HttpStore.child(c, "Size"))));
        }
      }
      token =
          "true".equals(HttpStore.child(d.getDocumentElement(), "IsTruncated"))
              ? HttpStore.child(d.getDocumentElement(), "NextContinuationToken")
              : null;
    } while (token != null);
    out.sort((a, b) -> a.key().compareTo(b.key()));
    return out;
  }

  @Override
  public InputStream open(String key) throws IOException {
    return HttpStore.stream(
        request("GET", "/" + bucket + "/" + HttpStore.encode(key, true), Map.of()));
  }

  @Override
  public String describe() {
    return "s3 " + endpoint + "/" + bucket;
  }

  /** A SigV4-signed request with an empty body; path is already URI-encoded. */
  private HttpRequest request(String method, String path, Map<String, String> query)
      throws IOException {
    String amzDate = ZonedDateTime.now(ZoneOffset.UTC).format(AMZ_DATE);
    String day = amzDate.substring(0, 8);
    StringBuilder qs = new StringBuilder();
    for (Map.Entry<String, String> e : new TreeMap<>(query).entrySet()) {
      if (qs.length() > 0) {
        qs.append('&');
      }
      qs.append(HttpStore.encode(e.getKey(), false))
          .append('=')
          .append(HttpStore.encode(e.getValue(), false));
    }
    URI uri = URI.create(endpoint + path + (qs.length() > 0 ? "?" + qs : ""));
    String host = uri.getPort() < 0 ? uri.getHost() : uri.getHost() + ":" + uri.getPort();
    String signedHeaders = "host;x-amz-content-sha256;x-amz-date";
    String canonical =
        method + "\n" + path + "\n" + qs + "\n"
            + "host:" + host + "\n"
            + "x-amz-content-sha256:" + EMPTY_SHA256 + "\n"
            + "x-amz-date:" + amzDate + "\n\n"
            + signedHeaders + "\n" + EMPTY_SHA256;
    String scope = day + "/" + region + "/s3/aws4_request";
    String signature;
    try {
      String toSign =
          "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n"
              + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                  .digest(canonical.getBytes(StandardCharsets.UTF_8)));
      byte[] k = hmac(("AWS4" + secretKey).getBytes(StandardCharsets.UTF_8), day);
      k = hmac(k, region);
      k = hmac(k, "s3");
      k = hmac(k, "aws4_request");
      signature = HexFormat.of().formatHex(hmac(k, toSign));
    } catch (GeneralSecurityException e) {
      throw new IOException("SigV4 signing failed", e);
    }
    return HttpRequest.newBuilder(uri)
        .method(method, HttpRequest.BodyPublishers.noBody())
        .header("x-amz-date", amzDate)
        .header("x-amz-content-sha256", EMPTY_SHA256)
        .header(
            "Authorization",
            "AWS4-HMAC-SHA256 Credential=" + accessKey + "/" + scope
                + ", SignedHeaders=" + signedHeaders + ", Signature=" + signature)
        .build();
  }

  private static byte[] hmac(byte[] key, String data) throws GeneralSecurityException {
    Mac mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(key, "HmacSHA256"));
    return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
  }
}
