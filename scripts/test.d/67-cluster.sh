#!/usr/bin/env bash
# A 3-broker KRaft cluster switches from the Java plugin (Aiven 1.1.1) to tsm under live
# traffic, then upgrades Kafka from 4.2.2 to 4.4.0 (issue 16, part 2). The procedure of
# README.md "Migrating from the Java plugin" and docs/migration.md, step by step, each checked
# before the next:
#   1. controller + brokers 1-3 on Kafka 4.2.2 with the Java plugin (S3 on MinIO, compression
#      and encryption on); topic payments-events (3 partitions, RF 3, min.insync.replicas=2,
#      unclean election off, 1 MiB / 10 s segments, local.retention.ms=5000); live traffic
#      (two idempotent acks=all producers, zstd and none, and a consumer group) starts; wait
#      until segments are tiered and every replica deleted its first local segment;
#   2. roll brokers 1, 2, 3 to tsm (same rsm.config.*, class name and class path changed):
#      after each, full ISRs, the broker logged tsm's configure line, the traffic went on;
#      then new segments are tiered (by tsm);
#   3. the leader of partition 0 gets a slow link to the bucket (Toxiproxy bandwidth toxic),
#      and is killed (SIGKILL) while it copies a segment (its log says "Copying" with no
#      "Copied" yet); restarted, full ISRs, tiering goes on;
#   4. a follower of partition 0 is stopped, its log directory wiped (all but
#      meta.properties), restarted: it rebuilds the leader epoch cache and producer snapshots
#      from remote storage (the replica fetcher's fetchIndex of LEADER_EPOCH and
#      PRODUCER_SNAPSHOT: "Updated the epoch cache from remote tier till offset N" for every
#      partition, the producer snapshot N.snapshot restored, no local segment 0) and rejoins
#      the ISR;
#   5. the controller, then brokers 1-3, roll to Kafka 4.4.0 (still tsm), then
#      metadata.version is bumped with kafka-features (FeatureCommand upgrade
#      --release-version 4.4);
#   6. the traffic stops (the group consumer must have seen every acked record); a fresh
#      group reads everything from offset 0: per partition the exact count and content
#      checksum of what was acked, every record at its acked offset, no duplicate id;
#      ListOffsets by timestamp inside the tiered range; segments copied by each plugin on
#      each version (counted from the brokers' "Copied ... to remote storage" lines);
#   7. the way back: metadata.version 4.4 cannot go down to 4.2 (the controller refuses the
#      downgrade, shown here), so no broker can run 4.2 and the Java plugin again; instead the
#      Java plugin reads tsm's objects at the RSM level (the interop driver, on Kafka 4.2.2
#      classes, pointed at this bucket: segments tsm tiered, byte-compared with tsm's reads).
# Afterwards: the brokers' Remote{Copy,Fetch,Delete}ErrorsPerSec (sampled before every stop
# and at the end, summed) must be 0; BuildRemoteLogAuxStateErrorsPerSec may not be, but only
# up to the number of "RemoteLogManager is not ready for partition" retries the brokers logged
# (a restarted follower asks before its remote log metadata is loaded) and with no other
# reason; `tsm verify` is clean on the bucket; every object in the bucket belongs to a segment
# the cluster's remote log metadata lists as COPY_SEGMENT_FINISHED (__remote_log_metadata
# dumped with Kafka's DumpLogSegments --remote-log-metadata-decoder), each such segment has
# its 3 objects, and the unfinished copies (COPY_SEGMENT_STARTED only) are listed.
#
# Environment: TSM_AIVEN_PLUGIN_DIR (as 65-interop.sh; missing: the step is SKIPPED, a failure
# under CI=true), MINIO_PORT, TOXIPROXY_PORT, TSM_WORK, TSM_CLUSTER_RATE (value bytes/s,
# default 160KiB), TSM_CLI (a tsm binary to use instead of building it). Logs of every node:
# $TSM_WORK/cluster/nodes/node-<id>/logs/ (kept); their tails are printed on failure. Kafka
# versions: Maven Central jars, cached by scripts/services/kafka.sh install.
# The tsm plugin directory comes from step 50 (crates/tsm-jni/build.sh); run alone, this step
# builds it (--skip-tests), and the tsm CLI (cargo build --release -p tsm-cli).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$TSM_ROOT/tests/broker/lib.sh"
cd "$TSM_ROOT"
# The Java plugin first: without it the step is SKIPPED (a failure under CI=true), before any build.
need_aiven_plugin
aiven=$AIVEN_PLUGIN_DIR
# A failing command names itself (set -e alone would end the step silently).
set -E
trap 'echo "[tsm] ERROR: 67-cluster.sh line $LINENO: \"$BASH_COMMAND\" failed" >&2' ERR
for c in java mvn cargo openssl curl jq; do
  command -v "$c" >/dev/null || die "$c not found: this step needs java (17+), mvn, cargo, openssl, curl and jq"
done
t_start=$(date +%s)
FROM=4.2.2
TO=4.4.0
TOPIC=payments-events
CLUSTER_SH="$TSM_ROOT/scripts/services/kafka-cluster.sh"
TOXI_SH="$TSM_ROOT/scripts/services/toxiproxy.sh"
AIVEN_CLASS=io.aiven.kafka.tieredstorage.RemoteStorageManager
TSM_CLASS=io.tsm.kafka.TsmRemoteStorageManager

