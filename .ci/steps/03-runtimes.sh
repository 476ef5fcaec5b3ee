#!/usr/bin/env bash
# Python and Node for the packages' tests (python/harness: fresh venvs pinned by python/tests/requirements*.txt; node/harness: npm ci from node/package-lock.json)
source "$(dirname "$0")/../lib.sh"
# The README's `cargo test` builds the wheel with maturin into a fresh virtual environment
# (python3 -m venv) and runs pytest there; check here that Python and venv are present.
if ! python3 -c "import venv, sys; assert sys.version_info >= (3, 9)" 2>/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv python3-pip >/dev/null
fi
python3 --version
# It also builds the Node addon with @napi-rs/cli (`npm ci`, then `npm run build`) and runs
# `node --test`: Node 18 or later with npm (Debian's nodejs and npm where missing).
if ! node -e "process.exit(Number(process.versions.node.split('.')[0]) >= 18 ? 0 : 1)" 2>/dev/null \
    || ! command -v npm >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
echo "node $(node --version), npm $(npm --version)"
