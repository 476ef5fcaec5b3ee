#!/usr/bin/env bash
# The dry runs of a release that work before anything is published (docs/development.md,
# "Releasing"): every publishable package packs with its metadata, licences and only its
# sources; the packages that need no unpublished sibling build from their packed sources.
# Run by .ci/run; run it by hand before a release.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo package --workspace --no-verify --allow-dirty \
    --exclude flakeid-loom-tests --exclude flakeid-no-std-check --exclude flakeid-fleet \
    --exclude flakeid-python --exclude flakeid-python-tests --exclude flakeid-node --exclude flakeid-node-tests
for p in flakeid flakeid-etcd flakeid-zookeeper flakeid-postgres flakeid-stores flakeid-testkit flakeid-text flakeid-serve flakeid-cli; do
    files=$(cargo package -p "$p" --list --allow-dirty)
    # Here-strings, not pipes: `grep -q` stops at the first match and closes the pipe, and
    # an `echo` still writing then dies of SIGPIPE, which pipefail turns into a failure.
    for needed in Cargo.toml README.md LICENSE-MIT LICENSE-APACHE; do
        grep -qx "$needed" <<<"$files" || { echo "$p: $needed is not in the package" >&2; exit 1; }
    done
    if grep -E '^(\.ci|scripts|deploy|target|tests/common)/' <<<"$files"; then
        echo "$p ships the files above" >&2
        exit 1
    fi
done
# The leaf packages build from their packed sources alone (the heavy ones are the same
# sources the test step builds).
# Cargo treats the packed crates as registry crates, which never change: it reuses an
# earlier run's unpacked copy in CARGO_HOME (named after the temporary registry's path)
# and its build of them. Drop both, so the check builds these sources.
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/flakeid* target/package-check
CARGO_TARGET_DIR=target/package-check \
    cargo package --allow-dirty -p flakeid -p flakeid-text -p flakeid-testkit
rm -rf target/package-check
