#!/usr/bin/env bash
# clippy
source "$(dirname "$0")/../lib.sh"
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy --workspace --all-targets --all-features -- -D warnings
