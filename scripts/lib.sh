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
log() {
  if [ -t 2 ] && [ -z "${NO_COLOR:-}" ]; then
    printf '\033[1m[tsm]\033[0m %s\n' "$*" >&2
  else
    printf '[tsm] %s\n' "$*" >&2
  fi
}

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

# ------------------------------------------------------------------ skipped steps
# A step of scripts/test.d/ that needs something a clone of the repository does not bring (the
# Java plugin, root) says so BEFORE its expensive work (builds, downloads): `skip REASON HOW`
# prints both and exits with TSM_SKIP_CODE; scripts/test.sh counts the step as skipped and
# repeats REASON and HOW in its summary. `skip_part WHAT REASON HOW` is for a step that can
# still run without one part (WHAT): it prints the same lines and the step goes on.
# Under CI (CI=true, as .ci/run sets it) both are failures: CI must run everything.
TSM_SKIP_CODE=77

# in_ci: true when CI is set to true (or 1, yes).
in_ci() { case "${CI:-}" in true | TRUE | True | 1 | yes) return 0 ;; *) return 1 ;; esac; }

# skip REASON HOW: ends the step as SKIPPED (exit 77); under CI a failure (exit 1).
skip() {
  if in_ci; then
    printf '[tsm] ERROR: this step cannot run here, and CI=%s makes a skip a failure: %s (to enable: %s)\n' "$CI" "$1" "$2" >&2
    exit 1
  fi
  printf '[tsm] SKIPPED: %s\n[tsm]   to enable: %s\n' "$1" "$2" >&2
  exit "$TSM_SKIP_CODE"
}

# skip_part WHAT REASON HOW: the step goes on without WHAT (scripts/test.sh lists it); under CI
# it fails the step instead.
skip_part() {
  in_ci && die "cannot run $1 here, and CI=$CI makes a skip a failure: $2 (to enable: $3)"
  printf '[tsm] SKIPPED PART: %s: %s\n[tsm]   to enable: %s\n' "$1" "$2" "$3" >&2
}

# The Java plugin (Aiven's tiered-storage-for-apache-kafka 1.1.1), which steps 65 and 67 and
# the aiven subject of the benchmarks run beside tsm. It is not on Maven Central and not in
# the repository: $TSM_AIVEN_PLUGIN_DIR, else ../shared/aiven-rsm-1.1.1/plugin beside the
# repository's root.
aiven_plugin_howto() {
  printf '%s' "put the aiven-rsm-1.1.1 directory (the Java plugin: its plugin/ holds the jars) at $(cd "$TSM_ROOT/.." && pwd)/shared/aiven-rsm-1.1.1, or set TSM_AIVEN_PLUGIN_DIR to a plugin directory built from github.com/Aiven-Open/tiered-storage-for-apache-kafka at tag v1.1.1 (commit 1b294d7e; not on Maven Central): its distribution's plugin jars (core, filesystem and s3 modules with their runtime jars, upstream's ./gradlew distTar), the plugin jar named aiven-tiered-storage-for-apache-kafka-1.1.1.jar"
}

# find_aiven_plugin: sets AIVEN_PLUGIN_DIR to the Java plugin's plugin directory (absolute) and
# returns 0 when it holds aiven-tiered-storage-for-apache-kafka-*.jar; else sets it to the
# path looked at and returns 1.
find_aiven_plugin() {
  AIVEN_PLUGIN_DIR="${TSM_AIVEN_PLUGIN_DIR:-$(cd "$TSM_ROOT/.." && pwd)/shared/aiven-rsm-1.1.1/plugin}"
  compgen -G "$AIVEN_PLUGIN_DIR/aiven-tiered-storage-for-apache-kafka-*.jar" >/dev/null || return 1
  AIVEN_PLUGIN_DIR=$(cd "$AIVEN_PLUGIN_DIR" && pwd)
}

# need_aiven_plugin: find_aiven_plugin, or skip the step saying where it looked and how to
# provide the plugin.
need_aiven_plugin() {
  find_aiven_plugin || skip "needs the Java plugin (Aiven tiered-storage-for-apache-kafka 1.1.1), not found at $AIVEN_PLUGIN_DIR (no aiven-tiered-storage-for-apache-kafka-*.jar)" \
    "$(aiven_plugin_howto)"
}

# Root. For testing the non-root paths as root, TSM_TEST_ASSUME_NONROOT=1 makes these checks
# treat root as an ordinary user and TSM_TEST_UNPRIVILEGED_PORT_START=N replaces the sysctl's
# value (nothing else changes).
is_root() { [ "${TSM_TEST_ASSUME_NONROOT:-0}" != 1 ] && [ "$(id -u)" = 0 ]; }

