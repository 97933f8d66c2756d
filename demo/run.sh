#!/usr/bin/env bash
# tsm demo: a real Kafka broker tiers a topic into a bucket through the tsm plugin, deletes
# the local segments, and a consumer still reads every record back, from the bucket.
#
#   demo/run.sh [--backend filesystem|s3|gcs|azure] [--no-encryption] [--no-compression] [--size 64MiB]
#               [--partitions N] [--delete-topic] [--port N|auto] [--stop-emulator]
#
# What it does: builds the plugin jar (cargo + Maven), fetches the Kafka broker jars from
# Maven Central (cached in ~/.cache/tsm/kafka), generates an RSA key pair, starts a
# single-node KRaft broker on 127.0.0.1 with tiered storage on, creates a topic
# (remote.storage.enable=true, 1 MiB segments, local.retention.ms=1000), produces keyed
# records with a progress bar, shows segments arriving in the bucket, waits until the
# local copies are deleted, consumes everything back and verifies every record, prints a
# summary, and stops the broker. Everything lives under demo/data/ (gitignored); run it
# again and it starts from scratch. The broker listens on 127.0.0.1:9092 (--port N, or
# --port auto for a free one); a port in use stops the demo before it builds or deletes
# anything.
# Backends: filesystem (demo/data/bucket), s3 (MinIO, bucket tsm-demo), gcs (fake-gcs-server,
# bucket tsm-demo), azure (Azurite, container tsm-demo). The emulator is started with
# scripts/services/ (installed on first use) and left running at the end with the bucket,
# so its objects can be looked at (the summary says how, and how to stop it: stopping it
# deletes them); the next run of the same backend stops it first and starts from scratch.
# --stop-emulator stops it at the end instead (its objects go with it). An emulator that
# was already running before the demo is used and left alone.
#
# Needs: Java 17+, Maven, a Rust toolchain (cargo), openssl. Nothing else is downloaded
# except from crates.io and Maven Central (and, for a cloud backend, its emulator from the
# Go module proxy, PyPI or npm).
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
source "$TSM_ROOT/tests/broker/lib.sh"

backend=filesystem
encryption=true
compression=true
size=64MiB
partitions=2
delete_topic=0
port=9092
stop_emulator=0
# usage [CODE]: the comment block at the top of this file.
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case $1 in
    --backend) backend=$2; shift 2 ;;
    --no-encryption) encryption=false; shift ;;
    --no-compression) compression=false; shift ;;
    --size) size=$2; shift 2 ;;
    --partitions) partitions=$2; shift 2 ;;
    --delete-topic) delete_topic=1; shift ;;
    --port) port=$2; shift 2 ;;
    --stop-emulator) stop_emulator=1; shift ;;
    -h|--help) usage 0 ;;
    *) echo "unknown option: $1" >&2; usage 2 ;;
  esac
done
backend_feature "$backend" >/dev/null
case $port in
  auto) ;;
  '' | *[!0-9]*) echo "--port: a port number or auto, not '$port'" >&2; usage 2 ;;
esac
# On a terminal the [tsm] lines are bold (scripts/lib.sh); redirected, they stay plain text.
[ -t 2 ] || log() { printf '[tsm] %s\n' "$*" >&2; }

for tool in java mvn cargo openssl; do
  command -v "$tool" >/dev/null || die "$tool is needed (Java 17+, Maven, Rust/cargo, openssl)"
done
jv=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
[ "${jv:-0}" -ge 17 ] || die "Kafka 4.x needs Java 17 or newer (found: $(java -version 2>&1 | head -1))"

data="$TSM_ROOT/demo/data"
broker_dir="$data/broker"
bucket="$data/bucket"
[ "$backend" = filesystem ] || bucket=tsm-demo
keys="$data/keys"
mkdir -p "$data"
# The backends whose emulator a demo run started and left running (with its bucket).
kept="$data/emulators-left-running"

# emulator_script BACKEND / emulator_name BACKEND: its scripts/services/ script and name.
emulator_script() { case $1 in s3) echo minio.sh ;; gcs) echo fake-gcs.sh ;; azure) echo azurite.sh ;; esac; }
emulator_name() { case $1 in s3) echo MinIO ;; gcs) echo fake-gcs-server ;; azure) echo Azurite ;; esac; }

