#!/usr/bin/env bash
# supply chain: cargo deny check licenses bans sources (deny.toml; advisories need GitHub)
source "$(dirname "$0")/../lib.sh"
if ! cargo deny --version 2>/dev/null | grep -q '^cargo-deny 0.20.2$'; then
    cargo install --locked --quiet cargo-deny@0.20.2
fi
cargo deny --workspace check licenses bans sources
