"""Every valid ID decodes and every name round-trips: decode then compose gives the same ID
for every preset and custom layout; the time past what a datetime holds; node fields wider
than 32 bits; the inputs numpy users pass (datetime64, strings, any integer dtype and byte
order); chunked Arrow input; one UTC convention in numpy and Arrow."""

import datetime
from typing import Any

import numpy as np
import pytest

import flakeid_rs

UTC = datetime.timezone.utc
CUSTOM = [
    "time=20,seq=34,node=10,dc=5",
    "time=41,seq=12,node=10,dc=3,epoch=2024-01-01T00:00:00Z",
    "time=39,seq=8,node=16,order=tsn,unit=10ms",
    "time=40,seq=10,node=14,dc=7,order=tsn",
    "time=30,seq=30,node=4,unit=1s",
    # Discord's bits without its names: Snowflake's datacenter and worker.
    "time=42,seq=12,node=10,dc=5,epoch=2015-01-01T00:00:00Z",
    # Discord's names on a custom layout that also calls its whole node machine.
    "time=40,seq=9,node=14,dc=6,parts=worker-process,order=tsn",
]
LAYOUTS = flakeid_rs.Layout.presets() + CUSTOM


def sample(layout, n=200, seed=11):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, layout.max_id, size=n, dtype=np.uint64, endpoint=True)
    return np.concatenate([ids, np.array([0, layout.max_id], dtype=np.uint64)])


def compose_ways(layout, fields):
    """The ID composed back from the node fields decompose gave, every way: all of them at
    once (they agree), then each alone (node, the two parts, machine)."""
    names = list(layout.node_fields)
    parts = [n for n in names if n != "machine"]
    ways = [["node", *names], ["node"]]
    if parts:
        ways.append(parts)
    if "machine" in names:
        ways.append(["machine"])
    return [
        layout.compose(fields["ticks"], sequence=fields["sequence"], **{n: fields[n] for n in way})
        for way in ways
    ]


@pytest.mark.parametrize("name", LAYOUTS)
def test_decompose_then_compose_gives_the_same_id(name):
    layout = flakeid_rs.Layout(name)
    for id in sample(layout):
        fields = layout.decompose(int(id))
        assert set(compose_ways(layout, fields)) == {int(id)}, (name, fields)


@pytest.mark.parametrize("name", LAYOUTS)
def test_decode_then_compose_gives_the_same_id(name):
    layout = flakeid_rs.Layout(name)
    ids = sample(layout, n=50, seed=3)
    cols = layout.decode(ids)
    for i, id in enumerate(ids):
        fields = {k: int(v[i]) for k, v in cols.items() if k != "time"}
        assert set(compose_ways(layout, fields)) == {int(id)}, (name, fields)
    assert set(layout.node_fields) <= set(cols)


def test_discord_names_are_discords_own():
    discord = flakeid_rs.Layout.discord()
    # Discord's documented example: worker 1, process 0, increment 7.
    t = datetime.datetime(2016, 4, 30, 11, 18, 25, 796000, tzinfo=UTC)
    assert discord.compose(time=t, sequence=7, worker=1, process=0) == 175928847299117063
    d = discord.decompose(175928847299117063)
    assert (d["worker"], d["process"], d["sequence"]) == (1, 0, 7)
    g = flakeid_rs.Generator(discord, worker=3, process=4)
    assert discord.decompose(g.next_id())["worker"] == 3
    with pytest.raises(flakeid_rs.LayoutError, match="no datacenter field"):
        discord.compose(0, datacenter=1, worker=0)
    with pytest.raises(flakeid_rs.LayoutError, match="worker= and process="):
        discord.compose(0, worker=1)
    with pytest.raises(flakeid_rs.LayoutError, match="no process field"):
        flakeid_rs.Layout.snowflake().compose(0, worker=1, process=2)
    with pytest.raises(flakeid_rs.LayoutError, match="name different node ids"):
        discord.compose(0, node=33, worker=1, process=0)
    assert discord.compose(0, node=32, worker=1, process=0) == discord.compose(0, node=32)
    # The same bits spelled out are Snowflake's names: worker is the low part there.
    spelled = flakeid_rs.Layout("time=42,seq=12,node=10,dc=5,epoch=2015-01-01T00:00:00Z")
    assert spelled.node_fields == ("datacenter", "worker")
    assert spelled.decompose(discord.compose(0, worker=1, process=0))["worker"] == 0


def test_a_time_past_9999_decomposes_and_says_which_call_gives_it():
    mastodon = flakeid_rs.Layout.mastodon()
    id = 16606973185228800000  # 9999-12-31T23:59:59.999Z is just before it
    d = mastodon.decompose(id)
    assert d["time"] is None and d["unix_ms"] == mastodon.unix_ms_of(id)
    with pytest.raises(flakeid_rs.LayoutError, match="unix_ms_of"):
        mastodon.time_of(id)
    assert mastodon.decode([id])["unix_ms"][0] == d["unix_ms"]
    last = mastodon.compose(253402300799999)
    assert mastodon.time_of(last) == datetime.datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)
    for id in sample(mastodon, n=500):
        assert mastodon.decompose(int(id))["unix_ms"] >= 0


