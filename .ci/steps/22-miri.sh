#!/usr/bin/env bash
# miri (nightly): small concurrent runs, 8 schedules, spurious CAS failures injected; the scalar decoder and Id::as_u64s
source "$(dirname "$0")/../lib.sh"
rustup toolchain install nightly --profile minimal --component miri,rust-src --allow-downgrade
cargo +nightly miri setup
MIRIFLAGS="-Zmiri-disable-isolation -Zmiri-many-seeds=0..8" \
    cargo +nightly miri test -p flakeid --no-default-features --features std --test miri