work="$TSM_WORK/cluster"
nodes="$work/nodes"
state="$work/traffic"
rm -rf "$work"
mkdir -p "$work" "$state"

plugin_src="$TSM_ROOT/crates/tsm-jni/target/plugin"
if ! compgen -G "$plugin_src/tsm-kafka-plugin-*.jar" >/dev/null || [ ! -f "$plugin_src/libtsm_jni.so" ]; then
  log "no plugin directory at $plugin_src: building it (crates/tsm-jni/build.sh --skip-tests)"
  crates/tsm-jni/build.sh --skip-tests >/dev/null || die "crates/tsm-jni/build.sh failed"
fi
# A copy: a build in the tree during the run cannot swap the library under the brokers.
tsm_plugin="$work/plugin-tsm"
mkdir -p "$tsm_plugin"
cp "$plugin_src"/tsm-kafka-plugin-*.jar "$plugin_src/libtsm_jni.so" "$tsm_plugin/"
if [ -n "${TSM_CLI:-}" ]; then
  [ -x "$TSM_CLI" ] || die "TSM_CLI=$TSM_CLI is not an executable"
else
  log "building the tsm CLI (cargo build --release -p tsm-cli)"
  cargo build --locked -q --release -p tsm-cli || die "building tsm-cli failed"
  TSM_CLI="$CARGO_TARGET_DIR/release/tsm"
fi

build_driver "$work/driver-build.log"
log "building the interop driver (tests/interop)"
mvn -B -q -ntp -Dstyle.color=never -f tests/interop/pom.xml package >"$work/interop-build.log" 2>&1 \
  || { cat "$work/interop-build.log" >&2; die "building tests/interop failed"; }
for v in $FROM $TO; do KAFKA_VERSION=$v bash "$KAFKA_SH" install; done

# client ARGS...: the client driver (tests/broker, io.tsm.brokertest.Main cluster ...).
client() { cluster_client "$@"; }

