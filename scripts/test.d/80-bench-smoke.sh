#!/usr/bin/env bash
# Benchmark harness smoke run (issue 8): builds tsm-bench and runs `bench/run.sh --quick`
# on the filesystem backend: 16 MiB segments through every case, each fetched byte
# compared with the original (and the JVM harness's cross-check, when bench/jvm is
# present; TSM_BENCH_SKIP_JVM=1 skips it). Correctness only: no timed assertions.
# The JVM harness runs all three subjects: tsm, the Java baseline and the real Java plugin
# (aiven: $TSM_AIVEN_PLUGIN_DIR, default $TSM_ROOT/../shared/aiven-rsm-1.1.1/plugin; missing,
# the step FAILS), with the cross-checks tsm <-> baseline and tsm <-> aiven.
# Data, results and storage go under $TSM_WORK/bench-smoke (a fresh results file each run).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$TSM_ROOT"
export TSM_BENCH_DATA="$TSM_WORK/bench-smoke/data"
export TSM_BENCH_OUT="$TSM_WORK/bench-smoke/results.jsonl"
export TSM_BENCH_SUBJECTS="${TSM_BENCH_SUBJECTS:-tsm java aiven}"
cargo test --locked -p tsm-bench
bash bench/run.sh --quick --backend filesystem --fresh
