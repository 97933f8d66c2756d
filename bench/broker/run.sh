#!/usr/bin/env bash
# Through a real broker (issue 18; a benchmark, not a test): a KRaft broker on Kafka 4.2.2
# (the Java plugin needs <= 4.2) tiers a topic and deletes its local segments, then a consumer
# reads it back from offset 0 through the broker, with tsm and with the real Java plugin on
# the SAME remote data (same bucket and keys: tsm and the Java plugin read each other's
# segments, bench/jvm's cross-check), against the same broker reading the same records from
# its local disk (a second topic, remote storage off). Each setting variant restarts the broker.
#
#   bench/broker/run.sh [--backend filesystem|s3] [--cloud] [--size-mib N] [--partitions N]
#                       [--subjects "tsm aiven"] [--variants "NAME..."] [--quick] [--fresh]
#
#   --backend     filesystem (default; bucket dir under $TSM_WORK/bench-broker) or s3 (MinIO)
#   --cloud       s3 through the cloud proxy of bench/run.sh --cloud (Toxiproxy: 20 +- 5 ms,
#                 80 MB/s per connection)
#   --size-mib    MiB of records per topic (default 512); segments of 64 MiB (--quick: 32 MiB
#                 of 8 MiB segments, segment.ms 6 s, variant "default" only, subjects as given)
#   --partitions  partitions per topic (default 1: one consumer fetch stream, the broker's
#                 per-partition remote read path)
#   --subjects    remote storage managers to read the tiered topic with (default "tsm aiven";
#                 aiven: $TSM_AIVEN_PLUGIN_DIR, default $TSM_ROOT/../shared/aiven-rsm-1.1.1/plugin)
#   --variants    setting variants, each a broker start (default: all of VARIANTS below)
#   --fresh       new results file (old one kept as .prev)
#
# Records: ProducerPerformance (kafka-tools) writes 1 KiB records (acks=1, no compression) to
# both topics; an append of 4 small records per partition after segment.ms rolls the last segment; the run waits until
# the tiered topic's partitions hold only their active segment locally (every other segment
# copied and deleted locally: local.retention.ms=1000). Reads: ConsumerPerformance (kafka-tools)
# with a new group from offset 0 for all records but the local tail; measured: its fetch.MB.sec
# (MiB/s, rebalance excluded) and the wall seconds of the fetch phase. The local-disk read runs
# once per broker start, right before the tiered read, on the same broker (page cache as found:
# the records were just written, so usually hot; the filesystem bucket is hot as well).
#
# The tsm plugin: $TSM_PLUGIN_JAR (libtsm_jni.so beside it) or, when unset, the jar
# crates/tsm-jni/build.sh builds once per run; RSM config as tests/broker/lib.sh (rsm_config_args) with chunk.size 4 MiB and
# no compression or encryption (both plugins alike); the Java plugin the same keys with full
# backend class names. Results: one JSON line per read to $TSM_BENCH_BROKER_OUT (default
# results-broker.jsonl next to $TSM_BENCH_OUT), a markdown table (results-broker.md) with each
# read against the local-disk read of the same broker start and the target (>= 50 %).
# Ports: auto. Work dir: $TSM_WORK/bench-broker (removed at the end except the results).
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
source "$TSM_ROOT/tests/broker/lib.sh"
cd "$TSM_ROOT"

# name|broker properties (space-separated K=V)|consumer properties. Defaults of Kafka 4.2:
# remote.log.reader.threads=10, remote.log.reader.max.pending.tasks=100,
# remote.fetch.max.wait.ms=500; consumer max.partition.fetch.bytes=1 MiB, fetch.max.bytes=50 MiB.
VARIANTS=(
  "default||"
  "partition-fetch-8mib||max.partition.fetch.bytes=8388608"
  "partition-fetch-32mib||max.partition.fetch.bytes=33554432 fetch.max.bytes=67108864"
  "reader-threads-1|remote.log.reader.threads=1|"
  "fetch-wait-100ms|remote.fetch.max.wait.ms=100|"
  "pending-tasks-10|remote.log.reader.max.pending.tasks=10|"
)

