#!/usr/bin/env bash
# Azure backend: installs (pinned, cached) and starts Azurite on 127.0.0.1:10000 and
# Toxiproxy (the slow-link test puts a bandwidth-limited proxy in front of Azurite), runs
# the tsm-backend-azure tests against them (unit tests, contract suite, Azurite tests, slow
# link) and the plugin's log redaction test with shared-key and SAS calls (tsm-jni), and
# always stops both. The tests read TSM_TEST_AZURE_ENDPOINT / TSM_TEST_TOXIPROXY_URL and
# fail loudly without them.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$TSM_ROOT"
azurite="$TSM_ROOT/scripts/services/azurite.sh"
toxiproxy="$TSM_ROOT/scripts/services/toxiproxy.sh"

bash "$azurite" install
bash "$toxiproxy" install
trap 'bash "$toxiproxy" stop; bash "$azurite" stop' EXIT
bash "$azurite" start
bash "$toxiproxy" start
eval "$(bash "$azurite" env)"
eval "$(bash "$toxiproxy" env)"
cargo test --locked -p tsm-backend-azure -- --test-threads 4
# The plugin's log redaction with shared-key and SAS calls (tsm-jni).
cargo test --locked -p tsm-jni --test log_redaction_azure -- --ignored
