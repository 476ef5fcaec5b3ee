//! `flakeid_rs.Layout`: a bit layout (every preset and custom layout string the tool
//! accepts), its facts, `compose` / `decompose` / `time_of`, and batch decoding into numpy
//! columns (`decode`) or an Arrow record batch (`decode_arrow`) through `decode.rs`.

use std::sync::{Arc, OnceLock};

use arrow_array::{ArrayRef, Int64Array, RecordBatch, TimestampMillisecondArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use flakeid::Layout;
use flakeid::decode::Decoder;
use flakeid::error::Field as IdField;
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::errors::{error, layout_error};
use crate::ids::{self, Ids};
use crate::values::{
    DATETIME_MAX_UNIX_MS, id_of, instant_ns, node_of_names, uint, unix_ns, utc_datetime,
};

/// A bit layout of 64-bit IDs: how time, sequence and node share the bits, the length of a
/// tick, the epoch. `Layout("snowflake")`, `Layout("seq=12,node=10,epoch=2024-01-01T00:00:00Z")`
/// or a preset's method (`Layout.discord()`).
#[pyclass(frozen, module = "flakeid_rs._native", name = "Layout")]
pub(crate) struct PyLayout {
    pub(crate) layout: Layout,
    decoder: OnceLock<Decoder>,
}

impl PyLayout {
    pub(crate) fn of(layout: Layout) -> PyLayout {
        PyLayout {
            layout,
            decoder: OnceLock::new(),
        }
    }

    pub(crate) fn decoder(&self) -> &Decoder {
        self.decoder.get_or_init(|| Decoder::new(&self.layout))
    }

    /// The names of the node's parts: `(datacenter, worker)`, Discord's `(worker, process)`,
    /// Sonyflake's `(machine,)`, or none.
    fn node_fields(&self) -> Vec<&'static str> {
        // Beside `node`, which every layout's decoded IDs show.
        self.layout
            .node_fields()
            .iter()
            .skip(1)
            .map(|f| f.name())
            .collect()
    }

    /// The preset named `name`.
    fn preset(name: &str) -> PyLayout {
        let p = Layout::presets()
            .iter()
            .find(|p| p.name == name)
            .expect("a preset of this build");
        PyLayout::of(p.layout)
    }
}

#[pymethods]
impl PyLayout {
    /// A layout from its string: a preset's name (`snowflake`, `sonyflake`, `discord`, ...)
    /// or `key=value` pairs (`time=41,seq=12,node=10,epoch=2010-11-04T01:42:54.657Z`), as
    /// `flakeid layout` and `--layout` take them.
    #[new]
    fn new(py: Python<'_>, spec: &str) -> PyResult<PyLayout> {
        spec.parse::<Layout>()
            .map(PyLayout::of)
            .map_err(|e| error(py, e))
    }

    /// Twitter's Snowflake: 41 bits of milliseconds since 2010-11-04, 5 + 5 node bits, 12
    /// sequence bits.
    #[staticmethod]
    fn snowflake() -> PyLayout {
        PyLayout::preset("snowflake")
    }

    /// Sonyflake (v2): 39 bits of 10 ms ticks since 2025-01-01, 8 sequence bits, 16 machine bits.
    #[staticmethod]
    fn sonyflake() -> PyLayout {
        PyLayout::preset("sonyflake")
    }

    /// Sonyflake v1: as v2, from 2014-09-01.
    #[staticmethod]
    fn sonyflake_v1() -> PyLayout {
        PyLayout::preset("sonyflake-v1")
    }

    /// Discord: 42 bits of milliseconds since 2015-01-01, 5 worker + 5 process bits, 12
    /// sequence bits.
    #[staticmethod]
    fn discord() -> PyLayout {
        PyLayout::preset("discord")
    }

    /// Instagram: 41 bits of milliseconds since 2011-08-24, 13 shard bits, 10 sequence bits.
    #[staticmethod]
    fn instagram() -> PyLayout {
        PyLayout::preset("instagram")
    }

    /// Mastodon: 48 bits of Unix milliseconds, 16 sequence bits, no node.
    #[staticmethod]
    fn mastodon() -> PyLayout {
        PyLayout::preset("mastodon")
    }

