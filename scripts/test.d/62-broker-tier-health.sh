#!/usr/bin/env bash
# Tiering never stops silently, shown on a real broker (issue 29): a Kafka 4.4.0 broker with
# tsm on S3 (MinIO) through Toxiproxy, with the Prometheus JMX exporter agent and the Strimzi
# example's rules (examples/strimzi/prometheus/jmx-exporter.yml), as Prometheus would see it.
#   1. a topic (1 partition, 1 MiB segments, local.retention.ms=1000) under live traffic;
#      a copy succeeds: tsm_tier_copy_last_success_age_ms{topic,partition="0"} >= 0;
#   2. Toxiproxy black-holes the store (a timeout toxic: bytes are taken, nothing answers):
#      the partition's oldest copy in flight is seen growing on /metrics, copies fail as
#      timeouts (tsm_tier_copy_last_failure_class 1, tsm_copy_failures_total{class="timeout"}),
#      and the broker log has the WARN line "tier health: N copies in a row failed for
#      <topic>-0" (tsm.copy.failures.warn.count=2);
#   3. the toxic goes: the broker log has "tier health: tiering of <topic>-0 recovered", the
#      partition's consecutive failures are 0 and tsm_tier_partitions_failing is 0 again;
#   4. the broker restarts with a secret key MinIO does not know (an expired or revoked
#      credential): copies fail as auth (class 4, tsm_copy_failures_total{class="auth"} > 0)
#      and the WARN line says "auth (not retriable)".
# Store deadlines are 4 s (tsm.storage.*.timeout.ms), so a black-holed copy fails in seconds.
# Wall time on 2 cores: about 90 s (measured 2026-12-04) with MinIO, Toxiproxy and the
# plugin built (they come from steps 30/33 and 50; run alone, this step builds what is
# missing).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$TSM_ROOT/tests/broker/lib.sh"
source "$TSM_ROOT/scripts/services/kafka-common.sh"
cd "$TSM_ROOT" || exit 1
for c in java mvn curl jq; do
  command -v "$c" >/dev/null || die "$c not found: this step needs java (17+), mvn, curl and jq"
done
export KAFKA_VERSION=4.4.0
TOXI_SH="$TSM_ROOT/scripts/services/toxiproxy.sh"
work="$TSM_WORK/broker-tier-health"
dir="$work/broker"
topic="tier-health"
rules="$TSM_ROOT/examples/strimzi/prometheus/jmx-exporter.yml"
toxi_started=0
broker_up=0
traffic_pid=""
cleanup() {
  if [ -n "$traffic_pid" ]; then kill "$traffic_pid" 2>/dev/null || true; wait "$traffic_pid" 2>/dev/null || true; fi
  if [ "$broker_up" = 1 ]; then bash "$KAFKA_SH" stop --dir "$dir" >/dev/null 2>&1 || true; fi
  if [ -n "${TSM_TEST_TOXIPROXY_URL:-}" ]; then
    curl -fsS -o /dev/null -X DELETE "$TSM_TEST_TOXIPROXY_URL/proxies/tier-health" 2>/dev/null || true
  fi
  if [ "$toxi_started" = 1 ]; then bash "$TOXI_SH" stop || true; fi
  emulator_stop
}
trap cleanup EXIT
trap 'exit 130' INT TERM
rm -rf "$work"
mkdir -p "$work"

bash "$KAFKA_SH" install
build_driver "$work/driver-build.log"
agent=$(bash scripts/services/prometheus.sh agent) || die "cannot fetch the JMX exporter agent"
client() { TSM_CLIENT_JVM_OPTS=-Xmx256m cluster_client "$@"; }

emulator_start s3
bash "$TOXI_SH" install
if ! bash "$TOXI_SH" status 2>/dev/null; then
  bash "$TOXI_SH" start || die "could not start Toxiproxy (scripts/services/toxiproxy.sh start)"
  toxi_started=1
fi
eval "$(bash "$TOXI_SH" env)"
curl -fsS -o /dev/null -X DELETE "$TSM_TEST_TOXIPROXY_URL/proxies/tier-health" 2>/dev/null || true
out=$(curl -fsS -X POST "$TSM_TEST_TOXIPROXY_URL/proxies" \
  -d "{\"name\":\"tier-health\",\"listen\":\"127.0.0.1:0\",\"upstream\":\"${TSM_TEST_S3_ENDPOINT#http://}\",\"enabled\":true}") \
  || die "creating the Toxiproxy proxy to MinIO failed"
