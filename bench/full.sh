#!/usr/bin/env bash
# Every benchmark of issues 8, 16 and 18 in one command, one report:
#
#   bench/full.sh [--size-mib N] [--broker-size-mib N] [--no-broker] [--report-only]
#
# 1. bench/run.sh --fresh --backend filesystem   (local profile; Rust + JVM harnesses, the
#                                                 Java plugin warmed: bench/jvm/README.md)
# 2. bench/run.sh --backend s3                   (local profile on MinIO; MinIO's counters)
# 3. bench/run.sh --cloud                        (MinIO behind Toxiproxy: 20 +- 5 ms, 80 MB/s
#                                                 per connection; connections sampled)
# 4. bench/broker/run.sh --fresh                 (a real broker, filesystem bucket: tsm, the
#                                                 Java plugin, local disk; every setting variant)
# 5. bench/broker/run.sh --cloud --variants "default partition-fetch-8mib"
# then writes $REPORT (default report.md next to $TSM_BENCH_OUT): the host (cores, CPU model,
# memory, load before and after, date, commit, exact command) followed by results.md (tsm-bench
# report: limits, every case, side by side, request cost, the targets of issues 8 and 18) and
# results-broker.md. Options: --size-mib (segments of the API benchmark, default 1024),
# --broker-size-mib (records per topic, default 512), --no-broker, --report-only (no run: the
# report from the results files as they are). TSM_BENCH_MODES /
# TSM_BENCH_SETS narrow the API matrix (bench/run.sh). Other settings: the scripts' own.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
cd "$TSM_ROOT"

size_mib=1024
broker_mib=512
broker=1
run=1
cmd="bench/full.sh $*"
while [ $# -gt 0 ]; do
  case "$1" in
    --size-mib) size_mib="${2:?}"; shift 2 ;;
    --broker-size-mib) broker_mib="${2:?}"; shift 2 ;;
    --no-broker) broker=0; shift ;;
    --report-only) run=0; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) die "bench/full.sh: unknown argument $1 (see --help)" ;;
  esac
done
out="${TSM_BENCH_OUT:-/var/tmp/tsm-bench/results.jsonl}"
export TSM_BENCH_OUT="$out"
report="${REPORT:-$(dirname "$out")/report.md}"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
[ "$run" = 1 ] || load0="$load0 (report only: the load of the runs is in each result line / the broker table)"
start=$(date -u '+%Y-%m-%d %H:%M UTC')
status=0
step() { log "=== $*"; local t0=$SECONDS; "$@" || status=1; log "=== $1 ${*:2}: $((SECONDS - t0)) s"; }
if [ "$run" = 1 ]; then
  step bash bench/run.sh --fresh --backend filesystem --size-mib "$size_mib"
  step bash bench/run.sh --backend s3 --size-mib "$size_mib"
  step bash bench/run.sh --cloud --size-mib "$size_mib"
fi
if [ "$run" = 1 ] && [ "$broker" = 1 ]; then
  step bash bench/broker/run.sh --fresh --size-mib "$broker_mib"
  step bash bench/broker/run.sh --cloud --size-mib "$broker_mib" --variants "default partition-fetch-8mib"
fi
{
  echo "# tsm benchmarks: full run"
  echo
  echo "- Command: \`$cmd\` (${TSM_BENCH_MODES:+TSM_BENCH_MODES=\"$TSM_BENCH_MODES\" }${TSM_BENCH_SETS:+TSM_BENCH_SETS=\"$TSM_BENCH_SETS\" }API segments ${size_mib} MiB, broker topics ${broker_mib} MiB)"
  echo "- Date: $start to $(date -u '+%H:%M UTC'); commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "- Machine: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(uname -sr)"
  echo "- Load average (1/5/15 min): $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
  echo
  if [ "$run" = 0 ]; then
    # The API report from the results as they are (each bench/run.sh writes it after its run).
    "${CARGO_TARGET_DIR}/release/tsm-bench" report --results "$out" >"${out%.jsonl}.md" \
      || die "tsm-bench report failed (build it: cargo build --release -p tsm-bench)"
  fi
  sed '1{/^# /d}' "${out%.jsonl}.md"
  echo
  b="$(dirname "$out")/results-broker.md"
  if [ "$broker" = 1 ] && [ -f "$b" ]; then cat "$b"; fi
} >"$report"
log "report: $report"
[ "$status" = 0 ] || die "a step failed (see above); the report has what ran"
