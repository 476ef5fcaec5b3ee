#!/usr/bin/env bash
# fuzz targets compile (stable + RUSTC_BOOTSTRAP, as the README runs them)
source "$(dirname "$0")/../lib.sh"
# libfuzzer-sys builds libFuzzer from C++ source.
if ! command -v c++ >/dev/null; then
    if command -v apt-get >/dev/null; then
        (apt-get update -qq && apt-get install -y -qq g++) >/dev/null
    fi
fi
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked --quiet
(cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz build -O -s none)
disk
rm -rf fuzz/target
