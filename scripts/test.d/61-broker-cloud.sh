#!/usr/bin/env bash
# The plugin inside a real Kafka broker with each cloud backend (issues 5, 6, 7): for s3
# (MinIO), gcs (fake-gcs-server) and azure (Azurite), one "secure" broker run of
# scripts/test.d/60-broker.sh (compression + encryption): the emulator is started (unless
# it already runs) and stopped again, a bucket/container is created, a fresh KRaft broker
# tiers a topic into it, the driver reads everything back from remote storage, checks the
# v1 objects and manifests through the service's own REST API (no plaintext in encrypted
# objects), deletes the topic and waits until its objects are gone from the bucket.
#
# One plugin jar with the s3, gcs and azure cargo features serves all three runs.
#
# Environment:
#   TSM_BROKER_CLOUD_BACKENDS  default "s3 gcs azure"
#   TSM_BROKER_CLOUD_SIZE      record bytes per run, default 6MiB: with 1 MiB segments and
#                              2 partitions that is 3+ tiered segments per partition
#   TSM_BROKER_CLOUD_RUNS      default "secure" (60-broker.sh run names)
#   TSM_PLUGIN_JAR             use this jar (it must link the cloud backends)
# Everything else as in 60-broker.sh (TSM_BROKER_KAFKA_VERSIONS, TSM_JNI_PROFILE, ...).
#
# Like 60-broker.sh, this needs root or unprivileged user namespaces for the mounts (each run
# of 60-broker.sh enters a namespace of its own when not root), else it is SKIPPED; and the gcs
# run needs fake-gcs-server on port 80 (root or net.ipv4.ip_unprivileged_port_start <= 80),
# else the other backends run without it and the skipped gcs run is listed in the summary.
# Both are decided before the plugin build; under CI=true either is a failure.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$TSM_ROOT/tests/broker/lib.sh"
cd "$TSM_ROOT" || exit 1

backends=${TSM_BROKER_CLOUD_BACKENDS:-s3 gcs azure}
can_mount || skip "$(mounts_reason)" "$(mounts_howto)"
if [[ " $backends " == *" gcs "* ]] && ! can_listen_on_port 80; then
  rest=$(for b in $backends; do [ "$b" = gcs ] || printf '%s ' "$b"; done)
  [ -n "$rest" ] || skip "the gcs broker run: $(need_port80_reason)" "$(need_port80_howto)"
  skip_part "the gcs broker run" "$(need_port80_reason)" "$(need_port80_howto)"
  backends=${rest% }
fi
if [ -z "${TSM_PLUGIN_JAR:-}" ]; then
  feats=()
  for b in $backends; do feats+=("$(backend_feature "$b")"); done
  TSM_PLUGIN_JAR=$(plugin_jar "${feats[@]}")
fi
export TSM_PLUGIN_JAR

passed=()
failed=()
for b in $backends; do
  start=$SECONDS
  log "=== broker test with the $b backend"
  if TSM_BROKER_BACKEND=$b TSM_BROKER_RUNS=${TSM_BROKER_CLOUD_RUNS:-secure} \
      TSM_BROKER_SIZE=${TSM_BROKER_CLOUD_SIZE:-6MiB} bash scripts/test.d/60-broker.sh; then
    passed+=("$b ($((SECONDS - start))s)")
  else
    failed+=("$b ($((SECONDS - start))s)")
  fi
done
echo "cloud broker runs: passed: ${passed[*]:-none}; failed: ${failed[*]:-none}"
[ ${#failed[@]} -eq 0 ] || die "cloud broker runs failed: ${failed[*]} (logs under $TSM_WORK/broker-test-<backend>)"
