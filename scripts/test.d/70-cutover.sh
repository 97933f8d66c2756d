#!/usr/bin/env bash
# The cutover scenario (issue 10): a backfilled, tiered payments topic, end to end, with the
# plugin inside a real single-node KRaft broker (scripts/services/kafka.sh, Kafka from Maven
# Central). The driver (tests/broker, `driver.sh cutover`, io.tsm.brokertest.CutoverScenario):
# 24 partitions, cleanup.policy=delete, retention.ms=-1, retention.bytes per partition,
# remote.storage.enable=true, local.retention.ms=1000, 1 MiB segments, CreateTime; a backfill
# producer writes keyed records stamped over the last 9 days (timestamp order per key) while a
# live producer writes "now" records; it waits (bounded) for tiering and local deletion,
# checks that nothing leaves the bucket while retention.ms=-1, reads everything back from
# offset 0 (records, per-key order, counts in timestamp windows, offsetsForTimes), then sets
# retention.ms=7d and checks that exactly the segments older than 7 days leave the bucket,
# the rest stays readable, and the broker's remote copy/fetch/delete error meters are 0.
#
# Environment:
#   TSM_BROKER_BACKEND   filesystem (default) | s3 (MinIO) | gcs (fake-gcs-server) | azure
#                        (Azurite): the emulator is started unless it runs (and then stopped),
#                        a fresh bucket/container per run (tests/broker/lib.sh helpers)
#   TSM_CUTOVER_SIZE     backfill bytes, default 40MiB (24 partitions; must give > 1 segment
#                        of 9..7-day-old data per partition)
#   TSM_CUTOVER_ARGS     extra driver options (see `tests/broker/driver.sh cutover --help`)
#   TSM_PLUGIN_JAR       use this plugin jar instead of building it
#   KAFKA_VERSION        broker version, default 4.4.0
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$TSM_ROOT/tests/broker/lib.sh"
cd "$TSM_ROOT" || exit 1

backend=${TSM_BROKER_BACKEND:-filesystem}
size=${TSM_CUTOVER_SIZE:-40MiB}
work="$TSM_WORK/cutover-test"
[ "$backend" = filesystem ] || work="$TSM_WORK/cutover-test-$backend"
dir="$work/broker"
backend_feature "$backend" >/dev/null
started=""
cleanup() {
  if [ -n "$started" ]; then bash "$KAFKA_SH" stop --dir "$dir" || true; fi
  emulator_stop
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rm -rf "$work"
mkdir -p "$work"
bash "$KAFKA_SH" install
build_driver "$work/driver-build.log"

if [ -z "${TSM_PLUGIN_JAR:-}" ]; then
  TSM_PLUGIN_JAR=$(plugin_jar "$(backend_feature "$backend")") || die "no plugin jar"
  export TSM_PLUGIN_JAR
fi
root="$dir/bucket"
if [ "$backend" != filesystem ]; then
  emulator_start "$backend"
  root="tsm-cutover-$(date +%s)" # bucket / container name, fresh per run
  backend_bucket "$backend" "$root"
fi
# Compression + encryption on, so the operator-tool checks below see real DEKs and zstd chunks.
setup_rsm tsm "$backend" "$root" true true "$dir/keys" || die "plugin setup failed"
log "--- cutover on Kafka ${KAFKA_VERSION:-4.4.0}: backend=$backend backfill=$size"
started=1
bash "$KAFKA_SH" start --dir "$dir" --fresh --port auto --controller-port auto --jmx-port auto \
  "${RSM_ARGS[@]}" || die "the broker did not start (log above)"
# shellcheck disable=SC1091
source "$dir/broker.env"
rc=0
t0=$(date +%s)
# shellcheck disable=SC2086  # TSM_CUTOVER_ARGS holds several options
bash "$DRIVER" cutover --bootstrap "$KAFKA_BOOTSTRAP" --jmx-url "$KAFKA_JMX_URL" \
  --remote-store "$REMOTE_STORE" --size "$size" --summary-file "$dir/summary.txt" \
  ${TSM_CUTOVER_ARGS:-} || rc=$?
log "cutover driver finished in $(($(date +%s) - t0)) s (exit $rc)"
if [ $rc -ne 0 ]; then
  broker_failure_report "$dir"
fi
bash "$KAFKA_SH" stop --dir "$dir" || rc=1
started=""
[ $rc -eq 0 ] || die "the cutover scenario failed (logs under $work)"

# The operator tool (issue 9) on the objects the broker wrote, with the broker's own
# server.properties: verify, ls, fetch, inspect, rekey k1 -> k2 (partial, crashed, resumed,
# then verify with k1 removed), copy, delete. See tests/broker/operator-tool.sh.
log "the operator tool (tsm) on the bucket the broker wrote"
cargo build -q --locked -p tsm-cli || die "building tsm-cli failed"
bash "$TSM_ROOT/tests/broker/operator-tool.sh" "$CARGO_TARGET_DIR/debug/tsm" \
  "$dir/server.properties" "$work/operator-tool" "$dir/keys" \
  || die "the operator tool checks on the broker's bucket failed (files under $work/operator-tool)"
