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
# Runs: "plain" (plugin defaults: no compression, no encryption), "secure" (compression +
# encryption with a fresh RSA 2048 key pair), "jdk25" (plain, the broker on the Temurin JDK 25
# under `--illegal-native-access=deny` with `--enable-native-access=ALL-UNNAMED`, as
# docs/strimzi.md advises: the plugin must load, and the JVM must print no restricted-method
# warning) and "jdk25-deny" (the same without --enable-native-access: configure must fail
# with an error naming the flag). With the filesystem backend, older brokers then run
# "plain" too: the matrix of TSM_BROKER_OLDER_KAFKA_VERSIONS (default 3.9.1 4.2.2, Kafka
# from Maven Central as well).
# Wall time on 2 cores (measured 2026-12-04, caches warm): the six runs take about 230 s in
# all (a run about 35 s, jdk25-deny about 10 s); the first run fetches each Kafka version once.
#
# Every broker runs as on Strimzi: java.io.tmpdir on a 5 MiB tmpfs (a Strimzi pod's /tmp is
# a 5Mi emptyDir), and the plugin directory (the jar + the stripped libtsm_jni.so from
# crates/tsm-jni/build.sh) a copy with `chmod -R a-w`, bind-mounted read-only. The stripped
# library (~30 MiB) does not fit the tmpfs: the broker starts only if the plugin loads it in
# place. Each run also checks that the broker mapped the plugin directory's libtsm_jni.so,
# mapped no extracted copy, and logged "loaded native library ... in place". Mounting needs
# root (CI runs as root). Another user runs the whole step in a user+mount namespace of its
# own (scripts/lib.sh need_mounts: unshare --user --map-current-user --keep-caps --mount, same
# uid, the mounts private to the step) when the kernel allows unprivileged user namespaces;
# otherwise the step is SKIPPED up front (a failure under CI=true), as is a gcs run when
# fake-gcs-server cannot listen on port 80 (root or net.ipv4.ip_unprivileged_port_start <= 80).
# Everything is unmounted at exit.
#
# Monitoring as on Strimzi: the first run of each version ("plain") loads the Prometheus JMX
# exporter agent (io.prometheus.jmx:jmx_prometheus_javaagent from Maven Central,
# scripts/services/prometheus.sh) with the Strimzi example's rules
# (examples/strimzi/prometheus/jmx-exporter.yml); after the driver, the exporter's /metrics
# must show the documented names (docs/metrics.md), a per-partition tier-health series with
# its topic and partition labels, and every metric the example alert rules
# (examples/strimzi/prometheus/tsm-alerts.yml) use. Adds about 2 s to the run.
#
# Environment:
#   TSM_BROKER_BACKEND  filesystem (default) | s3 | gcs | azure. A cloud backend starts its
#                       emulator (scripts/services/minio.sh, fake-gcs.sh, azurite.sh) unless it
#                       already runs, creates a bucket/container tsm-broker-<run> per run,
#                       builds the jar with that cargo feature, and stops the emulator at exit
#                       if it started it. The driver lists and reads the bucket through the
#                       service's REST API (tests/broker/README.md). scripts/test.d/61-broker-cloud.sh
#                       runs this once per cloud backend.
#   TSM_BROKER_RUNS     which runs, default "plain secure jdk25 jdk25-deny" ("plain secure" for a cloud
#                       backend)
#   TSM_BROKER_OLDER_KAFKA_VERSIONS  older brokers that run "plain" after those (default
#                       "3.9.1 4.2.2" with the filesystem backend and tsm, else none)
#   TSM_JDK25_HOME      the JDK 25 of the jdk25 runs (default /usr/lib/jvm/temurin-25-jdk-amd64;
#                       missing, the default runs go on without jdk25 and jdk25-deny and say so)
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
source "$TSM_ROOT/scripts/services/kafka-common.sh"
cd "$TSM_ROOT" || exit 1

backend=${TSM_BROKER_BACKEND:-filesystem}
# What a clone may lack, before any build or download: port 80 for fake-gcs-server, mounts.
if [ "$backend" = gcs ]; then
  can_listen_on_port 80 || skip "the gcs broker run: $(need_port80_reason)" "$(need_port80_howto)"
