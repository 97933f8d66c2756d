#!/usr/bin/env bash
# Fuzzing (cargo-fuzz, libFuzzer + AddressSanitizer, Rust nightly) of the parsers that read what
# the bucket or the broker hands tsm: manifest + chunk table + bounds, the chunk-size codec,
# KIP-917 custom metadata, the data-key string, key-ring PEM text, Kafka record batches
# (fuzz/fuzz_targets/). Each target runs TSM_FUZZ_SECONDS (default 20) from its committed
# corpus (fuzz/corpus/<target>, copied to $TSM_WORK so a run never edits the repo); a crash,
# a leak, a timeout over 10 s or more than 2 GiB of memory fails the step and leaves the
# input under $TSM_WORK/fuzz/artifacts/<target>/: add it to fuzz/corpus/<target>/ and turn it
# into a unit test with the fix. Wall time on 2 cores: about 13 minutes the first time (the
# instrumented release build of tsm-core's dependency tree, kept under $CARGO_TARGET_DIR/fuzz),
# about 2.5 minutes afterwards (6 targets x 20 s plus start-up).
#
# Needs the nightly toolchain (`rustup toolchain install nightly`) and cargo-fuzz, installed
# here (pinned) into $TSM_CACHE the first time (about 2 minutes).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$TSM_ROOT/fuzz"
FUZZ_VERSION="${FUZZ_VERSION:-0.13.2}"
TSM_CACHE="${TSM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tsm}"
FUZZ_ROOT="$TSM_CACHE/cargo-fuzz-$FUZZ_VERSION"
seconds="${TSM_FUZZ_SECONDS:-20}"

rustup run nightly rustc --version >/dev/null 2>&1 \
  || die "the Rust nightly toolchain is missing: rustup toolchain install nightly"
if [ ! -x "$FUZZ_ROOT/bin/cargo-fuzz" ]; then
  log "installing cargo-fuzz $FUZZ_VERSION into $FUZZ_ROOT"
  (unset CARGO_TARGET_DIR; cargo install --locked --quiet --root "$FUZZ_ROOT" \
    --version "$FUZZ_VERSION" cargo-fuzz) || die "cargo install cargo-fuzz $FUZZ_VERSION failed"
fi
export PATH="$FUZZ_ROOT/bin:$PATH"

target_dir="$CARGO_TARGET_DIR/fuzz"
work="$TSM_WORK/fuzz"
rm -rf "$work"
mkdir -p "$work"
targets=$(cargo +nightly fuzz list)
[ -n "$targets" ] || die "cargo fuzz list found no target"
cargo +nightly fuzz build --target-dir "$target_dir" \
  || die "the fuzz targets do not build"

# The key-pair seed is made here, not committed: a private key in the repository would be
# flagged by every secret scanner.
mkdir -p "$work/corpus/key_pem"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/k.pem" 2>/dev/null \
  && openssl pkey -in "$work/k.pem" -pubout -out "$work/p.pem" \
  && { cat "$work/p.pem"; printf '\0'; cat "$work/k.pem"; } >"$work/corpus/key_pem/rsa2048" \
  || die "openssl could not make the key-pair seed"
rm -f "$work/k.pem" "$work/p.pem"

failed=()
ran=0
for t in $targets; do
  mkdir -p "$work/corpus/$t" "$work/artifacts/$t"
  [ -d "corpus/$t" ] && cp -r "corpus/$t/." "$work/corpus/$t/"
  log "fuzzing $t for ${seconds}s"
  if cargo +nightly fuzz run --target-dir "$target_dir" "$t" "$work/corpus/$t" -- \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$work/artifacts/$t/" -print_final_stats=1 >"$work/$t.log" 2>&1; then
    ran=$((ran + 1))
    grep -E '^stat::number_of_executed_units' "$work/$t.log" | sed "s/^/[$t] /" || true
  else
    failed+=("$t")
    tail -n 40 "$work/$t.log"
    log "$t failed: inputs in $work/artifacts/$t/"
  fi
done
echo "fuzz targets: $ran passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ] || die "fuzzing found failures in: ${failed[*]}"
