package io.tsm.brokertest;

import java.io.IOException;
import java.io.InputStream;
import java.util.List;

/**
 * Read-only view of the bucket the plugin writes to, so the test can see remote objects
 * appear and disappear independently of the broker. One implementation per backend:
 * {@code filesystem:<storage.root>}, {@code s3:<endpoint>/<bucket>}, {@code gcs:<endpoint>/<bucket>},
 * {@code azure:<account endpoint>/<container>} (the cloud ones list and read through the
 * service's own REST API, see {@link S3RemoteStore}, {@link GcsRemoteStore},
 * {@link AzureRemoteStore}).
 */
interface RemoteStore {
  /** One object: its key relative to the store root and its size in bytes. */
  record RemoteObject(String key, long size) {}

  /** Every object whose key contains {@code fragment} (e.g. {@code <topic>-<topicId>}). */
  List<RemoteObject> list(String fragment) throws IOException;

  /** The whole object, streamed. */
  InputStream open(String key) throws IOException;

  /** Where the objects are, for humans. */
  String describe();

  /** Parses {@code filesystem:/path}, {@code s3:URL/bucket}, {@code gcs:URL/bucket}, {@code azure:URL/container}. */
  static RemoteStore parse(String spec) {
    int colon = spec.indexOf(':');
    String scheme = colon < 0 ? spec : spec.substring(0, colon);
    String rest = colon < 0 ? "" : spec.substring(colon + 1);
    switch (scheme) {
      case "filesystem":
        if (rest.isEmpty()) {
          throw new IllegalArgumentException("--remote-store filesystem:<storage.root> needs a path");
        }
        return new FilesystemRemoteStore(java.nio.file.Path.of(rest));
      case "s3":
        return new S3RemoteStore(rest);
      case "gcs":
        return new GcsRemoteStore(rest);
      case "azure":
        return new AzureRemoteStore(rest);
      default:
        throw new IllegalArgumentException(
            "unsupported --remote-store '"
                + spec
                + "' (supported: filesystem:<dir>, s3:<endpoint>/<bucket>,"
                + " gcs:<endpoint>/<bucket>, azure:<endpoint>/<container>)");
    }
  }
}
