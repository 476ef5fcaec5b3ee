#!/usr/bin/env python3
"""Writes the hand-made seed inputs of fuzz/corpus/ (the fuzzer's finds are added by
`cargo fuzz cmin`). Deterministic: run it again and nothing changes."""
import pathlib
import random
import struct

ROOT = pathlib.Path(__file__).resolve().parent.parent / "fuzz" / "corpus"


def put(target, name, data):
    d = ROOT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / f"seed-{name}").write_bytes(data)


def layout(time, seq, node, dc, order, unit_sel, unit_frac, epoch_ms):
    return bytes([time, seq, node, dc, order, unit_sel, unit_frac]) + struct.pack("<Q", epoch_ms)


def ids(*values):
    return b"".join(struct.pack("<Q", v) for v in values)


rng = random.Random(20261129)
snowflake = layout(41, 12, 10, 5, 0, 0, 0, 1288834974657)
sonyflake = layout(39, 8, 16, 0, 1, 9, 0, 1735689600000)
put("decode", "snowflake", snowflake + ids(2116500430648709162, 0, 1, (1 << 63) - 1, 1 << 63))
put("decode", "sonyflake", sonyflake + ids(*(rng.getrandbits(63) for _ in range(40))))
put("decode", "sonyflake-v1", layout(39, 8, 16, 0, 1, 9, 0, 1409529600000) + ids(*(rng.getrandbits(64) for _ in range(17))))
put("decode", "half-ms-unit", layout(40, 10, 6, 2, 0, 0, 2, 1700000000000) + ids(*(rng.getrandbits(56) for _ in range(33))))
put("decode", "no-node", layout(50, 13, 0, 0, 0, 3, 1, 0) + ids(*(rng.getrandbits(63) for _ in range(9))))
put("decode", "js-safe", layout(41, 8, 4, 0, 0, 0, 0, 1735689600000) + ids(*(rng.getrandbits(53) for _ in range(64))))
for i in range(6):
    put("decode", f"random-{i}", bytes(rng.getrandbits(8) for _ in range(15 + 8 * rng.randrange(0, 70))))

texts = [
    "2116500430648709162", "0", "9223372036854775807", "9223372036854775808", "18446744073709551616",
    "0x1d5f0c4a3f471c2a", "0X1D5F0C4A3F471C2A", "0x", "0x7fffffffffffffff", "0x8000000000000000",
    "1XQGJ4CZ4E2T2", "7ZZZZZZZZZZZZ", "8000000000000", "0000000000000", "ilo", "-1", "+5", " 42", "42 ",
    "time=41,seq=12,node=10,dc=5,unit=1ms,epoch=2010-11-04T01:42:54.657Z",
    "time=39,seq=8,node=16,order=tsn,unit=10ms,epoch=2025-01-01T00:00:00Z",
    "seq=22,node=4,epoch=2025-01-01T00:00:00Z", "time=64", "seq=,node=", "unit=0ms", "unit=1.5ms",
    "2026-10-31T12:00:00Z", "2026-10-31T12:00:00.123456789+05:30", "1969-12-31T23:59:59Z",
    "9999-12-31T23:59:59.999999999Z", "2026-02-30T00:00:00Z", "", "\u00e9\u00e9", "\xff",
    "18446744073709551615", "0xffffffffffffffff", "FZZZZZZZZZZZZ", "G000000000000", "9223372036854775809",
    "discord", "Instagram", "MASTODON", "twitter", "time=42,seq=12,node=10,dc=5,epoch=1420070400000",
    "time=48,seq=16,node=0", "seq=8,node=16,unit=10ms,epoch=1000003,grid=epoch", "grid=moon,seq=1,node=1",
]
for i, t in enumerate(texts):
    put("parse", f"{i:02}", t.encode("utf-8", "surrogatepass"))
put("parse", "not-utf8", b"\xff\xfe12")

for policy in range(3):
    for i in range(4):
        head = bytes([policy, i, i % 3, 5 - i, i % 3, 0, 0, rng.getrandbits(8), rng.getrandbits(8)])
        body = bytes(rng.getrandbits(8) for _ in range(2 * rng.randrange(8, 200)))
        put("generator", f"p{policy}-{i}", head + body)
# Mint flat out on a standing clock, then past the lifetime, then before the epoch.
put("generator", "exhaust", bytes([0, 2, 1, 3, 0, 0, 0, 3, 2]) + bytes([0, 0] * 12 + [8, 0] + [0, 0] * 3 + [8, 1] + [0, 0] * 3))
# 64-bit layouts: IDs at and past 2^63 (Discord after 2084, Instagram after 2046).
put("decode", "discord-64", layout(42, 12, 10, 5, 0, 0, 0, 1420070400000) + ids(175928847299117063, 1 << 63, (1 << 63) + 1, (1 << 64) - 1, *(rng.getrandbits(64) for _ in range(40))))
put("decode", "instagram-64", layout(41, 10, 13, 0, 0, 0, 0, 1314220021721) + ids(11637205501278089, 1 << 63, (1 << 64) - 1, *(rng.getrandbits(64) for _ in range(40))))
put("decode", "mastodon-64", layout(48, 16, 0, 0, 0, 0, 0, 0) + ids(103270115826048975, 1 << 63, (1 << 64) - 1, *(rng.getrandbits(64) for _ in range(40))))
put("decode", "tsn-64-epoch-grid", layout(40, 8, 16, 0, 3, 9, 0, 1735689600003) + ids(*(rng.getrandbits(64) for _ in range(40))))
# The epoch's grid (unit byte's top bit): 3 ms ticks from an epoch 2 ms off Unix's grid.
for policy in range(3):
    head = bytes([policy, 2, 1, 3, 0x82, 1, 0, 0, 2])
    body = bytes(rng.getrandbits(8) for _ in range(2 * rng.randrange(8, 200)))
    put("generator", f"epoch-grid-p{policy}", head + body)
