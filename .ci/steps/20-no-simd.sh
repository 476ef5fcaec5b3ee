#!/usr/bin/env bash
# decode tests with SIMD compiled out (the fallback path)
source "$(dirname "$0")/../lib.sh"
RUSTFLAGS="--cfg flakeid_no_simd" CARGO_TARGET_DIR=target/no-simd \
    cargo test -p flakeid --test decode -- --nocapture
rm -rf target/no-simd