traffic_pid=""
toxi_started=""
failed_report() {
  local id
  for id in 0 1 2 3; do
    [ -d "$nodes/node-$id" ] || continue
    bash "$CLUSTER_SH" logs "$id" --dir "$nodes" 60 || true
    if [ -f "$nodes/node-$id/logs/server.log" ]; then
      echo "----- plugin and remote-storage errors of node $id -----" >&2
      grep -E ' (ERROR|WARN) .*(io\.tsm|aiven|RemoteLogManager|RemoteStorage|remote\.storage|Tsm)' \
        "$nodes/node-$id/logs/server.log" | tail -20 >&2 || true
    fi
  done
  if [ -f "$state/traffic.log" ]; then echo "----- traffic.log -----" >&2; tail -30 "$state/traffic.log" >&2; fi
  # Never fails: under set -e a failing report would end the EXIT trap before the nodes
  # and Toxiproxy are stopped (they once outlived a failed run).
  return 0
}
cleanup() {
  local rc=$?
  if [ $rc -ne 0 ]; then failed_report || true; fi
  if [ -n "$traffic_pid" ]; then
    touch "$state/stop"
    kill "$traffic_pid" 2>/dev/null || true
    wait "$traffic_pid" 2>/dev/null || true
  fi
  bash "$CLUSTER_SH" stop-all --dir "$nodes" || true
  if [ -n "$toxi_started" ]; then bash "$TOXI_SH" stop || true; fi
  if [ -n "${bucket:-}" ] && [ -n "${TSM_TEST_S3_ENDPOINT:-}" ] && [ $rc -eq 0 ]; then
    s3_empty_bucket "$bucket" || true
  fi
  emulator_stop
  log "step 67 ended (exit $rc) after $(($(date +%s) - t_start)) s; logs under $work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

phase() { log "=== [$(($(date +%s) - t_start)) s] $*"; }

# ------------------------------------------------------------------ bucket, proxies, keys
emulator_start s3
bucket="tsm-cluster-$(date +%s)"
backend_bucket s3 "$bucket"
s3_curl() { curl -fsS --max-time 60 --aws-sigv4 "aws:amz:$TSM_TEST_S3_REGION:s3" \
  --user "$TSM_TEST_S3_ACCESS_KEY:$TSM_TEST_S3_SECRET_KEY" "$@"; }
# s3_keys: every object key in the bucket, one a line (ListObjectsV2, paginated).
s3_keys() {
  local token="" out
  while :; do
    out=$(s3_curl "$TSM_TEST_S3_ENDPOINT/$bucket?list-type=2&max-keys=1000${token:+&continuation-token=$(printf %s "$token" | jq -sRr @uri)}") \
      || die "listing bucket $bucket failed"
    grep -o '<Key>[^<]*</Key>' <<<"$out" | sed -e 's:<Key>::' -e 's:</Key>::'
    [[ $out == *"<IsTruncated>true</IsTruncated>"* ]] || break
    token=$(sed -n 's:.*<NextContinuationToken>\([^<]*\)</NextContinuationToken>.*:\1:p' <<<"$out")
  done
}
s3_empty_bucket() {
  local k
  while read -r k; do s3_curl -X DELETE -o /dev/null "$TSM_TEST_S3_ENDPOINT/$1/$k" || true; done < <(s3_keys)
  s3_curl -X DELETE -o /dev/null "$TSM_TEST_S3_ENDPOINT/$1" || true
}

if ! bash "$TOXI_SH" status 2>/dev/null; then
  bash "$TOXI_SH" start || die "could not start Toxiproxy (scripts/services/toxiproxy.sh start)"
  toxi_started=1
fi
eval "$(bash "$TOXI_SH" env)"
minio_hostport=${TSM_TEST_S3_ENDPOINT#http://}
declare -A PROXY_PORT
# One proxy per broker to MinIO: step 3 slows down one broker's link only.
for id in 1 2 3; do
  curl -fsS -o /dev/null -X DELETE "$TSM_TEST_TOXIPROXY_URL/proxies/cluster-b$id" 2>/dev/null || true
  out=$(curl -fsS -X POST "$TSM_TEST_TOXIPROXY_URL/proxies" \
    -d "{\"name\":\"cluster-b$id\",\"listen\":\"127.0.0.1:0\",\"upstream\":\"$minio_hostport\",\"enabled\":true}") \
    || die "creating Toxiproxy proxy cluster-b$id failed"
  PROXY_PORT[$id]=$(jq -r '.listen' <<<"$out" | sed 's/.*://')
done
log "Toxiproxy proxies to MinIO: b1 :${PROXY_PORT[1]}, b2 :${PROXY_PORT[2]}, b3 :${PROXY_PORT[3]}"

gen_keypair "$work/keys" k1
# The rsm.config.* keys every broker gets, written for the Java plugin (the stricter side):
# full backend class name, one key.prefix; tsm takes them as they are.
rsm_common=(
  storage.backend.class=io.aiven.kafka.tieredstorage.storage.s3.S3Storage
  "storage.s3.bucket.name=$bucket"
  "storage.s3.region=$TSM_TEST_S3_REGION"
  storage.s3.path.style.access.enabled=true
  "storage.aws.access.key.id=$TSM_TEST_S3_ACCESS_KEY"
  "storage.aws.secret.access.key=$TSM_TEST_S3_SECRET_KEY"
  key.prefix=tiered/
  chunk.size=262144
  custom.metadata.fields.include=REMOTE_SIZE,OBJECT_PREFIX,OBJECT_KEY
  compression.enabled=true
  compression.heuristic.enabled=false
  encryption.enabled=true
  encryption.key.pair.id=k1
  encryption.key.pairs=k1
  "encryption.key.pairs.k1.public.key.file=$work/keys/k1-public.pem"
  "encryption.key.pairs.k1.private.key.file=$work/keys/k1-private.pem"
)
{
  for kv in "${rsm_common[@]}"; do echo "rsm.config.$kv"; done
  echo "rsm.config.storage.s3.endpoint.url=$TSM_TEST_S3_ENDPOINT"
} >"$work/tsm.properties"

# ------------------------------------------------------------------ cluster helpers
bash "$CLUSTER_SH" init --dir "$nodes" --brokers 3
BOOTSTRAP=$(bash "$CLUSTER_SH" bootstrap --dir "$nodes")
declare -A PLUGIN_OF VERSION_OF
node_env() { bash "$CLUSTER_SH" env "$1" --dir "$nodes" | sed -n "s/^$2=//p"; }
nlog() { echo "$nodes/node-$1/logs/server.log"; }

# start_broker ID VERSION java|tsm
start_broker() {
  local id=$1 version=$2 plugin=$3 class dir
  case $plugin in
    java) class=$AIVEN_CLASS dir=$aiven ;;
    tsm) class=$TSM_CLASS dir=$tsm_plugin ;;
  esac
  local args=()
  for kv in "${rsm_common[@]}"; do args+=(--rsm-config "$kv"); done
  args+=(--rsm-config "storage.s3.endpoint.url=http://127.0.0.1:${PROXY_PORT[$id]}")
  bash "$CLUSTER_SH" start "$id" --dir "$nodes" --version "$version" --rsm-class "$class" \
    --plugin-dir "$dir" "${args[@]}" || die "broker $id ($plugin, Kafka $version) did not start"
  PLUGIN_OF[$id]=$plugin
  VERSION_OF[$id]=$version
}

# sample_meters ID LABEL: the broker's remote meters (counts since it started) to meters.log;
# called before every stop or kill and at the end.
sample_meters() {
  local id=$1 line
  line=$(client meters --jmx-url "$(node_env "$1" NODE_JMX_URL)") || die "reading broker $id's meters over JMX failed"
  echo "$2 broker $id (${PLUGIN_OF[$id]}, Kafka ${VERSION_OF[$id]}): $line" >>"$work/meters.log"
  log "meters of broker $id before $2: $line"
}

