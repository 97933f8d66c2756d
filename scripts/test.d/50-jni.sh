#!/usr/bin/env bash
# The Kafka plugin jar (crates/tsm-jni): builds the native library (cargo release) and the jar
# with crates/tsm-jni/build.sh, which runs the JUnit tests against the filesystem backend
# (every RemoteStorageManager method, error mapping, forced native panics, 16 concurrent
# fetchers, close during in-flight fetches, leaked streams, two class loaders), then checks
# the jar: it holds the native library under its platform path and no Kafka/SLF4J classes.
# Needs java (17+) and mvn: fails loudly when they are missing.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$TSM_ROOT"
command -v java >/dev/null || die "java not found: install a JDK 17+ (e.g. apt-get install openjdk-17-jdk-headless)"
command -v mvn >/dev/null || die "mvn not found: install Maven (e.g. apt-get install maven)"
command -v jar >/dev/null || die "jar not found: install a full JDK (openjdk-17-jdk-headless)"

log "building the plugin jar and running its JUnit tests"
if ! jar_path=$(crates/tsm-jni/build.sh | tail -n 1); then
  tail -n 60 crates/tsm-jni/target/test-work/slf4j-test.log 2>/dev/null || true
  die "crates/tsm-jni/build.sh failed (JUnit reports: crates/tsm-jni/target/surefire-reports)"
fi
[ -f "$jar_path" ] || die "build.sh did not print a jar path (got: $jar_path)"
log "jar: $jar_path"

listing=$(jar tf "$jar_path")
grep -qx 'io/tsm/kafka/TsmRemoteStorageManager.class' <<<"$listing" \
  || die "jar lacks io/tsm/kafka/TsmRemoteStorageManager.class"
grep -qx 'io/tsm/kafka/native/linux-x86_64/libtsm_jni.so' <<<"$listing" \
  || die "jar lacks the linux-x86_64 native library"
if grep -E '^(org/apache/kafka|org/slf4j|kafka/)' <<<"$listing"; then
  die "jar contains Kafka or SLF4J classes (they must stay provided by the broker)"
fi
echo "jar check: 1 passed, 0 failed"
