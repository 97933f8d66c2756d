#!/usr/bin/env bash
# Toxiproxy, the fault-injecting TCP proxy the brown-out tests put between the engine and
# MinIO (latency, stalls, resets, truncated bodies, slow links).
#
#   scripts/services/toxiproxy.sh install   build toxiproxy-server from the Go module proxy (pinned), cached
#   scripts/services/toxiproxy.sh start     start the API on 127.0.0.1, wait until it answers
#   scripts/services/toxiproxy.sh stop      stop the server started by `start` (its proxies go with it)
#   scripts/services/toxiproxy.sh env       print the TSM_TEST_TOXIPROXY_URL export
#   scripts/services/toxiproxy.sh status    exit 0 when the API answers
#
# Install: `go install github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION` into
# $TSM_CACHE/toxiproxy-$TOXIPROXY_VERSION/toxiproxy-server (TSM_CACHE defaults to
# ~/.cache/tsm, as for MinIO; about 15 s on 2 cores). Idempotent: an existing binary is
# reused, and a running server is left alone by `start`. The tests create their own
# proxies (listen 127.0.0.1:0, upstream MinIO) through the API and delete them.
#
# Settings (env): TOXIPROXY_VERSION, TOXIPROXY_PORT (API port, default 9474; 8474 is
# Toxiproxy's own default and may be taken by a developer's instance). Log and pid file:
# $TSM_WORK/toxiproxy/.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# v2.12.0: the newest the Go module proxy serves (its go.mod asks for Go >= 1.23); builds
# with go1.26.8 (CGO off). `/version` reports it (set with -ldflags).
TOXIPROXY_VERSION="${TOXIPROXY_VERSION:-v2.12.0}"
TSM_CACHE="${TSM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tsm}"
TOXIPROXY_DIR="$TSM_CACHE/toxiproxy-$TOXIPROXY_VERSION"
TOXIPROXY_BIN="$TOXIPROXY_DIR/toxiproxy-server"
TOXIPROXY_PORT="${TOXIPROXY_PORT:-9474}"
TOXIPROXY_STATE="$TSM_WORK/toxiproxy"
TOXIPROXY_PIDFILE="$TOXIPROXY_STATE/toxiproxy.pid"
TOXIPROXY_LOG="$TOXIPROXY_STATE/toxiproxy.log"
API="http://127.0.0.1:$TOXIPROXY_PORT"

install_toxiproxy() {
  if [ -x "$TOXIPROXY_BIN" ]; then
    log "Toxiproxy $TOXIPROXY_VERSION already installed: $TOXIPROXY_BIN"
    return 0
  fi
  command -v go >/dev/null || die "go is needed to build Toxiproxy (from the Go module proxy)"
  mkdir -p "$TOXIPROXY_DIR"
  log "building Toxiproxy $TOXIPROXY_VERSION with $(go version | cut -d' ' -f3)"
  local tmp="$TOXIPROXY_DIR/.build.$$"
  mkdir -p "$tmp"
  # GOBIN into a temp dir, then an atomic rename: an interrupted build leaves no half binary.
  if ! GOBIN="$tmp" GOFLAGS="${GOFLAGS:--buildvcs=false}" CGO_ENABLED=0 \
      go install -ldflags "-X github.com/Shopify/toxiproxy/v2.Version=$TOXIPROXY_VERSION" \
        "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION" \
      >"$TOXIPROXY_DIR/build.log" 2>&1; then
    tail -n 30 "$TOXIPROXY_DIR/build.log" >&2
    rm -rf "$tmp"
    die "go install github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION failed (log: $TOXIPROXY_DIR/build.log)"
  fi
  mv "$tmp/server" "$TOXIPROXY_BIN"
  rm -rf "$tmp"
  log "Toxiproxy installed: $TOXIPROXY_BIN"
}

is_ready() {
  curl -fsS -o /dev/null --max-time 2 "$API/version" 2>/dev/null
}

running_pid() {
  [ -f "$TOXIPROXY_PIDFILE" ] || return 1
  local pid
  pid=$(cat "$TOXIPROXY_PIDFILE")
  kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

start_toxiproxy() {
  [ -x "$TOXIPROXY_BIN" ] || install_toxiproxy
  if running_pid >/dev/null && is_ready; then
    log "Toxiproxy already running on $API"
    return 0
  fi
  # Something else answering on the port would get our proxies: refuse.
  if is_ready; then
    die "a Toxiproxy not started by this script answers on $API (stop it or set TOXIPROXY_PORT)"
  fi
  mkdir -p "$TOXIPROXY_STATE"
  log "starting Toxiproxy on $API (log: $TOXIPROXY_LOG)"
  setsid "$TOXIPROXY_BIN" -host 127.0.0.1 -port "$TOXIPROXY_PORT" \
    >>"$TOXIPROXY_LOG" 2>&1 </dev/null &
  echo $! >"$TOXIPROXY_PIDFILE"
  local i
  for ((i = 0; i < 150; i++)); do
    if is_ready; then log "Toxiproxy ready"; return 0; fi
    if ! running_pid >/dev/null; then break; fi
    sleep 0.2
  done
  echo "---- last lines of $TOXIPROXY_LOG" >&2
  tail -n 40 "$TOXIPROXY_LOG" >&2 || true
  die "Toxiproxy did not answer on $API"
}

stop_toxiproxy() {
  local pid
  if pid=$(running_pid); then
    kill "$pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$TOXIPROXY_PIDFILE"
  log "Toxiproxy stopped"
}

print_env() {
  echo "export TSM_TEST_TOXIPROXY_URL=$API"
}

case "${1:-}" in
  install) install_toxiproxy ;;
  start) start_toxiproxy ;;
  stop) stop_toxiproxy ;;
  env) print_env ;;
  status) is_ready ;;
  *) die "usage: $0 install|start|stop|env|status" ;;
esac
