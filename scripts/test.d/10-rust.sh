#!/usr/bin/env bash
# Rust: formatting, clippy, and the tests that need no external service (codec, crypto,
# core with its filesystem backend and end-to-end engine tests, CLI), rustdoc's link check, and
# the workspace-hack check (one feature set for every build: scripts/tools/hakari.sh).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$TSM_ROOT"
cargo fmt --all -- --check
bash scripts/tools/hakari.sh check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The plugin's test hook (NativeBridge.testHook) is compiled only with this feature.
cargo clippy -p tsm-jni --all-targets --locked --features test-hooks -- -D warnings
# Doc comments whose links resolve (a broken or private link is an error), about a minute.
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked --workspace --exclude workspace-hack
cargo test --locked --workspace \
  --exclude tsm-backend-s3 --exclude tsm-backend-gcs --exclude tsm-backend-azure
