#!/usr/bin/env bash
# loom models (interleavings and time per model)
source "$(dirname "$0")/../lib.sh"
RUSTFLAGS="--cfg flakeid_loom" LOOM_MAX_PREEMPTIONS=3 CARGO_TARGET_DIR=target/loom \
    cargo test -p flakeid-loom-tests --release -- --nocapture
disk
rm -rf target/loom