proxy="http://127.0.0.1:$(jq -r '.listen' <<<"$out" | sed 's/.*://')"
bucket="tsm-tier-health"
backend_bucket s3 "$bucket"
log "the broker reaches MinIO ($TSM_TEST_S3_ENDPOINT) through Toxiproxy at $proxy"

exporter_port=$(free_port)
metrics="$work/metrics.txt"
# start_broker SECRET [--fresh]: the broker with tsm on the proxied store and the exporter.
start_broker() {
  local secret=$1
  shift
  TSM_TEST_S3_ENDPOINT=$proxy TSM_TEST_S3_SECRET_KEY=$secret \
    setup_rsm tsm s3 "$bucket" false false "$work/keys" || die "setup_rsm failed"
  local k
  for k in get.first.byte get.idle get upload delete; do
    RSM_ARGS+=(--rsm-config "tsm.storage.$k.timeout.ms=4000")
  done
  RSM_ARGS+=(--rsm-config tsm.copy.failures.warn.count=2)
  KAFKA_EXTRA_JVM_OPTS="${KAFKA_EXTRA_JVM_OPTS:-} -javaagent:$agent=127.0.0.1:$exporter_port:$rules" \
    bash "$KAFKA_SH" start --dir "$dir" "$@" --port auto --controller-port auto --jmx-port auto \
    "${RSM_ARGS[@]}" || die "the broker did not start"
  broker_up=1
  # shellcheck disable=SC1091
  source "$dir/broker.env"
}

# value NAME [LABEL...]: the value of the first series NAME whose labels include every
# LABEL (`k="v"`, in any order) on /metrics ("" if none).
value() {
  local name=$1 l lines
  shift
  curl -fsS --max-time 10 -o "$metrics" "http://127.0.0.1:$exporter_port/metrics" || { echo ""; return 0; }
  lines=$(grep -E "^$name(\{| )" "$metrics" || true)
  for l in "$@"; do lines=$(grep -F -- "$l" <<<"$lines" || true); done
  head -n 1 <<<"$lines" | awk '{print $NF}'
}
part="topic=\"$topic\"|partition=\"0\""
# await SECONDS WHAT COMMAND...: retries COMMAND every second until it succeeds.
await() {
  local secs=$1 what=$2 i
  shift 2
  for ((i = 0; i < secs; i++)); do
    if "$@"; then log "ok: $what (after ${i}s)"; return 0; fi
    sleep 1
  done
  log "FAILED: $what within ${secs}s; the exporter's last /metrics: $metrics; broker log: $dir/logs/server.log"
  grep -E "^tsm_(tier|copy|copies)" "$metrics" | head -n 30 >&2 || true
  grep -F "tier health" "$dir/logs/server.log" | tail -n 10 >&2 || true
  exit 1
}
# num_ge / num_eq NAME N [LABELS]: the series' value is >= / == N (LABELS: `k="v"|k2="v2"`).
labels() { local IFS='|'; read -r -a LABELS <<<"${1:-}"; }
num_ge() { local v; labels "${3:-}"; v=$(value "$1" "${LABELS[@]}"); [ -n "$v" ] && awk -v v="$v" -v m="$2" 'BEGIN { exit !(v >= m) }'; }
num_eq() { local v; labels "${3:-}"; v=$(value "$1" "${LABELS[@]}"); [ -n "$v" ] && awk -v v="$v" -v m="$2" 'BEGIN { exit !(v == m) }'; }
tier_value() { labels "$part"; value "$1" "${LABELS[@]}"; }
logged() { grep -qF -- "$1" "$dir/logs/server.log"; }

# ------------------------------------------------------------------ 1. healthy
start_broker "$TSM_TEST_S3_SECRET_KEY" --fresh
client create-topic --bootstrap "$KAFKA_BOOTSTRAP" --topic "$topic" --partitions 1 --replication-factor 1 \
  --config remote.storage.enable=true,local.retention.ms=1000,segment.bytes=1048576,retention.ms=-1,segment.index.bytes=65536 \
  || die "creating $topic failed"
