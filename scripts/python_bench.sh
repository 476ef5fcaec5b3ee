#!/usr/bin/env bash
# flakeid for Python against numpy by hand, the tool's pipe, the PyPI peers and the
# service, in one run (BENCHMARKS.md, "flakeid for Python"): a release wheel into a fresh
# virtual environment with numpy, pandas, the peers (sonyflake-turbo, snowflake-id-toolkit,
# snowflake-id), requests, httpx and grpcio; `flakeid serve` on loopback for the network rows.
# Usage: scripts/python_bench.sh [ids]   (default 10,000,000)
set -euo pipefail
cd "$(dirname "$0")/.."
ids=${1:-10000000}
work=target/python-bench
rm -rf "$work" && mkdir -p "$work"
python3 -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install -q maturin numpy pandas requests httpx grpcio grpcio-reflection protobuf \
    sonyflake-turbo snowflake-id-toolkit snowflake-id typing_extensions
CARGO_TARGET_DIR=target/python-release "$work/venv/bin/maturin" build --quiet \
    --manifest-path python/Cargo.toml --out "$work/dist"
"$py" -m pip install -q --no-deps "$work"/dist/*.whl
cargo build --release -q -p flakeid-cli
tool=target/release/flakeid
"$tool" serve --node 1 --shards 1 --listen 127.0.0.1:18401 --grpc-listen 127.0.0.1:19401 2>/dev/null &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -sf http://127.0.0.1:18401/readyz >/dev/null && break; sleep 0.1; done
"$py" python/bench/bench.py --ids "$ids" --tool "$tool" --serve http://127.0.0.1:18401 --grpc 127.0.0.1:19401
