//! `flakeid.Layout`: a bit layout (every preset and custom layout string the tool
//! accepts), its facts, `compose` / `decompose` / `time_of`, and batch decoding into numpy
//! columns (`decode`) or an Arrow record batch (`decode_arrow`) by the SIMD decoder, with
//! the GIL released.

use std::sync::{Arc, OnceLock};

use arrow_array::{
    ArrayRef, Int64Array, RecordBatch, TimestampMillisecondArray, UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use flakeid::Layout;
use flakeid::decode::{Columns, Decoder, NarrowColumns};
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};

use crate::columns;
use crate::errors::{error, layout_error};
use crate::ids::{self, Ids};

/// A bit layout of 64-bit IDs: how time, sequence and node share the bits, the length of a
/// tick, the epoch. `Layout("snowflake")`, `Layout("seq=12,node=10,epoch=2024-01-01T00:00:00Z")`
/// or a preset's method (`Layout.discord()`).
#[pyclass(frozen, module = "flakeid._native", name = "Layout")]
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

    fn decoder(&self) -> &Decoder {
        self.decoder.get_or_init(|| Decoder::new(&self.layout))
    }

    /// The names of the node's parts: `(datacenter, worker)`, Discord's `(worker, process)`,
    /// Sonyflake's `(machine,)`, or none.
    fn node_fields(&self) -> Vec<&'static str> {
        let f = flakeid_text::NodeFields::of(&self.layout);
        let mut names = Vec::new();
        if f.datacenter_worker {
            names.extend([f.split_names.0, f.split_names.1]);
        }
        if f.machine {
            names.push("machine");
        }
        names
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

/// Python's `datetime` pieces, looked up once: the class, UTC, the Unix epoch as an aware
/// `datetime`, `timedelta`.
struct DateTime {
    utc: Py<PyAny>,
    epoch: Py<PyAny>,
    timedelta: Py<PyAny>,
}

fn datetime(py: Python<'_>) -> PyResult<&DateTime> {
    static CELL: PyOnceLock<DateTime> = PyOnceLock::new();
    CELL.get_or_try_init(py, || {
        let m = py.import("datetime")?;
        let utc = m.getattr("timezone")?.getattr("utc")?;
        let epoch = m
            .getattr("datetime")?
            .call1((1970, 1, 1, 0, 0, 0, 0, &utc))?;
        Ok::<_, PyErr>(DateTime {
            utc: utc.unbind(),
            epoch: epoch.unbind(),
            timedelta: m.getattr("timedelta")?.unbind(),
        })
    })
}

