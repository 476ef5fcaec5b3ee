#!/usr/bin/env bash
# The service at Snowflake's cap (4,096,000 IDs/s for one node), side by side in one run:
# `flakeid serve` (one shard) beside ferroid-tonic-server (one worker: one machine id, the
# same cap), each pinned to core 0 with the load on core 1 (a 2-core machine). Prints IDs/s,
# the share of the cap, the ratio to ferroid and each server's CPU per ID.
#
# Needs oha, ferroid-tonic-server and taskset:
#   PROTOC=$PWD/scripts/protoc cargo install --locked oha ferroid-tonic-server
# Usage: scripts/serve_at_cap.sh [SECONDS] [BASELINE_FLAKEID]
# BASELINE_FLAKEID: another `flakeid` binary (an earlier build) measured the same way.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
baseline=${2:-}
cargo build --release -q -p flakeid-cli
cargo build --release -q -p flakeid-serve --example grpc_load
bin=target/release/flakeid
load=target/release/examples/grpc_load
cap=4096000
pids=()
last_rate=0
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# wait_port PORT: until something listens there (bounded: 10 s).
wait_port() {
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "nothing listens on $1" >&2
    return 1
}

# row NAME PID COMMAND...: runs the load, prints IDs/s, share of the cap, CPU ns per ID.
row() {
    local name=$1 pid=$2
    shift 2
    local before after out ids_s
    before=$(cpu_ticks "$pid")
    out=$("$@")
    after=$(cpu_ticks "$pid")
    ids_s=$(sed -n 's/.* \([0-9.]*\) IDs\/s.*/\1/p' <<<"$out")
    awk -v n="$name" -v r="$ids_s" -v c="$cap" -v t=$((after - before)) -v hz="$hz" -v s="$secs" \
        'BEGIN { printf "| %s | %.2f M | %.1f%% | %.1f ns |\n", n, r / 1e6, r / c * 100, (t / hz) * 1e9 / (r * s) }'
    last_rate=$ids_s
}

# oha_row NAME PID URL ACCEPT IDS_PER_REQUEST
oha_row() {
    local name=$1 pid=$2 url=$3 accept=$4 per=$5 before after out rps p50
    before=$(cpu_ticks "$pid")
    out=$(taskset -c 1 oha -z "${secs}s" -c 4 --no-tui -H "Accept: $accept" "$url")
    after=$(cpu_ticks "$pid")
    rps=$(sed -n 's/.*Requests\/sec:[[:space:]]*\([0-9.]*\).*/\1/p' <<<"$out")
    p50=$(sed -n 's/.*50\.00% in \([0-9.]*\) ms.*/\1/p' <<<"$out" | head -1)
    awk -v n="$name" -v q="$rps" -v p="$per" -v c="$cap" -v t=$((after - before)) -v hz="$hz" -v s="$secs" -v m="$p50" \
        'BEGIN { r = q * p; printf "| %s | %.2f M | %.1f%% | %.1f ns (p50 %.0f ms) |\n", n, r / 1e6, r / c * 100, (t / hz) * 1e9 / (r * s), m }'
}

start_flakeid() { # BINARY HTTP_PORT GRPC_PORT
    taskset -c 0 "$1" serve --node 1 --shards 1 --listen "127.0.0.1:$2" --grpc-listen "127.0.0.1:$3" 2>/dev/null &
    pids+=($!)
    wait_port "$3"
}

start_flakeid "$bin" 18280 19290
flakeid_pid=${pids[-1]}
taskset -c 0 ferroid-tonic-server --num-workers 1 --server-addr 127.0.0.1:50151 >/dev/null 2>&1 &
pids+=($!)
ferroid_pid=$!
wait_port 50151
if [ -n "$baseline" ]; then
    start_flakeid "$baseline" 18281 19291
    baseline_pid=${pids[-1]}
fi

echo "Snowflake layout, one node: cap 4,096,000 IDs/s. $secs s a row; servers on core 0, load on core 1."
echo
echo "| what | IDs/s | share of the cap | server CPU per ID |"
echo "|---|---|---|---|"
for round in 1 2; do
    row "flakeid gRPC Stream (4,096 a message, 4 streams), round $round" "$flakeid_pid" \
        taskset -c 1 "$load" http://127.0.0.1:19290 stream 4096 4 "$secs"
    ours=$last_rate
    row "ferroid-tonic-server StreamIds (4,096 a chunk, 4 streams), round $round" "$ferroid_pid" \
        taskset -c 1 "$load" http://127.0.0.1:50151 ferroid 4096 4 "$secs"
    awk -v a="$ours" -v b="$last_rate" -v r="$round" \
        'BEGIN { printf "| flakeid / ferroid-tonic-server IDs/s, round %s | **%.2fx** | | |\n", r, a / b }'
    if [ -n "$baseline" ]; then
        row "baseline flakeid gRPC Stream, round $round" "$baseline_pid" \
            taskset -c 1 "$load" http://127.0.0.1:19291 stream 4096 4 "$secs"
    fi
    oha_row "flakeid GET /v1/ids?count=100000, packed, 4 connections, round $round" "$flakeid_pid" \
        'http://127.0.0.1:18280/v1/ids?count=100000' application/octet-stream 100000
    oha_row "flakeid GET /v1/ids?count=100000, JSON, 4 connections, round $round" "$flakeid_pid" \
        'http://127.0.0.1:18280/v1/ids?count=100000' application/json 100000
    if [ -n "$baseline" ]; then
        oha_row "baseline GET /v1/ids?count=100000, packed, round $round" "$baseline_pid" \
            'http://127.0.0.1:18281/v1/ids?count=100000' application/octet-stream 100000
    fi
done
