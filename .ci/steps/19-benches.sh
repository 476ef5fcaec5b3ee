#!/usr/bin/env bash
# benches compile (the dev profile: the compile is the check; `cargo bench` measures)
source "$(dirname "$0")/../lib.sh"
# `cargo bench --no-run` builds them with the release profile, 6 minutes on 2 cores;
# the dev profile finds the same compile errors in a fraction of it.
cargo build --benches
