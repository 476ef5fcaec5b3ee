#!/usr/bin/env bash
# toolchain
source "$(dirname "$0")/../lib.sh"
disk
cargo --version
rustc --version
command -v rustfmt >/dev/null || rustup component add rustfmt
command -v cargo-clippy >/dev/null || rustup component add clippy
