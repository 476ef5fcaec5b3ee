#!/usr/bin/env bash
# The service's own cost against the HTTP stack's floor, side by side in one run (issue 44,
# item 4): `flakeid serve` (every production layer on) and a minimal axum server
# (serve/examples/minimal_axum.rs), each on one worker pinned to core 0, the load on core 1.
#   1. GET /v1/id at 512 connections, flat out: requests/s, p50, p99, p99.9.
#   2. GET /v1/ids?count=100000 (JSON) against the same bytes as a static body: requests/s
#      and the server's CPU per ID (user + system time over the IDs served).
# With BEFORE=path/to/an/older/flakeid, that binary runs beside them as a third server.
# Instructions a request: scripts/serve_instructions.sh. Needs oha (`cargo install oha`),
# taskset, curl. Usage: [BEFORE=...] scripts/serve_cost.sh [seconds] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
rounds=${2:-2}
for tool in oha taskset curl; do
    command -v "$tool" >/dev/null || { echo "serve_cost.sh: needs $tool" >&2; exit 1; }
done
cargo build --release -q -p flakeid-cli
cargo build --release -q -p flakeid-serve --example minimal_axum
flakeid=target/release/flakeid
axum=target/release/examples/minimal_axum
dir=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$dir"' EXIT
up() { # port: wait until the server answers
    for _ in $(seq 200); do curl -sf "http://127.0.0.1:$1/healthz" >/dev/null && return; sleep 0.05; done
    echo "serve_cost.sh: nothing answers on port $1" >&2; exit 1
}
taskset -c 0 "$flakeid" serve --node 1 --shards 1 --listen 127.0.0.1:18501 2>/dev/null &
pids+=($!); fpid=$!
up 18501
curl -sf "http://127.0.0.1:18501/v1/ids?count=100000" >"$dir/batch.json"
taskset -c 0 "$axum" 127.0.0.1:18502 "$dir/batch.json" 2>/dev/null &
pids+=($!); apid=$!
up 18502
servers=("flakeid:18501:$fpid" "axum:18502:$apid")
if [ -n "${BEFORE:-}" ]; then
    taskset -c 0 "$BEFORE" serve --node 1 --shards 1 --listen 127.0.0.1:18503 2>/dev/null &
    pids+=($!)
    up 18503
    servers=("before:18503:$!" "${servers[@]}")
fi
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); oha $(oha --version | cut -d' ' -f2); $(git rev-parse --short HEAD)"
echo "a batch: $(wc -c <"$dir/batch.json") bytes of JSON for 100,000 IDs"
pick() { grep -E "Requests/sec|50.00%|99.00%|99.90%|Success rate" | tr -s ' ' | paste -sd' ' || true; }
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
tck=$(getconf CLK_TCK)
for round in $(seq "$rounds"); do
    for who in "${servers[@]}"; do
        IFS=: read -r name port pid <<<"$who"
        echo "== round $round, $name: GET /v1/id, 512 connections: $(taskset -c 1 oha -z "${secs}s" -c 512 --no-tui "http://127.0.0.1:$port/v1/id" | pick)"
    done
    for who in "${servers[@]}"; do
        IFS=: read -r name port pid <<<"$who"
        before=$(cpu "$pid")
        out=$(taskset -c 1 oha -z "${secs}s" -c 4 --no-tui "http://127.0.0.1:$port/v1/ids?count=100000")
        after=$(cpu "$pid")
        n=$(echo "$out" | awk '/Success rate/ {ok=1} /\[200\]/ {print $2; exit}')
        echo "== round $round, $name: 100,000-ID JSON batches, 4 connections: $(echo "$out" | pick); answers: ${n:-?}; server CPU: $(awk -v c=$((after - before)) -v t="$tck" -v n="${n:-0}" 'BEGIN { if (n > 0) printf "%.1f ns per ID (%.2f s)", c / t * 1e9 / (n * 100000), c / t; else print "?" }')"
    done
done
