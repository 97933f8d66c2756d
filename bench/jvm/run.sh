#!/usr/bin/env bash
# The JVM side of the benchmark (issue 8): the tsm plugin jar vs the Java baseline RSM and
# the real Java plugin (Aiven tiered-storage-for-apache-kafka, issue 16).
#
#   bench/jvm/run.sh [--backend filesystem|s3] [--data DIR] [--out FILE] [--quick] [--size-mib N]
#                    [--plugin tsm|java|aiven]... [--concurrent-copies | --concurrent-copies-only]
#
# Subjects (--plugin, repeatable, or TSM_BENCH_SUBJECTS="tsm java aiven"): tsm (subject tsm-jni),
# java (java-baseline), aiven (aiven-<version>: the real Java plugin from its plugin directory
# $TSM_AIVEN_PLUGIN_DIR, default $TSM_ROOT/../shared/aiven-rsm-1.1.1/plugin). Default: tsm and
# java, plus aiven when that directory holds the plugin jar. Asked for explicitly and missing:
# the run FAILS. Kafka classes: the harness is compiled against Kafka 4.4.0; the aiven
# subject's JVMs run on Kafka 4.2.2 jars (it does not load on 4.4), tsm and java on
# $TSM_BENCH_KAFKA (default 4.4.0; 4.2.2 puts them on the same classes as aiven). Each result
# line records it (extra.kafka_version).
#
# 1. builds bench/jvm (mvn -B package: compile + unit tests; offline first, online if a
#    dependency is missing; incremental, so re-runs are cheap);
# 2. for each segment set (DIR/compressible, DIR/incompressible) x mode (plain, zstd, aes,
#    zstd+aes) x subject: copy, fetch-1mib, fetch-seq, fetch-stream (+ fetch-seq-cached
#    for tsm: the baseline has no chunk cache; the Java plugin's is not configured),
#    EACH IN ITS OWN JVM (same -Xmx for both plugins: $TSM_BENCH_JVM_XMX, default 1g), then
#    deletes the segment (disk stays bounded); one JSON line per result appended to FILE;
# 3. cross-check: segments written by each plugin are read by the other, every mode: tsm <->
#    java (Kafka $TSM_BENCH_KAFKA classes) and tsm <-> aiven (Kafka 4.2.2 classes).
# Exit code non-zero if any case or the cross-check failed. TSM_BENCH_MODES / TSM_BENCH_SETS /
# TSM_BENCH_CASES (e.g. "plain zstd+aes", "compressible", "copy") narrow step 2's matrix (the
# cross-check keeps all; a fetch without its copy in the same run finds no segment).
#
# DIR: $TSM_BENCH_DATA or /var/tmp/tsm-bench/data, made by `tsm-bench gen` (bench/run.sh runs
# it first). If a set is missing, a small stand-in is generated with BenchMain gen (N MiB,
# default 16). FILE: $TSM_BENCH_OUT or /var/tmp/tsm-bench/results.jsonl. Scratch (RSA keys
# generated at run time, filesystem storage root): $TSM_WORK/bench-jvm. s3 uses MinIO
# (scripts/services/minio.sh; stopped at the end if this run started it; bucket tsm-bench-jvm;
# TSM_BENCH_S3_ENDPOINT, set by bench/run.sh --cloud, replaces its endpoint: the proxy; the
# TSM_BENCH_STORE_METRICS_URL / TSM_BENCH_CONN_* / TSM_BENCH_BACKEND_LABEL probes: StoreProbe). The tsm plugin jar:
# $TSM_PLUGIN_JAR or crates/tsm-jni/target/tsm-kafka-plugin-0.1.0.jar (built with
# crates/tsm-jni/build.sh --skip-tests only if missing; a jar older than the Rust sources is
# reported, and rebuilt first when TSM_BENCH_REBUILD_JAR=1).
# Before each measured call: a JIT warm-up (AES-GCM for aes modes, then a copy/fetch of a
# 32 MiB prefix), a GC and a reset of the peak-RSS mark (see bench/jvm/README.md).
# --quick: fewer fetch samples and no warm-up (CI smoke: correctness, no timing assertions);
# the aiven subject's cases on DIR/compressible only (its cross-check covers both sets).
#
# Concurrent copies against the memory budget (OFF unless asked for; the CI smoke run never
# does): --concurrent-copies (or TSM_BENCH_CONCURRENT_COPIES=1) adds, after the cases above,
# `BenchMain copy-concurrent` on DIR/compressible in mode $TSM_BENCH_CONCURRENT_MODE (zstd+aes):
# $TSM_BENCH_CONCURRENCY (10) copies at once through ONE plugin instance, one JVM per run:
# tsm once per budget in $TSM_BENCH_CONCURRENT_BUDGETS (bytes or MiB/GiB suffixes; default
# "512MiB 256MiB", passed as tsm.memory.budget.bytes), then the Java baseline once. Each run
# deletes its segments. --concurrent-copies-only (or TSM_BENCH_CONCURRENT_COPIES=only) runs
# just these (no per-case matrix, no cross-check). Lines go to $TSM_BENCH_CONCURRENT_OUT
# (default: copy-concurrent.jsonl next to FILE), not FILE: the report keeps one line per case.
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
HERE="$TSM_ROOT/bench/jvm"

