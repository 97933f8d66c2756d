#!/usr/bin/env bash
# Runs every test of the project: Rust unit, property and end-to-end tests, the backend
# contract suites against real MinIO / fake-gcs-server / Azurite, the Java plugin's JUnit
# tests and the real-Kafka-broker test. Each step in scripts/test.d/ installs (idempotently),
# starts and stops the services it needs.
#
#   scripts/test.sh            all steps
#   scripts/test.sh 10 30      only the steps whose file names start with 10 or 30
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TSM_ROOT"

steps=()
for f in scripts/test.d/*.sh; do
  name=$(basename "$f")
  if [ $# -eq 0 ]; then steps+=("$f"); continue; fi
  for want in "$@"; do [[ $name == "$want"* ]] && steps+=("$f"); done
done
[ ${#steps[@]} -gt 0 ] || die "no test step matches: $*"

failed=()
passed=0
for f in "${steps[@]}"; do
  log "=== step $(basename "$f")"
  start=$(date +%s)
  if bash "$f"; then
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
  echo "failed steps: ${failed[*]}"
  exit 1
fi
