#!/usr/bin/env bash
# The benchmark of issue 8, in one command (see bench/README.md):
#
#   bench/run.sh [--backend filesystem|s3] [--size-mib N] [--quick] [--fresh]
#
#   --backend   filesystem (default; storage under $TSM_WORK/bench-rust) or s3 (MinIO on
#               127.0.0.1:9900, installed and started idempotently by
#               scripts/services/minio.sh; stopped at the end if this run started it)
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
#
# Env: TSM_BENCH_SUBJECTS / TSM_BENCH_KAFKA / TSM_AIVEN_PLUGIN_DIR (JVM subjects and their Kafka
# classes: bench/jvm/run.sh), TSM_BENCH_DATA (default /var/tmp/tsm-bench/data), TSM_BENCH_OUT (default
# /var/tmp/tsm-bench/results.jsonl), TSM_WORK / CARGO_TARGET_DIR (scripts/lib.sh).
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
cd "$TSM_ROOT"

backend=filesystem
size_mib=1024
quick=0
fresh=0
fetches=200
repeat=3
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend="${2:?--backend needs filesystem or s3}"; shift 2 ;;
    --backend=*) backend="${1#*=}"; shift ;;
    --size-mib) size_mib="${2:?--size-mib needs a number}"; shift 2 ;;
    --size-mib=*) size_mib="${1#*=}"; shift ;;
    --quick) quick=1; shift ;;
    --fresh) fresh=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) die "unknown argument: $1 (see bench/run.sh --help)" ;;
  esac
done
case "$backend" in filesystem|s3) ;; *) die "--backend must be filesystem or s3, not $backend" ;; esac
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

if [ "$backend" = s3 ]; then
  minio="$TSM_ROOT/scripts/services/minio.sh"
  bash "$minio" install
  # Stop MinIO at the end only if this run started it (a server already running, e.g. for
  # another test, is left alone).
  if ! bash "$minio" status >/dev/null 2>&1; then
    trap 'bash "$minio" stop' EXIT
  fi
  bash "$minio" start
  eval "$(bash "$minio" env)"
fi

log "generating ${size_mib} MiB segment sets in $data_dir (reused when present)"
"$bench" gen --out "$data_dir" --size-mib "$size_mib"
# Freshly written data would still be flushing to disk during the first measurements.
sync

log "host: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(uname -sr)"
status=0
log "Rust harness: backend $backend"
"$bench" run --backend "$backend" --data "$data_dir" --out "$out" --fetches "$fetches" --repeat "$repeat" || status=$?

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
