#!/usr/bin/env python3
"""The headline table of BENCHMARKS.md from the criterion results `scripts/headline.sh`
leaves: flakeid beside its peers and the limits, as ratios, with the machine named.

Usage: python3 scripts/headline.py [--write]   (standard library only)
"""
import datetime
import json
import os
import pathlib
import platform
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CRITERION = ROOT / os.environ.get("CARGO_TARGET_DIR", "target") / "criterion"
START, END = "<!-- headline:start -->", "<!-- headline:end -->"
# Twitter's layout: 4,096 IDs a millisecond per node.
CAP_NS = 1e6 / 4096


def load():
    """{(group, function): ns per element} from every criterion result."""
    out = {}
    for bench in CRITERION.glob("**/new/benchmark.json"):
        meta = json.loads(bench.read_text())
        est = json.loads((bench.parent / "estimates.json").read_text())
        elements = (meta.get("throughput") or {}).get("Elements") or 1
        name = meta.get("function_id") or ""
        if meta.get("value_str"):
            name = f"{name}/{meta['value_str']}" if name else meta["value_str"]
        out[(meta["group_id"], name)] = est["median"]["point_estimate"] / elements
    return out


def machine():
    model = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    rustc = subprocess.run(["rustc", "-V"], capture_output=True, text=True).stdout.strip()
    return f"{os.cpu_count()} vCPU {model}, Linux {platform.release()}, {rustc}, release profile"


def fmt(ns):
    return f"{ns:.2f}" if ns < 10 else f"{ns:.1f}" if ns < 1000 else f"{ns:,.0f}"


def table(r):
    def get(group, name):
        v = r.get((group, name))
        if v is None:
            sys.exit(f"no result for {group}/{name}: run scripts/headline.sh")
        return v

    rows = []

    def section(title, group, pairs):
        """A heading, then each (bench name, label) of `group` against the first."""
        ours = get(group, pairs[0][0])
        rows.append((title, None, None))
        for name, label in pairs:
            rows.append((label, get(group, name), get(group, name) / ours))
        return ours

    hot = "hot_path"
    ours = section("**Mint one ID** (one thread, a layout whose sequence never runs out)", hot, [
        ("flakeid next_id (default: builder(layout).build())", "**flakeid** `next_id`"),
        ("flakeid leased shard next_id", "**flakeid** leased shard `next_id` (not shared)"),
        ("ferroid Atomic", "ferroid `AtomicSnowflakeGenerator`"),
        ("ferroid Basic (not Sync)", "ferroid `BasicSnowflakeGenerator` (not shared)"),
        ("snowflake_me", "snowflake_me"),
        ("uuid now_v7 (fast-rng)", "uuid `now_v7` (128-bit)"),
        ("ulid generate", "ulid `generate` (128-bit)"),
        ("snowflaked (4096/ms cap)", "snowflaked (Twitter's layout: at its cap)"),
        ("sonyflake (256/10 ms cap)", "sonyflake (Sony's layout: at its cap)"),
    ])
    limit = get(hot, "reference: one AtomicU64::fetch_add")
    rows.append(("limit: one `AtomicU64::fetch_add`", limit, limit / ours))
    rows.append((f"cap: Twitter's layout, one node (4,096 a ms)", CAP_NS, CAP_NS / ours))

    section("**Mint 4,096 at once** (per ID)", "batch_4096", [
        ("flakeid next_ids", "**flakeid** `next_ids`"),
        ("snowflake_me next_ids_into", "snowflake_me `next_ids_into`"),
        ("reference: affine fill of the buffer", "limit: filling the buffer with `base + i`"),
    ])

    section("**Two threads, one generator** (per ID)", "contention/2", [
        ("flakeid shared next_id", "**flakeid** shared `next_id`"),
        ("flakeid sharded next_id (2 shards)", "**flakeid** `ShardedGenerator` (a node id a core)"),
        ("ferroid Atomic", "ferroid `AtomicSnowflakeGenerator`"),
        ("ferroid Lock", "ferroid `LockSnowflakeGenerator`"),
        ("snowflake_me", "snowflake_me"),
    ])

    dec = "decode/4Ki"
    batch_names = [n for (g, n) in r if g == dec and n.startswith("batch/")]
    best = min(batch_names, key=lambda n: r[(dec, n)])
    ours_d = r[(dec, best)]
    rows.append(("**Decode 4,096 IDs into four columns** (per ID)", None, None))
    rows.append((f"**flakeid** batch decoder ({best.split('/')[1]})", ours_d, 1.0))
    rows.append(("the per-ID loop every peer offers (`decompose` + time)", get(dec, "per_id_decompose"), get(dec, "per_id_decompose") / ours_d))
    copy = get(dec, "copy_reference")
    rows.append(("reference: the input copied into each column (the bytes written)", copy, copy / ours_d))

    lines = ["| | ns | x flakeid |", "|---|---|---|"]
    for label, ns, ratio in rows:
        if ns is None:
            lines.append(f"| {label} | | |")
        else:
            shown = f"{ratio:,.0f}x" if ratio >= 100 else f"{ratio:.2f}x"
            lines.append(f"| {label} | {fmt(ns)} | {shown} |")
    return "\n".join(lines)


def main():
    r = load()
    today = datetime.date.today().isoformat()
    text = "\n".join([
        START,
        f"One run of `scripts/headline.sh` on {today}: {machine()}.",
        "Each row is criterion's median, in nanoseconds per ID; `x flakeid` is that row's",
        "time over flakeid's in its block (below 1x is faster than flakeid). Every",
        "generator mints 64-bit IDs except",
        "uuid and ulid; all but snowflaked and sonyflake mint a layout whose sequence does",
        "not run out, so the code is measured, not the layout's cap.",
        "",
        table(r),
        "",
        END,
    ])
    if "--write" in sys.argv:
        path = ROOT / "BENCHMARKS.md"
        doc = path.read_text()
        if START in doc:
            doc = re.sub(re.escape(START) + ".*?" + re.escape(END), lambda _: text, doc, flags=re.S)
        else:
            sys.exit("BENCHMARKS.md has no headline markers")
        path.write_text(doc)
    print(text)


if __name__ == "__main__":
    main()
