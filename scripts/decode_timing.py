#!/usr/bin/env python3
"""Whole-process timing of `flakeid decode` (issue 17): N Snowflake IDs (default 5 M), read
from a file, written to /dev/null, in each output format; best of R runs (default 3).

    python3 scripts/decode_timing.py [--old PATH_TO_OLD_FLAKEID] [--n 5000000] [--runs 3]

Builds this tree's release binary. With --old it times that binary too (the same input, the
formats it has) and prints new/old ratios. `cat` of the JSON output is the floor of
moving the bytes; `gen` of the same IDs is the formatting speed of the minting side."""
import argparse
import os
import subprocess
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--old")
ap.add_argument("--n", type=int, default=5_000_000)
ap.add_argument("--runs", type=int, default=3)
a = ap.parse_args()

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=root, check=True)
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
    for name, cmd, stdin, old_args in rows:
        t = best(cmd, stdin)
        line = f"{name:45} {t:7.3f} s  {a.n / t / 1e6:6.1f} M lines/s"
        if a.old and old_args is not None:
            o = best([a.old] + old_args, stdin)
            line += f"   old {o:7.3f} s   new/old {t / o:5.3f}x ({o / t:4.1f}x faster)"
        print(line)
