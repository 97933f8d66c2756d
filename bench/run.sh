#!/usr/bin/env bash
# The benchmark of issue 8, in one command (see bench/README.md):
#
#   bench/run.sh [--backend filesystem|s3] [--cloud] [--size-mib N] [--quick] [--fresh]
#
#   --backend   filesystem (default; storage under $TSM_WORK/bench-rust) or s3 (MinIO on
#               127.0.0.1:9900, installed and started idempotently by
#               scripts/services/minio.sh; stopped at the end if this run started it)
#   --cloud     s3 through Toxiproxy (scripts/services/toxiproxy.sh, started and stopped like
#               MinIO): every subject's S3 traffic goes through one proxy with 20 +- 5 ms on
#               each response and 80 MB/s PER CONNECTION each way (TSM_CLOUD_LATENCY_MS,
#               TSM_CLOUD_JITTER_MS, TSM_CLOUD_RATE_KBPS); records get backend "s3-cloud",
#               plus the connections each case moved data on (bench/cloud/conn-sampler.sh)
#   --size-mib  size of each generated segment's .log (default 1024 = 1 GiB)
#   --quick     16 MiB segments, 20 random fetches, one run per case: a correctness
#               smoke run (CI). Otherwise each case runs 3 times and the fastest is kept.
#   --fresh     start a new results file (the old one is kept as <file>.prev)
#
# Steps: build tsm-bench (release) -> `tsm-bench gen` (reused when present) ->
# `tsm-bench run` (Rust engine + limits, each case in its own process) ->
# bench/jvm/run.sh with the same backend/data/results (when present and executable;
# TSM_BENCH_SKIP_JVM=1 skips it) -> `tsm-bench report` (markdown, also written next to the
# results). Fails if any fetched byte differs from the original (either harness).
# s3 runs (with or without --cloud) read MinIO's own request counters around every measured
# case (TSM_BENCH_STORE_METRICS_URL: GETs and bytes sent per byte delivered, the same count for
# every subject; see bench/README.md "Cloud profile and request cost").
#
# Env: TSM_BENCH_MODES / TSM_BENCH_SETS (e.g. "plain zstd+aes" / "compressible": a smaller
# matrix, both harnesses), TSM_BENCH_SUBJECTS / TSM_BENCH_KAFKA / TSM_AIVEN_PLUGIN_DIR (JVM subjects and their Kafka
# classes: bench/jvm/run.sh), TSM_BENCH_DATA (default /var/tmp/tsm-bench/data), TSM_BENCH_OUT (default
# /var/tmp/tsm-bench/results.jsonl), TSM_WORK / CARGO_TARGET_DIR (scripts/lib.sh).
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
cd "$TSM_ROOT"

backend=filesystem
size_mib=1024
quick=0
cloud=0
backend_given=0
fresh=0
fetches=200
repeat=3
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend="${2:?--backend needs filesystem or s3}"; backend_given=1; shift 2 ;;
    --backend=*) backend="${1#*=}"; backend_given=1; shift ;;
    --size-mib) size_mib="${2:?--size-mib needs a number}"; shift 2 ;;
    --size-mib=*) size_mib="${1#*=}"; shift ;;
    --quick) quick=1; shift ;;
    --cloud) cloud=1; shift ;;
    --fresh) fresh=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) die "unknown argument: $1 (see bench/run.sh --help)" ;;
  esac
done
case "$backend" in filesystem|s3) ;; *) die "--backend must be filesystem or s3, not $backend" ;; esac
if [ "$cloud" = 1 ]; then
  [ "$backend_given" = 0 ] || [ "$backend" = s3 ] \
    || die "--cloud is an s3 profile (MinIO behind Toxiproxy), not --backend $backend"
  backend=s3
fi
[[ "$size_mib" =~ ^[1-9][0-9]*$ ]] || die "--size-mib must be a positive integer, not $size_mib"
if [ "$quick" = 1 ]; then size_mib=16; fetches=20; repeat=1; fi

data="${TSM_BENCH_DATA:-/var/tmp/tsm-bench/data}"
out="${TSM_BENCH_OUT:-/var/tmp/tsm-bench/results.jsonl}"
mkdir -p "$(dirname "$out")"
if [ "$fresh" = 1 ] && [ -f "$out" ]; then mv -f "$out" "$out.prev"; fi
# Data sets of another size live in their own directory, so both sizes can be kept.
data_dir="$data/${size_mib}mib"

log "building tsm-bench (release)"
cargo build --release -p tsm-bench
bench="$CARGO_TARGET_DIR/release/tsm-bench"

