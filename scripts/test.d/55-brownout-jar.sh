#!/usr/bin/env bash
# Brown-out and segment integrity through the plugin jar. Brown-out: the guarantees of
# 33-brownout.sh (engine level), checked on io.tsm.kafka.TsmRemoteStorageManager (Java ->
# JNI -> engine) over the s3 backend, with Toxiproxy between the plugin and MinIO: a black
# hole during fetchLogSegment + read and during fetchIndex (retriable, within 3x the
# deadline, OK once lifted), a copy on a 4 KB/s link interrupted mid multipart upload and
# close() with such a copy in flight (nothing left in the bucket, no incomplete multipart
# upload), a delete on an interrupted thread.
# Then segment integrity through the jar on MinIO directly (no proxy): in every mode (plain,
# zstd, aes, zstd+aes) a flipped bit, swapped chunks, a shrunk size, another topic's segment
# at a segment's keys and a plaintext segment at encrypted keys are refused naming what is
# wrong (never wrong bytes), and a hostile manifest's fetch, fetchIndex and delete each end
# within 10 s (IntegrityIT: the cases IntegrityTest runs on the filesystem in 50-jni.sh).
# crates/tsm-jni/src/test/java/io/tsm/kafka/{BrownoutIT,IntegrityIT}.java; build.sh's own
# test run skips them (surefire excludes *IT). Builds the jar (build.sh --skip-tests: the
# other JUnit tests are 50-jni.sh's), installs both servers (pinned, cached), starts them on
# 127.0.0.1, runs both classes and always stops both servers. About 20-40 s after the
# builds (BrownoutIT 10-25 s: the close() case waits 8 s for its copy's own deadline;
# IntegrityIT, 24 cases, 6-16 s).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$TSM_ROOT"
command -v java >/dev/null || die "java not found: install a JDK 17+ (e.g. apt-get install openjdk-17-jdk-headless)"
command -v mvn >/dev/null || die "mvn not found: install Maven (e.g. apt-get install maven)"
jni="$TSM_ROOT/crates/tsm-jni"

log "building the plugin jar (native library + classes; its JUnit tests run in 50-jni.sh)"
crates/tsm-jni/build.sh --skip-tests >/dev/null || die "crates/tsm-jni/build.sh --skip-tests failed"

source "$TSM_ROOT/scripts/services/brownout-env.sh"

# Only BrownoutIT and IntegrityIT (-Dtest overrides the *IT exclude; failIfNoSpecifiedTests:
# a renamed class fails instead of running nothing; tsm.test.hooks.skip: the pom's
# NativeHooksTest execution, which ignores -Dtest and needs the test-hooks dev library, is
# step 50's). The native
# library is on the test classpath as a resource (target/native, filled by build.sh),
# exactly as for build.sh's tests.
mkdir -p "$jni/target/test-work"
log "running BrownoutIT and IntegrityIT through the plugin jar"
start=$(date +%s)
# shellcheck disable=SC2086
if ! mvn -B -ntp -Dstyle.color=never -f "$jni/pom.xml" \
    -Dtest='BrownoutIT,IntegrityIT' -Dsurefire.failIfNoSpecifiedTests=true -Dtsm.test.hooks.skip=true \
    ${MAVEN_ARGS:-} test; then
  tail -n 60 "$jni/target/test-work/slf4j-test.log" 2>/dev/null || true
  die "BrownoutIT or IntegrityIT failed (reports: crates/tsm-jni/target/surefire-reports)"
fi
log "BrownoutIT and IntegrityIT passed in $(( $(date +%s) - start ))s"
