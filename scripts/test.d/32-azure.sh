#!/usr/bin/env bash
# Azure backend: installs (pinned, cached) and starts Azurite on 127.0.0.1:10000, runs the
# tsm-backend-azure tests against it (unit tests, contract suite, Azurite tests) and the
# plugin's log redaction test with shared-key and SAS calls (tsm-jni), and always stops
# Azurite. The tests read TSM_TEST_AZURE_ENDPOINT and fail loudly without it.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$TSM_ROOT"
azurite="$TSM_ROOT/scripts/services/azurite.sh"

bash "$azurite" install
trap 'bash "$azurite" stop' EXIT
bash "$azurite" start
eval "$(bash "$azurite" env)"
cargo test --locked -p tsm-backend-azure -- --test-threads 4
# The plugin's log redaction with shared-key and SAS calls (tsm-jni).
cargo test --locked -p tsm-jni --test log_redaction_azure -- --ignored
