"""Layouts: the platforms' worked examples, compose and decompose, the errors; batch
decoding equal to a numpy reference on a million random IDs of every preset, signed and
unsigned input, IDs at and above 2**63, Arrow in and out."""

import datetime

import numpy as np
import pytest

import flakeid_rs

UTC = datetime.timezone.utc
WORKED_TIME = datetime.datetime(2026, 10, 31, 12, tzinfo=UTC)


def test_the_worked_examples_decode_as_the_tool_does():
    twitter = flakeid_rs.Layout.snowflake()
    d = twitter.decompose(2116500430648709162)
    assert (d["time"], d["sequence"], d["datacenter"], d["worker"]) == (WORKED_TIME, 42, 3, 17)
    assert d["node"] == 3 << 5 | 17
    assert twitter.compose(time=WORKED_TIME, sequence=42, datacenter=3, worker=17) == 2116500430648709162
    sony = flakeid_rs.Layout.sonyflake()
    d = sony.decompose(96902515261901317)
    assert (d["time"], d["ticks"], d["sequence"], d["machine"]) == (WORKED_TIME, 5775840000, 7, 2565)
    assert sony.time_of(96902515261901317) == WORKED_TIME


def test_every_preset_and_its_facts():
    names = flakeid_rs.Layout.presets()
    assert {"snowflake", "sonyflake", "sonyflake-v1", "discord", "instagram", "mastodon", "js-safe"} <= set(names)
    for name in names:
        layout = flakeid_rs.Layout(name)
        assert layout.name == name and flakeid_rs.Layout(str(layout)) == layout
        assert layout.bits <= 64 and layout.max_id < 2**layout.bits
    twitter = flakeid_rs.Layout.snowflake()
    assert (twitter.time_bits, twitter.node_bits, twitter.sequence_bits) == (41, 10, 12)
    assert twitter.ids_per_second_per_node == 4_096_000 and twitter.node_count == 1024
    assert isinstance(twitter.ids_per_second_per_node, int)
    # Whole numbers, rounded down, at any width: 2**62 IDs a tick of 3 ms.
    wide = flakeid_rs.Layout("time=1,seq=62,node=0,unit=3ms")
    assert wide.ids_per_second_per_node == 2**62 * 1000 // 3
    assert twitter.node_fields == ("datacenter", "worker")
    assert flakeid_rs.Layout.discord().node_fields == ("worker", "process")
    assert flakeid_rs.Layout.sonyflake().node_fields == ("machine",)
    assert flakeid_rs.Layout.mastodon().node_fields == ()
    assert round(flakeid_rs.Layout.sonyflake().lifetime_years) == 174


def test_bad_input_is_a_layout_error_that_says_what_to_do():
    with pytest.raises(flakeid_rs.LayoutError, match="70 bits") as e:
        flakeid_rs.Layout("seq=40,node=30")
    assert isinstance(e.value, ValueError) and isinstance(e.value, flakeid_rs.Error)
    with pytest.raises(flakeid_rs.LayoutError, match="preset"):
        flakeid_rs.Layout("twittr")
    twitter = flakeid_rs.Layout.snowflake()
    with pytest.raises(flakeid_rs.LayoutError):
        twitter.decompose(2**64 - 1)
    with pytest.raises(flakeid_rs.LayoutError, match="datacenter"):
        twitter.compose(0, datacenter=32, worker=0)
    with pytest.raises(flakeid_rs.LayoutError, match="not an ID"):
        twitter.decompose("123")  # type: ignore[arg-type]


def reference(layout, ids):
    """What hand-written numpy gives, field by field, from the layout's bits."""
    u = ids.astype(np.uint64)
    seq_bits, node_bits = layout.sequence_bits, layout.node_bits
    if layout.order == "time|node|sequence":
        sequence = u & np.uint64(2**seq_bits - 1)
        node = (u >> np.uint64(seq_bits)) & np.uint64(2**node_bits - 1)
    else:
        node = u & np.uint64(2**node_bits - 1)
        sequence = (u >> np.uint64(node_bits)) & np.uint64(2**seq_bits - 1)
    ticks = u >> np.uint64(seq_bits + node_bits)
    return ticks, sequence, node


