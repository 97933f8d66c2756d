#!/usr/bin/env bash
# The plugin inside a real Kafka broker (issue 4, test 2). For each run: a fresh
# single-node KRaft broker (scripts/services/kafka.sh, Kafka from Maven Central) with the
# plugin jar on remote.log.storage.manager.class.path, then the driver (tests/broker):
# a tiered topic with 1 MiB segments and local.retention.ms=1000, 20 MiB of keyed records
# from producers with compression.type none/zstd/lz4, wait until latest-tiered covers them
# and earliest-local moved past them, read everything back from offset 0 and check every
# record, a fetch.max.bytes=1 consumer, ListOffsets by timestamp in the tiered range, the
# remote objects and manifests, the broker's RemoteCopyErrorsPerSec/RemoteFetchErrorsPerSec
# (must stay 0), then delete the topic and wait for its remote objects to go.
#
# Runs: "plain" (plugin defaults: no compression, no encryption) and "secure"
# (compression + encryption with a fresh RSA 2048 key pair).
#
# Every broker runs as on Strimzi: java.io.tmpdir on a 5 MiB tmpfs (a Strimzi pod's /tmp is
# a 5Mi emptyDir), and the plugin directory (the jar + the stripped libtsm_jni.so from
# crates/tsm-jni/build.sh) a copy with `chmod -R a-w`, bind-mounted read-only. The stripped
# library (~30 MiB) does not fit the tmpfs: the broker starts only if the plugin loads it in
# place. Each run also checks that the broker mapped the plugin directory's libtsm_jni.so,
# mapped no extracted copy, and logged "loaded native library ... in place". Mounting needs
# root (CI runs as root): without it the step fails, it is not skipped. Everything is
# unmounted at exit.
#
# Environment:
#   TSM_BROKER_BACKEND  filesystem (default) | s3 | gcs | azure. A cloud backend starts its
#                       emulator (scripts/services/minio.sh, fake-gcs.sh, azurite.sh) unless it
#                       already runs, creates a bucket/container tsm-broker-<run> per run,
#                       builds the jar with that cargo feature, and stops the emulator at exit
#                       if it started it. The driver lists and reads the bucket through the
#                       service's REST API (tests/broker/README.md). scripts/test.d/61-broker-cloud.sh
#                       runs this once per cloud backend.
#   TSM_BROKER_RUNS     which runs, default "plain secure"
#   TSM_BROKER_SIZE     record bytes per run, default 20MiB
#   TSM_BROKER_RSM      tsm (default) | kafka-local: Kafka's own test RSM (LocalTieredStorage)
#                       instead of tsm, to validate the harness itself; needs a Kafka version
#                       that publishes the kafka-storage test jar: KAFKA_VERSION=4.3.0
#   TSM_PLUGIN_JAR      use this plugin jar instead of building it; libtsm_jni.so must sit
#                       beside it (build.sh's crates/tsm-jni/target/plugin/ layout)
#   TSM_BROKER_KAFKA_VERSIONS  broker versions to run against, default "4.4.0" (3.9.1 also
#                       passes; the driver's ListOffsets latest-tiered/earliest-local need 3.9+)
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$TSM_ROOT/tests/broker/lib.sh"
cd "$TSM_ROOT" || exit 1

backend=${TSM_BROKER_BACKEND:-filesystem}
runs=${TSM_BROKER_RUNS:-plain secure}
size=${TSM_BROKER_SIZE:-20MiB}
rsm=${TSM_BROKER_RSM:-tsm}
work="$TSM_WORK/broker-test"
[ "$backend" = filesystem ] || work="$TSM_WORK/broker-test-$backend"
backend_feature "$backend" >/dev/null

