#!/usr/bin/env bash
# tsm CLI against a real S3 service: installs (pinned, cached) and starts MinIO on
# 127.0.0.1, runs tsm-cli's ignored MinIO test (segments written by the engine over
# tsm-backend-s3, then ls/inspect/fetch/verify/rekey/delete through the `tsm` binary),
# and always stops MinIO. The filesystem end-to-end tests run in 10-rust.sh.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$TSM_ROOT"
minio="$TSM_ROOT/scripts/services/minio.sh"

bash "$minio" install
trap 'bash "$minio" stop' EXIT
bash "$minio" start
eval "$(bash "$minio" env)"
cargo test --locked -p tsm-cli --test integration -- --ignored s3::
