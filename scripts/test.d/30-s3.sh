#!/usr/bin/env bash
# S3 backend: installs (pinned, cached) and starts MinIO on 127.0.0.1, runs the
# tsm-backend-s3 tests against it (contract suite, MinIO tests, fault test that stops and
# restarts the server) and the plugin's log redaction test (tsm-jni: real S3 calls with
# every target at TRACE, no credential in the forwarded records), and always stops MinIO. The brown-out suite (Toxiproxy between the
# engine and MinIO) is skipped here: scripts/test.d/33-brownout.sh runs it.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$TSM_ROOT"
minio="$TSM_ROOT/scripts/services/minio.sh"

bash "$minio" install
trap 'bash "$minio" stop' EXIT
bash "$minio" start
eval "$(bash "$minio" env)"
export TSM_TEST_S3_STOP_CMD="bash '$minio' pause"
export TSM_TEST_S3_START_CMD="bash '$minio' start"
# Every test file but tests/brownout.rs, which also needs Toxiproxy: 33-brownout.sh runs it.
# (Named one by one: an env var that made those tests pass without running hid 28 of them.)
cargo test --locked -p tsm-backend-s3 --lib --test contract --test minio --test fault \
  --test clock -- --test-threads 4
# A test file added to the crate must be named here or in 33-brownout.sh.
known="brownout clock contract fault minio"
for f in crates/tsm-backend-s3/tests/*.rs; do
  n=$(basename "$f" .rs)
  [[ " $known " == *" $n "* ]] || die "crates/tsm-backend-s3/tests/$n.rs is run by no step: add it to 30-s3.sh"
done
cargo test --locked -p tsm-jni --test log_redaction -- --ignored
