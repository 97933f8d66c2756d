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
#
# A step that needs what this machine lacks (the Java plugin for 65 and 67; root or user
# namespaces for 60 and 61; root or port 80 for 31) says so before its expensive work and exits
# with 77 (`skip` in scripts/lib.sh): it is counted as skipped, not passed, and the summary
# repeats its reason and how to enable it; a step that ran without one of its parts
# (`skip_part`: 60's JDK 25 runs, 61's gcs run, 80's Java-plugin subject) passes and is
# listed. The last line is "N passed, M failed, K skipped"; the exit code is non-zero only
# when a step failed.
# Under CI=true (.ci/run sets it) a skip is a failure.
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
skipped=()
passed=0
for f in "${steps[@]}"; do
  name=$(basename "$f")
  log "=== step $name"
  start=$(date +%s)
  steplog="$LOGS/${name%.sh}.log"
  rc=0
  bash "$f" 2>&1 | tee "$steplog" || rc=${PIPESTATUS[0]}
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    log "=== step $name passed in $(( $(date +%s) - start ))s"
  elif [ "$rc" -eq "$TSM_SKIP_CODE" ] && ! in_ci; then
    skipped+=("$name")
    log "=== step $name SKIPPED after $(( $(date +%s) - start ))s"
  else
    [ "$rc" -ne "$TSM_SKIP_CODE" ] || echo "[tsm] ERROR: step $name skipped (exit $TSM_SKIP_CODE), and CI=$CI makes a skip a failure" >>"$steplog"
    failed+=("$name")
    log "=== step $name FAILED after $(( $(date +%s) - start ))s"
  fi
done
echo
# The skip lines of the steps' logs (scripts/lib.sh's skip and skip_part print them).
parts=$(for f in "${steps[@]}"; do
  name=$(basename "$f" .sh)
  grep -A1 -e '^\[tsm\] SKIPPED PART: ' "$LOGS/$name.log" 2>/dev/null | grep -v '^--$' \
    | sed -e "s/^\[tsm\] SKIPPED PART: /  $name: without /" -e 's/^\[tsm\]   to enable: /    to enable: /' || true
done)
if [ ${#skipped[@]} -gt 0 ]; then
  echo "skipped steps (they did not run):"
  for name in "${skipped[@]}"; do
    grep -A1 -e '^\[tsm\] SKIPPED: ' "$LOGS/${name%.sh}.log" \
      | sed -e "s/^\[tsm\] SKIPPED: /  ${name%.sh}: /" -e 's/^\[tsm\]   to enable: /    to enable: /' \
      || echo "  ${name%.sh}: exited $TSM_SKIP_CODE (skipped) without saying why"
  done
fi
if [ -n "$parts" ]; then
  echo "steps that ran without one of their parts:"
  echo "$parts"
fi
if [ ${#failed[@]} -gt 0 ]; then
  for name in "${failed[@]}"; do failure_excerpt "$LOGS/${name%.sh}.log"; done
  echo "failed steps: ${failed[*]}"
fi
echo "test steps: ${passed} passed, ${#failed[@]} failed, ${#skipped[@]} skipped"
[ ${#failed[@]} -eq 0 ] || exit 1