progress() { sed -n "s/^$1=//p" "$state/progress" 2>/dev/null || echo 0; }
# traffic_moves SECS: acked and consumed counts both grow within SECS (polled).
traffic_moves() {
  local a0 c0 i
  a0=$(progress acked) c0=$(progress consumed)
  for ((i = 0; i < $1 * 2; i++)); do
    kill -0 "$traffic_pid" 2>/dev/null || die "the traffic process died (see $state/traffic.log)"
    if [ "$(progress acked)" -gt "$a0" ] && [ "$(progress consumed)" -gt "$c0" ]; then return 0; fi
    sleep 0.5
  done
  die "the traffic did not move within $1 s (acked $a0 -> $(progress acked), consumed $c0 -> $(progress consumed))"
}
await_isr() { client await-isr --bootstrap "$BOOTSTRAP" --timeout "${1:-240}" || die "ISRs did not fill up"; }
copied_count() { grep -c "to remote storage with segment-id" "$(nlog "$1")" || true; }
# logged_since ID MARK REGEX: broker ID's log has a line matching REGEX after line MARK (reads
# the whole tail: no early exit, no SIGPIPE under pipefail).
logged_since() { tail -n +"$(($2 + 1))" "$(nlog "$1")" | grep -E "$3" >/dev/null; }

# roll ID VERSION PLUGIN WHY: stop, start again, wait for full ISRs, traffic still moving.
roll() {
  local id=$1 a0
  sample_meters "$id" "roll($4)"
  a0=$(progress acked)
  bash "$CLUSTER_SH" stop "$id" --dir "$nodes"
  start_broker "$id" "$2" "$3"
  await_isr
  traffic_moves 60
  log "broker $id now on ${PLUGIN_OF[$id]} / Kafka ${VERSION_OF[$id]}; acked $a0 -> $(progress acked) across its restart"
}

# ------------------------------------------------------------------ 1. the Java plugin
phase "1. controller and 3 brokers on Kafka $FROM with the Java plugin"
bash "$CLUSTER_SH" start 0 --dir "$nodes" --version $FROM || die "the controller did not start"
for id in 1 2 3; do start_broker "$id" $FROM java; done
client create-topic --bootstrap "$BOOTSTRAP" --topic $TOPIC --partitions 3 \
  --config min.insync.replicas=2,unclean.leader.election.enable=false,cleanup.policy=delete,remote.storage.enable=true,local.retention.ms=5000,segment.bytes=1048576,segment.ms=10000,retention.ms=-1,segment.index.bytes=65536 \
  || die "creating $TOPIC failed"
await_isr
client traffic --bootstrap "$BOOTSTRAP" --topic $TOPIC --state "$state" --rate "${TSM_CLUSTER_RATE:-160KiB}" \
  >"$state/traffic.log" 2>&1 &
traffic_pid=$!
traffic_moves 60
client await-tiered --bootstrap "$BOOTSTRAP" --min-tiered 1 --save "$work/tiered-1" --timeout 240 \
  || die "step 1: the Java plugin tiered nothing"
# Local copies deleted on every replica, not only the leader ListOffsets asks.
for id in 1 2 3; do
  for p in 0 1 2; do
    i=0
    while [ -f "$nodes/node-$id/data/$TOPIC-$p/00000000000000000000.log" ]; do
      i=$((i + 1))
      [ $i -lt 240 ] || die "step 1: broker $id still holds local segment 0 of $TOPIC-$p"
      sleep 0.5
    done
  done
done
log "step 1: segments tiered by the Java plugin and segment 0 deleted locally on all 3 replicas"
for id in 1 2 3; do echo "$id java-$FROM $(copied_count "$id")" >>"$work/copied.txt"; done

# ------------------------------------------------------------------ 2. roll to tsm
phase "2. roll brokers 1, 2, 3 to tsm (Kafka $FROM)"
for id in 1 2 3; do
  mark=$(wc -l <"$(nlog "$id")")
  roll "$id" $FROM tsm "to tsm"
  logged_since "$id" "$mark" "tsm [0-9.]+ configured: backend" \
    || die "broker $id: no 'tsm ... configured: backend' line after its restart"
done
client await-tiered --bootstrap "$BOOTSTRAP" --after "$work/tiered-1" --save "$work/tiered-2" --timeout 240 \
  || die "step 2: nothing new tiered after the switch to tsm"

# ------------------------------------------------------------------ 3. kill -9 mid-copy
phase "3. kill -9 the leader of $TOPIC-0 while it copies"
leader=$(client leader 0 --bootstrap "$BOOTSTRAP" | tail -1)
[[ $leader =~ ^[123]$ ]] || die "no leader for $TOPIC-0 ($leader)"
curl -fsS -o /dev/null -X POST "$TSM_TEST_TOXIPROXY_URL/proxies/cluster-b$leader/toxics" \
  -d '{"name":"slow","type":"bandwidth","stream":"upstream","attributes":{"rate":8}}' \
  || die "adding the bandwidth toxic failed"
mark=$(wc -l <"$(nlog "$leader")")
copying=""
for ((i = 0; i < 240; i++)); do
  # The newest "Copying X" with no "Copied X" after it: a copy in flight.
  last=$(tail -n +"$((mark + 1))" "$(nlog "$leader")" | grep -o 'Copying [^ ]* to remote storage' | tail -1 | awk '{print $2}' || true)
  if [ -n "$last" ] && ! logged_since "$leader" "$mark" "Copied $last to remote storage"; then
    copying=$last
    break
  fi
  sleep 0.5
