#!/usr/bin/env bash
# MinIO, the S3-compatible server the S3 backend's tests run against.
#
#   scripts/services/minio.sh install   build MinIO from the Go module proxy (pinned), cached
#   scripts/services/minio.sh start     start on 127.0.0.1 with a temp data dir, wait until ready
#   scripts/services/minio.sh stop      stop the server started by `start` and remove its data dir
#   scripts/services/minio.sh pause     stop the process, keep the data (fault tests restart it)
#   scripts/services/minio.sh env       print the TSM_TEST_S3_* exports for the running server
#   scripts/services/minio.sh status    exit 0 when the server answers its readiness probe
#   scripts/services/minio.sh pid       print the running server's process id (exit 1 when none)
#
# Install: `go install github.com/minio/minio@$MINIO_VERSION` into
# $TSM_CACHE/minio-$MINIO_VERSION/ (TSM_CACHE defaults to ~/.cache/tsm, outside the clone so
# the build, 5-30 minutes on 2 busy cores, is done once per machine). Idempotent: an
# existing binary is reused. Start is idempotent too: a running server is left alone.
# MinIO has no Debian/PyPI/npm package; the Go module proxy is where it comes from.
#
# Settings (env): MINIO_VERSION, MINIO_PORT (default 9900), MINIO_CONSOLE_PORT (default
# 9901), TSM_TEST_S3_ACCESS_KEY / TSM_TEST_S3_SECRET_KEY (default tsm-minio /
# tsm-minio-secret). Tests create their own buckets. Data and log: $TSM_WORK/minio/.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# A pseudo-version of the last MinIO server commit on the proxy (Feb 2026). Its go.mod asks
# for Go >= 1.24; verified to build with go1.26.8 (CGO off).
MINIO_VERSION="${MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}"
TSM_CACHE="${TSM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tsm}"
MINIO_DIR="$TSM_CACHE/minio-$MINIO_VERSION"
MINIO_BIN="$MINIO_DIR/minio"
MINIO_PORT="${MINIO_PORT:-9900}"
MINIO_CONSOLE_PORT="${MINIO_CONSOLE_PORT:-9901}"
MINIO_STATE="$TSM_WORK/minio"
MINIO_PIDFILE="$MINIO_STATE/minio.pid"
MINIO_LOG="$MINIO_STATE/minio.log"
ACCESS_KEY="${TSM_TEST_S3_ACCESS_KEY:-tsm-minio}"
SECRET_KEY="${TSM_TEST_S3_SECRET_KEY:-tsm-minio-secret}"
ENDPOINT="http://127.0.0.1:$MINIO_PORT"
KMS_KEY_ID=tsm-minio-kms
KMS_KEY=dHNtLW1pbmlvLXRlc3Qta21zLWtleS0zMi1ieXRlcyE=  # base64 of 32 bytes of ASCII test text

install_minio() {
  if [ -x "$MINIO_BIN" ]; then
    log "MinIO $MINIO_VERSION already installed: $MINIO_BIN"
    return 0
  fi
  mkdir -p "$MINIO_DIR" # no Debian/PyPI/npm package exists: the Go module proxy it is
  go_install_to "$MINIO_BIN" "github.com/minio/minio@$MINIO_VERSION"
  log "MinIO installed: $MINIO_BIN"
}

is_ready() {
  curl -fsS -o /dev/null --max-time 2 "$ENDPOINT/minio/health/ready" 2>/dev/null
}

running_pid() {
  [ -f "$MINIO_PIDFILE" ] || return 1
  local pid
  pid=$(cat "$MINIO_PIDFILE")
  kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

start_minio() {
  [ -x "$MINIO_BIN" ] || install_minio
  if running_pid >/dev/null && is_ready; then
    log "MinIO already running on $ENDPOINT"
    return 0
  fi
  mkdir -p "$MINIO_STATE"
  # Keep the data dir across a stop/start made by the fault tests (same server restarted);
  # `stop` removes it.
  local data="$MINIO_STATE/data"
  mkdir -p "$data"
  log "starting MinIO on $ENDPOINT (data: $data, log: $MINIO_LOG)"
  # A fixed single-key KMS (a test key, not a secret) so SSE-S3 and SSE-KMS can be tested.
  MINIO_ROOT_USER="$ACCESS_KEY" MINIO_ROOT_PASSWORD="$SECRET_KEY" \
    MINIO_KMS_SECRET_KEY="$KMS_KEY_ID:$KMS_KEY" \
    MINIO_BROWSER=off MINIO_UPDATE=off MINIO_CI_CD=1 MINIO_PROMETHEUS_AUTH_TYPE=public \
    setsid "$MINIO_BIN" server "$data" --quiet \
      --address "127.0.0.1:$MINIO_PORT" --console-address "127.0.0.1:$MINIO_CONSOLE_PORT" \
      >>"$MINIO_LOG" 2>&1 </dev/null &
  echo $! >"$MINIO_PIDFILE"
  local i
  for ((i = 0; i < 300; i++)); do
    if is_ready; then log "MinIO ready"; return 0; fi
    if ! running_pid >/dev/null; then break; fi
    sleep 0.2
  done
  echo "---- last lines of $MINIO_LOG" >&2
  tail -n 40 "$MINIO_LOG" >&2 || true
  die "MinIO did not become ready on $ENDPOINT"
}

# pause: stop the process but keep the data dir (used by the fault tests).
pause_minio() {
  local pid
  if pid=$(running_pid); then
    kill "$pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$MINIO_PIDFILE"
}

stop_minio() {
  pause_minio
  rm -rf "$MINIO_STATE/data"
  log "MinIO stopped"
}

print_env() {
  cat <<ENV
export TSM_TEST_S3_ENDPOINT=$ENDPOINT
export TSM_TEST_S3_ACCESS_KEY=$ACCESS_KEY
export TSM_TEST_S3_SECRET_KEY=$SECRET_KEY
export TSM_TEST_S3_REGION=us-east-1
export TSM_TEST_S3_KMS_KEY_ID=$KMS_KEY_ID
ENV
}

case "${1:-}" in
  install) install_minio ;;
  start) start_minio ;;
  stop) stop_minio ;;
  pause) pause_minio ;;
  env) print_env ;;
  status) is_ready ;;
  pid) running_pid ;;
  *) die "usage: $0 install|start|stop|pause|env|status|pid" ;;
esac