/// An aware UTC `datetime` of Unix milliseconds, exactly.
fn utc_datetime(py: Python<'_>, unix_ms: u64) -> PyResult<Bound<'_, PyAny>> {
    let dt = datetime(py)?;
    // timedelta(days, seconds, microseconds, milliseconds)
    let since = dt.timedelta.bind(py).call1((0, 0, 0, unix_ms))?;
    dt.epoch.bind(py).call_method1("__add__", (since,))
}

/// Unix nanoseconds of a `datetime` (a naive one read as UTC), to its microsecond.
fn unix_ns(py: Python<'_>, time: &Bound<'_, PyAny>) -> PyResult<i128> {
    let dt = datetime(py)?;
    let aware = if time.getattr("tzinfo")?.is_none() {
        let kw = PyDict::new(py);
        kw.set_item("tzinfo", dt.utc.bind(py))?;
        time.call_method("replace", (), Some(&kw))?
    } else {
        time.clone()
    };
    let delta = aware.call_method1("__sub__", (dt.epoch.bind(py),))?;
    let micro = dt.timedelta.bind(py).call1((0, 0, 1))?;
    let micros: i64 = delta.call_method1("__floordiv__", (micro,))?.extract()?;
    Ok(i128::from(micros) * 1000)
}

/// An ID given as a Python int: `0..2**64`, or a negative one as its 64 bits (a signed
/// database column).
fn id_of(id: &Bound<'_, PyAny>) -> PyResult<u64> {
    match id.extract::<u64>() {
        Ok(v) => Ok(v),
        Err(_) => id.extract::<i64>().map(|v| v as u64).map_err(|_| {
            layout_error(
                id.py(),
                format!(
                    "{} is not an ID: give an int from -2**63 to 2**64-1",
                    id.repr().map(|r| r.to_string()).unwrap_or_default()
                ),
            )
        }),
    }
}

/// The first ID of `ids` that does not fit `layout`, with its index.
fn first_misfit(py: Python<'_>, layout: &Layout, ids: &[u64]) -> PyErr {
    match ids.iter().position(|&id| id > layout.max_id()) {
        Some(i) => layout_error(
            py,
            format!(
                "the ID at index {i} ({}) does not fit the layout {layout}: its bits above the layout's {} are set; decode IDs of this layout (a signed column's negative values are IDs of 64-bit layouts only)",
                ids[i],
                layout.bits()
            ),
        ),
        None => layout_error(py, "an ID does not fit the layout"),
    }
}

/// The columns of a decode, filled with the GIL released.
struct Decoded {
    ticks: Vec<u64>,
    unix_ms: Vec<u64>,
    sequence: Column,
    node: Column,
    /// The node's two parts, when the layout splits it.
    split: Option<(Vec<u32>, Vec<u32>)>,
}

/// A sequence or node column: `uint32` where the field fits 32 bits (every preset).
enum Column {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl PyLayout {
    /// Decodes `ids` into columns with the GIL released; the first bad ID is an error
    /// naming its index.
    fn decode_columns(&self, py: Python<'_>, ids: &[u64]) -> PyResult<Decoded> {
        let layout = self.layout;
        let decoder = self.decoder();
        let narrow = layout.sequence_bits() <= 32 && layout.node_bits() <= 32;
        let split = layout.datacenter_bits() > 0;
        let n = ids.len();
        let result = py.detach(|| {
            let mut ticks = columns::zeroed_u64(n);
            let mut unix_ms = columns::zeroed_u64(n);
            let (sequence, node, decoded) = if narrow {
                let (mut s, mut d) = (columns::zeroed_u32(n), columns::zeroed_u32(n));
                let r = decoder.decode_narrow(
                    ids,
                    NarrowColumns {
                        ticks: Some(&mut ticks),
                        unix_ms: Some(&mut unix_ms),
                        sequence: Some(&mut s),
                        node: Some(&mut d),
                    },
                );
                (Column::Narrow(s), Column::Narrow(d), r)
            } else {
                let (mut s, mut d) = (columns::zeroed_u64(n), columns::zeroed_u64(n));
                let r = decoder.decode(
                    ids,
                    Columns {
                        ticks: Some(&mut ticks),
                        unix_ms: Some(&mut unix_ms),
                        sequence: Some(&mut s),
                        node: Some(&mut d),
                    },
                );
                (Column::Wide(s), Column::Wide(d), r)
            };
            let split = match (&node, split) {
                (Column::Narrow(d), true) => {
                    let (mut high, mut low) = (columns::zeroed_u32(n), columns::zeroed_u32(n));
                    for ((&v, h), l) in d.iter().zip(&mut high).zip(&mut low) {
                        // Both parts fit 32 bits: the node does.
                        let (a, b) = layout.split_node(u64::from(v));
                        (*h, *l) = (a as u32, b as u32);
                    }
                    Some((high, low))
                }
                _ => None,
            };
            decoded.map(|()| Decoded {
                ticks,
                unix_ms,
                sequence,
                node,
                split,
            })
        });
        match result {
            Ok(d) => Ok(d),
            Err(flakeid::Error::IdOutOfLayout { .. }) => Err(first_misfit(py, &layout, ids)),
            Err(e) => Err(error(py, e)),
        }
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

    /// The most IDs one node mints in a second.
    #[getter]
    fn ids_per_second_per_node(&self) -> f64 {
        self.layout.ids_per_second_per_node()
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

    /// The ID of `ticks` (or of the tick `time`, a `datetime`, falls in), `sequence` and
    /// `node` (or its parts, `datacenter` and `worker`).
    #[pyo3(signature = (ticks=None, *, time=None, sequence=0, node=None, datacenter=None, worker=None))]
    #[allow(clippy::too_many_arguments)]
    fn compose(
        &self,
        py: Python<'_>,
        ticks: Option<u64>,
        time: Option<&Bound<'_, PyAny>>,
        sequence: u64,
        node: Option<u64>,
        datacenter: Option<u64>,
        worker: Option<u64>,
    ) -> PyResult<u64> {
        let l = &self.layout;
        let ticks = match (ticks, time) {
            (Some(t), None) => t,
            (None, Some(time)) => l.ticks_at(unix_ns(py, time)?).map_err(|e| error(py, e))?,
            _ => return Err(layout_error(py, "give ticks or time, one of them")),
        };
        let node = match (node, datacenter, worker) {
            (Some(n), None, None) => n,
            (None, Some(d), Some(w)) => l.node_of(d, w).map_err(|e| error(py, e))?,
            (None, None, None) => 0,
            _ => {
                return Err(layout_error(
                    py,
                    "give node, or datacenter and worker together",
                ));
            }
        };
        l.compose(ticks, sequence, node).map_err(|e| error(py, e))
    }

    /// The fields of one ID: `ticks`, `sequence`, `node`, `unix_ms`, `time` (an aware
    /// UTC `datetime`) and the node's named parts. A negative int is read as its 64 bits.
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
        d.set_item("time", utc_datetime(py, unix_ms)?)?;
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

    /// When `id` was minted: the start of its tick, an aware UTC `datetime` (to the
    /// millisecond).
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

    /// Decodes a column of IDs (a numpy `uint64`/`int64` array, read in place; an Arrow
    /// array; a list) into numpy columns with the SIMD decoder, the GIL released:
    /// `time` (`datetime64[ms]`), `unix_ms` (`int64`), `ticks` (`uint64`), `sequence` and
    /// `node` (`uint32` where they fit), and the node's named parts. An ID that does not
    /// fit the layout is a `LayoutError` naming its index.
    fn decode<'py>(
        &self,
        py: Python<'py>,
        ids: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let ids: Ids<'py> = ids::read(ids)?;
        let d = self.decode_columns(py, ids.as_slice())?;
        let out = PyDict::new(py);
        let unix_ms = PyArray1::from_vec(py, bytemuck::allocation::cast_vec::<u64, i64>(d.unix_ms));
        out.set_item("time", unix_ms.call_method1("view", ("datetime64[ms]",))?)?;
        out.set_item("unix_ms", &unix_ms)?;
        out.set_item("ticks", PyArray1::from_vec(py, d.ticks))?;
        let node = match d.node {
            Column::Narrow(v) => PyArray1::from_vec(py, v).into_any(),
            Column::Wide(v) => PyArray1::from_vec(py, v).into_any(),
        };
        match d.sequence {
            Column::Narrow(v) => out.set_item("sequence", PyArray1::from_vec(py, v))?,
            Column::Wide(v) => out.set_item("sequence", PyArray1::from_vec(py, v))?,
        }
        out.set_item("node", &node)?;
        let names = self.node_fields();
        if let Some((a, b)) = d.split {
            out.set_item(names[0], PyArray1::from_vec(py, a))?;
            out.set_item(names[1], PyArray1::from_vec(py, b))?;
        }
        if names.contains(&"machine") {
            out.set_item("machine", &node)?;
        }
        Ok(out)
    }

    /// [`decode`](Layout.decode) into a `pyarrow.RecordBatch` (through the Arrow C data
    /// interface, no copy): `id`, `time` (timestamp[ms, UTC]), `unix_ms`, `ticks`,
    /// `sequence`, `node` and the node's named parts. Needs pyarrow.
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
        let slice = ids.as_slice();
        let d = self.decode_columns(py, slice)?;
        let unix_ms =
            arrow_buffer::ScalarBuffer::from(bytemuck::allocation::cast_vec::<u64, i64>(d.unix_ms));
        let mut fields = vec![
            Field::new("id", DataType::UInt64, false),
            Field::new(
                "time",
                DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
                false,
            ),
            Field::new("unix_ms", DataType::Int64, false),
            Field::new("ticks", DataType::UInt64, false),
        ];
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from(slice.to_vec())),
            Arc::new(TimestampMillisecondArray::new(unix_ms.clone(), None).with_timezone("UTC")),
            Arc::new(Int64Array::new(unix_ms, None)),
            Arc::new(UInt64Array::from(d.ticks)),
        ];
        for (name, column) in [("sequence", d.sequence), ("node", d.node)] {
            let (t, a): (DataType, ArrayRef) = match column {
                Column::Narrow(v) => (DataType::UInt32, Arc::new(UInt32Array::from(v))),
                Column::Wide(v) => (DataType::UInt64, Arc::new(UInt64Array::from(v))),
            };
            fields.push(Field::new(name, t, false));
            columns.push(a);
        }
        let names = self.node_fields();
        if let Some((a, b)) = d.split {
            for (name, v) in [(names[0], a), (names[1], b)] {
                fields.push(Field::new(name, DataType::UInt32, false));
                columns.push(Arc::new(UInt32Array::from(v)));
            }
        }
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
            .map_err(|e| layout_error(py, e))?;
        pyo3_arrow::PyRecordBatch::new(batch).into_pyarrow(py)
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
