#!/usr/bin/env bash
# fuzz corpus replay on stable (every stored input of fuzz/corpus/)
source "$(dirname "$0")/../lib.sh"
cargo test -p flakeid --release --test fuzz_corpus -- --nocapture