backend=filesystem
cloud=0
size_mib=512
seg_mib=64
partitions=1
subjects="tsm aiven"
variants=""
quick=0
fresh=0
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend="${2:?--backend needs filesystem or s3}"; shift 2 ;;
    --cloud) cloud=1; backend=s3; shift ;;
    --size-mib) size_mib="${2:?}"; shift 2 ;;
    --partitions) partitions="${2:?}"; shift 2 ;;
    --subjects) subjects="${2:?}"; shift 2 ;;
    --variants) variants="${2:?}"; shift 2 ;;
    --quick) quick=1; shift ;;
    --fresh) fresh=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) die "bench/broker/run.sh: unknown argument $1 (see --help)" ;;
  esac
done
case "$backend" in filesystem|s3) ;; *) die "--backend must be filesystem or s3, not $backend" ;; esac
[[ "$size_mib" =~ ^[1-9][0-9]*$ ]] || die "--size-mib must be a positive integer, not $size_mib"
[[ "$partitions" =~ ^[1-9][0-9]*$ ]] || die "--partitions must be a positive integer, not $partitions"
# segment.ms: longer than producing takes, so segments roll by size until the final roll.
roll_ms=20000
if [ "$quick" = 1 ]; then size_mib=32; seg_mib=8; roll_ms=6000; variants=${variants:-default}; fi
for s in $subjects; do
  case "$s" in tsm|aiven) ;; *) die "--subjects: unknown subject '$s' (tsm, aiven)" ;; esac
done
selected=()
for v in "${VARIANTS[@]}"; do
  name=${v%%|*}
  if [ -z "$variants" ] || [[ " $variants " == *" $name "* ]]; then selected+=("$v"); fi
