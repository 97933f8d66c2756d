#!/usr/bin/env bash
# Azurite, Microsoft's Azure Storage emulator (blob service only), for tsm-backend-azure's tests.
#
#   scripts/services/azurite.sh install   npm-install Azurite (pinned) into the cache
#   scripts/services/azurite.sh start     install if needed, start on 127.0.0.1, wait for the port
#   scripts/services/azurite.sh stop      stop the instance this script started, remove its data
#   scripts/services/azurite.sh status    exit 0 when our instance listens
#   scripts/services/azurite.sh env       print the TSM_TEST_AZURE_* exports
#   scripts/services/azurite.sh container NAME   create container NAME (exists: fine), for the
#                                         broker test / demo; signs an account SAS with python3
#
# Install: `npm install azurite@$AZURITE_VERSION` into $TSM_CACHE/azurite-$AZURITE_VERSION/
# (TSM_CACHE defaults to ~/.cache/tsm, outside the clone). Idempotent: an existing install is
# reused; an interrupted one (no binary) is redone.
# Start runs the `azurite-blob` binary itself, not npx (killing npx leaves node running),
# with a fresh temp location and:
#   --skipApiVersionCheck  azure_storage_blob 1.x sends an x-ms-version newer than Azurite knows
#   --disableTelemetry --silent
# Account: the well-known devstoreaccount1 and its public key; endpoint
# http://127.0.0.1:$AZURITE_PORT/devstoreaccount1 (no trailing slash).
#
# Settings (env): AZURITE_PORT (default 10000), AZURITE_VERSION.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

AZURITE_VERSION="${AZURITE_VERSION:-3.35.0}"
TSM_CACHE="${TSM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tsm}"
AZURITE_DIR="$TSM_CACHE/azurite-$AZURITE_VERSION"
AZURITE_BIN="$AZURITE_DIR/node_modules/.bin/azurite-blob"
AZURITE_HOST=127.0.0.1
AZURITE_PORT="${AZURITE_PORT:-10000}"
AZURITE_STATE="$TSM_WORK/azurite"
AZURITE_PIDFILE="$AZURITE_STATE/azurite.pid"
AZURITE_LOG="$AZURITE_STATE/azurite.log"
AZURITE_DATA="$AZURITE_STATE/data"
ACCOUNT=devstoreaccount1
# Azurite's documented development key (public, not a secret).
ACCOUNT_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='
ENDPOINT="http://$AZURITE_HOST:$AZURITE_PORT/$ACCOUNT"

install_azurite() {
  if [ -x "$AZURITE_BIN" ]; then
    log "Azurite $AZURITE_VERSION already installed: $AZURITE_BIN"
    return 0
  fi
  command -v npm >/dev/null || die "npm is needed to install Azurite (apt-get install npm)"
  mkdir -p "$AZURITE_DIR"
  log "installing Azurite $AZURITE_VERSION from npm into $AZURITE_DIR"
  if ! (cd "$AZURITE_DIR" && npm install --no-audit --no-fund --no-save --loglevel=error \
      --prefix "$AZURITE_DIR" "azurite@$AZURITE_VERSION") >"$AZURITE_DIR/install.log" 2>&1; then
    tail -n 30 "$AZURITE_DIR/install.log" >&2
    die "npm install azurite@$AZURITE_VERSION failed (log: $AZURITE_DIR/install.log)"
  fi
  [ -x "$AZURITE_BIN" ] || die "npm installed Azurite but $AZURITE_BIN is missing"
  log "Azurite installed: $AZURITE_BIN"
}