cleanup=()
on_exit() { local c; for c in "${cleanup[@]}"; do eval "$c" || true; done; }
trap on_exit EXIT
if [ "$backend" = s3 ]; then
  minio="$TSM_ROOT/scripts/services/minio.sh"
  bash "$minio" install
  # Stop MinIO at the end only if this run started it (a server already running, e.g. for
  # another test, is left alone).
  if ! bash "$minio" status >/dev/null 2>&1; then
    cleanup+=('bash "$minio" stop')
  fi
  bash "$minio" start
  eval "$(bash "$minio" env)"
  # MinIO's own counters around every measured case (public with MINIO_PROMETHEUS_AUTH_TYPE=public,
  # which minio.sh sets; a server started otherwise answers 403).
  export TSM_BENCH_STORE_METRICS_URL="$TSM_TEST_S3_ENDPOINT/minio/metrics/v3/api/requests"
  # The Rust harness's extra.cpu: MinIO's (and the proxy's) cores over each measured window.
  export TSM_BENCH_CPU_PIDS="minio=$(bash "$minio" pid)"
  curl -fsS -o /dev/null --max-time 5 "$TSM_BENCH_STORE_METRICS_URL" \
    || die "MinIO's metrics ($TSM_BENCH_STORE_METRICS_URL) do not answer: a MinIO started without MINIO_PROMETHEUS_AUTH_TYPE=public? (scripts/services/minio.sh stop, then rerun)"
fi
if [ "$cloud" = 1 ]; then
  toxi="$TSM_ROOT/scripts/services/toxiproxy.sh"
  bash "$toxi" install
  if ! bash "$toxi" status >/dev/null 2>&1; then
    cleanup=('bash "$toxi" stop' "${cleanup[@]}")
  fi
  bash "$toxi" start
  listen=$(bash "$toxi" cloud-proxy tsm-bench-cloud-$$ "${TSM_TEST_S3_ENDPOINT#http://}")
  cleanup=('bash "$toxi" delete-proxy tsm-bench-cloud-$$' "${cleanup[@]}")
  # Every subject talks to MinIO through the proxy; the counters are read from MinIO itself.
  export TSM_TEST_S3_ENDPOINT="http://$listen" TSM_BENCH_S3_ENDPOINT="http://$listen"
  export TSM_BENCH_BACKEND_LABEL=s3-cloud
  export TSM_BENCH_CONN_PORT="${listen##*:}"
  export TSM_BENCH_CONN_SAMPLER="$TSM_ROOT/bench/cloud/conn-sampler.sh"
  export TSM_BENCH_CONN_RATE_BPS=$((${TSM_CLOUD_RATE_KBPS:-80000} * 1000))
  TSM_BENCH_CPU_PIDS="$TSM_BENCH_CPU_PIDS,toxiproxy=$(bash "$toxi" pid)"
  log "cloud profile: S3 endpoint $TSM_TEST_S3_ENDPOINT (Toxiproxy -> MinIO), results as backend s3-cloud"
fi

log "generating ${size_mib} MiB segment sets in $data_dir (reused when present)"
"$bench" gen --out "$data_dir" --size-mib "$size_mib"
# Freshly written data would still be flushing to disk during the first measurements.
sync

log "host: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(uname -sr)"
status=0
log "Rust harness: backend ${TSM_BENCH_BACKEND_LABEL:-$backend}"
narrow=()
[ -n "${TSM_BENCH_MODES:-}" ] && narrow+=(--modes "$(echo "$TSM_BENCH_MODES" | tr ' ' ',')")
[ -n "${TSM_BENCH_SETS:-}" ] && narrow+=(--sets "$(echo "$TSM_BENCH_SETS" | tr ' ' ',')")
"$bench" run --backend "$backend" --data "$data_dir" --out "$out" --fetches "$fetches" --repeat "$repeat" "${narrow[@]}" || status=$?

jvm="$TSM_ROOT/bench/jvm/run.sh"
if [ "${TSM_BENCH_SKIP_JVM:-0}" = 1 ]; then
  log "skipping the JVM harness (TSM_BENCH_SKIP_JVM=1)"
elif [ -x "$jvm" ]; then
  log "JVM harness: $jvm"
  jvm_args=(--backend "$backend" --data "$data_dir" --out "$out")
  [ "$quick" = 1 ] && jvm_args+=(--quick)
  "$jvm" "${jvm_args[@]}" || status=$?
else
  log "skipping the JVM harness: $jvm is missing or not executable"
fi

report="${out%.jsonl}.md"
"$bench" report --results "$out" > "$report"
cat "$report"
log "results: $out"
log "report:  $report"
[ "$status" = 0 ] || die "a benchmark case failed (see above)"
