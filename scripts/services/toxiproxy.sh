#!/usr/bin/env bash
# Toxiproxy, the fault-injecting TCP proxy the brown-out tests put between the engine and
# MinIO (latency, stalls, resets, truncated bodies, slow links).
#
#   scripts/services/toxiproxy.sh install   build toxiproxy-server from the Go module proxy (pinned), cached
#   scripts/services/toxiproxy.sh start     start the API on 127.0.0.1, wait until it answers
#   scripts/services/toxiproxy.sh stop      stop the server started by `start` (its proxies go with it)
#   scripts/services/toxiproxy.sh env       print the TSM_TEST_TOXIPROXY_URL export
#   scripts/services/toxiproxy.sh status    exit 0 when the API answers
#   scripts/services/toxiproxy.sh pid       print the running server's process id (exit 1 when none)
#   scripts/services/toxiproxy.sh cloud-proxy NAME UPSTREAM
#                                           (re)create proxy NAME (listen 127.0.0.1:0) to
#                                           UPSTREAM (host:port) with the cloud profile's
#                                           toxics; prints its listen address (host:port)
#   scripts/services/toxiproxy.sh delete-proxy NAME   delete proxy NAME (missing: fine)
#
# The cloud profile (bench/run.sh --cloud): a `latency` toxic of
# TSM_CLOUD_LATENCY_MS (20) +- TSM_CLOUD_JITTER_MS (5) ms on the downstream (responses), so
# a request/response round trip gains ~20 ms; and a `bandwidth` toxic of TSM_CLOUD_RATE_KBPS
# (80000, Toxiproxy's unit: KB/s of 1000 bytes, i.e. 80 MB/s) on each direction. Toxiproxy
# applies toxics PER CONNECTION: each accepted client connection gets its own ToxicLink per
# direction with its own toxic stubs (toxic_collection.go StartLink -> link.go
# NewToxicLink), and the bandwidth toxic paces each link's chunks on its own
# (toxics/bandwidth.go), so N connections may move N x 80 MB/s together.
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
  mkdir -p "$TOXIPROXY_DIR"
  go_install_to "$TOXIPROXY_BIN" "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION" \
    -ldflags "-X github.com/Shopify/toxiproxy/v2.Version=$TOXIPROXY_VERSION"
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

api() { # METHOD PATH [JSON]: one API call; fails with the API's answer on an HTTP error
  local out code
  out=$(mktemp)
  code=$(curl -sS -o "$out" -w '%{http_code}' --max-time 10 -X "$1" -H 'Content-Type: application/json' \
    ${3:+--data "$3"} "$API$2") || { rm -f "$out"; die "Toxiproxy API $1 $2: no answer from $API"; }
  if [ "${code:0:1}" != 2 ]; then
    local body
    body=$(head -c 300 "$out")
    rm -f "$out"
    [ "$1" = DELETE ] && [ "$code" = 404 ] && return 0
    die "Toxiproxy API $1 $2: HTTP $code $body"
  fi
  cat "$out"
  rm -f "$out"
}

cloud_proxy() {
  local name=${1:?cloud-proxy NAME UPSTREAM} upstream=${2:?cloud-proxy NAME UPSTREAM}
  local latency=${TSM_CLOUD_LATENCY_MS:-20} jitter=${TSM_CLOUD_JITTER_MS:-5} rate=${TSM_CLOUD_RATE_KBPS:-80000}
  local v
  for v in "$latency" "$jitter" "$rate"; do
    [[ "$v" =~ ^[0-9]+$ ]] || die "TSM_CLOUD_LATENCY_MS, TSM_CLOUD_JITTER_MS and TSM_CLOUD_RATE_KBPS must be integers (got '$v')"
  done
  is_ready || die "Toxiproxy does not answer on $API (scripts/services/toxiproxy.sh start)"
  api DELETE "/proxies/$name" >/dev/null
  local created listen
  created=$(api POST /proxies "{\"name\":\"$name\",\"listen\":\"127.0.0.1:0\",\"upstream\":\"$upstream\",\"enabled\":true}")
  listen=$(printf '%s' "$created" | sed -n 's/.*"listen":"\([^"]*\)".*/\1/p')
  [ -n "$listen" ] || die "Toxiproxy created $name but its answer has no listen address: $created"
  api POST "/proxies/$name/toxics" "{\"name\":\"latency\",\"type\":\"latency\",\"stream\":\"downstream\",\"toxicity\":1,\"attributes\":{\"latency\":$latency,\"jitter\":$jitter}}" >/dev/null
  local dir
  for dir in downstream upstream; do
    api POST "/proxies/$name/toxics" "{\"name\":\"bandwidth-$dir\",\"type\":\"bandwidth\",\"stream\":\"$dir\",\"toxicity\":1,\"attributes\":{\"rate\":$rate}}" >/dev/null
  done
  log "Toxiproxy proxy $name: $listen -> $upstream, latency ${latency}+-${jitter} ms (responses), ${rate} KB/s per connection each way"
  echo "$listen"
}

case "${1:-}" in
  install) install_toxiproxy ;;
  cloud-proxy) shift; cloud_proxy "$@" ;;
  delete-proxy) is_ready && api DELETE "/proxies/${2:?delete-proxy NAME}" >/dev/null; true ;;
  start) start_toxiproxy ;;
  stop) stop_toxiproxy ;;
  env) print_env ;;
  status) is_ready ;;
  pid) running_pid ;;
  *) die "usage: $0 install|start|stop|env|status|pid|cloud-proxy NAME UPSTREAM|delete-proxy NAME" ;;
esac
