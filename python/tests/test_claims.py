"""Claims from Python: on the file store (two processes, kill -9 and a restart: no ID
twice, a later holder's IDs above an earlier one's), on a real etcd and ZooKeeper, the
release, the listing, and a claim carried across a fork (refused in the child, and the
child never releases the parent's claim)."""

import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np
import pytest

import flakeid_rs

TWITTER = flakeid_rs.Layout.snowflake()


def test_a_claim_on_files_is_fenced_released_and_listed():
    store = "file:" + tempfile.mkdtemp()
    with flakeid_rs.claim(store, namespace="orders", nodes=(4, 6), window=2.0) as g:
        assert g.node == 4
        ids = g.next_ids(10_000)
        status = g.status()
        assert status["state"] == "active" and status["fenced"] and status["fence_left"] > 0
        second = flakeid_rs.claim(store, namespace="orders", nodes=(4, 6), window=2.0)
        assert second.node == 5
        with pytest.raises(flakeid_rs.ClaimError) as e:
            flakeid_rs.claim(store, namespace="orders", nodes=(4, 6), pool_wait=0.0)
        assert e.value.kind == "busy"
        second.release()
    assert g.released
    with pytest.raises(flakeid_rs.ClaimError) as e:
        g.next_id()
    assert e.value.kind == "released"
    listed = {n["node"]: n for n in flakeid_rs.claims(store, "orders")}
    assert listed[4]["state"] == "released"
    # The reservation is cut to what was minted: the next holder starts at once, above.
    with flakeid_rs.claim(store, namespace="orders", nodes=(4, 5)) as again:
        assert again.next_id() > ids[-1]
    assert [n["namespace"] for n in flakeid_rs.claims(store)] == ["orders"]
    with pytest.raises(flakeid_rs.ClaimError) as e:
        flakeid_rs.claim(store, namespace="orders", layout=flakeid_rs.Layout.sonyflake())
    assert e.value.kind == "settings" and "layout" in str(e.value)


MINTER = textwrap.dedent(
    """
    import sys, flakeid_rs
    g = flakeid_rs.claim(sys.argv[1], namespace="procs", nodes=(0, 2), window=1.0, pool_wait=30.0)
    print("node", g.node, flush=True)
    while True:
        print(*g.next_ids(50).tolist(), sep="\\n", flush=True)
    """
)


def test_two_processes_killed_and_restarted_never_mint_one_id_twice(tmp_path):
    store = "file:" + str(tmp_path / "store")
    script = tmp_path / "minter.py"
    script.write_text(MINTER)

    def start(k):
        out = open(tmp_path / f"out{k}", "w")
        p = subprocess.Popen([sys.executable, str(script), store], stdout=out, stderr=subprocess.PIPE)
        return p, out

    def lines(k):
        return (tmp_path / f"out{k}").read_text().split()

    def wait_for_ids(k, n=1000):
        deadline = time.monotonic() + 60
        while len(lines(k)) < n:
            assert time.monotonic() < deadline, f"process {k} minted nothing: {lines(k)[:5]}"
            time.sleep(0.05)

    procs = {k: start(k) for k in (0, 1)}
    for k in procs:
        wait_for_ids(k)
    os.kill(procs[0][0].pid, signal.SIGKILL)
    procs[0][0].wait(30)
    procs[2] = start(2)  # takes the killed one's id after its window
    wait_for_ids(2)
    for p, out in procs.values():
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            p.wait(30)
        out.close()
    by_process = {}
    for k in procs:
        words = lines(k)
        node = int(words[1])
        by_process[k] = (node, np.array([int(w) for w in words[2:]], dtype=np.uint64))
    everything = np.concatenate([ids for _, ids in by_process.values()])
    assert len(np.unique(everything)) == len(everything), "an ID twice"
    killed_node, killed_ids = by_process[0]
    node, restarted = by_process[2]
    assert node == killed_node, "the restart took the killed one's id"
    assert restarted.min() > killed_ids.max(), "the restart minted below the killed one"


def _claimed_child(g, store, q):
    try:
        g.next_id()
        q.put("minted")
    except flakeid_rs.ForkError:
        q.put("refused")
    g.release()  # the parent's claim: the child lets it be


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_claim_carried_across_a_fork_is_the_parents_alone():
    store = "file:" + tempfile.mkdtemp()
    g = flakeid_rs.claim(store, namespace="fork", nodes=(0, 1))
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_claimed_child, args=(g, store, q))
    p.start()
    assert q.get(timeout=30) == "refused"
    p.join(30)
    assert p.exitcode == 0
    (held,) = flakeid_rs.claims(store, "fork")
    assert held["state"] == "held", "the child released the parent's claim"
    assert g.next_id() > 0 and g.status()["state"] == "active"
    g.release()


def _on_a_coordinator(url):
    with flakeid_rs.claim(url, namespace="py", nodes=(0, 4), window=3.0, ttl=4.0) as g:
        a = g.next_ids(1000)
        assert g.status()["state"] == "active"
        other = flakeid_rs.claim(url, namespace="py", nodes=(0, 4), window=3.0, ttl=4.0)
        assert other.node != g.node
        assert len(np.intersect1d(a, other.next_ids(1000))) == 0
        other.release()
    listed = flakeid_rs.claims(url, "py")
    assert {n["node"] for n in listed} >= {g.node}
    assert all(n["state"] != "held" for n in listed)


def test_claims_on_a_real_etcd(etcd_url):
    _on_a_coordinator(etcd_url)


def test_claims_on_a_real_zookeeper(zookeeper_url):
    _on_a_coordinator(zookeeper_url)


def test_claims_on_a_real_postgres(postgres_url):
    _on_a_coordinator(postgres_url)
