#!/usr/bin/env bash
# features are additive: a no_std user of the crate builds with std turned on too
source "$(dirname "$0")/../lib.sh"
cargo build -p flakeid-no-std-check
cargo build -p flakeid-no-std-check --features std