def test_node_parts_wider_layouts_are_in_every_decode():
    wide = flakeid_rs.Layout("time=20,seq=34,node=10,dc=5")
    id = wide.compose(5, sequence=2**33 + 1, datacenter=17, worker=9)
    cols = wide.decode([id])
    assert (int(cols["datacenter"][0]), int(cols["worker"][0])) == (17, 9)
    assert int(cols["sequence"][0]) == 2**33 + 1
    pa = pytest.importorskip("pyarrow")
    batch = wide.decode_arrow([id])
    assert batch.column("datacenter").to_pylist() == [17]
    assert batch.column("worker").to_pylist() == [9]
    sony = flakeid_rs.Layout.sonyflake()
    assert sony.decode_arrow([96902515261901317]).column("machine").to_pylist() == [2565]
    assert isinstance(batch, pa.RecordBatch)


def test_times_as_numpy_users_give_them():
    twitter = flakeid_rs.Layout.snowflake()
    want = twitter.compose(time=datetime.datetime(2026, 10, 31, 12, tzinfo=UTC), sequence=1, node=1)
    assert twitter.compose(time=np.datetime64("2026-10-31T12:00:00"), sequence=1, node=1) == want
    assert twitter.compose(time=np.datetime64("2026-10-31T12:00:00.000000000"), sequence=1, node=1) == want
    assert twitter.compose(time="2026-10-31T12:00:00Z", sequence=1, node=1) == want
    assert twitter.compose(time=datetime.datetime(2026, 10, 31, 12), sequence=1, node=1) == want
    bad_times: list[tuple[Any, str]] = [("yesterday", "RFC 3339"), (np.datetime64("NaT"), "NaT"), (3.5, "not a time"), (b"x", "not a time")]
    for bad, what in bad_times:
        with pytest.raises(flakeid_rs.LayoutError, match=what):
            twitter.compose(time=bad, node=1)


def test_integer_arguments_out_of_range_are_layout_errors():
    twitter = flakeid_rs.Layout.snowflake()
    bad_ints: list[dict[str, Any]] = [dict(sequence=-1), dict(sequence=4096), dict(node=-1), dict(node=2**70), dict(sequence="1")]
    for kwargs in bad_ints:
        with pytest.raises(flakeid_rs.LayoutError, match="is not in range"):
            twitter.compose(0, **kwargs)
    with pytest.raises(flakeid_rs.LayoutError, match="ticks"):
        twitter.compose(-1)
    assert twitter.compose(np.uint64(3), sequence=np.int32(2)) == (3 << 22) | 2


@pytest.mark.parametrize("dtype", [">u8", "<u8", ">i8", "<i8", ">u4", "<i4", "u2", "i1", "u1"])
def test_every_integer_dtype_and_byte_order_decodes(dtype):
    twitter = flakeid_rs.Layout.snowflake()
    values = [1, 2, 100]
    got = twitter.decode(np.array(values, dtype=dtype))
    assert list(got["sequence"]) == values
    for bad in (np.array([True]), np.array(["1"]), np.array([np.datetime64("2026-01-01")])):
        with pytest.raises(flakeid_rs.LayoutError, match="numpy array of integers"):
            twitter.decode(bad)


def test_chunked_arrow_decodes_chunk_by_chunk_with_indexes_across_chunks():
    pa = pytest.importorskip("pyarrow")
    twitter = flakeid_rs.Layout.snowflake()
    ids = sample(twitter, n=3000)
    chunked = pa.chunked_array([ids[:1000], ids[1000:1001], ids[1001:]], type=pa.uint64())
    a, b = twitter.decode(chunked), twitter.decode(ids)
    for key in b:
        assert (a[key] == b[key]).all(), key
    batch = twitter.decode_arrow(chunked)
    assert batch.column("id").to_pylist() == [int(v) for v in ids]
    with pytest.raises(flakeid_rs.LayoutError, match="index 1001 is null"):
        twitter.decode(pa.chunked_array([ids[:1000], [1, None]], type=pa.uint64()))
    with pytest.raises(flakeid_rs.LayoutError, match="index 1002"):
        twitter.decode(pa.chunked_array([ids[:1000], [1, 2, 2**64 - 1]], type=pa.uint64()))


def test_numpy_and_arrow_times_are_one_utc_convention_pandas_joins():
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    twitter = flakeid_rs.Layout.snowflake()
    ids = sample(twitter, n=20)
    numpy_frame = pd.DataFrame({"id": ids, **twitter.decode(ids)})
    arrow_frame = twitter.decode_arrow(ids).to_pandas()
    assert numpy_frame["time"].dt.tz is None and arrow_frame["time"].dt.tz is None
    joined = numpy_frame.merge(arrow_frame, on=["id", "time"])
    assert len(joined) == len(ids)
    first = twitter.time_of(int(ids[0]))
    assert numpy_frame["time"][0].tz_localize("UTC") == first


def test_messages_name_the_bad_part_and_what_is_accepted():
    with pytest.raises(flakeid_rs.LayoutError, match='unknown key "bogus".*time, seq, node'):
        flakeid_rs.Layout("seq=12,node=10,bogus=1")
    with pytest.raises(flakeid_rs.ClaimError) as e:
        flakeid_rs.claim("etdc://x")
    message = str(e.value)
    assert '"etdc"' in message
    for scheme in ("etcd://", "zookeeper://", "file:", "memory:", "static:"):
        assert scheme in message, message


def test_an_etcd_that_is_down_is_one_short_sentence():
    with pytest.raises(flakeid_rs.ClaimError) as e:
        flakeid_rs.claim("etcd://127.0.0.1:1", pool_wait=1.0)
    message = str(e.value)
    assert e.value.kind == "unavailable", message
    assert "refused" in message.lower() and len(message) < 200, message
    assert "tonic" not in message and "Os {" not in message, message