fi
need_mounts "$TSM_ROOT/scripts/test.d/60-broker.sh" "$@"
default_runs="plain secure jdk25 jdk25-deny"
[ "$backend" = filesystem ] || default_runs="plain secure"
runs=${TSM_BROKER_RUNS:-$default_runs}
jdk25_home=${TSM_JDK25_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
# The JDK 25 runs need a JDK 25: asked for (TSM_BROKER_RUNS) and missing, the step fails;
# missing for the default runs, they are SKIPPED (listed by scripts/test.sh; a failure under CI=true).
if [[ " $runs " == *" jdk25"* ]] && [ ! -x "$jdk25_home/bin/java" ]; then
  [ -z "${TSM_BROKER_RUNS:-}" ] || die "the jdk25 runs need a JDK 25 at $jdk25_home (set TSM_JDK25_HOME)"
  skip_part "the jdk25 and jdk25-deny runs" "they need a JDK 25, not found at $jdk25_home" \
    "install the Temurin JDK 25 there (Adoptium's temurin-25-jdk package) or set TSM_JDK25_HOME to a JDK 25"
  runs=$(for r in $runs; do case $r in jdk25 | jdk25-deny) ;; *) printf '%s ' "$r" ;; esac; done)
  runs=${runs% }
fi
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
  # Writable again, so that a user who is not root can delete $TSM_WORK outside a namespace.
  if [ -d "$work/plugin-src" ]; then chmod -R u+w "$work/plugin-src" 2>/dev/null || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

unmount_under "$work"
rm -rf "$work"
mkdir -p "$work"
versions=${TSM_BROKER_KAFKA_VERSIONS:-${KAFKA_VERSION:-4.4.0}}
older_default=""
if [ "$backend" = filesystem ] && [ "$rsm" = tsm ] && [ -z "${TSM_BROKER_KAFKA_VERSIONS:-}" ]; then
  older_default="3.9.1 4.2.2"
fi
older=${TSM_BROKER_OLDER_KAFKA_VERSIONS-$older_default}
for v in $versions $older; do KAFKA_VERSION=$v bash "$KAFKA_SH" install; done
build_driver "$work/driver-build.log"
EXPORTER_AGENT=$(bash scripts/services/prometheus.sh agent) || die "cannot fetch the JMX exporter agent"

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
  || die "cannot mount a 5 MiB tmpfs on $broker_tmp: this step needs root or a user+mount namespace (mount -t tmpfs; CI runs as root)"
mounted+=("$broker_tmp")
export KAFKA_EXTRA_JVM_OPTS="-Djava.io.tmpdir=$broker_tmp ${KAFKA_EXTRA_JVM_OPTS:-}"
if [ "$rsm" = tsm ]; then
  src_dir=$(dirname "$TSM_PLUGIN_JAR")
  [ -f "$src_dir/libtsm_jni.so" ] \
    || die "no libtsm_jni.so beside $TSM_PLUGIN_JAR: give the jar of a plugin directory (crates/tsm-jni/build.sh's target/plugin/)"
  mkdir -p "$work/plugin-src" "$plugin_ro"
  cp "$TSM_PLUGIN_JAR" "$src_dir/libtsm_jni.so" "$work/plugin-src/"
  chmod -R a-w "$work/plugin-src"
  mount --bind "$work/plugin-src" "$plugin_ro" || die "cannot bind-mount $work/plugin-src on $plugin_ro (needs root or a user+mount namespace)"
  mounted+=("$plugin_ro")
  mount -o remount,ro,bind "$plugin_ro" || die "cannot remount $plugin_ro read-only (needs root or a user+mount namespace)"
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

EXPORTER_RULES="$TSM_ROOT/examples/strimzi/prometheus/jmx-exporter.yml"
ALERT_RULES="$TSM_ROOT/examples/strimzi/prometheus/tsm-alerts.yml"
# Names the exporter must show (docs/metrics.md; the rules' comments).
EXPORTER_NAMES=(tsm_tier_copy_last_success_age_ms tsm_tier_copy_oldest_in_flight_age_ms
  tsm_tier_copies_in_flight tsm_tier_copy_consecutive_failures tsm_tier_copy_last_failure_class
  tsm_copy_failures_total tsm_fetch_failures_total tsm_copies_in_flight
  tsm_copy_oldest_in_flight_age_ms tsm_fetches_in_flight tsm_fetch_oldest_in_flight_age_ms
  tsm_tier_partitions_failing tsm_tier_partitions_stalled tsm_native_memory_in_use_bytes
  tsm_native_memory_budget_bytes tsm_storage_downloaded_bytes_total
  aiven_tieredstorage_rsm_object_upload_total aiven_tieredstorage_rsm_segment_copy_time_avg
  aiven_tieredstorage_cache_cache_hits_total aiven_tieredstorage_cache_cache_size
  aiven_tieredstorage_thread_pool_pool_size kafka_server_brokertopicmetrics_remotecopybytes_total)