# Before anything is built or deleted: the broker's port must be free. A broker left by an
# earlier demo run holds it: stopped first.
bash "$KAFKA_SH" stop --dir "$broker_dir" >/dev/null 2>&1 || true
if [ "$port" != auto ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  die "port $port on 127.0.0.1 is in use (another Kafka broker?): run demo/run.sh --port N with a free port, or --port auto to pick one; nothing was built, started or deleted"
fi

# The emulator a previous demo run left running for this backend: stopped (its objects go
# with it), so this run starts from scratch like the filesystem one.
if [ "$backend" != filesystem ] && grep -qx "$backend" "$kept" 2>/dev/null; then
  log "stopping the $(emulator_name "$backend") a previous demo run left running (with its bucket): this run starts from scratch"
  bash "$SERVICES/$(emulator_script "$backend")" stop >/dev/null 2>&1 || true
  grep -vx "$backend" "$kept" >"$kept.tmp" || true
  mv -f "$kept.tmp" "$kept"
fi

# The emulator this run started stays up with its bucket (recorded in $kept), unless
# --stop-emulator; say so when the run ends early (the summary says it otherwise).
summary_done=0
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  bash "$KAFKA_SH" stop --dir "$broker_dir" >/dev/null 2>&1 || true
  if [ $stop_emulator = 1 ]; then
    emulator_stop
  elif [ -n "$EMULATOR_STARTED" ]; then
    echo "$backend" >>"$kept"
    [ $summary_done = 1 ] || echo "[tsm] $(emulator_name "$backend") keeps running with bucket $bucket; scripts/services/$(emulator_script "$backend") stop stops it (and deletes the bucket)" >&2
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "1/5 fetching the Kafka broker jars from Maven Central (cached after the first run)"
bash "$KAFKA_SH" install
log "    building the demo client (tests/broker)"
mkdir -p "$TSM_ROOT/tests/broker/target"
mvn -B -q -f "$TSM_ROOT/tests/broker/pom.xml" -DskipTests package >"$data/client-build.log" 2>&1 \
  || { cat "$data/client-build.log" >&2; die "building the demo client failed"; }

log "2/5 building the tsm plugin jar (first time: a few minutes)"
if [ "${TSM_BROKER_RSM:-tsm}" = tsm ] && [ -z "${TSM_PLUGIN_JAR:-}" ]; then
  TSM_PLUGIN_JAR=$(plugin_jar "$(backend_feature "$backend")")
  export TSM_PLUGIN_JAR
fi
if [ "$backend" != filesystem ]; then
  log "    starting the $backend emulator, creating bucket $bucket"
  emulator_start "$backend"
  backend_bucket "$backend" "$bucket"
fi
setup_rsm "${TSM_BROKER_RSM:-tsm}" "$backend" "$bucket" "$compression" "$encryption" "$keys"
log "    $PLUGIN_JAR"

log "3/5 starting a Kafka broker with tsm (backend $backend, compression $compression, encryption $encryption)"
bash "$KAFKA_SH" stop --dir "$broker_dir" >/dev/null 2>&1 || true
if [ "$backend" = filesystem ]; then rm -rf "$bucket"; fi
[ "$encryption" = true ] && log "    RSA key pair: $keys/k1-public.pem, $keys/k1-private.pem"
bash "$KAFKA_SH" start --dir "$broker_dir" --fresh --port "$port" --controller-port auto \
  --jmx-port auto "${RSM_ARGS[@]}" \
  || die "the broker did not start (see above); the demo's options for its ports: --port N or --port auto (the controller and JMX ports are picked automatically)"
# shellcheck disable=SC1091
source "$broker_dir/broker.env"

log "4/5 produce, tier, delete locally, read back from the bucket, verify"
driver_args=(tiering --bootstrap "$KAFKA_BOOTSTRAP" --jmx-url "$KAFKA_JMX_URL"
  --remote-store "$REMOTE_STORE" --size "$size" --partitions "$partitions"
  --producers none --topic "tsm-demo" --summary-file "$data/summary.txt")
[ -t 1 ] && driver_args+=(--fancy)
[ $delete_topic = 1 ] || driver_args+=(--keep-topic)
driver_args+=("${EXPECT_ARGS[@]}")
rc=0
TSM_DRIVER_NO_BUILD=1 bash "$DRIVER" "${driver_args[@]}" || rc=$?

log "5/5 stopping the broker"
if [ $rc -ne 0 ]; then broker_failure_report "$broker_dir"; fi
bash "$KAFKA_SH" stop --dir "$broker_dir"

echo
if [ $rc -eq 0 ]; then
  echo "The demo passed: every record was read back from the bucket and verified."
else
  echo "The demo FAILED (see the checks above and the broker log tail)."
fi
echo "  remote objects : ${REMOTE_STORE#filesystem:}  (one .log, .indexes and .rsm-manifest per segment)"
if [ "$backend" != filesystem ]; then
  name=$(emulator_name "$backend") script="scripts/services/$(emulator_script "$backend")"
  if [ $stop_emulator = 1 ] && [ -n "$EMULATOR_STARTED" ]; then
    echo "                   $name stops with the demo (--stop-emulator): the objects are deleted with it"
  elif [ -n "$EMULATOR_STARTED" ]; then
    echo "                   $name keeps running with them: $script stop stops it and deletes"
    echo "                   them (so does the next demo/run.sh --backend $backend, which starts afresh)"
  else
    echo "                   $name was running before the demo: left running, with them"
  fi
fi
if [ $stop_emulator = 0 ] || [ -z "$EMULATOR_STARTED" ]; then
  echo "  look at them   : tsm --config $broker_dir/server.properties ls   (then inspect, verify;"
  echo "                   the operator tool: cargo install --path crates/tsm-cli)"
fi
[ -f "$keys/k1-public.pem" ] && [ "$encryption" = true ] && echo "  key pair       : $keys (k1-public.pem, k1-private.pem)"
echo "  broker         : $broker_dir/server.properties, log $broker_dir/logs/server.log"
echo "  summary        : $data/summary.txt"
summary_done=1
exit $rc
