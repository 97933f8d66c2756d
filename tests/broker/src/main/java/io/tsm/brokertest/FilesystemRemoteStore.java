package io.tsm.brokertest;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The filesystem backend's bucket: regular files under {@code storage.root}, the object key
 * being the path relative to it (with '/' separators).
 */
final class FilesystemRemoteStore implements RemoteStore {
  private final Path root;

  FilesystemRemoteStore(Path root) {
    this.root = root.toAbsolutePath();
  }

  @Override
  public List<RemoteObject> list(String fragment) throws IOException {
    // The broker deletes objects while we list: a walk that trips over a vanished
    // directory is retried (bounded).
    for (int attempt = 0; ; attempt++) {
      try {
        return walk(fragment);
      } catch (UncheckedIOException e) {
        if (!(e.getCause() instanceof NoSuchFileException) || attempt >= 20) {
          throw e.getCause();
        }
      }
    }
  }

  private List<RemoteObject> walk(String fragment) throws IOException {
    List<RemoteObject> out = new ArrayList<>();
    if (!Files.isDirectory(root)) {
      return out;
    }
    try (Stream<Path> s = Files.walk(root)) {
      s.forEach(
          p -> {
            String key = root.relativize(p).toString().replace('\\', '/');
            if (!key.contains(fragment)) {
              return;
            }
            try {
              if (Files.isRegularFile(p)) {
                out.add(new RemoteObject(key, Files.size(p)));
              }
            } catch (NoSuchFileException e) {
              // deleted between listing and stat: not there any more
            } catch (IOException e) {
              throw new UncheckedIOException(e);
            }
          });
    } catch (NoSuchFileException e) {
      throw new UncheckedIOException(e);
    }
    out.sort((a, b) -> a.key().compareTo(b.key()));
    return out;
  }

  @Override
  public InputStream open(String key) throws IOException {
    return Files.newInputStream(root.resolve(key));
  }

  @Override
  public String describe() {
    return "filesystem " + root;
  }
}