# check_exporter DIR PORT: the broker's exporter shows the documented names, the per-partition
# series and every metric of the alert rules.
check_exporter() {
  local dir=$1 port=$2 out="$1/metrics.txt" rc=0 name names
  if ! curl -fsS --max-time 30 -o "$out" "http://127.0.0.1:$port/metrics"; then
    log "FAILED: the JMX exporter answers nothing on 127.0.0.1:$port/metrics"
    return 1
  fi
  mapfile -t names < <(grep -oE '\b(tsm|aiven|kafka)_[a-z0-9_]+' "$ALERT_RULES" | sort -u)
  [ ${#names[@]} -gt 0 ] || { log "FAILED: no metric name found in $ALERT_RULES"; return 1; }
  for name in "${EXPORTER_NAMES[@]}" "${names[@]}"; do
    if ! grep -qE "^$name(\{| )" "$out"; then
      log "FAILED: $name is not on the exporter's /metrics ($out)"
      rc=1
    fi
  done
  if ! grep -E '^tsm_tier_copy_consecutive_failures\{' "$out" | grep 'topic="' | grep -q 'partition="'; then
    log "FAILED: no tsm_tier_copy_consecutive_failures series with topic and partition labels ($out)"
    rc=1
  fi
  [ $rc -eq 0 ] && echo "JMX exporter: ${#EXPORTER_NAMES[@]} documented names and the ${#names[@]} metrics of the alert rules on /metrics" >>"$dir/summary.txt"
  return $rc
}

# check_jdk25 DIR: the broker of DIR runs on the JDK 25, and the JVM printed no native-access
# warning (with --illegal-native-access=deny a missing grant would have stopped the plugin).
check_jdk25() {
  local dir=$1 rc=0 exe want
  # shellcheck disable=SC1091
  source "$dir/broker.env"
  exe=$(readlink -f "/proc/$KAFKA_PID/exe" 2>/dev/null || true)
  want=$(readlink -f "$jdk25_home")
  if [ "${exe#"$want"/}" = "$exe" ]; then
    log "FAILED: the broker (pid $KAFKA_PID) runs $exe, not the JDK 25 of $want"
    rc=1
  fi
  if grep -n "restricted method\|Illegal native access" "$dir/logs/stdout.log" "$dir/logs/server.log"; then
    log "FAILED: the JDK 25 broker warned about native access (above)"
    rc=1
  fi
  [ $rc -eq 0 ] && echo "JDK 25 broker ($exe, --illegal-native-access=deny --enable-native-access=ALL-UNNAMED): the plugin loaded, no native-access warning" >>"$dir/summary.txt"
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
  local exporter_port="" saved_opts=$KAFKA_EXTRA_JVM_OPTS saved_java=${KAFKA_JAVA:-}
  if [ "$name" = jdk25 ]; then
    export KAFKA_JAVA="$jdk25_home/bin/java"
    export KAFKA_EXTRA_JVM_OPTS="$KAFKA_EXTRA_JVM_OPTS --illegal-native-access=deny --enable-native-access=ALL-UNNAMED"
  fi
  if [ "$rsm" = tsm ] && [ "$name" = plain ]; then
    exporter_port=$(free_port)
    export KAFKA_EXTRA_JVM_OPTS="$KAFKA_EXTRA_JVM_OPTS -javaagent:$EXPORTER_AGENT=127.0.0.1:$exporter_port:$EXPORTER_RULES"
  fi
  current=$dir
  if ! bash "$KAFKA_SH" start --dir "$dir" --fresh --port auto --controller-port auto \
      --jmx-port auto "${RSM_ARGS[@]}"; then
    KAFKA_EXTRA_JVM_OPTS=$saved_opts KAFKA_JAVA=$saved_java
    current=""
    return 1
  fi
  KAFKA_EXTRA_JVM_OPTS=$saved_opts KAFKA_JAVA=$saved_java
  # shellcheck disable=SC1091
  source "$dir/broker.env"
  local rc=0
  bash "$DRIVER" tiering --bootstrap "$KAFKA_BOOTSTRAP" --jmx-url "$KAFKA_JMX_URL" \
    --remote-store "$REMOTE_STORE" --size "$size" --summary-file "$dir/summary.txt" \
    "${EXPECT_ARGS[@]}" || rc=$?
  if [ "$rsm" = tsm ]; then check_native_in_place "$dir" || rc=1; fi
  if [ -n "$exporter_port" ]; then check_exporter "$dir" "$exporter_port" || rc=1; fi
  if [ "$name" = jdk25 ]; then check_jdk25 "$dir" || rc=1; fi
  if [ $rc -ne 0 ]; then
    log "broker run '$name' FAILED (driver exit $rc); broker log follows"
    broker_failure_report "$dir"
  fi
  bash "$KAFKA_SH" stop --dir "$dir" || rc=1
  current=""
  return $rc
}

# run_jdk25_deny: a broker on the JDK 25 under --illegal-native-access=deny WITHOUT
# --enable-native-access=ALL-UNNAMED must not tier with a bare IllegalCallerException: the
# plugin's configure fails and the broker's log names the flag (the broker stops at startup
# when its RemoteStorageManager cannot be configured; a broker that stays up with the error
# logged passes as well). About 15 s.
run_jdk25_deny() {
  local dir="$work/$KAFKA_VERSION-jdk25-deny" root="$work/$KAFKA_VERSION-jdk25-deny/bucket" rc=0
  log "--- broker run 'jdk25-deny' on Kafka $KAFKA_VERSION: JDK 25, --illegal-native-access=deny, no --enable-native-access"
  setup_rsm "$rsm" "$backend" "$root" false false "$dir/keys" || return 1
  use_plugin_dir "$plugin_ro"
  local saved_opts=$KAFKA_EXTRA_JVM_OPTS
  current=$dir
  if KAFKA_JAVA="$jdk25_home/bin/java" KAFKA_EXTRA_JVM_OPTS="$KAFKA_EXTRA_JVM_OPTS --illegal-native-access=deny" \
      bash "$KAFKA_SH" start --dir "$dir" --fresh --port auto --controller-port auto \
      --jmx-port auto --ready-timeout 60 "${RSM_ARGS[@]}"; then
    log "the broker without --enable-native-access started; its log must still name the flag"
  fi
  KAFKA_EXTRA_JVM_OPTS=$saved_opts
  if grep -qsF -- 'tsm: this JVM refuses to load the plugin' "$dir/logs/server.log" "$dir/logs/stdout.log" \
      && grep -qsF -- 'start the broker with --enable-native-access=ALL-UNNAMED' "$dir/logs/server.log" "$dir/logs/stdout.log"; then
    log "JDK 25 broker under --illegal-native-access=deny without the flag: configure failed naming --enable-native-access=ALL-UNNAMED"
  else
    log "FAILED: the JDK 25 broker without --enable-native-access=ALL-UNNAMED logged no error naming the flag"
    broker_failure_report "$dir"
    rc=1
  fi
  bash "$KAFKA_SH" stop --dir "$dir" >/dev/null 2>&1 || true
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
      jdk25) args=(false false) ;;
      jdk25-deny)
        if run_jdk25_deny; then passed=$((passed + 1)); else failed+=("$KAFKA_VERSION/$run"); fi
        continue ;;
      *) die "unknown run '$run' (plain, secure, compressed, encrypted, jdk25, jdk25-deny)" ;;
    esac
    if run_one "$run" "${args[@]}"; then
      passed=$((passed + 1))
    else
      failed+=("$KAFKA_VERSION/$run")
    fi
  done
done
for KAFKA_VERSION in $older; do
  export KAFKA_VERSION
  if run_one plain false false; then
    passed=$((passed + 1))
  else
    failed+=("$KAFKA_VERSION/plain")
  fi
done
echo "broker runs ($backend): $passed passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ] || die "broker runs failed: ${failed[*]} (logs under $work)"
