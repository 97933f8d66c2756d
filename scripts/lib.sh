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