done
[ ${#selected[@]} -gt 0 ] || die "--variants '$variants' matches none of: $(printf '%s ' "${VARIANTS[@]%%|*}")"

export KAFKA_VERSION=4.2.2
export TSM_CHUNK_SIZE=4194304
if [[ " $subjects " == *" aiven "* ]]; then
  find_aiven_plugin \
    || die "the aiven subject needs the Java plugin, not found at $AIVEN_PLUGIN_DIR (no aiven-tiered-storage-for-apache-kafka-*.jar): $(aiven_plugin_howto)"
  aiven_dir=$AIVEN_PLUGIN_DIR
  aiven_version=$(basename "$(compgen -G "$aiven_dir/aiven-tiered-storage-for-apache-kafka-*.jar" | head -1)" .jar)
  aiven_version=${aiven_version##*-}
fi

out="${TSM_BENCH_BROKER_OUT:-$(dirname "${TSM_BENCH_OUT:-/var/tmp/tsm-bench/results.jsonl}")/results-broker.jsonl}"
mkdir -p "$(dirname "$out")"
if [ "$fresh" = 1 ] && [ -f "$out" ]; then mv -f "$out" "$out.prev"; fi
work="$TSM_WORK/bench-broker"
broker_dir="$work/broker"
rm -rf "$work"
mkdir -p "$work"

cleanup=()
on_exit() {
  bash "$KAFKA_SH" stop --dir "$broker_dir" >/dev/null 2>&1 || true
  local c
  for c in "${cleanup[@]}"; do eval "$c" || true; done
  rm -rf "$work"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

bash "$KAFKA_SH" install
tools_cp=$(bash "$KAFKA_SH" classpath)
tool() { java -Xmx512m -cp "$tools_cp" "$@"; }

root="$work/bucket"
bucket=tsm-bench-broker
if [ "$backend" = s3 ]; then
  emulator_start s3
  cleanup+=(emulator_stop)
  backend_bucket s3 "$bucket"
  root=$bucket
  if [ "$cloud" = 1 ]; then
    toxi="$TSM_ROOT/scripts/services/toxiproxy.sh"
    bash "$toxi" install
    bash "$toxi" status >/dev/null 2>&1 || cleanup=('bash "$toxi" stop' "${cleanup[@]}")
    bash "$toxi" start
    listen=$(bash "$toxi" cloud-proxy tsm-bench-broker-cloud-$$ "${TSM_TEST_S3_ENDPOINT#http://}")
    cleanup=('bash "$toxi" delete-proxy tsm-bench-broker-cloud-$$' "${cleanup[@]}")
    export TSM_TEST_S3_ENDPOINT="http://$listen"
  fi
fi
label=$backend
[ "$cloud" = 1 ] && label=s3-cloud

# RSM_ARGS for subject $1 (kafka.sh start options).
rsm_args_for() {
  case $1 in
    tsm)
      # Built once (crates/tsm-jni/build.sh with the backend's feature) unless TSM_PLUGIN_JAR
      # names a jar; every broker start of the run loads the same one.
      if [ -z "${TSM_PLUGIN_JAR:-}" ]; then
        TSM_PLUGIN_JAR=$(plugin_jar "$(backend_feature "$backend")") || die "no plugin jar"
        export TSM_PLUGIN_JAR
      fi
      setup_rsm tsm "$backend" "$root" false false "$work/keys"
      ;;
    aiven)
      rsm_config_args "$backend" "$root" false false "$work/keys"
      local -a a=() i
      for ((i = 0; i < ${#RSM_ARGS[@]}; i++)); do
        case "${RSM_ARGS[i]}" in
          storage.backend.class=filesystem) a+=(storage.backend.class=io.aiven.kafka.tieredstorage.storage.filesystem.FileSystemStorage) ;;
          storage.backend.class=s3) a+=(storage.backend.class=io.aiven.kafka.tieredstorage.storage.s3.S3Storage) ;;
          *) a+=("${RSM_ARGS[i]}") ;;
        esac
      done
      RSM_ARGS=(--rsm-class io.aiven.kafka.tieredstorage.RemoteStorageManager --plugin-dir "$aiven_dir" "${a[@]}")
      ;;
  esac
}
subject_name() { if [ "$1" = aiven ]; then echo "aiven-$aiven_version"; else echo tsm-jni; fi; }

# start_broker SUBJECT "BROKER K=V..." [--fresh]
start_broker() {
  local subject=$1 props=$2 p
  shift 2
  rsm_args_for "$subject"
  local -a conf=()
  for p in $props; do conf+=(--config "$p"); done
  bash "$KAFKA_SH" stop --dir "$broker_dir" >/dev/null 2>&1 || true
  # Up to 3 tries: an "auto" port can be taken by another process between kafka.sh choosing
  # it and the JVM binding it ("Port already in use" for JMX, seen on a busy shared machine).
  local try
  for try in 1 2 3; do
    if bash "$KAFKA_SH" start --dir "$broker_dir" "$@" --port auto --controller-port auto --jmx-port auto \
        "${RSM_ARGS[@]}" "${conf[@]}"; then
      break
    fi
    if [ "$try" = 3 ] || ! grep -q 'Address already in use' "$broker_dir/logs/stdout.log" "$broker_dir/logs/server.log" 2>/dev/null; then
      broker_failure_report "$broker_dir"
      die "the broker did not start ($subject)"
    fi
    log "a port was taken meanwhile: starting the broker again (try $((try + 1)) of 3)"
  done
  # shellcheck disable=SC1091
  source "$broker_dir/broker.env"
}

seg_bytes=$((seg_mib * 1024 * 1024))
records=$((size_mib * 1024))
log "broker benchmark: $label, ${size_mib} MiB per topic in ${seg_mib} MiB segments, $partitions partition(s), subjects: $subjects; Kafka $KAFKA_VERSION"
log "host: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
first_subject=${subjects%% *}
start_broker "$first_subject" "" --fresh
admin() { tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$KAFKA_BOOTSTRAP" "$@"; }
admin --create --topic tiered --partitions "$partitions" --replication-factor 1 \
  --config remote.storage.enable=true --config local.retention.ms=1000 --config retention.ms=-1 \
  --config segment.bytes="$seg_bytes" --config segment.ms="$roll_ms" >/dev/null
admin --create --topic local --partitions "$partitions" --replication-factor 1 \
  --config retention.ms=-1 --config segment.bytes="$seg_bytes" >/dev/null
produce() { # TOPIC RECORDS
  tool org.apache.kafka.tools.ProducerPerformance --topic "$1" --num-records "$2" --record-size 1024 \
    --throughput -1 --producer-props bootstrap.servers="$KAFKA_BOOTSTRAP" acks=1 compression.type=none \
    batch.size=262144 linger.ms=5 >"$work/produce-$1.log" 2>&1 || { cat "$work/produce-$1.log" >&2; die "producing to $1 failed"; }
  tail -n 1 "$work/produce-$1.log" >&2
}
log "producing $records x 1 KiB records to each topic"
produce tiered "$records"
produce local "$records"
# Roll the last segment: an append after segment.ms rolls it, so only the few records of
# that append stay local.
log "waiting $((roll_ms / 1000 + 1)) s for segment.ms, then an append per partition rolls the last segments"
sleep $((roll_ms / 1000 + 1))
tool org.apache.kafka.tools.ProducerPerformance --topic tiered --num-records $((partitions * 4)) --record-size 16 \
  --throughput -1 --producer-props bootstrap.servers="$KAFKA_BOOTSTRAP" acks=1 partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner \
  >/dev/null 2>&1 || die "the rolling append failed"
log "waiting until every tiered partition keeps only its active segment locally"
deadline=$((SECONDS + 600))
while :; do
  left=0
  for d in "$broker_dir"/data/tiered-*; do
    n=$(find "$d" -name '*.log' | wc -l)
    left=$((left + n - 1))
  done
  [ "$left" -le 0 ] && break
  [ $SECONDS -lt $deadline ] || { broker_failure_report "$broker_dir"; die "segments still local after 600 s ($left)"; }
  sleep 2
done
tail_records=$((partitions * 4))
tiered_records=$records
log "tiered: $(find "$broker_dir"/data/tiered-* -name '*.log' | wc -l) local segment(s) left (the active ones); reading $tiered_records records from offset 0"

# consume TOPIC RECORDS "CONSUMER K=V..." -> "MB_sec_fetch seconds_fetch MiB"
consume() {
  local topic=$1 n=$2 props=$3 p group="bench-$RANDOM-$RANDOM"
  local -a cp=()
  for p in $props; do
    cp+=(--command-property "$p")
    # ConsumerPerformance sets max.partition.fetch.bytes from --fetch-size itself.
    case $p in max.partition.fetch.bytes=*) cp+=(--fetch-size "${p#*=}") ;; esac
  done
  tool org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$KAFKA_BOOTSTRAP" --topic "$topic" \
    --num-records "$n" --group "$group" --timeout 600000 "${cp[@]}" >"$work/consume.log" 2>&1 \
    || { cat "$work/consume.log" >&2; return 1; }
  # start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
  # rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
  awk -F', ' 'NF >= 10 && $1 !~ /start.time/ { print $9, $8 / 1000, $3 }' "$work/consume.log" | tail -n 1
}

record() { # subject variant broker_props consumer_props "mbps secs mib" local_mbps
  local subject=$1 variant=$2 bp=$3 cprops=$4 m
  read -r -a m <<<"$5"
  jq -cn --arg subject "$subject" --arg backend "$label" --arg variant "$variant" --arg bp "$bp" --arg cp "$cprops" \
    --argjson mbps "${m[0]}" --argjson secs "${m[1]}" --argjson mib "${m[2]}" --arg local "${6:-}" \
    --argjson partitions "$partitions" --argjson seg "$seg_bytes" --arg kafka "$KAFKA_VERSION" \
    --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" \
    '{harness: "broker", subject: $subject, backend: $backend, data: "producer-perf-1kib", mode: "plain",
      op: "consume-from-0", bytes: (($mib * 1048576) | floor), seconds: $secs, cpu_seconds: null, peak_rss_bytes: null,
      downloaded_bytes: null,
      extra: {variant: $variant, broker_props: $bp, consumer_props: $cp, fetch_mib_per_s: $mbps,
        local_fetch_mib_per_s: (if $local == "" then null else ($local | tonumber) end),
        partitions: $partitions, segment_bytes: $seg, kafka_version: $kafka, load_avg: $load}}' >>"$out"
}

# jmx_dump FILE: the broker's remote-read counters after a read (bench/broker/JmxDump.java):
# Kafka's remote fetch metrics and the plugin's (the tsm engine's store request counts and
# read-ahead, the Java plugin's aiven.* MBeans). Kept beside the results; a broker whose JMX
# does not answer leaves a note, not a failed read.
jmx_dump() {
  java "$TSM_ROOT/bench/broker/JmxDump.java" "$KAFKA_JMX_URL" \
    'kafka.server:type=BrokerTopicMetrics,name=Remote*,*' 'kafka.server:type=DelayedRemoteFetchMetrics,*' \
    'kafka.log.remote:*' 'kafka.server:type=plugins,*' 'aiven.*:*' >"$1" 2>"$1.err" \
    || log "  (no JMX dump: $(tail -n 1 "$1.err"))"
  rm -f "$1.err"
}

failed=()
for v in "${selected[@]}"; do
  IFS='|' read -r vname bprops cprops <<<"$v"
  for s in $subjects; do
    sn=$(subject_name "$s")
    log "variant $vname: $sn (broker: ${bprops:-defaults}; consumer: ${cprops:-defaults})"
    start_broker "$s" "$bprops"
    if ! loc=$(consume local "$records" "$cprops"); then failed+=("$vname local ($sn broker)"); continue; fi
    record local-disk "$vname" "$bprops" "$cprops" "$loc"
    if ! got=$(consume tiered "$tiered_records" "$cprops"); then
      broker_failure_report "$broker_dir"
      failed+=("$vname $sn")
      continue
    fi
    record "$sn" "$vname" "$bprops" "$cprops" "$got" "${loc%% *}"
    jmx_dump "$(dirname "$out")/broker-jmx-$label-$vname-$sn.tsv"
    log "  local disk ${loc%% *} MiB/s, tiered through $sn ${got%% *} MiB/s"
  done
done

md="${out%.jsonl}.md"
{
  echo "## Through a real broker (Kafka $KAFKA_VERSION)"
  echo
  echo "Consumer from offset 0 (ConsumerPerformance fetch MiB/s, rebalance excluded); local disk = the"
  echo "same broker start reading the same records from its log dir. Target: tiered >= 50 % of local."
  echo
  echo "| backend | variant | broker settings | consumer settings | subject | tiered MiB/s | local-disk MiB/s | tiered / local | target >= 0.50 |"
  echo "|---|---|---|---|---|---:|---:|---:|---|"
  jq -r 'select(.harness == "broker" and .subject != "local-disk") |
    [.extra.variant, (.extra.broker_props | if . == "" then "defaults" else . end),
     (.extra.consumer_props | if . == "" then "defaults" else . end), .subject, .backend,
     .extra.fetch_mib_per_s, .extra.local_fetch_mib_per_s] | @tsv' "$out" |
  awk -F'\t' '{
    r = ($7 > 0) ? $6 / $7 : 0
    st = (r >= 0.5) ? "met" : sprintf("MISSED by %.0f%%", (1 - r / 0.5) * 100)
    printf "| %s | %s | %s | %s | %s | %.1f | %.1f | %.2f | %s |\n", $5, $1, $2, $3, $4, $6, $7, r, st }'
} >"$md"
cat "$md"
log "results: $out"
log "report:  $md"
[ ${#failed[@]} -eq 0 ] || die "broker reads failed: ${failed[*]}"
