#!/usr/bin/env bash
# Brown-out: the engine over the S3 backend talks to MinIO through Toxiproxy, which injects
# one fault at a time (late answers, a black hole, resets, bodies cut mid-way, a 4 KB/s
# link) into copy, fetch (with and without the chunk cache), fetchIndex and delete:
# crates/tsm-backend-s3/tests/brownout.rs. Installs both servers (pinned, cached), starts
# them on 127.0.0.1, runs the suite and always stops both.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$TSM_ROOT"

source "$TSM_ROOT/scripts/services/brownout-env.sh"
unset TSM_SKIP_S3 TSM_SKIP_BROWNOUT
# Two at a time: each test spends most of its time waiting on a deadline, and the two
# cores are shared with MinIO and Toxiproxy.
# 8 MiB stacks for the test threads (and the runtimes' workers): in this debug build the
# engine's fetchIndex over the S3 SDK's futures polls deeper than the default 2 MiB allows
# (a stack overflow in bandwidth_fetch_index). The plugin is a release build, whose frames are
# a fraction of these; steps 55 and 60 run it on default stacks.
RUST_MIN_STACK=8388608 cargo test --locked -p tsm-backend-s3 --test brownout -- --test-threads 2
