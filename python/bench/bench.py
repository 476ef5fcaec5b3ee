"""flakeid for Python, against what Python users do today, in one run on one machine.

  python bench.py [--ids 10000000] [--serve URL --grpc HOST:PORT]

1. Decoding 10M IDs into columns with a datetime column: flakeid's SIMD decoder vs the
   hand-written numpy decode of the same array.
2. The realistic path: a 1M-row CSV of IDs read by pandas, decoded, joined back: flakeid vs
   numpy by hand vs `flakeid decode --format csv | pandas.read_csv` vs `flakeid decode
   --column id`.
3. Minting: a loop of next_id() and next_ids(1_000_000) vs sonyflake-turbo,
   snowflake-id-toolkit and snowflake-id (whichever are installed), at Twitter's layout
   (against its 4.1M/s limit) and where no generator meets its layout's limit (call cost).
4. In process vs a call to `flakeid serve` over HTTP (requests, httpx) and gRPC (grpcio),
   when --serve/--grpc are given.

Each figure is the best of 5 runs (3 for the slow ones); ratios against flakeid.
"""

import argparse
import io
import os
import platform
import shutil
import subprocess
import sys
import time

import numpy as np
import pandas as pd

import flakeid_rs


def best(f, runs=5):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def numpy_decode(ids, epoch_ms):
    """Twitter Snowflake by hand, as a data user writes it: one pass per field."""
    ticks = ids >> np.uint64(22)
    unix_ms = (ticks + np.uint64(epoch_ms)).astype(np.int64)
    return {
        "time": unix_ms.view("datetime64[ms]"),
        "unix_ms": unix_ms,
        "ticks": ticks,
        "sequence": (ids & np.uint64(0xFFF)).astype(np.uint32),
        "node": ((ids >> np.uint64(12)) & np.uint64(0x3FF)).astype(np.uint32),
        "datacenter": ((ids >> np.uint64(17)) & np.uint64(0x1F)).astype(np.uint32),
        "worker": ((ids >> np.uint64(12)) & np.uint64(0x1F)).astype(np.uint32),
    }


def machine():
    cpu = platform.processor() or ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs, {cpu}, Python {platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}"


def decode_columns(n):
    twitter = flakeid_rs.Layout.snowflake()
    rng = np.random.default_rng(1)
    ids = rng.integers(0, twitter.max_id, size=n, dtype=np.uint64, endpoint=True)
    ours = twitter.decode(ids)
    theirs = numpy_decode(ids, twitter.epoch_unix_ms)
    for k in theirs:
        assert (ours[k] == theirs[k]).all(), k
    a = best(lambda: twitter.decode(ids))
    b = best(lambda: numpy_decode(ids, twitter.epoch_unix_ms))
    print(f"decode {n:,} IDs into 7 columns: flakeid {a * 1e3:.1f} ms, numpy by hand {b * 1e3:.1f} ms: numpy / flakeid {b / a:.2f}x")


def csv_path(tool):
    twitter = flakeid_rs.Layout.snowflake()
    g = flakeid_rs.Generator(twitter, node=5)
    ids = g.next_ids(1_000_000)
    table = pd.DataFrame({"user": np.arange(len(ids)) % 977, "id": ids})
    text = table.to_csv(index=False)

    def ours():
        df = pd.read_csv(io.StringIO(text), dtype={"id": np.uint64})
        cols = twitter.decode(df["id"].to_numpy())
        return df.assign(**cols)

    def by_hand():
        df = pd.read_csv(io.StringIO(text), dtype={"id": np.uint64})
        return df.assign(**numpy_decode(df["id"].to_numpy(), twitter.epoch_unix_ms))

    def pipe():
        df = pd.read_csv(io.StringIO(text), dtype={"id": np.uint64})
        out = subprocess.run([tool, "decode", "--format", "csv"], input="\n".join(map(str, df["id"])).encode(), capture_output=True, check=True).stdout
        decoded = pd.read_csv(io.BytesIO(out), dtype={"id": np.uint64}, parse_dates=["time"])
        return df.join(decoded.drop(columns=["id"]))

    def column():
        out = subprocess.run([tool, "decode", "--column", "id"], input=text.encode(), capture_output=True, check=True).stdout
        return pd.read_csv(io.BytesIO(out), dtype={"id": np.uint64}, parse_dates=["time"])

    a = best(ours, 3)
    b = best(by_hand, 3)
    print(f"1M-row CSV read by pandas, decoded, joined: flakeid {a:.3f} s, numpy by hand {b:.3f} s ({b / a:.2f}x)", end="")
    if tool:
        c = best(pipe, 3)
        d = best(column, 3)
        print(f", flakeid decode | read_csv {c:.3f} s ({c / a:.2f}x), flakeid decode --column id | read_csv {d:.3f} s ({d / a:.2f}x)")
    else:
        print()


