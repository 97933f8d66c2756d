#!/usr/bin/env bash
# Runs every test of the project: Rust unit, property and end-to-end tests, the backend
# contract suites against real MinIO / fake-gcs-server / Azurite, the Java plugin's JUnit
# tests and the real-Kafka-broker test. Each step in scripts/test.d/ installs (idempotently),
# starts and stops the services it needs.
#
#   scripts/test.sh            all steps
#   scripts/test.sh 10 30      only the steps whose file names start with 10 or 30
#
# Each step's output goes to the terminal and to $TSM_WORK/test-logs/STEP.log; when steps fail,
# the end of the run repeats what names the failure in each (failed tests, panics, errors), so
# the last screen of a long run says which test broke and why.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TSM_ROOT"

steps=()
for f in scripts/test.d/*.sh; do
  name=$(basename "$f")
  if [ $# -eq 0 ]; then steps+=("$f"); continue; fi
  for want in "$@"; do [[ $name == "$want"* ]] && steps+=("$f"); done
done
[ ${#steps[@]} -gt 0 ] || die "no test step matches: $*"

LOGS="$TSM_WORK/test-logs"
mkdir -p "$LOGS"

# failure_excerpt LOG: the lines of LOG that name a failure (Rust test names and panics,
# compiler errors, cargo-deny's rejections, JUnit failures: at most 40), the scripts' own errors (`die`: the last 10),
# then its last 15 lines.
failure_excerpt() {
  local name
  name=$(basename "$1" .log)
  echo "----- $name: what failed -----"
  grep -E -e '^---- .* stdout ----$' -e 'panicked at' -e '^test .* FAILED$' \
    -e '^error(\[E[0-9]+\])?:' -e '^error\[[a-z-]+\]' -e '^\[ERROR\] (Tests run|Failures|Errors|  )' \
    -e '^failures:$' -e '^    [A-Za-z_0-9:]+$' "$1" | head -n 40 || true
  grep -F '[tsm] ERROR' "$1" | tail -n 10 || true
  echo "----- $name: last 15 lines -----"
  tail -n 15 "$1"
}

failed=()
passed=0
for f in "${steps[@]}"; do
  log "=== step $(basename "$f")"
  start=$(date +%s)
  steplog="$LOGS/$(basename "$f" .sh).log"
  if bash "$f" 2>&1 | tee "$steplog"; [ "${PIPESTATUS[0]}" -eq 0 ]; then
    passed=$((passed + 1))
    log "=== step $(basename "$f") passed in $(( $(date +%s) - start ))s"
  else
    failed+=("$(basename "$f")")
    log "=== step $(basename "$f") FAILED after $(( $(date +%s) - start ))s"
  fi
done
echo
echo "test steps: ${passed} passed, ${#failed[@]} failed"
if [ ${#failed[@]} -gt 0 ]; then
  for name in "${failed[@]}"; do failure_excerpt "$LOGS/${name%.sh}.log"; done
  echo "failed steps: ${failed[*]}"
  exit 1
fi