done
[ -n "$copying" ] || die "step 3: broker $leader started no copy within 120 s"
sample_meters "$leader" "kill-9"
a0=$(progress acked)
bash "$CLUSTER_SH" kill "$leader" --dir "$nodes"
killed=$leader
log "step 3: broker $leader killed while copying $copying"
curl -fsS -o /dev/null -X DELETE "$TSM_TEST_TOXIPROXY_URL/proxies/cluster-b$leader/toxics/slow" || die "removing the toxic failed"
traffic_moves 60
start_broker "$leader" $FROM tsm
await_isr
traffic_moves 60
client await-tiered --bootstrap "$BOOTSTRAP" --after "$work/tiered-2" --save "$work/tiered-3" --timeout 240 \
  || die "step 3: tiering did not go on after the kill"

# ------------------------------------------------------------------ 4. wiped follower
phase "4. wipe a follower's log directory; it rebuilds from remote storage"
leader=$(client leader 0 --bootstrap "$BOOTSTRAP" | tail -1)
follower=$(( leader % 3 + 1 ))
sample_meters "$follower" "wipe"
bash "$CLUSTER_SH" stop "$follower" --dir "$nodes"
find "$nodes/node-$follower/data" -mindepth 1 -maxdepth 1 ! -name meta.properties -exec rm -rf {} +
log "step 4: broker $follower's log directory wiped: $(ls -A "$nodes/node-$follower/data" | tr '\n' ' ')"
mark=$(wc -l <"$(nlog "$follower")")
start_broker "$follower" $FROM tsm
# The replica fetcher's remote branch (Kafka's TierStateMachine): per partition the leader
# epoch checkpoint and the producer snapshot of the segment below the leader's local log
# start, fetched through tsm, then only the local part of the log.
for p in 0 1 2; do
  re="Updated the epoch cache from remote tier till offset: [0-9]+ with size: [0-9]+ for Topic: $TOPIC; Partition: $p;"
  for ((i = 0; i < 240; i++)); do
    logged_since "$follower" "$mark" "$re" && break
    sleep 0.5
  done
  line=$(tail -n +"$((mark + 1))" "$(nlog "$follower")" | grep -E "$re" | tail -1 || true)
  [ -n "$line" ] || die "step 4: broker $follower did not rebuild $TOPIC-$p's state from remote storage within 120 s"
  at=$(sed -E 's/.*till offset: ([0-9]+) .*/\1/' <<<"$line")
  [ -f "$nodes/node-$follower/data/$TOPIC-$p/$(printf %020d "$at").snapshot" ] \
    || die "step 4: no producer snapshot at offset $at of $TOPIC-$p on broker $follower (restored from remote)"
  [ ! -f "$nodes/node-$follower/data/$TOPIC-$p/00000000000000000000.log" ] \
    || die "step 4: broker $follower re-fetched segment 0 of $TOPIC-$p instead of starting from remote state"
  log "step 4: $TOPIC-$p on broker $follower: leader epochs and producer snapshot from remote storage up to offset $at"
done
await_isr
aux=$(client meters --jmx-url "$(node_env "$follower" NODE_JMX_URL)")
log "step 4: broker $follower rebuilt all 3 partitions from remote storage: $aux"
# BuildRemoteLogAuxStateErrorsPerSec counts the fetcher's tries before the broker's remote log
# metadata for the partition is loaded ("RemoteLogManager is not ready for partition", retried
# a moment later): explained when every failure logged has that reason and the meter is not
# above their number.
check_aux_errors() { # check_aux_errors ERRORS LOGFILES...: dies unless explained as above
  local errors=$1 notready other
  shift
  notready=$(cat "$@" | grep -c "Could not build remote log auxiliary state .* RemoteLogManager is not ready for partition" || true)
  other=$(cat "$@" | grep "Could not build remote log auxiliary state" | grep -vc "RemoteLogManager is not ready for partition" || true)
  [ "$other" = 0 ] || die "aux state builds failed for other reasons: $(cat "$@" | grep "Could not build remote log auxiliary state" | grep -v "is not ready" | head -3)"
  [ "$errors" -le "$notready" ] || die "BuildRemoteLogAuxStateErrorsPerSec $errors > $notready 'RemoteLogManager is not ready' retries logged"
  log "BuildRemoteLogAuxStateErrorsPerSec $errors: all retries while the remote log metadata loaded ($notready 'RemoteLogManager is not ready for partition' lines)"
}
[[ ! $aux == *"BuildRemoteLogAuxStateRequestsPerSec=0 "* ]] || die "step 4: broker $follower made no aux state builds: $aux"
tail -n +"$((mark + 1))" "$(nlog "$follower")" >"$work/wipe-follower.log"
check_aux_errors "$(sed -E 's/.*BuildRemoteLogAuxStateErrorsPerSec=([0-9]+).*/\1/' <<<"$aux")" "$work/wipe-follower.log"
traffic_moves 60
for id in 1 2 3; do echo "$id tsm-$FROM $(copied_count "$id")" >>"$work/copied.txt"; done

# ------------------------------------------------------------------ 5. Kafka upgrade
phase "5. roll the controller and brokers to Kafka $TO (tsm), then bump metadata.version"
bash "$CLUSTER_SH" stop 0 --dir "$nodes"
bash "$CLUSTER_SH" start 0 --dir "$nodes" --version $TO || die "the controller did not start on $TO"
for id in 1 2 3; do
  echo "$id tsm-$FROM-end $(copied_count "$id")" >>"$work/copied.txt"
  roll "$id" $TO tsm "to Kafka $TO"
