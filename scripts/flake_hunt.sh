#!/usr/bin/env bash
# Runs every test binary (all features) ROUNDS times, optionally with LOAD busy processes
# competing for the cores, and saves the output of each failure in
# ${CARGO_TARGET_DIR:-target}/flake-hunt/.
# A test that fails here only under load is timing-sensitive: fix the test or the code,
# never the bound alone.
#
#   scripts/flake_hunt.sh [ROUNDS=10] [LOAD=0]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-10}
load=${2:-0}
out=${CARGO_TARGET_DIR:-target}/flake-hunt
mkdir -p "$out"
mapfile -t bins < <(cargo test --all-features --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("profile", {}).get("test") and m.get("executable"):
        print(m["executable"])')
pids=()
for _ in $(seq 1 "$load"); do
    (while :; do :; done) &
    pids+=($!)
done
trap '[ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null' EXIT
failures=0
for round in $(seq 1 "$rounds"); do
    for bin in "${bins[@]}"; do
        name=$(basename "$bin")
        if ! "$bin" -q >"$out/last.txt" 2>&1; then
            failures=$((failures + 1))
            cp "$out/last.txt" "$out/$name.round$round.txt"
            echo "FAIL $name (round $round): $out/$name.round$round.txt"
        fi
    done
    echo "round $round/$rounds done, $failures failures"
done
[ "$failures" -eq 0 ]
