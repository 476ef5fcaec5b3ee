"""Nothing in the package panics across the boundary: every argument of every call, swept
over its extremes (as tests/extremes.rs does for Rust), either works or raises an ordinary
exception (a subclass of Exception, never PyO3's PanicException, a BaseException), and a
count too large is a ValueError naming the limit."""

import math

import numpy as np
import pytest

import flakeid_rs

INTS = [-(2**70), -(2**63) - 1, -(2**63), -1, 0, 1, 2**31 - 1, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**70]
FLOATS = [-math.inf, -1e300, -1.0, -0.0, 0.0, 1e-12, 1e9, 1e300, math.inf, math.nan]
OTHERS = [None, "x", "", b"1", 1.5, [], object(), np.uint64(7), np.int64(-7), np.float64("nan")]


def survives(call, *args, **kwargs):
    """Runs the call; an exception it raises must be an Exception, never a panic."""
    try:
        call(*args, **kwargs)
    except BaseException as e:  # noqa: B036 - a panic is a BaseException
        assert isinstance(e, Exception) and type(e).__name__ != "PanicException", (call, args, kwargs, e)


def test_a_count_too_large_is_a_value_error_naming_the_limit():
    g = flakeid_rs.Generator(flakeid_rs.Layout.snowflake(), node=1)
    for n in (2**62, 2**28 + 1, 2**32, -1, 2**64):
        with pytest.raises(ValueError, match=r"2\*\*28"):
            g.next_ids(n)
        with pytest.raises(ValueError, match=r"2\*\*28"):
            g.try_next_ids(n)
    assert len(g.next_ids(0)) == 0 and len(g.next_ids(3)) == 3


@pytest.mark.parametrize("name", flakeid_rs.Layout.presets() + ["time=20,seq=34,node=10,dc=5", "time=44,seq=0,node=0,unit=1s"])
def test_layout_calls_survive_their_extremes(name):
    layout = flakeid_rs.Layout(name)
    values = INTS + OTHERS + FLOATS
    for v in values:
        survives(layout.decompose, v)
        survives(layout.time_of, v)
        survives(layout.unix_ms_of, v)
        survives(layout.compose, v)
        survives(layout.compose, 0, time=v)
        for key in ("sequence", "node", "datacenter", "worker", "process", "machine"):
            survives(layout.compose, 0, **{key: v})
        survives(layout.decode, [v])
        survives(layout.decode, v)
    for dtype in ("u8", "i8", ">u8", "u1", "f8", "M8[ms]", "O", "U3", "?"):
        survives(layout.decode, np.zeros(3, dtype=dtype))
    survives(layout.decode, np.zeros(3, dtype="u8")[::-1])
    misaligned = np.frombuffer(b"\0" * 25, dtype="u1")[1:].view("u8")
    survives(layout.decode, misaligned)
    assert list(layout.decode(misaligned)["ticks"]) == [0, 0, 0]
    # The extremes of the IDs themselves: every ID the layout holds decodes, in one call
    # and in a column.
    for id in (0, 1, layout.max_id - 1, layout.max_id):
        d = layout.decompose(id)
        assert layout.decode([id])["unix_ms"][0] == d["unix_ms"]


def test_generator_and_claim_arguments_survive_their_extremes():
    layout = flakeid_rs.Layout.snowflake()
    for v in INTS + OTHERS:
        survives(flakeid_rs.Generator, layout, node=v)
        survives(flakeid_rs.Generator, layout, datacenter=v, worker=1)
        survives(flakeid_rs.Generator, layout, datacenter=1, worker=v)
        survives(flakeid_rs.Generator, flakeid_rs.Layout.discord(), worker=1, process=v)
        g = flakeid_rs.Generator(layout, node=1, max_wait=0.01)
        survives(g.next_ids, v)
        survives(g.try_next_ids, v)
        survives(flakeid_rs.claims, "memory:", v)
    for v in FLOATS + OTHERS:
        survives(flakeid_rs.Generator, layout, node=1, max_wait=v)
    for url in ("memory:", "static:5", "static:" + str(2**70), "file:", "etdc://", "", "\0", "memory:?x=1"):
        survives(flakeid_rs.claims, url)
        survives(lambda u: flakeid_rs.claim(u).release(), url)
    for nodes in [(0, 0), (5, 2), (-1, 3), (0, 2**70), (2**64 - 1, 2**64 - 1), (1,), "x"]:
        survives(lambda n: flakeid_rs.claim("memory:", nodes=n).release(), nodes)
    for key in ("window", "ttl", "pool_wait", "max_wait"):
        for v in FLOATS + [None, "x"]:
            survives(lambda k, x: flakeid_rs.claim("memory:", **{k: x}).release(), key, v)