@pytest.mark.parametrize("name", flakeid_rs.Layout.presets())
def test_a_million_random_ids_decode_as_numpy_does(name):
    layout = flakeid_rs.Layout(name)
    rng = np.random.default_rng(7)
    ids = rng.integers(0, layout.max_id, size=1_000_000, dtype=np.uint64, endpoint=True)
    cols = layout.decode(ids)
    ticks, sequence, node = reference(layout, ids)
    assert (cols["ticks"] == ticks).all()
    assert (cols["sequence"] == sequence).all()
    assert (cols["node"] == node).all()
    # Times as the library computes them one by one, on a sample.
    for i in rng.integers(0, len(ids), size=200):
        assert cols["unix_ms"][i] == layout.unix_ms_of(int(ids[i]))
    assert (cols["time"].astype(np.int64) == cols["unix_ms"]).all()
    fields = layout.node_fields
    if len(fields) == 2:
        assert (cols[fields[0]] == node >> np.uint64(layout.worker_bits)).all()
        assert (cols[fields[1]] == node & np.uint64(2**layout.worker_bits - 1)).all()


def test_signed_input_and_ids_at_and_above_2_63():
    wide = flakeid_rs.Layout("time=40,seq=12,node=12,epoch=2025-01-01T00:00:00Z")
    assert wide.bits == 64
    ids = np.array([2**63 - 1, 2**63, 2**64 - 1, 12345], dtype=np.uint64)
    signed = ids.view(np.int64)  # how a database hands back a BIGINT column
    assert signed[1] < 0
    a, b, c = wide.decode(ids), wide.decode(signed), wide.decode([int(v) for v in signed])
    for key in a:
        assert (a[key] == b[key]).all() and (a[key] == c[key]).all(), key
    assert wide.decompose(int(signed[2]))["id"] == 2**64 - 1
    twitter = flakeid_rs.Layout.snowflake()  # 63 bits: a negative value is no ID of it
    with pytest.raises(flakeid_rs.LayoutError, match="index 1"):
        twitter.decode(np.array([1, -1], dtype=np.int64))


def test_decode_takes_strided_and_other_integer_arrays_and_refuses_the_rest():
    twitter = flakeid_rs.Layout.snowflake()
    ids = np.array([2116500430648709162, 0, 2116500430648709163, 0], dtype=np.uint64)
    strided = twitter.decode(ids[::2])
    assert list(strided["sequence"]) == [42, 43]
    small = twitter.decode(np.array([1, 2], dtype=np.uint32))
    assert list(small["sequence"]) == [1, 2]
    assert len(twitter.decode(np.empty(0, dtype=np.uint64))["time"]) == 0
    with pytest.raises(flakeid_rs.LayoutError, match="float"):
        twitter.decode(np.array([1.5]))
    with pytest.raises(flakeid_rs.LayoutError, match="2-dimensional"):
        twitter.decode(np.zeros((2, 2), dtype=np.uint64))
    with pytest.raises(flakeid_rs.LayoutError, match="index 1"):
        twitter.decode([1, "two"])


@pytest.mark.parametrize("pyarrow_installed", [True, False])
def test_pandas_columns_decode_with_or_without_pyarrow(monkeypatch, pyarrow_installed):
    """A pandas Series or Index of int64 decodes (in place), and a nullable Int64 column
    too, whether pyarrow is there or not (pandas' Arrow export needs it); a missing value
    is an error naming its index, never a float."""
    import pandas as pd

    if not pyarrow_installed:
        monkeypatch.setitem(__import__("sys").modules, "pyarrow", None)
    twitter = flakeid_rs.Layout.snowflake()
    ids = [2116500430648709162, 2116500430648709163]
    for column in (pd.Series(ids, dtype="int64"), pd.Index(ids), pd.Series(ids, dtype="Int64")):
        assert list(twitter.decode(column)["sequence"]) == [42, 43], type(column)
    with pytest.raises(flakeid_rs.LayoutError, match="index 1 is (missing|null)"):
        twitter.decode(pd.Series([ids[0], None], dtype="Int64"))