done
features() { java -cp "$HOME/.cache/tsm/kafka/$TO/libs/*" org.apache.kafka.tools.FeatureCommand --bootstrap-server "$BOOTSTRAP" "$@"; }
features describe | tee "$work/features-before.txt" | grep metadata.version >&2
features upgrade --release-version "${TO%.*}" | tee "$work/features-upgrade.txt" >&2 \
  || die "kafka-features upgrade --release-version ${TO%.*} failed"
features describe | tee "$work/features-after.txt" | grep metadata.version >&2
grep -qE "metadata.version.*FinalizedVersionLevel: ${TO%.*}-IV" "$work/features-after.txt" \
  || die "metadata.version is not at ${TO%.*} after the upgrade"
traffic_moves 60
client await-tiered --bootstrap "$BOOTSTRAP" --after "$work/tiered-3" --save "$work/tiered-5" --timeout 240 \
  || die "step 5: nothing tiered on Kafka $TO"

# ------------------------------------------------------------------ 6. read everything
phase "6. stop the traffic; read everything from offset 0 with a fresh group"
touch "$state/stop"
wait "$traffic_pid" || { traffic_pid=""; cat "$state/traffic.log" >&2; die "the traffic's group consumer missed acked records"; }
traffic_pid=""
tail -1 "$state/traffic.log" >&2
# Everything but the active segments tiered: the data written last (on 4.4) is in the range.
client await-tiered --bootstrap "$BOOTSTRAP" --after "$work/tiered-5" --timeout 240 || die "step 6: final tiering"
client offsets --bootstrap "$BOOTSTRAP" | tee "$work/offsets.txt" >&2
client verify --bootstrap "$BOOTSTRAP" --state "$state" | tee "$work/verify.txt" >&2
[ "${PIPESTATUS[0]}" = 0 ] || die "step 6: verify failed"
for id in 1 2 3; do echo "$id tsm-$TO $(copied_count "$id")" >>"$work/copied.txt"; done
# Segments copied per plugin and version (cumulative counts per broker; server.log appends).
awk '{ c[$1 " " $2] = $3 } END {
  for (b = 1; b <= 3; b++) {
    j = c[b " java-4.2.2"]; t = c[b " tsm-4.2.2-end"] - j; u = c[b " tsm-4.4.0"] - c[b " tsm-4.2.2-end"]
    printf "broker %d copied: %d with the Java plugin on 4.2.2, %d with tsm on 4.2.2, %d with tsm on 4.4.0\n", b, j, t, u
    J += j; T += t; U += u }
  printf "total copied: java-4.2.2 %d, tsm-4.2.2 %d, tsm-4.4.0 %d\n", J, T, U
  if (J == 0 || T == 0 || U == 0) exit 1 }' "$work/copied.txt" | tee "$work/copied-summary.txt" >&2 \
  || die "step 6: some plugin/version copied no segment (see above)"

# ------------------------------------------------------------------ 7. the way back
phase "7. the way back: the metadata.version downgrade, and the Java plugin reading tsm's objects"
# Kafka's controller refuses to lower metadata.version below a level with metadata changes
# (FeatureControlManager: "Refusing to perform the requested downgrade because it might
# delete metadata information"; --unsafe: "Unsafe metadata downgrade is not supported in this
# version"), and a 4.2 broker cannot join a cluster at 4.4's metadata.version.
for unsafe in "" --unsafe; do
  if features downgrade $unsafe --release-version "${FROM%.*}" >"$work/downgrade$unsafe.txt" 2>&1; then
    cat "$work/downgrade$unsafe.txt" >&2
    die "step 7: Kafka accepted the metadata.version downgrade to ${FROM%.*} ($unsafe): this step must then roll a broker back instead"
  fi
  grep -E "Refusing to perform the requested downgrade because it might delete metadata information|Unsafe metadata downgrade is not supported" \
    "$work/downgrade$unsafe.txt" >&2 || { cat "$work/downgrade$unsafe.txt" >&2; die "step 7: the downgrade failed for another reason"; }
done
features describe | grep metadata.version >&2
# The segments tsm tiered (segment ids of the "Copied ... with segment-id" lines logged while
# the brokers ran tsm), looked up in the bucket with tsm ls --json.
for id in 1 2 3; do
  start=$(awk -v b="$id" '$1 == b && $2 == "java-4.2.2" { print $3 }' "$work/copied.txt")
  grep "to remote storage with segment-id" "$(nlog "$id")" | tail -n +"$((start + 1))" \
    | grep -o 'id=[A-Za-z0-9_-]\{22\}}' | sed -e 's/^id=//' -e 's/}$//' || true
done | sort -u >"$work/tsm-segment-ids.txt"
mkdir -p "$work/interop/configs" "$work/interop/state"
"$TSM_CLI" --config "$work/tsm.properties" --json -q ls -t $TOPIC >"$work/ls.json" || die "tsm ls failed"
jq -r --rawfile ids "$work/tsm-segment-ids.txt" '
  ($ids | split("\n") | map(select(length > 0))) as $t
  | [.segments[] | select(.segmentId as $s | $t | index($s))] | group_by(.partition) | map(.[0:2]) | flatten
  | "segments=\(length)", (to_entries[] | .key as $i | .value
      | "seg.\($i).topic=\(.topic)", "seg.\($i).topicId=\(.topicId)", "seg.\($i).partition=\(.partition)",
        "seg.\($i).segmentId=\(.segmentId)", "seg.\($i).startOffset=\(.startOffset)",
        "seg.\($i).endOffset=\(.endOffset)", "seg.\($i).size=\(.originalSize)")' \
  "$work/ls.json" >"$work/interop/state/tsm-tiered.properties" || die "selecting tsm's segments failed"
