#!/usr/bin/env bash
# tsm demo: a real Kafka broker tiers a topic into a bucket through the tsm plugin, deletes
# the local segments, and a consumer still reads every record back, from the bucket.
#
#   demo/run.sh [--backend filesystem|s3|gcs|azure] [--no-encryption] [--no-compression] [--size 64MiB]
#               [--partitions N] [--delete-topic] [--port N]
#
# What it does: builds the plugin jar (cargo + Maven), fetches the Kafka broker jars from
# Maven Central (cached in ~/.cache/tsm/kafka), generates an RSA key pair, starts a
# single-node KRaft broker on 127.0.0.1 with tiered storage on, creates a topic
# (remote.storage.enable=true, 1 MiB segments, local.retention.ms=1000), produces keyed
# records with a progress bar, shows segments arriving in the bucket, waits until the
# local copies are deleted, consumes everything back and verifies every record, prints a
# summary, and stops the broker. Everything lives under demo/data/ (gitignored); run it
# again and it starts from scratch.
# Backends: filesystem (demo/data/bucket), s3 (MinIO, bucket tsm-demo), gcs (fake-gcs-server,
# bucket tsm-demo), azure (Azurite, container tsm-demo); the emulator is started with
# scripts/services/ (installed on first use) and stopped at the end unless it was running.
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
usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case $1 in
    --backend) backend=$2; shift 2 ;;
    --no-encryption) encryption=false; shift ;;
    --no-compression) compression=false; shift ;;
    --size) size=$2; shift 2 ;;
    --partitions) partitions=$2; shift 2 ;;
    --delete-topic) delete_topic=1; shift ;;
    --port) port=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "unknown option: $1" >&2; usage 2 ;;
  esac
done
backend_feature "$backend" >/dev/null

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

# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  bash "$KAFKA_SH" stop --dir "$broker_dir" >/dev/null 2>&1 || true
  emulator_stop
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
  --jmx-port auto "${RSM_ARGS[@]}"
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
[ -n "$EMULATOR_STARTED" ] && echo "                   (the $backend emulator stops with the demo: its objects go with it)"
[ -f "$keys/k1-public.pem" ] && [ "$encryption" = true ] && echo "  key pair       : $keys (k1-public.pem, k1-private.pem)"
echo "  broker         : $broker_dir/server.properties, log $broker_dir/logs/server.log"
echo "  summary        : $data/summary.txt"
exit $rc
