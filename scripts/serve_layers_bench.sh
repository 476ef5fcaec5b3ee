#!/usr/bin/env bash
# The service's production figures for BENCHMARKS.md, from one run, every server side by
# side: the layers' cost (this build against the revision before them, BEFORE, default
# the last landing before the rework) and the HTTP stack's ceiling (a minimal axum server,
# serve/examples/minimal_axum.rs); a single-ID client's p99 beside greedy clients; the
# resident size after batches; a one-ID-a-message gRPC stream (Nagle's algorithm).
# Each server is pinned to core 0 and the load to core 1 (a 2-core machine).
# Needs oha (`cargo install oha`), taskset, git. Usage: scripts/serve_layers_bench.sh [seconds] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
rounds=${2:-2}
before=${BEFORE:-4c61750}
cargo build --release -q -p flakeid-cli
cargo build --release -q -p flakeid-serve --example grpc_load --example minimal_axum
if [ ! -x target/before/release/flakeid ]; then
    git worktree add -f target/before-src "$before" >/dev/null
    (cd target/before-src && CARGO_TARGET_DIR=../before cargo build --release -q -p flakeid-cli)
fi
new=target/release/flakeid
old=target/before/release/flakeid
axum=target/release/examples/minimal_axum
load=target/release/examples/grpc_load
pick() { grep -E "Requests/sec|50.00%|99.00%|99.90%|Success rate" | tr -s ' ' | paste -sd' ' || true; }
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
start() { # name port grpc-port binary...
    local port=$1; shift
    taskset -c 0 "$@" 2>/dev/null &
    pids+=($!)
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
    # Ready: the node ids are claimed.
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
}
start 18201 "$old" serve --node 1 --shards 1 --listen 127.0.0.1:18201 --grpc-listen 127.0.0.1:19201
start 18202 "$new" serve --node 1 --shards 1 --listen 127.0.0.1:18202 --grpc-listen 127.0.0.1:19202
start 18203 "$axum" 127.0.0.1:18203
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); oha $(oha --version | cut -d' ' -f2)"
echo "before: $before ($old); after: $(git rev-parse --short HEAD) ($new); axum: $axum"

for round in $(seq "$rounds"); do
    for who in before:18201 after:18202 axum:18203; do
        name=${who%%:*}; port=${who#*:}
        echo "== round $round, $name: GET /v1/id, 64 connections, flat out: $(taskset -c 1 oha -z "${secs}s" -c 64 --no-tui "http://127.0.0.1:$port/v1/id" | pick)"
        echo "== round $round, $name: GET /v1/id at 50,000/s, 8 connections: $(taskset -c 1 oha -z "${secs}s" -c 8 -q 50000 --no-tui "http://127.0.0.1:$port/v1/id" | pick)"
        echo "== round $round, $name: GET /healthz, 64 connections, flat out: $(taskset -c 1 oha -z "${secs}s" -c 64 --no-tui "http://127.0.0.1:$port/healthz" | pick)"
        echo "== round $round, $name: GET /healthz at 50,000/s, 8 connections: $(taskset -c 1 oha -z "${secs}s" -c 8 -q 50000 --no-tui "http://127.0.0.1:$port/healthz" | pick)"
    done
done

# Fairness: a client asking one ID at a time, 1,000 requests/s on 4 connections, alone and
# beside greedy clients (four endless streams on one connection; two loops of 100,000-ID
# batches). The greedy load shares core 1 with the client.
for who in before:18201:19201 after:18202:19202; do
    IFS=: read -r name port gport <<<"$who"
    echo "== $name: single IDs at 1,000/s, alone: $(taskset -c 1 oha -z "${secs}s" -c 4 -q 1000 --no-tui "http://127.0.0.1:$port/v1/id" | pick)"
    taskset -c 1 "$load" "http://127.0.0.1:$gport" stream 4096 4 $((secs + 2)) >/dev/null 2>&1 &
    greedy=$!
    sleep 1
    echo "== $name: single IDs at 1,000/s, beside 4 greedy streams: $(taskset -c 1 oha -z "${secs}s" -c 4 -q 1000 --no-tui "http://127.0.0.1:$port/v1/id" | pick)"
    wait $greedy || true
    (taskset -c 1 oha -z "$((secs + 2))s" -c 2 --no-tui "http://127.0.0.1:$port/v1/ids?count=100000" >/dev/null 2>&1 &)
    sleep 1
    echo "== $name: single IDs at 1,000/s, beside 2 loops of count=100000: $(taskset -c 1 oha -z "${secs}s" -c 4 -q 1000 --no-tui "http://127.0.0.1:$port/v1/id" | pick)"
    sleep 2
done

# gRPC: Next(1) flat out; a stream of one ID a message (256 messages a call), 8 at once:
# each message waits on Nagle's algorithm and the client's delayed ACK without TCP_NODELAY.
for who in before:19201 after:19202; do
    name=${who%%:*}; gport=${who#*:}
    echo "== $name: gRPC Next(1), 64 concurrent: $(taskset -c 1 "$load" "http://127.0.0.1:$gport" next 1 64 "$secs" 2>&1 | tr '\n' ' ')"
    echo "== $name: gRPC Stream, 1 ID a message, 8 concurrent: $(taskset -c 1 "$load" "http://127.0.0.1:$gport" stream 1 8 "$secs" 2>&1 | tr '\n' ' ')"
done

# Resident size of fresh servers before and after three rounds of 100,000-ID JSON batches
# (each round ${secs} s, 4 connections): flat once the first round has warmed the allocator.
start 18211 "$old" serve --node 1 --shards 2 --listen 127.0.0.1:18211
start 18212 "$new" serve --node 1 --shards 2 --listen 127.0.0.1:18212
rss() { ps -o rss= -p "$(pgrep -f "listen 127.0.0.1:$1" | head -1)" | xargs; }
for who in before:18211 after:18212; do
    name=${who%%:*}; port=${who#*:}
    line="at the start $(rss "$port")"
    for round in 1 2 3; do
        taskset -c 1 oha -z "${secs}s" -c 4 --no-tui "http://127.0.0.1:$port/v1/ids?count=100000" >/dev/null
        sleep 1
        line="$line, after round $round $(rss "$port")"
    done
    echo "== $name: resident KiB $line"
done
