#!/usr/bin/env bash
# Instructions a request of `flakeid serve` (every production layer on: request ids,
# metrics, the deadline, the size checks, the panic guard, the connection's watches)
# against the HTTP stack's floor, a minimal axum server (serve/examples/minimal_axum.rs),
# counted by callgrind: figures that do not vary with the machine's load.
#
# Each server runs under callgrind with collection off; after WARM requests (4 kept-alive
# connections) collection is switched on for N more, then off, and the count of every
# thread of the process is divided by N. Needs valgrind and oha (`cargo install oha`).
# With BEFORE=path/to/an/older/flakeid (a profiling build), it is counted too.
# Usage: [BEFORE=...] scripts/serve_instructions.sh [N] [WARM] [PATH]   (5000, 2000, /v1/id)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-5000}
warm=${2:-2000}
path=${3:-/v1/id}
for tool in valgrind callgrind_control oha curl; do
    command -v "$tool" >/dev/null || { echo "serve_instructions.sh: needs $tool" >&2; exit 1; }
done
cargo build --profile profiling -q -p flakeid-cli
cargo build --profile profiling -q -p flakeid-serve --example minimal_axum
dir=${CARGO_TARGET_DIR:-target}/profiling
out=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$out"' EXIT

# Instructions a request of one server: `count NAME PORT COMMAND...`.
count() {
    local name=$1 port=$2
    shift 2
    rm -f "$out"/cg.*
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/cg.$name.%p" \
        "$@" >"$out/$name.log" 2>&1 &
    pid=$!
    # Under callgrind a server starts in seconds, not milliseconds: wait for it to answer.
    local up=
    for _ in $(seq 600); do
        if curl -sf "http://127.0.0.1:$port/healthz" >/dev/null; then up=1; break; fi
        sleep 0.1
    done
    [ -n "$up" ] || { cat "$out/$name.log" >&2; echo "$name did not answer" >&2; exit 1; }
    oha -n "$warm" -c 4 --no-tui "http://127.0.0.1:$port$path" >/dev/null
    callgrind_control -i on "$pid" >/dev/null 2>&1
    oha -n "$n" -c 4 --no-tui "http://127.0.0.1:$port$path" | grep -E "Success rate" >&2 || true
    callgrind_control -i off "$pid" >/dev/null 2>&1
    callgrind_control -d "$pid" >/dev/null 2>&1
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    pid=
    # Every dump of every thread: the counts between the two switches.
    cat "$out"/cg."$name".* | awk '/^(summary|totals):/ { s += $2 } END { printf "%.0f", s }'
}

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(rustc --version); $(valgrind --version)"
echo "GET $path: $n requests on 4 kept-alive connections after $warm to warm up"
flakeid=$(count flakeid 18301 "$dir/flakeid" serve --node 1 --shards 1 --listen 127.0.0.1:18301)
axum=$(count axum 18302 "$dir/examples/minimal_axum" 127.0.0.1:18302)
old=0
if [ -n "${BEFORE:-}" ]; then
    old=$(count before 18303 "$BEFORE" serve --node 1 --shards 1 --listen 127.0.0.1:18303)
fi
awk -v f="$flakeid" -v a="$axum" -v b="$old" -v n="$n" 'BEGIN {
    printf "%-28s %12s\n", "server", "instr/request"
    if (b > 0) printf "%-28s %12.0f  (%.2fx axum)\n", "flakeid serve, before", b / n, b / a
    printf "%-28s %12.0f\n", "flakeid serve", f / n
    printf "%-28s %12.0f\n", "minimal axum (the floor)", a / n
    printf "%-28s %11.2fx\n", "flakeid / axum", f / a
}'
