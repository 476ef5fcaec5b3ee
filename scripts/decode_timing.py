#!/usr/bin/env python3
"""Whole-process timing of `flakeid decode` (issue 17): N Snowflake IDs (default 5 M), read
from a file, written to /dev/null, in each output format; best of R runs (default 3). Beside
it, two Python loops over the same file (this machine's `python3`): a naive decoder whose
output is byte for byte the tool's `--json` (checked on the first 100,000 lines), and the
least a Python loop can do per line (parse, three fields, write); the tool's JSON time is
printed as a fraction of each.

    python3 scripts/decode_timing.py [--old PATH_TO_OLD_FLAKEID] [--n 5000000] [--runs 3]

Builds this tree's release binary. With --old it times that binary too (the same input, the
formats it has) and prints new/old ratios. `cat` of the JSON output is the floor of
moving the bytes; `gen` of the same IDs is the formatting speed of the minting side."""
import argparse
import os
import subprocess
import tempfile
import time

NAIVE = """import datetime, json, sys
EPOCH_MS = 1288834974657
UTC = datetime.timezone.utc
write = sys.stdout.write
for line in sys.stdin:
    i = int(line)
    ticks = i >> 22
    ms = ticks + EPOCH_MS
    node = (i >> 12) & 1023
    t = datetime.datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")
    write(json.dumps({"id": str(i), "ticks": ticks, "unix_ms": ms, "time": t[:-6] + "Z",
                      "sequence": i & 4095, "node": node, "datacenter": node >> 5,
                      "worker": node & 31}, separators=(",", ":")) + "\\n")
"""

MINIMAL = """import sys
write = sys.stdout.write
for line in sys.stdin:
    i = int(line)
    write(f"{i >> 22} {(i >> 12) & 1023} {i & 4095}\\n")
"""

ap = argparse.ArgumentParser()
ap.add_argument("--old")
ap.add_argument("--n", type=int, default=5_000_000)
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--no-python", action="store_true", help="skip the Python loops (they take a while)")
a = ap.parse_args()

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "flakeid-cli"], cwd=root, check=True)
new = os.path.join(root, "target", "release", "flakeid")


def best(cmd, stdin_path):
    times = []
    for _ in range(a.runs):
        with open(stdin_path, "rb") as f, open(os.devnull, "wb") as out:
            t = time.perf_counter()
            subprocess.run(cmd, stdin=f, stdout=out, check=True)
            times.append(time.perf_counter() - t)
    return min(times)


with tempfile.TemporaryDirectory() as tmp:
    ids = os.path.join(tmp, "ids")
    with open(ids, "wb") as out:
        subprocess.run([new, "gen", "-n", str(a.n), "--datacenter", "1", "--worker", "2"], stdout=out, check=True)
    json_out = os.path.join(tmp, "json")
    with open(ids, "rb") as f, open(json_out, "wb") as out:
        subprocess.run([new, "decode", "--format", "json"], stdin=f, stdout=out, check=True)
    empty = os.path.join(tmp, "empty")
    open(empty, "wb").close()
    print(f"{a.n} IDs, {os.path.getsize(json_out) / 1e6:.0f} MB of JSON; best of {a.runs}")
    rows = [
        ("gen -n N, wide layout (the minting side)", [new, "gen", "-n", str(a.n), "--node", "1", "--layout", "seq=22,node=4,epoch=2025-01-01T00:00:00Z"], empty, None),
        ("cat of the JSON output", ["cat", json_out], empty, None),
    ]
    for fmt, old_args in [("json", ["decode", "--json"]), ("table", ["decode"]), ("csv", None)]:
        rows.append((f"decode --format {fmt}", [new, "decode", "--format", fmt], ids, old_args))
    times = {}
    for name, cmd, stdin, old_args in rows:
        t = best(cmd, stdin)
        times[name] = t
        line = f"{name:45} {t:7.3f} s  {a.n / t / 1e6:6.1f} M lines/s"
        if a.old and old_args is not None:
            o = best([a.old] + old_args, stdin)
            line += f"   old {o:7.3f} s   new/old {t / o:5.3f}x ({o / t:4.1f}x faster)"
        print(line)
    if not a.no_python:
        # The naive loop writes what `decode --format json` writes, for the Snowflake layout.
        naive = os.path.join(tmp, "naive.py")
        with open(naive, "w") as f:
            f.write(NAIVE)
        minimal = os.path.join(tmp, "minimal.py")
        with open(minimal, "w") as f:
            f.write(MINIMAL)
        head = os.path.join(tmp, "head")
        with open(ids, "rb") as f, open(head, "wb") as out:
            out.writelines(line for _, line in zip(range(100_000), f))
        ours = subprocess.run([new, "decode", "--format", "json"], stdin=open(head, "rb"), capture_output=True, check=True).stdout
        theirs = subprocess.run(["python3", naive], stdin=open(head, "rb"), capture_output=True, check=True).stdout
        assert ours == theirs, "the naive loop must write the tool's JSON"
        tool = times["decode --format json"]
        for name, script in [("naive Python loop, the same JSON", naive), ("minimal Python loop (int, 3 fields, write)", minimal)]:
            t = best(["python3", script], ids)
            print(f"{name:45} {t:7.3f} s  {a.n / t / 1e6:6.1f} M lines/s   decode --json / this {tool / t:6.4f}x")
