#!/usr/bin/env bash
# GCS backend: tsm-backend-gcs's unit tests and its tests against a real fake-gcs-server
# (installed from PyPI and started on 127.0.0.1:80 by scripts/services/fake-gcs.sh, always
# stopped on exit). The tests read the endpoint from TSM_TEST_GCS_ENDPOINT and fail loudly
# without it.
# Port 80 needs root or net.ipv4.ip_unprivileged_port_start <= 80: without either the step is
# SKIPPED (scripts/lib.sh `skip`; a failure under CI=true) before it downloads or builds anything.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$TSM_ROOT"
can_listen_on_port 80 || skip "$(need_port80_reason)" "$(need_port80_howto)"

svc="$TSM_ROOT/scripts/services/fake-gcs.sh"
trap '"$svc" stop' EXIT
"$svc" start
export TSM_TEST_GCS_ENDPOINT
TSM_TEST_GCS_ENDPOINT="$("$svc" endpoint)"
cargo test -p tsm-backend-gcs
