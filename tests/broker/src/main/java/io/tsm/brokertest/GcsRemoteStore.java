package io.tsm.brokertest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpRequest;
import java.util.ArrayList;
import java.util.List;

/**
 * A GCS bucket (fake-gcs-server in the tests) seen through the Cloud Storage JSON API:
 * {@code objects.list} (paged by pageToken) and {@code objects.get?alt=media}, anonymous
 * (the emulator does not check credentials).
 *
 * <p>Spec: {@code gcs:<endpoint>/<bucket>}, e.g. {@code gcs:http://127.0.0.1/tsm-broker}.
 */
final class GcsRemoteStore implements RemoteStore {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final String endpoint;
  private final String bucket;

  GcsRemoteStore(String spec) {
    int slash = spec.lastIndexOf('/');
    if (!spec.startsWith("http") || slash < 8 || slash == spec.length() - 1) {
      throw new IllegalArgumentException("--remote-store gcs:<endpoint>/<bucket>, got gcs:" + spec);
    }
    this.endpoint = spec.substring(0, slash);
    this.bucket = spec.substring(slash + 1);
  }

  @Override
  public List<RemoteObject> list(String fragment) throws IOException {
    List<RemoteObject> out = new ArrayList<>();
    String token = null;
    do {
      String url =
          endpoint + "/storage/v1/b/" + HttpStore.encode(bucket, false) + "/o?maxResults=1000"
              + (token == null ? "" : "&pageToken=" + HttpStore.encode(token, false));
      JsonNode page = JSON.readTree(HttpStore.text(HttpRequest.newBuilder(URI.create(url)).GET().build()));
      for (JsonNode item : page.path("items")) {
        String name = item.path("name").asText();
        if (name.contains(fragment)) {
          out.add(new RemoteObject(name, Long.parseLong(item.path("size").asText("0"))));
        }
      }
      token = page.hasNonNull("nextPageToken") ? page.get("nextPageToken").asText() : null;
    } while (token != null && !token.isEmpty());
    out.sort((a, b) -> a.key().compareTo(b.key()));
    return out;
  }

  @Override
  public InputStream open(String key) throws IOException {
    String url =
        endpoint + "/storage/v1/b/" + HttpStore.encode(bucket, false) + "/o/"
            + HttpStore.encode(key, false) + "?alt=media";
    return HttpStore.stream(HttpRequest.newBuilder(URI.create(url)).GET().build());
  }

  @Override
  public String describe() {
    return "gcs " + endpoint + "/" + bucket;
  }
}
