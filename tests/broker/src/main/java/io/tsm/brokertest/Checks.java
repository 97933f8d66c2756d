package io.tsm.brokertest;

import java.util.ArrayList;
import java.util.List;

/**
 * The named checks of a run. Each check passes or fails with a reason; the run ends with the
 * plain summary line {@code "checks: N passed, N failed"} that CI log readers recognise.
 */
final class Checks {
  private final Console console;
  private final List<String> failures = new ArrayList<>();
  private int passed;

  Checks(Console console) {
    this.console = console;
  }

  /** Records {@code name} as passed if {@code ok}, else failed with {@code detail}. */
  boolean check(String name, boolean ok, String detail) {
    if (ok) {
      passed++;
      console.line("  PASS %s%s", name, detail == null || detail.isEmpty() ? "" : " (" + detail + ")");
    } else {
      failures.add(name + ": " + detail);
      console.line("  FAIL %s: %s", name, detail);
    }
    return ok;
  }

  void fail(String name, String detail) {
    check(name, false, detail);
  }

  boolean allPassed() {
    return failures.isEmpty();
  }

  List<String> failures() {
    return failures;
  }

  void summary() {
    if (!failures.isEmpty()) {
      console.line("failed checks:");
      for (String f : failures) {
        console.line("  - %s", f);
      }
    }
    console.line("checks: %d passed, %d failed", passed, failures.size());
  }
}
