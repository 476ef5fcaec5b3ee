#!/usr/bin/env python3
"""Turns the criterion results of `cargo bench --bench mint` (and the table written by
`cargo bench --bench sustained`) into the tables of BENCHMARKS.md and an SVG chart.

Usage: python3 scripts/bench_report.py > /tmp/tables.md   (writes docs/mint.svg too)
Needs only the Python standard library.
"""
import json
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Where cargo put its output: $CARGO_TARGET_DIR (relative to the repository, as cargo reads
# it when run from there) or target/.
TARGET = ROOT / os.environ.get("CARGO_TARGET_DIR", "target")
CRITERION = TARGET / "criterion"


def load():
    """{group: {function: ns per ID}} from every criterion benchmark.json."""
    groups = {}
    for bench in CRITERION.glob("**/new/benchmark.json"):
        meta = json.loads(bench.read_text())
        est = json.loads((bench.parent / "estimates.json").read_text())
        ns = est["mean"]["point_estimate"]
        throughput = meta.get("throughput") or {}
        elements = throughput.get("Elements") or 1
        name = meta.get("function_id") or meta.get("value_str")
        groups.setdefault(meta["group_id"], {})[name] = ns / elements
    return groups


def fmt(ns):
    return f"{ns:.2f}" if ns < 100 else f"{ns:.0f}"


def table(groups, group, ours, peers):
    rows = groups.get(group)
    if not rows:
        return ""
    peers = [p for p in peers if p in rows]
    head = "| bench | ns per ID | " + " | ".join(f"ratio to {p}" for p in peers) + " |\n"
    head += "|---|---|" + "---|" * len(peers) + "\n"
    body = ""
    for name, ns in sorted(rows.items(), key=lambda kv: kv[1]):
        mark = f"**{name}**" if name.startswith(ours) else name
        ratios = " | ".join(f"{ns / rows[p]:.2f}x" for p in peers)
        body += f"| {mark} | {fmt(ns)} | {ratios} |\n"
    return f"### {group}\n\n" + head + body + "\n"


def svg(groups, out):
    """Horizontal bars, ns per ID on a log scale, one panel per group."""
    import math

    panels = [g for g in ["hot_path", "batch_4096", "contention/1", "contention/2", "contention/4"] if g in groups]
    width, label_w, bar_w, row_h, gap = 900, 330, 480, 18, 34
    height = sum(len(groups[g]) * row_h + gap for g in panels) + 40
    lo = math.log10(0.1)
    hi = math.log10(max(v for g in panels for v in groups[g].values()) * 2)
    x = lambda ns: label_w + bar_w * (math.log10(max(ns, 0.1)) - lo) / (hi - lo)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="10" y="20" font-size="15" font-weight="bold">flakeid vs peers: ns per ID (log scale, shorter is faster)</text>',
    ]
    y = 40
    for g in panels:
        parts.append(f'<text x="10" y="{y + 12}" font-weight="bold">{g}</text>')
        y += gap - 16
        for name, ns in sorted(groups[g].items(), key=lambda kv: kv[1]):
            ours = name.startswith("flakeid")
            color = "#d9480f" if ours else "#868e96"
            parts.append(f'<text x="{label_w - 6}" y="{y + 12}" text-anchor="end">{name}</text>')
            parts.append(f'<rect x="{label_w}" y="{y + 2}" width="{max(x(ns) - label_w, 1):.1f}" height="{row_h - 4}" fill="{color}"/>')
            parts.append(f'<text x="{x(ns) + 4:.1f}" y="{y + 12}">{fmt(ns)}</text>')
            y += row_h
        y += 16
    for tick in [0.1, 1, 10, 100, 1000, 10000]:
        if math.log10(tick) <= hi:
            parts.append(f'<line x1="{x(tick):.1f}" y1="30" x2="{x(tick):.1f}" y2="{height - 10}" stroke="#dee2e6" stroke-dasharray="2,3"/>')
            parts.append(f'<text x="{x(tick):.1f}" y="{height - 2}" text-anchor="middle" fill="#495057">{tick:g} ns</text>')
    parts.append("</svg>")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(parts) + "\n")


def main():
    groups = load()
    if not groups:
        sys.exit(f"no criterion results under {CRITERION}: run `cargo bench --bench mint` first")
    out = ""
    out += table(groups, "clock", "flakeid", ["quanta raw (flakeid MonotonicClock)"])
    out += table(groups, "hot_path", "flakeid", ["ferroid Atomic", "ferroid Basic (not Sync)", "snowflake_me"])
    out += table(groups, "batch_4096", "flakeid", ["snowflake_me next_ids_into"])
    for t in (1, 2, 4):
        out += table(groups, f"contention/{t}", "flakeid", ["ferroid Atomic", "snowflake_me"])
    sustained = TARGET / "sustained.md"
    if sustained.exists():
        out += "### sustained (real layouts)\n\n" + sustained.read_text() + "\n"
    print(out, end="")
    svg(groups, ROOT / "docs" / "mint.svg")
    print("wrote docs/mint.svg", file=sys.stderr)


if __name__ == "__main__":
    main()