current=""
mounted=()
# unmount_under DIR: unmounts whatever is mounted below DIR (this step's, also left-overs of
# a killed run), deepest first.
unmount_under() {
  local m
  while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" || log "WARNING: could not unmount $m"
  done < <(awk -v d="$1/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r)
}
cleanup() {
  if [ -n "$current" ]; then bash "$KAFKA_SH" stop --dir "$current" || true; fi
  emulator_stop
  if [ ${#mounted[@]} -gt 0 ]; then unmount_under "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

unmount_under "$work"
rm -rf "$work"
mkdir -p "$work"
versions=${TSM_BROKER_KAFKA_VERSIONS:-${KAFKA_VERSION:-4.4.0}}
for v in $versions; do KAFKA_VERSION=$v bash "$KAFKA_SH" install; done
log "building the broker test driver (tests/broker)"
mkdir -p "$TSM_ROOT/tests/broker/target"
mvn -B -q -f tests/broker/pom.xml -DskipTests package >"$work/driver-build.log" 2>&1 \
  || { cat "$work/driver-build.log" >&2; die "building tests/broker failed"; }
export TSM_DRIVER_NO_BUILD=1

if [ "$rsm" = kafka-local ]; then
  runs=plain # LocalTieredStorage has no compression/encryption
elif [ -z "${TSM_PLUGIN_JAR:-}" ]; then
  TSM_PLUGIN_JAR=$(plugin_jar "$(backend_feature "$backend")")
  export TSM_PLUGIN_JAR
fi
if [ "$backend" != filesystem ]; then
  [ "$rsm" = tsm ] || die "TSM_BROKER_RSM=$rsm only works with the filesystem backend"
  emulator_start "$backend"
fi

# The Strimzi-like constraints: a 5 MiB java.io.tmpdir and a read-only plugin directory.
broker_tmp="$work/broker-tmp"
plugin_ro="$work/plugin-ro"
mkdir -p "$broker_tmp"
mount -t tmpfs -o size=5m,mode=1777 tmpfs "$broker_tmp" \
  || die "cannot mount a 5 MiB tmpfs on $broker_tmp: this step needs root (mount -t tmpfs; CI runs as root)"
mounted+=("$broker_tmp")
export KAFKA_EXTRA_JVM_OPTS="-Djava.io.tmpdir=$broker_tmp ${KAFKA_EXTRA_JVM_OPTS:-}"
if [ "$rsm" = tsm ]; then
  src_dir=$(dirname "$TSM_PLUGIN_JAR")
  [ -f "$src_dir/libtsm_jni.so" ] \
    || die "no libtsm_jni.so beside $TSM_PLUGIN_JAR: give the jar of a plugin directory (crates/tsm-jni/build.sh's target/plugin/)"
  mkdir -p "$work/plugin-src" "$plugin_ro"
  cp "$TSM_PLUGIN_JAR" "$src_dir/libtsm_jni.so" "$work/plugin-src/"
  chmod -R a-w "$work/plugin-src"
  mount --bind "$work/plugin-src" "$plugin_ro" || die "cannot bind-mount $work/plugin-src on $plugin_ro (needs root)"
  mounted+=("$plugin_ro")
  mount -o remount,ro,bind "$plugin_ro" || die "cannot remount $plugin_ro read-only (needs root)"
  if touch "$plugin_ro/.write-probe" 2>/dev/null; then die "$plugin_ro is still writable after the read-only remount"; fi
  log "plugin directory $plugin_ro (read-only): $(cd "$plugin_ro" && ls -s --block-size=K ./* | tr '\n' ' ')"
fi
log "broker java.io.tmpdir: $broker_tmp ($(df -h --output=size "$broker_tmp" | tail -1 | tr -d ' ') tmpfs)"

# check_native_in_place DIR: the broker of DIR loaded the plugin directory's library in place.
check_native_in_place() {
  local dir=$1 lib="$plugin_ro/libtsm_jni.so" rc=0
  # shellcheck disable=SC1091
  source "$dir/broker.env"
  if ! grep -qF " $lib" "/proc/$KAFKA_PID/maps"; then
    log "FAILED: the broker (pid $KAFKA_PID) has not mapped $lib"
    rc=1
  fi
  if grep -F "tsm-jni-" "/proc/$KAFKA_PID/maps" | head -3 | grep .; then
    log "FAILED: the broker mapped an extracted copy of the native library (above)"
    rc=1
  fi
  if ! grep -qF "loaded native library $lib in place" "$dir/logs/server.log"; then
    log "FAILED: no 'loaded native library $lib in place' in $dir/logs/server.log"
    rc=1
  fi
  log "java.io.tmpdir use: $(df -h --output=used,size "$broker_tmp" | tail -1 | awk '{ print $1 " of " $2 }'); entries: $(ls -A "$broker_tmp" | tr '\n' ' ')"
  [ $rc -eq 0 ] && echo "native library in place: $lib (read-only plugin directory, 5 MiB tmpdir)" >>"$dir/summary.txt"
  return $rc
}

# run_one NAME COMPRESSION ENCRYPTION
run_one() {
  local name=$1 compression=$2 encryption=$3
  local dir="$work/$KAFKA_VERSION-$name" root="$work/$KAFKA_VERSION-$name/bucket"
  if [ "$backend" != filesystem ]; then
    root="tsm-broker-${KAFKA_VERSION//./-}-$name" # bucket / container name
    backend_bucket "$backend" "$root" || return 1
  fi
  log "--- broker run '$name' on Kafka $KAFKA_VERSION: rsm=$rsm backend=$backend ($root) compression=$compression encryption=$encryption"
  setup_rsm "$rsm" "$backend" "$root" "$compression" "$encryption" "$dir/keys" || return 1
  if [ "$rsm" = tsm ]; then use_plugin_dir "$plugin_ro"; fi
  current=$dir
  if ! bash "$KAFKA_SH" start --dir "$dir" --fresh --port auto --controller-port auto \
      --jmx-port auto "${RSM_ARGS[@]}"; then
    current=""
    return 1
  fi
  # shellcheck disable=SC1091
  source "$dir/broker.env"
  local rc=0
  bash "$DRIVER" tiering --bootstrap "$KAFKA_BOOTSTRAP" --jmx-url "$KAFKA_JMX_URL" \
    --remote-store "$REMOTE_STORE" --size "$size" --summary-file "$dir/summary.txt" \
    "${EXPECT_ARGS[@]}" || rc=$?
  if [ "$rsm" = tsm ]; then check_native_in_place "$dir" || rc=1; fi
  if [ $rc -ne 0 ]; then
    log "broker run '$name' FAILED (driver exit $rc); broker log follows"
    broker_failure_report "$dir"
  fi
  bash "$KAFKA_SH" stop --dir "$dir" || rc=1
  current=""
  return $rc
}

passed=0
failed=()
for KAFKA_VERSION in $versions; do
  export KAFKA_VERSION
  for run in $runs; do
    case $run in
      plain) args=(false false) ;;
      secure) args=(true true) ;;
      compressed) args=(true false) ;;
      encrypted) args=(false true) ;;
      *) die "unknown run '$run' (plain, secure, compressed, encrypted)" ;;
    esac
    if run_one "$run" "${args[@]}"; then
      passed=$((passed + 1))
    else
      failed+=("$KAFKA_VERSION/$run")
    fi
  done
done
echo "broker runs ($backend): $passed passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ] || die "broker runs failed: ${failed[*]} (logs under $work)"
