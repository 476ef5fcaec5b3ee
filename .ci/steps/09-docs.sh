#!/usr/bin/env bash
# docs
source "$(dirname "$0")/../lib.sh"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --all-features \
    -p flakeid -p flakeid-etcd -p flakeid-zookeeper -p flakeid-postgres -p flakeid-stores -p flakeid-testkit \
    -p flakeid-text
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p flakeid-serve