def minting():
    """Two views. At Twitter's layout (4,096 IDs per ms per node) every generator that
    keeps to it is capped at 4.1M IDs/s, so the first rows say how close each comes to its
    layout's limit. The second rows measure the cost of a call: flakeid on a layout with
    20 sequence bits (1G IDs/s per node) and sonyflake-turbo with all 65,536 machine ids,
    so that neither meets its cap."""
    n = 1_000_000

    def loop(f):
        return lambda: [f() for _ in range(n)]

    def report(name, t, limit=None):
        rate = n / t
        cap = f", {rate / limit:.0%} of its layout's {limit / 1e6:.1f}M/s" if limit else ""
        print(f"mint 1M: {name}: {t:.3f} s, {rate / 1e6:.2f} M IDs/s{cap}")
        return rate

    twitter = flakeid_rs.Layout.snowflake()
    g = flakeid_rs.Generator(twitter, node=5)
    limit = twitter.ids_per_second_per_node
    report("flakeid Twitter next_id() loop", best(loop(g.next_id), 3), limit)
    report("flakeid Twitter next_ids(1M)", best(lambda: g.next_ids(n), 3), limit)
    peers = []
    try:
        import snowflake_id_toolkit as toolkit

        tg = toolkit.TwitterSnowflakeIDGenerator(node_id=5)
        peers.append(report("snowflake-id-toolkit Twitter generate_next_id() loop", best(loop(tg.generate_next_id), 3), limit))
    except ImportError:
        pass
    try:
        import snowflake

        sg = snowflake.SnowflakeGenerator(5)
        peers.append(report("snowflake-id Twitter next() loop", best(loop(lambda: next(sg)), 3), limit))
    except ImportError:
        pass
    wide = flakeid_rs.Layout("time=41,seq=20,node=2")
    w = flakeid_rs.Generator(wide, node=1)
    ours_loop = report("flakeid seq=20 next_id() loop (call cost)", best(loop(w.next_id), 5))
    ours_batch = report("flakeid seq=20 next_ids(1M) (call cost)", best(lambda: w.next_ids(n), 5))
    try:
        import sonyflake_turbo

        sf = sonyflake_turbo.SonyFlake(*range(65536))
        peers.append(report("sonyflake-turbo next() loop, 65,536 machine ids (call cost)", best(loop(lambda: next(sf)), 5)))
        turbo_batch = report("sonyflake-turbo sf(1M) batch, 65,536 machine ids (call cost)", best(lambda: sf(n), 5))
        print(f"  flakeid batch / sonyflake-turbo batch {ours_batch / turbo_batch:.1f}x")
    except ImportError:
        pass
    if peers:
        fastest = max(peers)
        print(f"  flakeid loop / fastest peer loop {ours_loop / fastest:.2f}x; flakeid batch / fastest peer loop {ours_batch / fastest:.0f}x")


def served(http, grpc_target):
    g = flakeid_rs.Generator(flakeid_rs.Layout.snowflake(), node=5)
    n = 1000
    inproc = best(lambda: [g.next_id() for _ in range(n)], 3)
    print(f"1,000 single IDs: in process {inproc * 1e3:.2f} ms", end="")
    try:
        import requests

        s = requests.Session()
        t = best(lambda: [s.get(http + "/v1/id").json() for _ in range(n)], 3)
        print(f", HTTP (requests, kept alive) {t * 1e3:.0f} ms ({t / inproc:.0f}x)", end="")
    except ImportError:
        pass
    try:
        import httpx

        c = httpx.Client()
        t = best(lambda: [c.get(http + "/v1/id").json() for _ in range(n)], 3)
        print(f", HTTP (httpx) {t * 1e3:.0f} ms ({t / inproc:.0f}x)", end="")
    except ImportError:
        pass
    if grpc_target:
        try:
            import grpc
            from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase
            from google.protobuf.descriptor_pool import DescriptorPool
            from google.protobuf.message_factory import GetMessageClass

            channel = grpc.insecure_channel(grpc_target)
            pool = DescriptorPool(ProtoReflectionDescriptorDatabase(channel))
            req = GetMessageClass(pool.FindMessageTypeByName("flakeid.v1.NextRequest"))
            resp = GetMessageClass(pool.FindMessageTypeByName("flakeid.v1.NextResponse"))
            call = channel.unary_unary("/flakeid.v1.IdService/Next", request_serializer=req.SerializeToString, response_deserializer=resp.FromString)
            t = best(lambda: [call(req(count=1)) for _ in range(n)], 3)
            print(f", gRPC (grpcio) {t * 1e3:.0f} ms ({t / inproc:.0f}x)", end="")
        except ImportError:
            pass
    print()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ids", type=int, default=10_000_000)
    p.add_argument("--tool", default=shutil.which("flakeid"))
    p.add_argument("--serve")
    p.add_argument("--grpc")
    a = p.parse_args()
    print(f"machine: {machine()}; flakeid {flakeid_rs.__version__}")
    decode_columns(a.ids)
    csv_path(a.tool)
    minting()
    if a.serve:
        served(a.serve, a.grpc)


if __name__ == "__main__":
    main()
