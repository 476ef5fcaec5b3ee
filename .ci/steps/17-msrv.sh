#!/usr/bin/env bash
# MSRV: the declared rust-version (1.89) builds every package and target
source "$(dirname "$0")/../lib.sh"
msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
rustup toolchain list | grep -q "^$msrv-" || rustup toolchain install "$msrv" --profile minimal
CARGO_TARGET_DIR=target/msrv cargo "+$msrv" check --workspace --all-targets --quiet
rm -rf target/msrv