backend=filesystem
data="${TSM_BENCH_DATA:-/var/tmp/tsm-bench/data}"
out="${TSM_BENCH_OUT:-/var/tmp/tsm-bench/results.jsonl}"
quick=0
size_mib=16
subjects=()
# off | on | only (see the header); the env var lets bench/run.sh pass it through.
concurrent="${TSM_BENCH_CONCURRENT_COPIES:-off}"
case "$concurrent" in 0|off|'') concurrent=off ;; 1|on|yes|true) concurrent=on ;; only) ;;
  *) die "TSM_BENCH_CONCURRENT_COPIES must be 1, only or 0, not $concurrent" ;; esac
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend="${2:?--backend needs a value}"; shift 2 ;;
    --data) data="${2:?--data needs a value}"; shift 2 ;;
    --out) out="${2:?--out needs a value}"; shift 2 ;;
    --size-mib) size_mib="${2:?--size-mib needs a value}"; shift 2 ;;
    --quick) quick=1; shift ;;
    --plugin) subjects+=("${2:?--plugin needs tsm, java or aiven}"); shift 2 ;;
    --concurrent-copies) concurrent=on; shift ;;
    --concurrent-copies-only) concurrent=only; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) die "bench/jvm/run.sh: unknown argument $1 (see --help)" ;;
  esac
done
case "$backend" in filesystem|s3) ;; *) die "--backend must be filesystem or s3, not $backend" ;; esac
command -v java >/dev/null || die "java (17+) is needed"
command -v mvn >/dev/null || die "mvn is needed"