cp "$work/tsm.properties" "$work/interop/configs/cluster.properties"
log "step 7: the Java plugin reads $(sed -n 's/^segments=//p' "$work/interop/state/tsm-tiered.properties") segments tsm tiered (2 per partition), compared with tsm's reads"
java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
  -cp "$TSM_ROOT/tests/interop/target/classes:$(cat "$TSM_ROOT/tests/interop/target/classpath-$FROM.txt")" \
  io.tsm.interop.Interop --kafka $FROM --configs "$work/interop/configs" --data "$work/interop" \
  --state "$work/interop/state" --aiven-plugin "$aiven" --tsm-plugin "$tsm_plugin" same:aiven:tsm-tiered \
  2>&1 | tee "$work/interop.log" | grep -v '^\[interop\] .* identical$' >&2
[ "${PIPESTATUS[0]}" = 0 ] || die "step 7: the Java plugin did not read tsm's segments as tsm does (see $work/interop.log)"
log "step 7: $(grep -c ' identical$' "$work/interop.log") segments read identically by both plugins on Kafka $FROM classes"

# ------------------------------------------------------------------ afterwards
phase "afterwards: meters, tsm verify, orphans"
for id in 1 2 3; do sample_meters "$id" "end"; done
bash "$CLUSTER_SH" stop-all --dir "$nodes"
# Counts since each broker's start, sampled before each restart and at the end: summed, they
# cover every broker's whole life except the instant between the last sample and the kill -9.
cat "$work/meters.log" >&2
awk '{ for (i = 1; i <= NF; i++) if (split($i, kv, "=") == 2 && kv[1] ~ /Errors/) e[kv[1]] += kv[2] }
  END { for (k in e) printf "%s total %d\n", k, e[k] }' "$work/meters.log" | sort | tee "$work/meters-summary.txt" >&2
awk '$1 ~ /^Remote(Copy|Fetch|Delete)ErrorsPerSec$/ && $3 != 0 { bad = 1 } END { exit bad }' "$work/meters-summary.txt" \
  || die "remote copy/fetch/delete error meters are not 0 (above, $work/meters.log)"
check_aux_errors "$(awk '$1 == "BuildRemoteLogAuxStateErrorsPerSec" { print $3 }' "$work/meters-summary.txt")" \
  "$(nlog 1)" "$(nlog 2)" "$(nlog 3)"

"$TSM_CLI" --config "$work/tsm.properties" -q verify -t $TOPIC >"$work/verify-bucket.txt" 2>&1 \
  || { cat "$work/verify-bucket.txt" >&2; die "tsm verify found bad segments"; }
tail -3 "$work/verify-bucket.txt" >&2

# The cluster's remote log metadata (__remote_log_metadata, dumped by Kafka's own decoder):
# the last state per segment id.
java -cp "$HOME/.cache/tsm/kafka/$TO/libs/*" org.apache.kafka.tools.DumpLogSegments --remote-log-metadata-decoder \
  --files "$(find "$nodes/node-1/data" -path '*__remote_log_metadata-*' -name '*.log' | sort | paste -sd, -)" \
  >"$work/rlmm-dump.txt" 2>&1 || { tail -20 "$work/rlmm-dump.txt" >&2; die "DumpLogSegments failed"; }
grep -o 'remoteLogSegmentId=RemoteLogSegmentId{[^}]*id=[A-Za-z0-9_-]*}.*state=[A-Z_]*' "$work/rlmm-dump.txt" \
  | sed -E 's/^remoteLogSegmentId=RemoteLogSegmentId\{[^}]*id=([A-Za-z0-9_-]+)\}.*state=([A-Z_]+)$/\1 \2/' \
  | awk '{ last[$1] = $2 } END { for (i in last) print i, last[i] }' | sort >"$work/rlmm-states.txt" \
  || { tail -20 "$work/rlmm-dump.txt" >&2; die "no segment metadata in the __remote_log_metadata dump (tail above)"; }
awk '$2 == "COPY_SEGMENT_FINISHED" { print $1 }' "$work/rlmm-states.txt" >"$work/rlmm-live.txt"
# Copies that started and never finished (the one killed in step 3, ones abandoned by a
# shutdown or leadership change): metadata only; their objects must not be in the bucket.
for o in $(awk '$2 != "COPY_SEGMENT_FINISHED" { print $1 }' "$work/rlmm-states.txt"); do
  log "unfinished copy in the remote log metadata: $(grep -o "RemoteLogSegmentMetadata{remoteLogSegmentId=RemoteLogSegmentId{[^}]*id=$o}, startOffset=[0-9]*, endOffset=[0-9]*, brokerId=[0-9]*" "$work/rlmm-dump.txt" | head -1 | sed 's/RemoteLogSegmentMetadata{remoteLogSegmentId=//')"
