# Shared by scripts/*.sh and demo/run.sh: sourced, not run.
# Sets TSM_ROOT (the repo), CARGO_TARGET_DIR (kept if set: a persistent target dir outside
# the clone saves minutes), TSM_WORK (gitignored scratch: service data, downloads, logs).
set -euo pipefail
TSM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export TSM_ROOT
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$TSM_ROOT/target}"
export TSM_WORK="${TSM_WORK:-$TSM_ROOT/.tsm}"
mkdir -p "$TSM_WORK"

# log MSG: a progress line on stderr.
log() { printf '\033[1m[tsm]\033[0m %s\n' "$*" >&2; }

# die MSG: print and exit non-zero.
die() { printf '[tsm] ERROR: %s\n' "$*" >&2; exit 1; }

# wait_for_port HOST PORT SECONDS NAME: fail loudly if nothing listens in time.
wait_for_port() {
  local host=$1 port=$2 secs=$3 name=$4 i
  for ((i = 0; i < secs * 5; i++)); do
    if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then return 0; fi
    sleep 0.2
  done
  die "$name did not listen on $host:$port within ${secs}s"
}

# go_install_to DEST PACKAGE@VERSION [go install flags...]: builds PACKAGE from the Go module
# proxy (CGO off) into a temporary GOBIN beside DEST, then renames the binary to DEST, so an
# interrupted build leaves no half binary. The build log goes to DEST's directory (build.log);
# a failure prints its tail and dies naming the package (and says so when go is missing).
# The binary is the package path's last element (minio, server, promtool).
go_install_to() {
  local dest=$1 pkg=$2 dir tmp bin
  shift 2
  command -v go >/dev/null || die "go is needed to build ${pkg%@*} (from the Go module proxy)"
  log "building $pkg with $(go version | cut -d' ' -f3) (minutes the first time on a machine)"
  dir=$(dirname "$dest")
  tmp="$dir/.build.$$"
  bin=${pkg%@*}
  bin=${bin##*/}
  mkdir -p "$tmp"
  if ! GOBIN="$tmp" GOFLAGS="${GOFLAGS:--buildvcs=false}" CGO_ENABLED=0 \
      go install "$@" "$pkg" >"$dir/build.log" 2>&1; then
    tail -n 30 "$dir/build.log" >&2
    rm -rf "$tmp"
    die "go install $pkg failed (log: $dir/build.log)"
  fi
  mv "$tmp/$bin" "$dest"
  rm -rf "$tmp"
}
