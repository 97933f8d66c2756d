package io.tsm.brokertest;

import java.io.PrintStream;
import java.util.Locale;

/**
 * Output of the driver: plain lines (tests, CI logs) or, with {@code fancy}, a progress bar
 * redrawn in place on a terminal with other lines printed above it (the demo). All methods are
 * synchronized: the producer progress and the remote-object watcher print concurrently.
 */
final class Console {
  private final PrintStream out;
  private final boolean fancy;
  private String bar = null;
  private long lastPlainPercent = -1;

  Console(PrintStream out, boolean fancy) {
    this.out = out;
    this.fancy = fancy;
  }

  synchronized void line(String fmt, Object... args) {
    clearBar();
    out.println(String.format(Locale.ROOT, fmt, args));
    redrawBar();
  }

  synchronized void heading(String title) {
    clearBar();
    out.println(fancy ? "\n\033[1m== " + title + "\033[0m" : "== " + title);
    redrawBar();
  }

  /** A progress bar for {@code done} of {@code total} (bytes), with a rate in bytes/s. */
  synchronized void progress(String label, long done, long total, double bytesPerSecond) {
    double frac = total <= 0 ? 1.0 : Math.min(1.0, (double) done / total);
    if (!fancy) {
      long pct = (long) (frac * 100);
      if (pct / 10 != lastPlainPercent / 10 || (pct == 100 && lastPlainPercent != 100)) {
        lastPlainPercent = pct;
        out.println(
            String.format(
                Locale.ROOT,
                "%s: %3d%% %s / %s (%s/s)",
                label,
                pct,
                bytes(done),
                bytes(total),
                bytes((long) bytesPerSecond)));
      }
      return;
    }
    int width = 36;
    int filled = (int) Math.round(frac * width);
    bar =
        String.format(
            Locale.ROOT,
            "%s [%s%s] %3d%% %s / %s  %s/s",
            label,
            "#".repeat(filled),
            "-".repeat(width - filled),
            (long) (frac * 100),
            bytes(done),
            bytes(total),
            bytes((long) bytesPerSecond));
    out.print("\r\033[K" + bar);
    out.flush();
  }

  /** Ends the current progress bar (keeps its last state on screen). */
  synchronized void endProgress() {
    if (fancy && bar != null) {
      out.print("\r\033[K" + bar + "\n");
      out.flush();
    }
    bar = null;
    lastPlainPercent = -1;
  }

  private void clearBar() {
    if (fancy && bar != null) {
      out.print("\r\033[K");
    }
  }

  private void redrawBar() {
    if (fancy && bar != null) {
      out.print(bar);
      out.flush();
    }
  }

  /** Human-readable bytes, binary units. */
  static String bytes(long n) {
    if (n < 1024) {
      return n + " B";
    }
    double v = n;
    String[] units = {"KiB", "MiB", "GiB", "TiB"};
    int u = -1;
    while (v >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return String.format(Locale.ROOT, "%.1f %s", v, units[u]);
  }
}