# whoami_note: "uid N" for the reasons below (and the override, when set).
whoami_note() {
  printf 'uid %s' "$(id -u)"
  [ "${TSM_TEST_ASSUME_NONROOT:-0}" != 1 ] || printf ' with TSM_TEST_ASSUME_NONROOT=1'
}

# can_listen_on_port PORT: this user may listen on the privileged PORT: root, or
# net.ipv4.ip_unprivileged_port_start <= PORT.
can_listen_on_port() {
  local start
  is_root && return 0
  start=$(unprivileged_port_start)
  [ "$1" -ge "$start" ]
}

# unprivileged_port_start: net.ipv4.ip_unprivileged_port_start (or its test override).
unprivileged_port_start() {
  echo "${TSM_TEST_UNPRIVILEGED_PORT_START:-$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start 2>/dev/null || echo 1024)}"
}

# need_port80_reason / need_port80_howto: for skip and skip_part of what runs fake-gcs-server,
# which must listen on port 80 (resumable uploads: scripts/services/fake-gcs.sh says why).
need_port80_reason() {
  echo "fake-gcs-server must listen on port 80 (the resumable-upload URLs it hands out carry no port: see scripts/services/fake-gcs.sh), and this user ($(whoami_note)) may not listen there: not root, and net.ipv4.ip_unprivileged_port_start is $(unprivileged_port_start)"
}
need_port80_howto() {
  echo "run as root (CI does), or let every user listen on ports from 80 up: sudo sysctl -w net.ipv4.ip_unprivileged_port_start=80"
}

# Mounts (60-broker.sh: a tmpfs and a read-only bind mount). Root mounts directly. Another
# user gets the same in a private user+mount namespace of its own, when the kernel allows
# unprivileged user namespaces: `unshare --user --map-current-user --keep-caps --mount` keeps
# the user's uid (so $HOME, Java's user.home and ~/.m2 stay the user's; --map-root-user would
# make Java see /root) and grants the mount capability inside; the mounts are private to the
# namespace and vanish with it. TSM_TEST_NO_USERNS=1 pretends namespaces are unavailable.
USERNS_CMD=(unshare --user --map-current-user --keep-caps --mount)

# userns_mounts_work: a tmpfs and a read-only bind mount succeed inside such a namespace.
userns_mounts_work() {
  [ "${TSM_TEST_NO_USERNS:-0}" != 1 ] || return 1
  command -v unshare >/dev/null || return 1
  local d rc=0
  d=$(mktemp -d "${TMPDIR:-/tmp}/tsm-userns-probe.XXXXXX")
  mkdir "$d/t" "$d/b"
  "${USERNS_CMD[@]}" sh -c 'mount -t tmpfs -o size=1m tmpfs "$1/t" && mount --bind "$1/b" "$1/b" \
    && mount -o remount,ro,bind "$1/b" && ! touch "$1/b/probe" 2>/dev/null' sh "$d" >/dev/null 2>&1 || rc=1
  rm -rf "$d"
  return $rc
}

# mounts_reason / mounts_howto: for skip and skip_part of a step that mounts.
mounts_reason() {
  echo "the broker runs as on Strimzi, with a 5 MiB tmpfs as java.io.tmpdir and the plugin directory bind-mounted read-only: mounting needs root or unprivileged user namespaces (${USERNS_CMD[*]}), and this user ($(whoami_note)) has neither"
}
mounts_howto() {
  echo "run as root (CI does), or allow unprivileged user namespaces (sysctl user.max_user_namespaces > 0; on Ubuntu also kernel.apparmor_restrict_unprivileged_userns=0; unshare from util-linux 2.38 or later)"
}

# can_mount: root, already inside the namespace of need_mounts, or the namespace works here.
can_mount() { is_root || [ "${TSM_IN_USERNS:-0}" = 1 ] || userns_mounts_work; }

# need_mounts SCRIPT ARGS...: returns when the calling step (SCRIPT, run with ARGS) may mount:
# as root, or inside the namespace. Otherwise re-runs SCRIPT inside a new user+mount namespace
# (does not return) when that works, or skips the step.
need_mounts() {
  if is_root || [ "${TSM_IN_USERNS:-0}" = 1 ]; then return 0; fi
  userns_mounts_work || skip "$(mounts_reason)" "$(mounts_howto)"
  log "not root: running $(basename "$1") in a user+mount namespace of its own (${USERNS_CMD[*]}): its mounts are private to it"
  exec "${USERNS_CMD[@]}" env TSM_IN_USERNS=1 bash "$@"
}
