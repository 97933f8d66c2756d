#!/usr/bin/env bash
# The cutover scenario of 70-cutover.sh (issue 10) with the S3 backend on MinIO: the same
# broker run, checks and operator-tool steps (tests/broker/operator-tool.sh), against a fresh
# bucket. MinIO is started by the step (scripts/services/minio.sh, via tests/broker/lib.sh's
# emulator_start) unless it already runs, and stopped again if the step started it.
# Environment: as 70-cutover.sh (TSM_CUTOVER_SIZE, TSM_CUTOVER_ARGS, TSM_PLUGIN_JAR, ...).
TSM_BROKER_BACKEND=s3 exec bash "$(dirname "${BASH_SOURCE[0]}")/70-cutover.sh"