# start_traffic STATE: producers and a group consumer in the background; not through the
# client function (a function in the background is a subshell, and killing it would leave
# the JVM running): driver.sh execs java, so $! is the JVM.
start_traffic() {
  mkdir -p "$1"
  TSM_DRIVER_JVM_OPTS=-Xmx256m bash "$DRIVER" cluster traffic --bootstrap "$KAFKA_BOOTSTRAP" --topic "$topic" \
    --state "$1" --rate 256KiB --compressions none >"$1/traffic.log" 2>&1 &
  traffic_pid=$!
}
start_traffic "$work/traffic"
await 90 "a copy of $topic-0 succeeded (tsm_tier_copy_last_success_age_ms >= 0)" \
  num_ge tsm_tier_copy_last_success_age_ms 0 "$part"

# ------------------------------------------------------------------ 2. black hole
curl -fsS -o /dev/null -X POST "$TSM_TEST_TOXIPROXY_URL/proxies/tier-health/toxics" \
  -d '{"name":"black-hole","type":"timeout","stream":"upstream","attributes":{"timeout":0}}' \
  || die "adding the black-hole toxic failed"
log "store black-holed"
await 60 "a copy of $topic-0 is in flight for over 1 s (tsm_tier_copy_oldest_in_flight_age_ms)" \
  num_ge tsm_tier_copy_oldest_in_flight_age_ms 1000 "$part"
# Two samples 300 ms apart within one copy (each lasts a 4 s deadline, then the next starts):
# some pair must grow.
grew=""
prev=$(tier_value tsm_tier_copy_oldest_in_flight_age_ms)
for _ in $(seq 1 20); do
  sleep 0.3
  now=$(tier_value tsm_tier_copy_oldest_in_flight_age_ms)
  if awk -v a="$prev" -v b="$now" 'BEGIN { exit !(a > 0 && b > a) }'; then grew="$prev ms, then $now ms"; break; fi
  prev=$now
done
[ -n "$grew" ] || die "the oldest copy's age never grew between two samples on /metrics (last: $prev)"
log "ok: the oldest copy's age grows on /metrics: $grew"
await 60 "the broker log has the WARN line for copies failing in a row" \
  logged "copies in a row failed for $topic-0"
grep -F "copies in a row failed for $topic-0" "$dir/logs/server.log" | head -n 1 | grep -q WARN \
  || die "the 'copies in a row failed' line is not at WARN"
await 10 "the last failure is a timeout (tsm_tier_copy_last_failure_class 1)" \
  num_eq tsm_tier_copy_last_failure_class 1 "$part"
num_ge tsm_copy_failures_total 1 'class="timeout"' || die "tsm_copy_failures_total{class=\"timeout\"} is not above 0"
num_eq tsm_tier_partitions_failing 1 || die "tsm_tier_partitions_failing is not 1 under the black hole"

# ------------------------------------------------------------------ 3. recovery
curl -fsS -o /dev/null -X DELETE "$TSM_TEST_TOXIPROXY_URL/proxies/tier-health/toxics/black-hole" \
  || die "removing the toxic failed"
log "store back"
await 90 "the broker log has the INFO line: tiering of $topic-0 recovered" \
  logged "tiering of $topic-0 recovered"
await 10 "the partition's consecutive failures are 0 again" \
  num_eq tsm_tier_copy_consecutive_failures 0 "$part"
num_eq tsm_tier_copy_last_failure_class 0 "$part" || die "the last failure class did not reset"
num_eq tsm_tier_partitions_failing 0 || die "tsm_tier_partitions_failing is not 0 after the recovery"

# ------------------------------------------------------------------ 4. denied credentials
bash "$KAFKA_SH" stop --dir "$dir" || die "stopping the broker failed"
broker_up=0
start_broker "not-the-$TSM_TEST_S3_SECRET_KEY"
if ! kill -0 "$traffic_pid" 2>/dev/null; then
  log "the traffic ended with the broker's restart: starting it again"
  start_traffic "$work/traffic2"
fi
await 90 "copies fail as auth (tsm_tier_copy_last_failure_class 4)" \
  num_eq tsm_tier_copy_last_failure_class 4 "$part"
num_ge tsm_copy_failures_total 1 'class="auth"' || die "tsm_copy_failures_total{class=\"auth\"} is not above 0"
await 60 "the WARN line says the auth failure is not retriable" logged "auth (not retriable)"
echo "tier health on a real broker: 4 phases passed (healthy, black hole, recovery, denied credentials)"
