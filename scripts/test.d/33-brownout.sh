#!/usr/bin/env bash
# Brown-out: the engine over the S3 backend talks to MinIO through Toxiproxy, which injects
# one fault at a time (late answers, a black hole, resets, bodies cut mid-way, a 4 KB/s
# link) into copy, fetch (with and without the chunk cache), fetchIndex and delete:
# crates/tsm-backend-s3/tests/brownout.rs. Installs both servers (pinned, cached), starts
# them on 127.0.0.1, runs the suite and always stops both.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$TSM_ROOT"

source "$TSM_ROOT/scripts/services/brownout-env.sh"
# Two at a time: each test spends most of its time waiting on a deadline, and the two
# cores are shared with MinIO and Toxiproxy.
cargo test --locked -p tsm-backend-s3 --test brownout -- --test-threads 2