def test_decode_arrow_makes_a_record_batch_polars_and_duckdb_read():
    pa = pytest.importorskip("pyarrow")
    twitter = flakeid_rs.Layout.snowflake()
    ids = pa.array([2116500430648709162, 2116500430648709163], type=pa.uint64())
    batch = twitter.decode_arrow(ids)
    assert isinstance(batch, pa.RecordBatch)
    # UTC without a zone, as decode's datetime64 (one convention: the two join in pandas).
    assert batch.schema.field("time").type == pa.timestamp("ms")
    assert batch.column("sequence").to_pylist() == [42, 43]
    assert batch.column("worker").to_pylist() == [17, 17]
    assert batch.column("time")[0].as_py() == WORKED_TIME.replace(tzinfo=None)
    # Signed Arrow input, chunked input, and nulls refused with their index.
    signed = twitter.decode_arrow(pa.array([2116500430648709162], type=pa.int64()))
    assert signed.column("id").to_pylist() == [2116500430648709162]
    chunked = twitter.decode_arrow(pa.chunked_array([[2116500430648709162], [2116500430648709163]], type=pa.uint64()))
    assert chunked.num_rows == 2
    with pytest.raises(flakeid_rs.LayoutError, match="index 1 is null"):
        twitter.decode(pa.array([1, None], type=pa.uint64()))


def test_id_range_bounds_the_ids_of_a_span():
    """`id_range` is the library's range for a span (start inclusive, end exclusive), in
    every form a time comes in; IDs minted now are in the range up to now and past the
    range of a span that ended before; a span outside the layout or empty is an error."""
    sony = flakeid_rs.Layout.sonyflake()
    day = (datetime.datetime(2026, 12, 7, tzinfo=UTC), datetime.datetime(2026, 12, 8, tzinfo=UTC))
    first, last = sony.id_range(*day)
    assert sony.id_range("2026-12-07T00:00:00Z", 1_796_688_000_000) == (first, last)
    assert sony.id_range(np.datetime64("2026-12-07T00:00:00"), np.datetime64("2026-12-08")) == (first, last)
    assert sony.decompose(first)["time"] == day[0] and sony.decompose(first)["sequence"] == 0
    assert sony.decompose(last)["ticks"] == sony.decompose(sony.compose(time=day[1]))["ticks"] - 1
    # 5 ms into a 10 ms tick: the whole tick is in the range.
    tick_start, _ = sony.id_range(1_796_601_600_005, 1_796_601_600_006)
    assert tick_start == first

    now = datetime.datetime.now(UTC)
    generator = flakeid_rs.Generator(flakeid_rs.Layout.snowflake(), node=9)
    ids = [generator.next_id() for _ in range(100)]
    recent = flakeid_rs.Layout.snowflake().id_range(now - datetime.timedelta(minutes=1))
    earlier = flakeid_rs.Layout.snowflake().id_range(
        now - datetime.timedelta(minutes=2), now - datetime.timedelta(minutes=1)
    )
    assert all(recent[0] <= i <= recent[1] and i > earlier[1] for i in ids)

    with pytest.raises(flakeid_rs.LayoutError, match="holds no instant"):
        sony.id_range(day[1], day[0])
    with pytest.raises(flakeid_rs.LayoutError, match="before the layout's epoch"):
        flakeid_rs.Layout.snowflake().id_range("2000-01-01T00:00:00Z", "2001-01-01T00:00:00Z")
    with pytest.raises(flakeid_rs.LayoutError, match="not a time"):
        sony.id_range(object())  # type: ignore[arg-type]
