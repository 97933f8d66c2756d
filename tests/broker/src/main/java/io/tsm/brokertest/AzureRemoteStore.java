package io.tsm.brokertest;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * An Azure Blob container (Azurite in the tests) seen through the Blob REST API: List Blobs
 * (paged by marker) and Get Blob, authorized by an account SAS (read + list, 1 h) that this
 * class signs with the account key (HMAC-SHA256 over the documented string-to-sign for
 * service version 2022-11-02, as scripts/services/azurite.sh does).
 *
 * <p>Spec: {@code azure:<account endpoint>/<container>}, e.g.
 * {@code azure:http://127.0.0.1:10000/devstoreaccount1/tsm-broker}; the account name is the
 * endpoint's last path segment, the key comes from {@code AZURE_STORAGE_KEY}.
 */
final class AzureRemoteStore implements RemoteStore {
  private static final String VERSION = "2022-11-02";
  private static final DateTimeFormatter ISO = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss'Z'");
  private final String endpoint;
  private final String container;
  private final String sas;

  AzureRemoteStore(String spec) {
    int slash = spec.lastIndexOf('/');
    if (!spec.startsWith("http") || slash < 8 || slash == spec.length() - 1) {
      throw new IllegalArgumentException(
          "--remote-store azure:<endpoint>/<container>, got azure:" + spec);
    }
    this.endpoint = spec.substring(0, slash);
    this.container = spec.substring(slash + 1);
    String account = endpoint.substring(endpoint.lastIndexOf('/') + 1);
    this.sas = accountSas(account, HttpStore.env("AZURE_STORAGE_KEY"));
  }

  private static String accountSas(String account, String key) {
    ZonedDateTime now = ZonedDateTime.now(ZoneOffset.UTC).withNano(0);
    String st = now.minusMinutes(15).format(ISO);
    String se = now.plusHours(1).format(ISO);
    String sts = String.join("\n", account, "rl", "b", "sco", st, se, "", "https,http", VERSION, "", "");
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(Base64.getDecoder().decode(key), "HmacSHA256"));
      String sig = Base64.getEncoder().encodeToString(mac.doFinal(sts.getBytes(StandardCharsets.UTF_8)));
      return "sv=" + VERSION + "&ss=b&srt=sco&sp=rl&st=" + HttpStore.encode(st, false) + "&se="
          + HttpStore.encode(se, false) + "&spr=" + HttpStore.encode("https,http", false) + "&sig="
          + HttpStore.encode(sig, false);
    } catch (GeneralSecurityException | IllegalArgumentException e) {
      throw new IllegalArgumentException("cannot sign an account SAS (is AZURE_STORAGE_KEY base64?)", e);
    }
  }

  private HttpRequest get(String url) {
    return HttpRequest.newBuilder(URI.create(url)).header("x-ms-version", VERSION).GET().build();
  }

  @Override
  public List<RemoteObject> list(String fragment) throws IOException {
    List<RemoteObject> out = new ArrayList<>();
    String marker = null;
    do {
      String url =
          endpoint + "/" + container + "?restype=container&comp=list&maxresults=1000"
              + (marker == null ? "" : "&marker=" + HttpStore.encode(marker, false)) + "&" + sas;
      Document d = HttpStore.xml(HttpStore.text(get(url)));
      NodeList blobs = d.getElementsByTagName("Blob");
      for (int i = 0; i < blobs.getLength(); i++) {
        Element b = (Element) blobs.item(i);
        String name = HttpStore.child(b, "Name");
        if (name != null && name.contains(fragment)) {
          out.add(new RemoteObject(name, Long.parseLong(HttpStore.child(b, "Content-Length"))));
        }
      }
      marker = HttpStore.child(d.getDocumentElement(), "NextMarker");
    } while (marker != null && !marker.isEmpty());
    out.sort((a, b) -> a.key().compareTo(b.key()));
    return out;
  }

  @Override
  public InputStream open(String key) throws IOException {
    return HttpStore.stream(get(endpoint + "/" + container + "/" + HttpStore.encode(key, true) + "?" + sas));
  }

  @Override
  public String describe() {
    return "azure " + endpoint + "/" + container;
  }
}
