#!/usr/bin/env bash
# fmt
source "$(dirname "$0")/../lib.sh"
cargo fmt --all -- --check
