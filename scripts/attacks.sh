#!/usr/bin/env bash
# The attacks of issue 41 on `flakeid serve`, each with a legitimate client beside it
# (serve/examples/hold_attack.rs): HTTP/2 connections with a zero window (560 a second
# for 25 s, past the default cap of 10,000) against a client that connects anew for each
# request, and silent connections at the cap (--max-connections 300, 500 a second for
# 20 s) against a kept-alive client that pauses 1 s between requests. Prints the
# legitimate client's success rate, p99 and connections, and the server's resident
# memory.
#
#   scripts/attacks.sh [FLAKEID_BINARY]    (default: target/release/flakeid)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/flakeid}
cargo build --release -q -p flakeid-serve --example hold_attack
attack=target/release/examples/hold_attack
ulimit -n "$(ulimit -Hn)"
run() { # PORT SERVE-ARGS... -- ATTACK-ARGS...
    local port=$1; shift
    local args=()
    while [ "$1" != "--" ]; do args+=("$1"); shift; done
    shift
    "$bin" serve --node 1 --listen "127.0.0.1:$port" "${args[@]}" 2>/dev/null &
    local pid=$!
    for _ in $(seq 100); do
        curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
        sleep 0.1
    done
    "$attack" "127.0.0.1:$port" "$pid" "$@"
    kill "$pid"; wait "$pid" 2>/dev/null || true
}
echo "$bin on $(nproc) cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1))"
run 18431 -- zero-window 560 25 50 fresh
run 18432 --max-connections 300 -- silent 500 20 1000 kept