done
s3_keys | grep "/$TOPIC-" >"$work/bucket-keys.txt" || true
sed -E 's:.*/[0-9]{20}-([A-Za-z0-9_-]{22})\.(log|indexes|rsm-manifest)$:\1:' "$work/bucket-keys.txt" | sort | uniq -c \
  | awk '{ print $2, $1 }' >"$work/bucket-ids.txt"
log "remote log metadata: $(wc -l <"$work/rlmm-states.txt") segments, by last state: $(awk '{ print $2 }' "$work/rlmm-states.txt" | sort | uniq -c | awk '{ printf "%s %s, ", $2, $1 }')"
log "bucket: $(wc -l <"$work/bucket-keys.txt") objects of $(wc -l <"$work/bucket-ids.txt") segments"
# orphans: segments in the bucket without COPY_SEGMENT_FINISHED metadata. Allowed only where a
# copy was cut off: by the Java plugin (it deletes nothing when its own clean-up is interrupted,
# e.g. by a controlled shutdown: "Removing orphan files failed") or by the kill -9 of step 3;
# each must be a COPY_SEGMENT_STARTED segment without a manifest, tsm ls --orphans must list
# exactly its objects, and tsm gc removes them. Any other orphan fails the step.
orphan_ids() { join -v1 "$work/bucket-ids.txt" <(sort "$work/rlmm-live.txt") | awk '{ print $1 }'; }
orphans=$(orphan_ids)
if [ -n "$orphans" ]; then
  : >"$work/orphan-keys.txt"
  for o in $orphans; do
    meta=$(grep -o "RemoteLogSegmentMetadata{remoteLogSegmentId=RemoteLogSegmentId{[^}]*id=$o}, startOffset=[0-9]*, endOffset=[0-9]*, brokerId=[0-9]*" "$work/rlmm-dump.txt" | head -1 || true)
    state=$(awk -v i="$o" '$1 == i { print $2 }' "$work/rlmm-states.txt")
    keys=$(grep -- "-$o\." "$work/bucket-keys.txt" | tr '\n' ' ')
    echo "orphan: segment $o (metadata: ${meta#RemoteLogSegmentMetadata{remoteLogSegmentId=}, state ${state:-none}): $keys" >&2
    [ "$state" = COPY_SEGMENT_STARTED ] && [[ $keys != *.rsm-manifest* ]] \
      || die "orphan $o: not an unfinished copy (state ${state:-none}) or it has a manifest"
    b=$(sed -E 's/.*brokerId=([0-9]+)$/\1/' <<<"$meta")
    start=$(sed -E 's/.*startOffset=([0-9]+),.*/\1/' <<<"$meta")
    if grep -q "Copying log segment data, metadata: RemoteLogSegmentMetadata{remoteLogSegmentId=RemoteLogSegmentId{[^}]*id=$o}.*(io.aiven.kafka.tieredstorage.RemoteStorageManager)" "$(nlog "$b")"; then
      log "orphan $o: left by the Java plugin on broker $b ($(grep -c "Removing orphan files failed" "$(nlog "$b")") 'Removing orphan files failed' in its log)"
    elif [ "$b" = "$killed" ] && [ "$start" = "$((10#${copying%.log}))" ]; then
      log "orphan $o: the copy of $copying cut off by the kill -9 of broker $b (step 3)"
    else
      die "orphan $o: left by tsm on broker $b outside the kill -9 (an abandoned copy must delete what it wrote)"
    fi
    grep -- "-$o\." "$work/bucket-keys.txt" >>"$work/orphan-keys.txt"
  done
  "$TSM_CLI" --config "$work/tsm.properties" --json -q ls --orphans --older-than 0s -t $TOPIC >"$work/orphans.json" \
    || die "tsm ls --orphans failed"
  diff <(jq -r '.orphans[].key' "$work/orphans.json" | sort) <(sort "$work/orphan-keys.txt") >&2 \
    || die "tsm ls --orphans does not list exactly the orphan objects (diff above: < tsm, > expected)"
  # The brokers are stopped: no copy is in flight, so age 0 is safe here.
  "$TSM_CLI" --config "$work/tsm.properties" -q gc --older-than 0s -t $TOPIC >&2 || die "tsm gc failed"
  s3_keys | grep "/$TOPIC-" >"$work/bucket-keys.txt" || true
  sed -E 's:.*/[0-9]{20}-([A-Za-z0-9_-]{22})\.(log|indexes|rsm-manifest)$:\1:' "$work/bucket-keys.txt" | sort | uniq -c \
    | awk '{ print $2, $1 }' >"$work/bucket-ids.txt"
  [ -z "$(orphan_ids)" ] || die "orphans left after tsm gc: $(orphan_ids)"
  log "tsm ls --orphans listed exactly the $(wc -l <"$work/orphan-keys.txt") orphan objects, tsm gc removed them"
fi
incomplete=$(awk '$2 != 3' "$work/bucket-ids.txt")
[ -z "$incomplete" ] || die "segments without their 3 objects: $incomplete"
missing=$(join -v1 <(sort "$work/rlmm-live.txt") "$work/bucket-ids.txt")
[ -z "$missing" ] || die "segments the metadata lists as copied but absent from the bucket: $missing"
log "no orphan: each of the $(wc -l <"$work/bucket-ids.txt") segments in the bucket is COPY_SEGMENT_FINISHED in the remote log metadata, with its 3 objects, and every such segment is in the bucket"

phase "all steps passed"