running_pid() {
  [ -f "$AZURITE_PIDFILE" ] || return 1
  local pid
  pid=$(cat "$AZURITE_PIDFILE")
  kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

listening() {
  (exec 3<>"/dev/tcp/$AZURITE_HOST/$AZURITE_PORT") 2>/dev/null
}

start_azurite() {
  [ -x "$AZURITE_BIN" ] || install_azurite
  if running_pid >/dev/null && listening; then
    log "Azurite already running on $ENDPOINT"
    return 0
  fi
  if listening; then
    die "something else listens on $AZURITE_HOST:$AZURITE_PORT (set AZURITE_PORT)"
  fi
  rm -rf "$AZURITE_DATA"
  mkdir -p "$AZURITE_DATA"
  : >"$AZURITE_LOG"
  log "starting Azurite on $ENDPOINT (data: $AZURITE_DATA, log: $AZURITE_LOG)"
  setsid "$AZURITE_BIN" --blobHost "$AZURITE_HOST" --blobPort "$AZURITE_PORT" \
    --location "$AZURITE_DATA" \
    --skipApiVersionCheck --disableTelemetry --silent \
    >>"$AZURITE_LOG" 2>&1 </dev/null &
  echo $! >"$AZURITE_PIDFILE"
  local i
  for ((i = 0; i < 300; i++)); do
    if listening; then log "Azurite ready"; return 0; fi
    if ! running_pid >/dev/null; then break; fi
    sleep 0.2
  done
  echo "---- last lines of $AZURITE_LOG" >&2
  tail -n 40 "$AZURITE_LOG" >&2 || true
  stop_azurite
  die "Azurite did not listen on $AZURITE_HOST:$AZURITE_PORT"
}

stop_azurite() {
  local pid
  if pid=$(running_pid); then
    # setsid made it a group leader: stop node and anything it spawned.
    kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 -- "-$pid" 2>/dev/null || kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$AZURITE_PIDFILE"
  rm -rf "$AZURITE_DATA"
  log "Azurite stopped"
}

print_env() {
  cat <<ENV
export TSM_TEST_AZURE_ENDPOINT=$ENDPOINT
export TSM_TEST_AZURE_ACCOUNT=$ACCOUNT
export TSM_TEST_AZURE_KEY=$ACCOUNT_KEY
ENV
}

# create_container NAME: PUT ?restype=container with an account SAS signed by the key
# (python3 stdlib: hmac, hashlib; same scheme as crates/tsm-backend-azure/src/sas.rs).
create_container() {
  local name=${1:?container name}
  running_pid >/dev/null || die "Azurite is not running (scripts/services/azurite.sh start)"
  ACCOUNT="$ACCOUNT" ACCOUNT_KEY="$ACCOUNT_KEY" ENDPOINT="$ENDPOINT" NAME="$name" python3 - <<'PY'
import base64, datetime, hashlib, hmac, os, sys, urllib.error, urllib.parse, urllib.request
now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
fmt = lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")
f = dict(sv="2022-11-02", ss="b", srt="sco", sp="racwdl", st=fmt(now - datetime.timedelta(minutes=15)),
         se=fmt(now + datetime.timedelta(hours=1)), spr="https,http")
sts = "\n".join([os.environ["ACCOUNT"], f["sp"], f["ss"], f["srt"], f["st"], f["se"], "", f["spr"], f["sv"], "", ""])
f["sig"] = base64.b64encode(hmac.new(base64.b64decode(os.environ["ACCOUNT_KEY"]), sts.encode(), hashlib.sha256).digest()).decode()
url = "%s/%s?restype=container&%s" % (os.environ["ENDPOINT"], os.environ["NAME"], urllib.parse.urlencode(f))
req = urllib.request.Request(url, method="PUT", headers={"x-ms-version": "2022-11-02", "Content-Length": "0"})
try:
    urllib.request.urlopen(req, timeout=10)
except urllib.error.HTTPError as e:
    if e.code != 409:
        sys.exit("create container %s: HTTP %d %s" % (os.environ["NAME"], e.code, e.read()[:300]))
PY
  log "container $name ready on $ENDPOINT"
}

case "${1:-}" in
  install) install_azurite ;;
  start) start_azurite ;;
  stop) stop_azurite ;;
  status) running_pid >/dev/null && listening ;;
  env) print_env ;;
  container) create_container "${2:-}" ;;
  *) die "usage: $0 install|start|stop|status|env|container NAME" ;;
esac
