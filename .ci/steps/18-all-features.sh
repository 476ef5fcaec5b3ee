#!/usr/bin/env bash
# tests with every optional feature (serde, tokio, metrics, tracing)
source "$(dirname "$0")/../lib.sh"
cargo test -p flakeid --all-features --lib --test serde --test async_tokio --test observe --test generator --test sharded --test claims --test claim_contract --test layers
cargo test -p flakeid --all-features --doc
