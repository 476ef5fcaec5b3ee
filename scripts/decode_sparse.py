#!/usr/bin/env python3
"""CPU time of `flakeid decode` on dense and on sparse IDs (issue 44), beside numpy's parse of
the same text.

Dense: N Snowflake IDs minted at the cap (4,096 a tick, so runs of IDs share a tick and
its text). Sparse: N IDs of the same layout, each with a random tick in one year, a random
sequence and node (real-world columns: IDs minted now and then, across a fleet). For each
input and each format (json, table, csv) the best of R runs of the tool's CPU time (user +
system, from the child's rusage) is printed, then sparse/dense, then the tool's CPU on the
sparse input over numpy's CPU to only parse it (`np.fromstring(text, sep="\\n")`, then the
three shifts: what a data person would write).

    python3 scripts/decode_sparse.py [--n 5000000] [--runs 3] [--old PATH_TO_OLD_FLAKEID]

Needs numpy in the python running it (a venv: `pip install numpy`). Builds this tree's
release binary; with --old, times that binary too (dense and sparse) and prints new/old."""
import argparse
import os
import random
import resource
import subprocess
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=5_000_000)
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--old")
a = ap.parse_args()

try:
    import numpy as np
except ImportError:
    raise SystemExit("decode_sparse.py: needs numpy: python3 -m venv v && v/bin/pip install numpy && v/bin/python scripts/decode_sparse.py")

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "flakeid-cli"], cwd=root, check=True)
new = os.path.join(root, "target", "release", "flakeid")


def child_cpu(cmd, stdin_path):
    """The best CPU seconds (user + system) of `cmd` over the runs, output to /dev/null."""
    best = None
    for _ in range(a.runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(stdin_path, "rb") as f, open(os.devnull, "wb") as out:
            subprocess.run(cmd, stdin=f, stdout=out, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = cpu if best is None else min(best, cpu)
    return best


def numpy_cpu(path):
    """The best CPU seconds numpy takes to read the file's IDs and split them in fields."""
    best = None
    for _ in range(a.runs):
        t = time.process_time()
        with open(path, "rb") as f:
            text = f.read()
        ids = np.fromstring(text, dtype=np.uint64, sep="\n")
        _ticks, _node, _seq = ids >> np.uint64(22), (ids >> np.uint64(12)) & np.uint64(1023), ids & np.uint64(4095)
        cpu = time.process_time() - t
        assert len(ids) == a.n, len(ids)
        best = cpu if best is None else min(best, cpu)
    return best


import warnings

warnings.filterwarnings("ignore", category=DeprecationWarning)

with tempfile.TemporaryDirectory() as tmp:
    dense = os.path.join(tmp, "dense")
    with open(dense, "wb") as out:
        subprocess.run([new, "gen", "-n", str(a.n), "--datacenter", "1", "--worker", "2"], stdout=out, check=True)
    sparse = os.path.join(tmp, "sparse")
    rng = np.random.default_rng(44)
    now_ticks = int(time.time() * 1000) - 1_288_834_974_657
    year = 365 * 86_400_000
    ticks = rng.integers(now_ticks - year, now_ticks, a.n, dtype=np.uint64)
    ids = (ticks << np.uint64(22)) | (rng.integers(0, 1024, a.n, dtype=np.uint64) << np.uint64(12)) | rng.integers(0, 4096, a.n, dtype=np.uint64)
    with open(sparse, "wb") as out:
        out.write(("\n".join(map(str, ids.tolist())) + "\n").encode())
    cpu = os.popen("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").read().strip()
    print(f"machine: {os.cpu_count()} CPUs, {cpu}; {a.n} IDs; best of {a.runs}; CPU seconds (user + system)")
    np_dense, np_sparse = numpy_cpu(dense), numpy_cpu(sparse)
    print(f"{'numpy fromstring + 3 shifts':32} dense {np_dense:6.3f}  sparse {np_sparse:6.3f}")
    for fmt in ["json", "table", "csv"]:
        cmd = [new, "decode", "--format", fmt]
        d, s = child_cpu(cmd, dense), child_cpu(cmd, sparse)
        line = f"{'decode --format ' + fmt:32} dense {d:6.3f}  sparse {s:6.3f}  sparse/dense {s / d:5.2f}x  sparse/numpy {s / np_sparse:5.2f}x"
        if a.old:
            od = child_cpu([a.old, "decode", "--format", fmt], dense)
            o = child_cpu([a.old, "decode", "--format", fmt], sparse)
            line += f"  old dense {od:6.3f} sparse {o:6.3f} (new/old {d / od:5.3f}x; {s / o:5.3f}x)"
        print(line)
