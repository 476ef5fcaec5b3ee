#!/usr/bin/env bash
# Instructions per ID for each minting and decoding path, next to ferroid's and a bare
# atomic: figures that do not depend on the CPU's speed or the machine's load (callgrind
# counts instructions, not time), so they compare from one machine to the next.
#
# Each path (examples/instructions.rs) runs under callgrind, which counts only inside the
# example's `counted*` loops (--toggle-collect): not setup, not the checks, not the quanta
# calibration, not the CoarseClock's background thread. Two runs, N and 3N calls;
# instructions per ID = (count at 3N - count at N) / 2N, so the loop's entry costs nothing.
# Needs valgrind. Usage: scripts/instructions.sh [N] [path...]   (N defaults to 1,000,000;
# the paths default to all; `cargo run --release --example instructions -- list` names them)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
shift || true
command -v valgrind >/dev/null || { echo "instructions.sh: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
cargo build --profile profiling -q --example instructions
bin=${CARGO_TARGET_DIR:-target}/profiling/examples/instructions
paths=("$@")
if [ ${#paths[@]} -eq 0 ]; then
    mapfile -t paths < <("$bin" list | cut -f1)
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The main thread's instruction total of one run of `path count`.
count() {
    rm -f "$out"/cg.*
    valgrind --tool=callgrind --separate-threads=yes --toggle-collect="*counted*" --callgrind-out-file="$out/cg.%p" \
        "$bin" "$1" "$2" >/dev/null 2>"$out/log" || { cat "$out/log" >&2; exit 1; }
    # Thread 1 is the main thread; its file ends in -01.
    grep -h '^summary:\|^totals:' "$out"/cg.*-01 | head -1 | awk '{print $2}'
}
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(rustc --version); $(valgrind --version)"
printf '%-16s %12s  %s\n' path "instr/ID" what
declare -A per
for path in "${paths[@]}"; do
    a=$(count "$path" "$n")
    b=$(count "$path" $((3 * n)))
    per[$path]=$(awk -v a="$a" -v b="$b" -v n="$n" 'BEGIN { printf "%.1f", (b - a) / (2 * n) }')
    printf '%-16s %12s  %s\n' "$path" "${per[$path]}" "$("$bin" list | awk -F'\t' -v p="$path" '$1 == p { print $2 }')"
done