aiven_found=0
find_aiven_plugin && aiven_found=1 # scripts/lib.sh: sets AIVEN_PLUGIN_DIR
aiven_dir=$AIVEN_PLUGIN_DIR
if [ ${#subjects[@]} -eq 0 ] && [ -n "${TSM_BENCH_SUBJECTS:-}" ]; then
  read -r -a subjects <<<"$TSM_BENCH_SUBJECTS"
fi
if [ ${#subjects[@]} -eq 0 ]; then
  subjects=(tsm java)
  if [ "$aiven_found" = 1 ]; then
    subjects+=(aiven)
  else
    log "the Java plugin is not at $aiven_dir: running without the aiven subject (--plugin aiven to require it; to provide it: $(aiven_plugin_howto))"
  fi
fi
has() { local s; for s in "${subjects[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
for s in "${subjects[@]}"; do
  case "$s" in tsm|java|aiven) ;; *) die "--plugin / TSM_BENCH_SUBJECTS: unknown subject '$s' (tsm, java, aiven)" ;; esac
done
if has aiven; then
  [ "$aiven_found" = 1 ] || die "the aiven subject was asked for but the Java plugin is not at $aiven_dir (no aiven-tiered-storage-for-apache-kafka-*.jar): $(aiven_plugin_howto)"
  export TSM_AIVEN_PLUGIN_DIR=$aiven_dir
fi
# The Kafka classes the Java plugin runs on (<= 4.2: aiven-rsm-1.1.1/README.md); the others'.
aiven_kafka=4.2.2
kafka="${TSM_BENCH_KAFKA:-4.4.0}"

xmx="${TSM_BENCH_JVM_XMX:-1g}"
plugin_jar="${TSM_PLUGIN_JAR:-$TSM_ROOT/crates/tsm-jni/target/tsm-kafka-plugin-0.1.0.jar}"
work="$TSM_WORK/bench-jvm"
mkdir -p "$work" "$(dirname "$out")"

if [ ! -f "$plugin_jar" ]; then
  log "tsm plugin jar missing: building it (crates/tsm-jni/build.sh --skip-tests, takes long)"
  "$TSM_ROOT/crates/tsm-jni/build.sh" --skip-tests
  [ -f "$plugin_jar" ] || die "no plugin jar at $plugin_jar after the build"
fi

# A jar older than the Rust sources measures old code: say so (rebuild: TSM_BENCH_REBUILD_JAR=1).
newer=$(find "$TSM_ROOT/crates" -path '*/target' -prune -o \( -name '*.rs' -o -name 'Cargo.toml' -o -name '*.java' \) \
  -newer "$plugin_jar" -print 2>/dev/null | head -n 3 || true)
if [ -n "$newer" ]; then
  if [ "${TSM_BENCH_REBUILD_JAR:-0}" = 1 ]; then
    log "plugin jar older than the sources: rebuilding (crates/tsm-jni/build.sh --skip-tests)"
    "$TSM_ROOT/crates/tsm-jni/build.sh" --skip-tests
  else
    log "WARNING: $plugin_jar is older than the sources (e.g. ${newer%%$'\n'*}); tsm-jni numbers measure the old build. Set TSM_BENCH_REBUILD_JAR=1 to rebuild it first."
  fi
fi

mvn_log="$work/mvn.log"
# mvn_run WHAT ARGS...: offline first, online if a dependency is not cached.
mvn_run() {
  local what=$1
  shift
  if ! (cd "$HERE" && mvn -q -B -o "$@" >"$mvn_log" 2>&1); then
    if grep -q "offline" "$mvn_log"; then
      log "some Maven dependencies are not cached: retrying online"
      (cd "$HERE" && mvn -q -B "$@" >"$mvn_log" 2>&1) || { tail -n 60 "$mvn_log" >&2; die "$what failed (log: $mvn_log)"; }
    else
      tail -n 60 "$mvn_log" >&2
      die "$what failed (log: $mvn_log)"
    fi
  fi
}
log "building bench/jvm (mvn package)"
mvn_run "mvn package" package
# target/classpath-kafka-<version>.txt: the run-time class path on that Kafka version's jars.
for kv in $( (has aiven && echo "$aiven_kafka"); echo "$kafka"); do
  if [ ! -f "$HERE/target/classpath-kafka-$kv.txt" ] || [ "$HERE/pom.xml" -nt "$HERE/target/classpath-kafka-$kv.txt" ]; then
    log "class path on Kafka $kv jars (mvn dependency:build-classpath)"
    mvn_run "the Kafka $kv class path" dependency:build-classpath@classpath -Dkafka.version="$kv"
  fi
done
# jvm_cmd KAFKA_VERSION: sets jvm=(java ... BenchMain) on that Kafka version's jars.
jvm_cmd() {
  jvm=(java "-Xmx$xmx" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
    -cp "$HERE/target/tsm-bench-jvm.jar:$(cat "$HERE/target/classpath-kafka-$1.txt"):$plugin_jar" io.tsm.bench.BenchMain)
}
kafka_of() { if [ "$1" = aiven ]; then echo "$aiven_kafka"; else echo "$kafka"; fi; }
jvm_cmd "$kafka"

sets=()
for set in compressible incompressible; do
  if [ ! -f "$data/$set/segment.json" ]; then
    log "no segment set at $data/$set: generating a ${size_mib} MiB stand-in (BenchMain gen; bench/run.sh uses tsm-bench gen)"
    "${jvm[@]}" gen --out "$data" --size-mib "$size_mib"
  fi
  sets+=("$data/$set")
done

if [ "$backend" = s3 ]; then
  # Stopped at the end only if this run started it (bench/run.sh starts it first).
  if ! bash "$TSM_ROOT/scripts/services/minio.sh" status >/dev/null 2>&1; then
    trap 'bash "$TSM_ROOT/scripts/services/minio.sh" stop' EXIT
  fi
  bash "$TSM_ROOT/scripts/services/minio.sh" start
  eval "$(bash "$TSM_ROOT/scripts/services/minio.sh" env)"
  # bench/run.sh --cloud: the subjects talk to MinIO through the cloud proxy.
  export TSM_TEST_S3_ENDPOINT="${TSM_BENCH_S3_ENDPOINT:-$TSM_TEST_S3_ENDPOINT}"
  export TSM_BENCH_S3_BUCKET="${TSM_BENCH_S3_BUCKET:-tsm-bench-jvm}"
fi

samples=32
warm=()
if [ "$quick" = 1 ]; then
  samples=8
  warm=(--no-warmup) # CI smoke: correctness only, the JIT warm-up costs up to ~30 s per AES case
fi
failed=()
declare -A wall=() # seconds of wall time per subject / cross-check (JVM starts included)
run_case() { # op plugin set mode [extra args]
  local op=$1 plugin=$2 set=$3 mode=$4 jvm t0=$SECONDS
  shift 4
  jvm_cmd "$(kafka_of "$plugin")"
  if ! "${jvm[@]}" "$op" --plugin "$plugin" --backend "$backend" --data "$set" --mode "$mode" \
      --out "$out" --work "$work" "${warm[@]}" "$@"; then
    failed+=("$op $plugin $(basename "$set") $mode")
  fi
  wall[$plugin]=$((${wall[$plugin]:-0} + SECONDS - t0))
}

if [ "$concurrent" = only ]; then
  sets_for_matrix=()
else
  sets_for_matrix=("${sets[@]}")
fi
log "JVM cases (-Xmx$xmx, one JVM per case; subjects ${subjects[*]}; Kafka $kafka, aiven on $aiven_kafka) -> $out"
# TSM_BENCH_MODES / TSM_BENCH_SETS (space- or comma-separated; default all): a smaller matrix.
modes_wanted=${TSM_BENCH_MODES:-plain zstd aes zstd+aes}
# TSM_BENCH_CASES (e.g. "copy"): only those ops (the fetches need the copy; delete always runs).
cases_wanted=${TSM_BENCH_CASES:-copy fetch-1mib fetch-seq fetch-stream fetch-seq-cached}
for c in ${cases_wanted//,/ }; do
  case "$c" in copy|fetch-1mib|fetch-seq|fetch-stream|fetch-seq-cached) ;; *) die "TSM_BENCH_CASES: unknown case '$c' (copy, fetch-1mib, fetch-seq, fetch-stream, fetch-seq-cached)" ;; esac
done
want() { [[ " ${cases_wanted//,/ } " == *" $1 "* ]]; }
sets_wanted=${TSM_BENCH_SETS:-compressible incompressible}
for set in "${sets_for_matrix[@]}"; do
  [[ " ${sets_wanted//,/ } " == *" $(basename "$set") "* ]] || continue
  for mode in ${modes_wanted//,/ }; do
    case "$mode" in plain|zstd|aes|zstd+aes) ;; *) die "TSM_BENCH_MODES: unknown mode '$mode' (plain, zstd, aes, zstd+aes)" ;; esac
    for plugin in "${subjects[@]}"; do
      # --quick (CI smoke): the Java plugin's cases on the compressible set only (its cross-check
      # with tsm still covers both sets), ~35 s less of JVM starts.
      if [ "$quick" = 1 ] && [ "$plugin" = aiven ] && [ "$(basename "$set")" != compressible ]; then
        continue
      fi
      want copy && run_case copy "$plugin" "$set" "$mode"
      want fetch-1mib && run_case fetch-1mib "$plugin" "$set" "$mode" --samples "$samples"
      want fetch-seq && run_case fetch-seq "$plugin" "$set" "$mode"
      want fetch-stream && run_case fetch-stream "$plugin" "$set" "$mode"
      if [ "$plugin" = tsm ] && want fetch-seq-cached; then
        run_case fetch-seq-cached "$plugin" "$set" "$mode"
      fi
      run_case delete "$plugin" "$set" "$mode"
    done
  done
done

if [ "$concurrent" != only ]; then
  for other in java aiven; do
    has tsm && has "$other" || continue
    log "cross-check: tsm <-> $other, every mode ($backend, Kafka $(kafka_of "$other") classes)"
    jvm_cmd "$(kafka_of "$other")"
    t0=$SECONDS
    if ! "${jvm[@]}" crosscheck --pairs "tsm:$other" --backend "$backend" --work "$work" --data "${sets[@]}"; then
      failed+=("crosscheck tsm:$other")
    fi
    wall[crosscheck tsm:$other]=$((SECONDS - t0))
  done
  jvm_cmd "$kafka"
fi

if [ "$concurrent" != off ]; then
  c_out="${TSM_BENCH_CONCURRENT_OUT:-$(dirname "$out")/copy-concurrent.jsonl}"
  c_n="${TSM_BENCH_CONCURRENCY:-10}"
  c_mode="${TSM_BENCH_CONCURRENT_MODE:-zstd+aes}"
  c_set="$data/compressible"
  log "concurrent copies: $c_n at once through one plugin instance, $c_mode, $(basename "$c_set") -> $c_out"
  for budget in ${TSM_BENCH_CONCURRENT_BUDGETS:-512MiB 256MiB}; do
    if ! "${jvm[@]}" copy-concurrent --plugin tsm --backend "$backend" --data "$c_set" --mode "$c_mode" \
        --concurrency "$c_n" --memory-budget-bytes "$budget" --out "$c_out" --work "$work" "${warm[@]}"; then
      failed+=("copy-concurrent tsm budget $budget")
    fi
  done
  if ! "${jvm[@]}" copy-concurrent --plugin java --backend "$backend" --data "$c_set" --mode "$c_mode" \
      --concurrency "$c_n" --out "$c_out" --work "$work" "${warm[@]}"; then
    failed+=("copy-concurrent java")
  fi
fi

for k in "${!wall[@]}"; do log "wall time: $k ${wall[$k]} s"; done
if [ ${#failed[@]} -gt 0 ]; then
  printf '[bench-jvm] FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
case "$concurrent" in
  off) log "bench/jvm: all cases and the cross-check passed; results in $out" ;;
  on) log "bench/jvm: all cases, the cross-check and the concurrent copies passed; results in $out and $c_out" ;;
  only) log "bench/jvm: the concurrent copies passed; results in $c_out" ;;
esac