    /// IDs a JavaScript number holds exactly (at most 2**53 - 1): 41 time, 5 node, 7 sequence bits.
    #[staticmethod]
    fn js_safe() -> PyLayout {
        PyLayout::preset("js-safe")
    }

    /// The presets' names.
    #[staticmethod]
    fn presets() -> Vec<&'static str> {
        Layout::presets().iter().map(|p| p.name).collect()
    }

    /// The preset's name, if this layout is one.
    #[getter]
    fn name(&self) -> Option<&'static str> {
        flakeid_text::layout::preset_of(&self.layout).map(|p| p.name)
    }

    #[getter]
    fn time_bits(&self) -> u32 {
        self.layout.time_bits()
    }

    #[getter]
    fn sequence_bits(&self) -> u32 {
        self.layout.sequence_bits()
    }

    #[getter]
    fn node_bits(&self) -> u32 {
        self.layout.node_bits()
    }

    #[getter]
    fn datacenter_bits(&self) -> u32 {
        self.layout.datacenter_bits()
    }

    #[getter]
    fn worker_bits(&self) -> u32 {
        self.layout.worker_bits()
    }

    /// The length of a tick, in nanoseconds.
    #[getter]
    fn unit_ns(&self) -> u64 {
        self.layout.unit_ns()
    }

    /// The epoch, in Unix milliseconds.
    #[getter]
    fn epoch_unix_ms(&self) -> u64 {
        self.layout.epoch_unix_ms()
    }

    /// `time|node|sequence` or `time|sequence|node`, from the top bit down.
    #[getter]
    fn order(&self) -> &'static str {
        flakeid_text::layout::order_name(self.layout.order())
    }

    /// How long the layout's ticks last, in seconds.
    #[getter]
    fn lifetime(&self) -> f64 {
        self.layout.lifetime().as_secs_f64()
    }

    /// The lifetime in years of 365.25 days.
    #[getter]
    fn lifetime_years(&self) -> f64 {
        self.layout.lifetime_years()
    }

    /// The end of the layout's time, as Unix milliseconds.
    #[getter]
    fn end_unix_ms(&self) -> u64 {
        self.layout.end_unix_ms()
    }

    /// The most IDs one node mints in a second: a whole number (rounded down where the
    /// unit does not divide a second), exact at any width.
    #[getter]
    fn ids_per_second_per_node(&self) -> u128 {
        let per_tick = 1u128 << self.layout.sequence_bits();
        per_tick * 1_000_000_000 / u128::from(self.layout.unit_ns())
    }

    /// The largest node id.
    #[getter]
    fn max_node(&self) -> u64 {
        self.layout.max_node()
    }

    /// The number of node ids.
    #[getter]
    fn node_count(&self) -> u64 {
        self.layout.node_count()
    }

    /// The largest sequence number in a tick.
    #[getter]
    fn max_sequence(&self) -> u64 {
        self.layout.max_sequence()
    }

    /// The largest ID.
    #[getter]
    fn max_id(&self) -> u64 {
        self.layout.max_id()
    }

    /// The bits the layout uses (at most 64).
    #[getter]
    fn bits(&self) -> u32 {
        self.layout.bits()
    }

    /// The names of the node's parts the decoded fields carry: `("datacenter", "worker")`,
    /// Discord's `("worker", "process")`, Sonyflake's `("machine",)`, or `()`.
    #[getter(node_fields)]
    fn node_fields_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.node_fields())
    }

    /// The ID of `ticks` (or of the tick `time` falls in: a `datetime`, a
    /// `numpy.datetime64` or an RFC 3339 string), `sequence` and `node` (or its parts by the
    /// names `decompose` gives them: `datacenter` and `worker`, Discord's `worker` and
    /// `process`, Sonyflake's `machine`).
    #[pyo3(signature = (ticks=None, *, time=None, sequence=None, node=None, datacenter=None, worker=None, process=None, machine=None))]
    #[allow(clippy::too_many_arguments)]
    fn compose(
        &self,
        py: Python<'_>,
        ticks: Option<&Bound<'_, PyAny>>,
        time: Option<&Bound<'_, PyAny>>,
        sequence: Option<&Bound<'_, PyAny>>,
        node: Option<&Bound<'_, PyAny>>,
        datacenter: Option<&Bound<'_, PyAny>>,
        worker: Option<&Bound<'_, PyAny>>,
        process: Option<&Bound<'_, PyAny>>,
        machine: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<u64> {
        let l = &self.layout;
        let ticks = match (ticks, time) {
            (Some(t), None) => uint(py, "ticks", t, l.max_ticks())?,
            (None, Some(time)) => l.ticks_at(unix_ns(py, time)?).map_err(|e| error(py, e))?,
            _ => return Err(layout_error(py, "give ticks or time, one of them")),
        };
        let sequence = match sequence {
            Some(s) => uint(py, "sequence", s, l.max_sequence())?,
            None => 0,
        };
        let named = [
            (IdField::Datacenter, datacenter),
            (IdField::Worker, worker),
            (IdField::Process, process),
            (IdField::Machine, machine),
        ];
        let node = node_of_names(py, l, node, named)?.unwrap_or(0);
        l.compose(ticks, sequence, node).map_err(|e| error(py, e))
    }

    /// The fields of one ID: `ticks`, `sequence`, `node`, `unix_ms`, `time` (an aware
    /// UTC `datetime`; `None` after 9999-12-31, which a `datetime` cannot hold) and the
    /// node's named parts. A negative int is read as its 64 bits.
    fn decompose<'py>(
        &self,
        py: Python<'py>,
        id: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let id = id_of(id)?;
        let p = self.layout.decompose(id).map_err(|e| error(py, e))?;
        let unix_ms = self.layout.unix_ms_of(p.ticks).map_err(|e| error(py, e))?;
        let d = PyDict::new(py);
        d.set_item("id", id)?;
        d.set_item("ticks", p.ticks)?;
        d.set_item("sequence", p.sequence)?;
        d.set_item("node", p.node)?;
        d.set_item("unix_ms", unix_ms)?;
        // A time past what a datetime holds is None (unix_ms has it).
        let time = match unix_ms <= DATETIME_MAX_UNIX_MS {
            true => Some(utc_datetime(py, unix_ms)?),
            false => None,
        };
        d.set_item("time", time)?;
        let names = self.node_fields();
        if self.layout.datacenter_bits() > 0 {
            let (a, b) = self.layout.split_node(p.node);
            d.set_item(names[0], a)?;
            d.set_item(names[1], b)?;
        }
        if names.contains(&"machine") {
            d.set_item("machine", p.node)?;
        }
        Ok(d)
    }

    /// The first and last ID this layout gives to the instants from `start` (inclusive) to
    /// `end` (exclusive; the current time if `None`), both ends of the pair inclusive, as
    /// SQL's `BETWEEN` takes them: every ID minted in the span lies between them. Each
    /// instant is a `datetime`, a `numpy.datetime64`, RFC 3339 text or an int of Unix
    /// milliseconds. Where the span's start or end falls inside a tick, that whole tick's
    /// IDs are in the range (exact for 1 ms layouts and whole milliseconds); a span that
    /// starts before the epoch starts at the layout's first ID, one that ends past its
    /// lifetime ends at its last. A span with no instant in the lifetime, or an empty one,
    /// is a `LayoutError`.
    #[pyo3(signature = (start, end=None))]
    fn id_range(
        &self,
        py: Python<'_>,
        start: &Bound<'_, PyAny>,
        end: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(u64, u64)> {
        let from = instant_ns(py, start)?;
        let to = match end {
            Some(end) => instant_ns(py, end)?,
            None => i128::from(flakeid::Clock::unix_ns(&flakeid::clock::SystemClock)),
        };
        let r = self
            .layout
            .id_range_ns(from, to)
            .map_err(|e| error(py, e))?;
        Ok((r.first.get(), r.last.get()))
    }

    /// When `id` was minted: the start of its tick, an aware UTC `datetime` (to the
    /// millisecond); a `LayoutError` after 9999-12-31, which a `datetime` cannot hold
    /// (`unix_ms_of` can).
    fn time_of<'py>(&self, py: Python<'py>, id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let ms = self.unix_ms_of(py, id)?;
        utc_datetime(py, ms)
    }

    /// When `id` was minted, in Unix milliseconds.
    fn unix_ms_of(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<u64> {
        let id = id_of(id)?;
        let p = self.layout.decompose(id).map_err(|e| error(py, e))?;
        self.layout.unix_ms_of(p.ticks).map_err(|e| error(py, e))
    }

    /// Decodes a column of IDs (a numpy array of any integer type, read in place when it
    /// is `uint64`/`int64`; an Arrow array or chunked array, read chunk by chunk in place;
    /// a list) into numpy columns with the SIMD decoder, the GIL released: `time`
    /// (`datetime64[ms]`, UTC), `unix_ms` (`int64`), `ticks` (`uint64`), `sequence` and
    /// `node` (`uint32` where they fit), and the node's named parts. An ID that does not
    /// fit the layout is a `LayoutError` naming its index.
    fn decode<'py>(
        &self,
        py: Python<'py>,
        ids: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let ids: Ids<'py> = ids::read(ids)?;
        let d = self.decode_columns(py, &ids.chunks())?;
        let out = PyDict::new(py);
        let unix_ms = PyArray1::from_vec(py, bytemuck::allocation::cast_vec::<u64, i64>(d.unix_ms));
        out.set_item("time", unix_ms.call_method1("view", ("datetime64[ms]",))?)?;
        out.set_item("unix_ms", &unix_ms)?;
        out.set_item("ticks", PyArray1::from_vec(py, d.ticks))?;
        out.set_item("sequence", d.sequence.numpy(py))?;
        let node = d.node.numpy(py);
        out.set_item("node", &node)?;
        let names = self.node_fields();
        if let Some((a, b)) = d.split {
            out.set_item(names[0], a.numpy(py))?;
            out.set_item(names[1], b.numpy(py))?;
        }
        if names.contains(&"machine") {
            out.set_item("machine", &node)?;
        }
        Ok(out)
    }

    /// [`decode`](Layout.decode) into a `pyarrow.RecordBatch` (through the Arrow C data
    /// interface, no copy): `id`, `time` (`timestamp[ms]`, UTC, as `decode`'s), `unix_ms`,
    /// `ticks`, `sequence`, `node` and the node's named parts. Needs pyarrow.
    fn decode_arrow<'py>(
        &self,
        py: Python<'py>,
        ids: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if py.import("pyarrow").is_err() {
            return Err(pyo3::exceptions::PyImportError::new_err(
                "decode_arrow makes a pyarrow.RecordBatch: install pyarrow (pip install pyarrow), or use decode for numpy columns",
            ));
        }
        let ids: Ids<'py> = ids::read(ids)?;
        let chunks = ids.chunks();
        let d = self.decode_columns(py, &chunks)?;
        let unix_ms =
            arrow_buffer::ScalarBuffer::from(bytemuck::allocation::cast_vec::<u64, i64>(d.unix_ms));
        let mut fields = vec![
            Field::new("id", DataType::UInt64, false),
            Field::new(
                "time",
                DataType::Timestamp(TimeUnit::Millisecond, None),
                false,
            ),
            Field::new("unix_ms", DataType::Int64, false),
            Field::new("ticks", DataType::UInt64, false),
        ];
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from(chunks.concat())),
            Arc::new(TimestampMillisecondArray::new(unix_ms.clone(), None)),
            Arc::new(Int64Array::new(unix_ms, None)),
            Arc::new(UInt64Array::from(d.ticks)),
        ];
        let names = self.node_fields();
        let (node_type, node) = d.node.arrow();
        let mut named = vec![
            ("sequence", d.sequence.arrow()),
            ("node", (node_type.clone(), node.clone())),
        ];
        if let Some((a, b)) = d.split {
            named.push((names[0], a.arrow()));
            named.push((names[1], b.arrow()));
        }
        if names.contains(&"machine") {
            named.push(("machine", (node_type, node)));
        }
        for (name, (t, a)) in named {
            fields.push(Field::new(name, t, false));
            columns.push(a);
        }
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
            .map_err(|e| layout_error(py, e))?;
        crate::arrow_ffi::to_pyarrow(py, batch)
    }

    fn __str__(&self) -> String {
        self.layout.to_string()
    }

    fn __repr__(&self) -> String {
        match self.name() {
            Some(name) => format!("Layout({name:?})"),
            None => format!("Layout({:?})", self.layout.to_string()),
        }
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyLayout>()
            .is_ok_and(|o| o.get().layout == self.layout)
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{BuildHasher, BuildHasherDefault};
        BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
            .hash_one(self.layout.to_string())
    }
}
