#!/usr/bin/env bash
# Brown-out through the plugin jar: the guarantees of 33-brownout.sh (engine level), checked on
# io.tsm.kafka.TsmRemoteStorageManager (Java -> JNI -> engine) over the s3 backend, with
# Toxiproxy between the plugin and MinIO: a black hole during fetchLogSegment + read and
# during fetchIndex (retriable, within 3x the deadline, OK once lifted), a copy on a 4 KB/s
# link interrupted mid multipart upload and close() with such a copy in flight (nothing left
# in the bucket, no incomplete multipart upload), a delete on an interrupted thread.
# crates/tsm-jni/src/test/java/io/tsm/kafka/BrownoutIT.java; build.sh's own test run skips
# it (surefire excludes *IT). Builds the jar (build.sh --skip-tests: the other JUnit tests
# are 50-jni.sh's), installs both servers (pinned, cached), starts them on 127.0.0.1, runs
# the class and always stops both. About 25 s after the builds (the close() case waits 8 s
# for its copy's own deadline).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$TSM_ROOT"
command -v java >/dev/null || die "java not found: install a JDK 17+ (e.g. apt-get install openjdk-17-jdk-headless)"
command -v mvn >/dev/null || die "mvn not found: install Maven (e.g. apt-get install maven)"
jni="$TSM_ROOT/crates/tsm-jni"

log "building the plugin jar (native library + classes; its JUnit tests run in 50-jni.sh)"
crates/tsm-jni/build.sh --skip-tests >/dev/null || die "crates/tsm-jni/build.sh --skip-tests failed"

source "$TSM_ROOT/scripts/services/brownout-env.sh"

# Only BrownoutIT (-Dtest overrides the *IT exclude; failIfNoSpecifiedTests: a renamed class
# fails instead of running nothing; tsm.test.hooks.skip: the pom's NativeHooksTest execution,
# which ignores -Dtest and needs the test-hooks dev library, is step 50's). The native
# library is on the test classpath as a resource (target/native, filled by build.sh),
# exactly as for build.sh's tests.
mkdir -p "$jni/target/test-work"
log "running BrownoutIT through the plugin jar"
start=$(date +%s)
# shellcheck disable=SC2086
if ! mvn -B -ntp -Dstyle.color=never -f "$jni/pom.xml" \
    -Dtest=BrownoutIT -Dsurefire.failIfNoSpecifiedTests=true -Dtsm.test.hooks.skip=true \
    ${MAVEN_ARGS:-} test; then
  tail -n 60 "$jni/target/test-work/slf4j-test.log" 2>/dev/null || true
  die "BrownoutIT failed (reports: crates/tsm-jni/target/surefire-reports)"
fi
log "BrownoutIT passed in $(( $(date +%s) - start ))s"
