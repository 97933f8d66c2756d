# Sourced by the brown-out steps (33, 55): installs (pinned, cached) and starts MinIO and
# Toxiproxy on 127.0.0.1, stops both when the sourcing script exits, and exports their
# settings (TSM_TEST_S3_*, TSM_TEST_TOXIPROXY_URL). Needs scripts/lib.sh sourced first.
brownout_minio="$TSM_ROOT/scripts/services/minio.sh"
brownout_toxiproxy="$TSM_ROOT/scripts/services/toxiproxy.sh"
bash "$brownout_minio" install
bash "$brownout_toxiproxy" install
trap 'bash "$brownout_toxiproxy" stop; bash "$brownout_minio" stop' EXIT
bash "$brownout_minio" start
bash "$brownout_toxiproxy" start
eval "$(bash "$brownout_minio" env)"
eval "$(bash "$brownout_toxiproxy" env)"
