#!/usr/bin/env bash
# The wheel as a package index would serve it (python/pyproject.toml's `wheel` profile: fat
# LTO, dependencies built for size, stripped), and its extension's size, which must stay at
# most 10 MB. About 5 minutes on 2 cores; run by hand before a release (docs/development.md).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/flakeid-wheel.XXXXXX)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$(grep -i '^maturin==' python/tests/requirements.txt | cut -d' ' -f1)"
CARGO_TARGET_DIR=target/wheel "$work/venv/bin/maturin" build --quiet \
    --manifest-path python/Cargo.toml --out "$work/dist"
wheel=$(ls "$work"/dist/*.whl)
size=$(python3 -c "import sys, zipfile; print(next(i.file_size for i in zipfile.ZipFile(sys.argv[1]).infolist() if '_native' in i.filename and i.filename.endswith('.so')))" "$wheel")
printf 'wheel %s: %s bytes; its extension %s bytes\n' "$(basename "$wheel")" "$(stat -c %s "$wheel")" "$size"
if [ "$size" -gt 10000000 ]; then
    echo "the extension is over 10 MB" >&2
    exit 1
fi
