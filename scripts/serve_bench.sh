#!/usr/bin/env bash
# The service's figures for BENCHMARKS.md: `flakeid serve` pinned to core 0, the load
# generator pinned to core 1 (a 2-core machine: they share it, so each gets one core).
# Needs oha (`cargo install oha`) and taskset. Usage: scripts/serve_bench.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
cargo build --release -q -p flakeid-cli
cargo build --release -q -p flakeid-serve --example grpc_load
bin=target/release/flakeid
load=target/release/examples/grpc_load
wide='seq=22,node=4,epoch=2025-01-01T00:00:00Z'
pick() { grep -E "Requests/sec|50.00%|99.00%|99.90%|Success rate" || true; }

taskset -c 0 "$bin" serve --node 1 --shards 1 --listen 127.0.0.1:18180 --grpc-listen 127.0.0.1:19190 2>/dev/null &
snow=$!
taskset -c 0 "$bin" serve --node 1 --shards 1 --layout "$wide" --listen 127.0.0.1:18181 --grpc-listen 127.0.0.1:19191 2>/dev/null &
wide_pid=$!
trap 'kill $snow $wide_pid 2>/dev/null || true' EXIT
sleep 1

echo "== HTTP GET /v1/id, keep-alive, 64 connections, as fast as it goes (snowflake)"
taskset -c 1 oha -z "${secs}s" -c 64 --no-tui http://127.0.0.1:18180/v1/id | pick
echo "== HTTP GET /v1/id at a fixed 50,000 requests/s, 8 connections"
taskset -c 1 oha -z "${secs}s" -c 8 -q 50000 --no-tui http://127.0.0.1:18180/v1/id | pick
echo "== HTTP GET /v1/ids?count=100000, packed u64, 4 connections (wide layout; snowflake caps at 4.096M IDs/s per node)"
taskset -c 1 oha -z "${secs}s" -c 4 --no-tui -H 'Accept: application/octet-stream' 'http://127.0.0.1:18181/v1/ids?count=100000' | pick
echo "== HTTP GET /v1/ids?count=100000, JSON, 4 connections (wide layout)"
taskset -c 1 oha -z "${secs}s" -c 4 --no-tui 'http://127.0.0.1:18181/v1/ids?count=100000' | pick
echo "== gRPC Next(1), 64 concurrent calls (snowflake)"
taskset -c 1 "$load" http://127.0.0.1:19190 next 1 64 "$secs"
echo "== gRPC Stream, 4096 per message, 4 concurrent (wide layout)"
taskset -c 1 "$load" http://127.0.0.1:19191 stream 4096 4 "$secs"
echo "== resident size of the snowflake server during 60 s of GET /v1/id"
(taskset -c 1 oha -z 60s -c 64 --no-tui http://127.0.0.1:18180/v1/id >/dev/null 2>&1 &)
for t in 0 10 20 30 40 50 60; do
    echo "t=${t}s rss=$(ps -o rss= -p $snow) KiB"
    [ "$t" = 60 ] || sleep 10
done
