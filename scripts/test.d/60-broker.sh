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
#   TSM_PLUGIN_JAR      use this plugin jar instead of building it
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
cleanup() {
  if [ -n "$current" ]; then bash "$KAFKA_SH" stop --dir "$current" || true; fi
  emulator_stop
}
trap cleanup EXIT
trap 'exit 130' INT TERM

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
