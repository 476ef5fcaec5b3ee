//! Values that cross from Python into a layout and back: times (a `datetime`, a
//! `numpy.datetime64` or RFC 3339 text in; an aware UTC `datetime` out), whole numbers in
//! range, the node by the names decode shows, and one ID.

use flakeid::Layout;
use flakeid::error::Field;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

use crate::errors::{error, layout_error};

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

/// An aware UTC `datetime` of Unix milliseconds, exactly; a `LayoutError` past the last
/// time a `datetime` holds, naming the calls that hold it.
pub(crate) fn utc_datetime(py: Python<'_>, unix_ms: u64) -> PyResult<Bound<'_, PyAny>> {
    if unix_ms > DATETIME_MAX_UNIX_MS {
        return Err(layout_error(
            py,
            format!(
                "the time {} is after 9999-12-31T23:59:59.999Z, the last a Python datetime holds: use unix_ms_of(id), or decode() (numpy's datetime64 holds it)",
                flakeid::rfc3339::Timestamp(i128::from(unix_ms) * 1_000_000)
            ),
        ));
    }
    let dt = datetime(py)?;
    // timedelta(days, seconds, microseconds, milliseconds)
    let since = dt.timedelta.bind(py).call1((0, 0, 0, unix_ms))?;
    dt.epoch.bind(py).call_method1("__add__", (since,))
}

/// What `time=` takes, said when it is none of it.
const TIME_FORMS: &str = "give time as a datetime (a naive one is read as UTC), a numpy.datetime64 or an RFC 3339 string such as 2026-10-31T12:00:00Z";

/// The last millisecond a Python `datetime` holds: 9999-12-31T23:59:59.999Z.
pub(crate) const DATETIME_MAX_UNIX_MS: u64 = 253_402_300_799_999;

/// Unix nanoseconds of an instant given as `unix_ns` takes it, or as an int of Unix
/// milliseconds (a `bool` is not a time).
pub(crate) fn instant_ns(py: Python<'_>, time: &Bound<'_, PyAny>) -> PyResult<i128> {
    if time.is_instance_of::<pyo3::types::PyInt>() && !time.is_instance_of::<pyo3::types::PyBool>()
    {
        let ms: i128 = time.extract().map_err(|_| {
            layout_error(
                py,
                format!("time {time}: too large for Unix ms; {TIME_FORMS}"),
            )
        })?;
        return ms
            .checked_mul(1_000_000)
            .ok_or_else(|| layout_error(py, format!("time {ms} ms: past every layout's end")));
    }
    unix_ns(py, time)
}

/// Unix nanoseconds of `time=`: a `datetime` (a naive one read as UTC, to its
/// microsecond), a `numpy.datetime64` (to its unit) or an RFC 3339 string.
pub(crate) fn unix_ns(py: Python<'_>, time: &Bound<'_, PyAny>) -> PyResult<i128> {
    if let Ok(text) = time.extract::<String>() {
        return flakeid::rfc3339::parse(&text)
            .map_err(|e| layout_error(py, format!("time {text:?}: {e}; {TIME_FORMS}")));
    }
    let np = py.import("numpy")?;
    if time.is_instance(&np.getattr("datetime64")?)? {
        if np.call_method1("isnat", (time,))?.is_truthy()? {
            return Err(layout_error(
                py,
                format!("time is NaT (not a time): {TIME_FORMS}"),
            ));
        }
        // Nanoseconds hold the years 1678 to 2262; a later time is read in microseconds.
        let ns = time
            .call_method1("astype", ("datetime64[us]",))?
            .call_method1("astype", ("int64",))?
            .extract::<i64>()?;
        return Ok(i128::from(ns) * 1000);
    }
    if !time.hasattr("tzinfo")? || !time.hasattr("replace")? {
        return Err(layout_error(
            py,
            format!(
                "time {} is not a time: {TIME_FORMS}",
                time.repr().map(|r| r.to_string()).unwrap_or_default()
            ),
        ));
    }
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

/// A whole number argument from 0 to `max` (`name=` in messages): a Python int or a numpy
/// integer; anything else, or out of range, a `LayoutError` saying what is taken.
pub(crate) fn uint(
    py: Python<'_>,
    name: &str,
    value: &Bound<'_, PyAny>,
    max: u64,
) -> PyResult<u64> {
    match value.extract::<u64>() {
        Ok(v) if v <= max => Ok(v),
        _ => Err(layout_error(
            py,
            format!(
                "{name}={} is not in range: give an int from 0 to {max}",
                value.repr().map(|r| r.to_string()).unwrap_or_default()
            ),
        )),
    }
}

/// The node the keywords give, by the names decode shows for `layout` (`node`; the split
/// parts `datacenter`/`worker`, Discord's `worker`/`process`; Sonyflake's `machine`), or
/// `None` when none was given: the library's one rule ([`Layout::node_from`]), so every
/// field `decompose` returns is a keyword here, alone or with the others where they
/// agree. A name the layout does not have, half of a pair or fields that disagree are a
/// `LayoutError` naming what to give.
pub(crate) fn node_of_names(
    py: Python<'_>,
    layout: &Layout,
    node: Option<&Bound<'_, PyAny>>,
    named: [(Field, Option<&Bound<'_, PyAny>>); 4],
) -> PyResult<Option<u64>> {
    let fields = layout.node_fields();
    let mut given = Vec::with_capacity(5);
    for (f, value) in std::iter::once((Field::Node, node)).chain(named) {
        let Some(value) = value else { continue };
        // The widest a field can be: the node's own range (a part's range is checked by
        // the rule, which names the part).
        given.push((f, uint(py, f.name(), value, u64::MAX)?));
    }
    let accepted = accepted(layout);
    layout.node_from(&given).map_err(|e| match e {
        flakeid::Error::NotANodeField { field, .. } => layout_error(
            py,
            format!("this layout has no {field} field (its decoded IDs show {fields}): give {accepted}"),
        ),
        flakeid::Error::NodePartMissing { given, missing } => layout_error(
            py,
            format!("{given}= needs {missing}=: give both parts of the node, or {accepted}"),
        ),
        flakeid::Error::NodeFieldsDisagree { first, second } => layout_error(
            py,
            format!("{first}= and {second}= name different node ids: give one of them, or values that agree (as decompose returns them)"),
        ),
        flakeid::Error::OutOfRange { field, value, max } => layout_error(
            py,
            format!("{field}={value} is not in range: give an int from 0 to {max}"),
        ),
        e => error(py, e),
    })
}

/// The keywords that name a node of `layout`, for messages: `node=`, `datacenter= and
/// worker= together`, `machine=`.
pub(crate) fn accepted(layout: &Layout) -> String {
    let fields = layout.node_fields();
    if layout.node_bits() == 0 {
        return "no node: the layout has none".to_string();
    }
    let mut ways = vec!["node=".to_string()];
    if let Some((high, low)) = fields.parts() {
        ways.push(format!("{high}= and {low}= together"));
    }
    if fields.machine() {
        ways.push("machine=".into());
    }
    ways.join(", or ")
}

/// An ID given as a Python int: `0..2**64`, or a negative one as its 64 bits (a signed
/// database column).
pub(crate) fn id_of(id: &Bound<'_, PyAny>) -> PyResult<u64> {
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

/// A `UserWarning` when `layout` runs out within a year ([`END_WARNING`](flakeid::layout::END_WARNING)):
/// its end, the days left and what to do, as the tool and the service say it.
pub(crate) fn warn_if_ending(py: Python<'_>, layout: &Layout) -> PyResult<()> {
    let now = i128::from(flakeid::Clock::unix_ns(&flakeid::clock::SystemClock));
    let Some(text) = flakeid_text::layout::ending_text(layout, flakeid::layout::END_WARNING, now)
    else {
        return Ok(());
    };
    let text = std::ffi::CString::new(text).unwrap_or_default();
    let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
    PyErr::warn(py, category.as_any(), &text, 1)
}
