#!/usr/bin/env bash
# Dependency policy (deny.toml), checked by cargo-deny against Cargo.lock, for the workspace and
# for the fuzz workspace (fuzz/: its own Cargo.lock, which can pin other versions than the main
# one, built and run on every CI machine by step 15):
#   licenses  every crate's license expression is met by deny.toml's allow-list (NCSA for
#             libfuzzer-sys alone); all features and dev-dependencies included, the
#             `publish = false` crates (workspace-hack has no license field) skipped
#   bans      duplicate versions: the known ones (deny.toml `skip`, with who pulls them in) are
#             silent, a new one prints a warning[duplicate] but does not fail; no `*` version
#             requirement
#   sources   every crate comes from crates.io: no git dependency, no other registry
# Not checked here: advisories (RustSec: vulnerable, unsound, unmaintained or yanked crates). That
# needs the RustSec advisory database, a git repository CI's machines cannot fetch: each release
# runs `cargo deny --locked check advisories` on a machine with network access instead
# (docs/security.md, "Dependencies"). cargo-deny itself runs with --frozen: it neither resolves
# nor downloads anything (no advisory database either); the crate sources it reads for license
# files come from `cargo fetch --locked` just before (crates.io only, every target platform).
#
# Wall time on 2 cores: about 6 minutes the first time on a machine (cargo install of
# cargo-deny, pinned, into $TSM_CACHE; measured 5 min 40 s), then about 4 s (9 s with an empty
# cargo registry cache: the fetch of about 450 crates).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$TSM_ROOT"
DENY_VERSION="${DENY_VERSION:-0.20.2}"
TSM_CACHE="${TSM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tsm}"
DENY_ROOT="$TSM_CACHE/cargo-deny-$DENY_VERSION"
DENY="$DENY_ROOT/bin/cargo-deny"

if [ ! -x "$DENY" ]; then
  log "installing cargo-deny $DENY_VERSION into $DENY_ROOT (about 6 minutes on 2 cores)"
  (unset CARGO_TARGET_DIR; cargo install --locked --quiet --root "$DENY_ROOT" \
    --version "$DENY_VERSION" cargo-deny) || die "cargo install cargo-deny $DENY_VERSION failed"
fi

# deny MANIFEST [cargo-deny check flags...]: the three checks, offline, on MANIFEST's graph.
# Diagnostics print without their inclusion graphs (for a duplicate, hundreds of lines each).
deny() {
  local manifest=$1
  shift
  log "cargo deny check licenses bans sources: $manifest"
  cargo fetch --locked --quiet --manifest-path "$manifest" \
    || die "cargo fetch --locked failed for $manifest (is its Cargo.lock up to date?)"
  "$DENY" --frozen --manifest-path "$manifest" check --hide-inclusion-graph "$@" \
      licenses bans sources \
    || die "$manifest breaks the dependency policy in deny.toml (the error[...] lines above;" \
      "which of our crates pulls a crate in: cargo tree --target all -e all -i CRATE@VERSION)"
}

deny Cargo.toml
# One deny.toml for both graphs: the skip entries for the SDKs' duplicates match nothing here.
deny fuzz/Cargo.toml --allow unmatched-skip
log "dependency policy: licenses, bans and sources ok (advisories: release check, docs/security.md)"
