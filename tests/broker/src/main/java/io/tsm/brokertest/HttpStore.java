package io.tsm.brokertest;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * Plain-HTTP plumbing shared by the cloud {@link RemoteStore}s (S3, GCS, Azure): they talk to
 * the emulator's own REST API with the JDK's HTTP client, independently of the plugin's SDKs,
 * so the test sees what is really in the bucket.
 */
final class HttpStore {
  static final HttpClient CLIENT =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

  private HttpStore() {}

  /** Sends and returns the body as text; a non-2xx status is an IOException naming the URL. */
  static String text(HttpRequest req) throws IOException {
    HttpResponse<String> r = send(req, HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() / 100 != 2) {
      throw new IOException(
          req.method() + " " + redact(req.uri()) + ": HTTP " + r.statusCode() + " " + head(r.body()));
    }
    return r.body();
  }

  /** Sends and returns the body as a stream; a non-2xx status is an IOException. */
  static InputStream stream(HttpRequest req) throws IOException {
    HttpResponse<InputStream> r = send(req, HttpResponse.BodyHandlers.ofInputStream());
    if (r.statusCode() / 100 != 2) {
      String body;
      try (InputStream in = r.body()) {
        body = new String(in.readNBytes(300), StandardCharsets.UTF_8);
      }
      throw new IOException(
          req.method() + " " + redact(req.uri()) + ": HTTP " + r.statusCode() + " " + body);
    }
    return r.body();
  }

  /** Sends and returns the status code and body (for create calls where 409 is fine). */
  static HttpResponse<String> send(HttpRequest req) throws IOException {
    return send(req, HttpResponse.BodyHandlers.ofString());
  }

  private static <T> HttpResponse<T> send(HttpRequest req, HttpResponse.BodyHandler<T> h)
      throws IOException {
    try {
      return CLIENT.send(req, h);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted: " + req.method() + " " + redact(req.uri()), e);
    }
  }

  /** The URL without its query string (SAS signatures live there). */
  static String redact(URI u) {
    String s = u.toString();
    int q = s.indexOf('?');
    return q < 0 ? s : s.substring(0, q) + "?...";
  }

  private static String head(String s) {
    return s.length() > 300 ? s.substring(0, 300) + "..." : s;
  }

  /** Parses an XML list response (S3 ListObjectsV2, Azure List Blobs). */
  static Document xml(String body) throws IOException {
    try {
      DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
      f.setNamespaceAware(false);
      f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
      return f.newDocumentBuilder()
          .parse(new java.io.ByteArrayInputStream(body.getBytes(StandardCharsets.UTF_8)));
    } catch (javax.xml.parsers.ParserConfigurationException | org.xml.sax.SAXException e) {
      throw new IOException("unparsable XML list response: " + head(body), e);
    }
  }

  /** Text of the first descendant element {@code tag} of {@code e}, or null. */
  static String child(Element e, String tag) {
    NodeList n = e.getElementsByTagName(tag);
    return n.getLength() == 0 ? null : n.item(0).getTextContent();
  }

  /** RFC 3986 percent-encoding of everything but unreserved characters (and '/' if asked). */
  static String encode(String s, boolean keepSlash) {
    StringBuilder b = new StringBuilder();
    for (byte c : s.getBytes(StandardCharsets.UTF_8)) {
      int u = c & 0xff;
      if ((u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9')
          || u == '-' || u == '_' || u == '.' || u == '~' || (keepSlash && u == '/')) {
        b.append((char) u);
      } else {
        b.append('%').append(String.format("%02X", u));
      }
    }
    return b.toString();
  }

  /** Environment variable or a clear error naming it. */
  static String env(String name) {
    String v = System.getenv(name);
    if (v == null || v.isEmpty()) {
      throw new IllegalArgumentException("environment variable " + name + " is not set");
    }
    return v;
  }

  static UncheckedIOException unchecked(IOException e) {
    return new UncheckedIOException(e);
  }
}
