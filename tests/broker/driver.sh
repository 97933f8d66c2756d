#!/usr/bin/env bash
# Builds (incrementally, with Maven) and runs the real-broker test driver:
#   tests/broker/driver.sh tiering --bootstrap 127.0.0.1:9092 --remote-store filesystem:DIR ...
# See `tests/broker/driver.sh tiering --help`. Exit 0 when every check passed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ -z "${TSM_DRIVER_NO_BUILD:-}" ]; then
  mkdir -p "$here/target"
  if ! mvn -B -q -f "$here/pom.xml" -DskipTests package >"$here/target/build.log" 2>&1; then
    cat "$here/target/build.log" >&2
    echo "[tsm] ERROR: building the broker test driver failed (log above)" >&2
    exit 2
  fi
fi
# shellcheck disable=SC2086  # TSM_DRIVER_JVM_OPTS holds several options
exec java ${TSM_DRIVER_JVM_OPTS:--Xmx1g} -cp "$here/target/classes:$(cat "$here/target/classpath.txt")" \
  io.tsm.brokertest.Main "$@"
