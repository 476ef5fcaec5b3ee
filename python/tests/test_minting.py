"""Minting in process: unique and increasing IDs, across threads sharing one generator;
batches into numpy; asyncio without blocking the loop; the fork rule."""

import asyncio
import multiprocessing
import os
import threading

import numpy as np
import pytest

import flakeid_rs


def test_ids_are_unique_and_increasing_and_carry_the_node():
    twitter = flakeid_rs.Layout.snowflake()
    g = flakeid_rs.Generator(twitter, datacenter=1, worker=7)
    first = g.next_id()
    batch = g.next_ids(100_000)
    assert batch.dtype == np.uint64 and len(batch) == 100_000
    assert first < batch[0] and (np.diff(batch.astype(np.int64)) > 0).all()
    assert twitter.decompose(int(batch[-1]))["worker"] == 7
    assert g.next_id() > batch[-1]
    assert len(g.next_ids(0)) == 0
    assert 1 <= len(g.try_next_ids(10_000)) <= 4096


def test_threads_sharing_one_generator_never_get_the_same_id():
    g = flakeid_rs.Generator(flakeid_rs.Layout.snowflake(), node=5)
    out: list[list[np.ndarray]] = [[] for _ in range(8)]

    def work(k):
        for _ in range(20):
            out[k].append(g.next_ids(1000))
            out[k].append(np.array([g.next_id() for _ in range(200)], dtype=np.uint64))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ids = np.concatenate([np.concatenate(o) for o in out])
    assert len(ids) == 8 * 20 * 1200
    assert len(np.unique(ids)) == len(ids), "an ID twice"


def test_a_wait_past_the_bound_is_a_mint_error_with_retry_after():
    # One ID a 10 s tick: the second must wait ~10 s, past a 1 ms bound.
    slow = flakeid_rs.Layout("seq=0,node=1,time=40,unit=10s,epoch=2025-01-01T00:00:00Z")
    g = flakeid_rs.Generator(slow, node=0, max_wait=0.001)
    g.next_id()
    with pytest.raises(flakeid_rs.MintError) as e:
        g.next_id()
    assert e.value.retry_after is not None and 0 < e.value.retry_after <= 10
    with pytest.raises(flakeid_rs.MintError):
        g.try_next_id()


def test_asyncio_awaits_the_next_tick_without_blocking_the_loop():
    # 2 IDs a 100 ms tick: the fifth ID waits two ticks; meanwhile the loop runs others.
    layout = flakeid_rs.Layout("seq=1,node=1,time=40,unit=100ms,epoch=2025-01-01T00:00:00Z")
    g = flakeid_rs.Generator(layout, node=0, max_wait=1.0)

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.005)
                ticks += 1

        t = asyncio.ensure_future(ticker())
        ids = [await g.next_id_async() for _ in range(5)]
        batch = await g.next_ids_async(4)
        t.cancel()
        return ids, batch, ticks

    ids, batch, ticks = asyncio.run(main())
    assert ids == sorted(set(ids)) and batch[0] > ids[-1]
    assert ticks > 5, "the loop was blocked while the generator waited"


def _mint_in_child(g, q):
    try:
        g.next_id()
        q.put("minted")
    except flakeid_rs.ForkError as e:
        q.put("ForkError: " + str(e))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_generator_used_after_a_fork_refuses_and_a_new_one_works():
    g = flakeid_rs.Generator(flakeid_rs.Layout.snowflake(), node=9)
    g.next_id()
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_mint_in_child, args=(g, q))
    p.start()
    said = q.get(timeout=30)
    p.join(30)
    assert said.startswith("ForkError") and "before a fork" in said, said
    assert g.next_id() > 0, "the parent mints on"


def test_a_layout_that_runs_out_within_a_year_warns_when_a_generator_is_made():
    import time
    import warnings

    # 2^31 ms (24.9 days) from a day ago.
    day_ago_ms = int(time.time() * 1000) - 86_400_000
    short = flakeid_rs.Layout(f"time=31,seq=12,node=10,epoch={day_ago_ms}")
    with pytest.warns(UserWarning, match=r"runs out at .* in 2[34]\.\d days"):
        flakeid_rs.Generator(short, node=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        flakeid_rs.Generator(flakeid_rs.Layout.snowflake(), node=1)
