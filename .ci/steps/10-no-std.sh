#!/usr/bin/env bash
# no_std build (no default features: #![no_std], no alloc)
source "$(dirname "$0")/../lib.sh"
cargo build -p flakeid --no-default-features
cargo clippy -p flakeid --no-default-features -- -D warnings
