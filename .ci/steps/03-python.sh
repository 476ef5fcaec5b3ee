#!/usr/bin/env bash
# Python for the package's tests (python/harness/tests/pytest.rs: fresh venvs pinned by python/tests/requirements*.txt)
source "$(dirname "$0")/../lib.sh"
# The README's `cargo test` builds the wheel with maturin into a fresh virtual environment
# (python3 -m venv) and runs pytest there; check here that Python and venv are present.
if ! python3 -c "import venv, sys; assert sys.version_info >= (3, 9)" 2>/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv python3-pip >/dev/null
fi
python3 --version
