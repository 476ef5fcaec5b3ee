//! IDs in from Python, as one `&[u64]` the decoder reads with the GIL released: a numpy
//! array of `uint64` or `int64` (read in place; a signed ID is the same 64 bits, as
//! databases store them), an Arrow array or chunked array (pyarrow, polars: read through
//! the Arrow C data interface), or any iterable of ints (copied; a negative int is read as
//! its 64-bit two's complement).

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt64Type};
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use numpy::{PyReadonlyArray1, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;

use crate::errors::layout_error;

/// IDs as the decoder reads them.
pub(crate) enum Ids<'py> {
    /// A contiguous numpy `uint64` array, read in place.
    Unsigned(PyReadonlyArray1<'py, u64>),
    /// A contiguous numpy `int64` array, read in place as the same bits.
    Signed(PyReadonlyArray1<'py, i64>),
    /// Copied: from a list, a strided array, another integer type, Arrow chunks.
    Owned(Vec<u64>),
    /// One Arrow `uint64` or `int64` array without nulls, read in place.
    Arrow(ArrayRef),
    /// The chunks of an Arrow chunked array (what Parquet gives), each read in place.
    Chunked(Vec<ArrayRef>),
}

/// An Arrow `uint64` or `int64` array's values as IDs.
fn arrow_values(a: &ArrayRef) -> &[u64] {
    match a.data_type() {
        DataType::UInt64 => a.as_primitive::<UInt64Type>().values(),
        _ => bytemuck::cast_slice(a.as_primitive::<Int64Type>().values()),
    }
}

impl Ids<'_> {
    /// The IDs, chunk after chunk (one chunk but for an Arrow chunked array).
    pub(crate) fn chunks(&self) -> Vec<&[u64]> {
        match self {
            // Contiguous: checked when read.
            Ids::Unsigned(a) => vec![a.as_slice().unwrap_or_default()],
            Ids::Signed(a) => vec![bytemuck::cast_slice(a.as_slice().unwrap_or_default())],
            Ids::Owned(v) => vec![v],
            Ids::Arrow(a) => vec![arrow_values(a)],
            Ids::Chunked(chunks) => chunks.iter().map(arrow_values).collect(),
        }
    }
}

/// What the ids may be, said when they are none of it.
const EXPECTED: &str = "give the IDs as a numpy array of integers (uint64 and int64 are read in place, other integer types and byte orders converted), an Arrow array of uint64 or int64 (pyarrow, polars), or a list of ints";

/// The IDs of `obj`.
pub(crate) fn read<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Ids<'py>> {
    let py = obj.py();
    if let Ok(array) = obj.cast::<PyUntypedArray>() {
        if array.ndim() != 1 {
            return Err(layout_error(
                py,
                format!(
                    "the IDs are a {}-dimensional array: {EXPECTED}",
                    array.ndim()
                ),
            ));
        }
        // A view whose data is not 8-byte aligned (a slice of a byte buffer) cannot be read
        // as u64s in place: numpy copies it into an aligned array first.
        if !array.getattr("flags")?.getattr("aligned")?.is_truthy()? {
            let kind: String = array.dtype().getattr("kind")?.extract()?;
            if kind == "u" || kind == "i" {
                return read(&obj.call_method1("astype", ("=u8",))?);
            }
        }
        if let Ok(a) = obj.extract::<PyReadonlyArray1<'py, u64>>() {
            if a.as_slice().is_ok() {
                return Ok(Ids::Unsigned(a));
            }
            return Ok(Ids::Owned(a.as_array().iter().copied().collect()));
        }
        if let Ok(a) = obj.extract::<PyReadonlyArray1<'py, i64>>() {
            if a.as_slice().is_ok() {
                return Ok(Ids::Signed(a));
            }
            return Ok(Ids::Owned(a.as_array().iter().map(|&v| v as u64).collect()));
        }
        let dtype = array.dtype();
        let kind: String = dtype.getattr("kind")?.extract()?;
        match kind.as_str() {
            // Python objects (a pandas nullable column without pyarrow): read one by one,
            // so a missing value is named with its index.
            "O" => return listed(obj),
            // Another integer type or byte order (uint32, int16, >u8, ...): numpy converts
            // it to native uint64 (a negative value keeps its 64 bits, as int64 does).
            "u" | "i" if dtype.to_string() != "uint64" => {
                let converted = obj.call_method1("astype", ("=u8",))?;
                return read(&converted);
            }
            _ => {
                return Err(layout_error(
                    py,
                    format!("the IDs are a numpy array of {dtype}: {EXPECTED}"),
                ));
            }
        }
    }
    if let Some(array) = numpy_integers(obj)? {
        return read(&array);
    }
    if obj.hasattr("__arrow_c_array__")? {
        match crate::arrow_ffi::import_array(obj) {
            Ok(array) => return arrow(py, array),
            Err(e) if !without_pyarrow(py, &e) => return Err(e),
            Err(_) => return numpy_instead(obj),
        }
    }
    if obj.hasattr("__arrow_c_stream__")? {
        let chunked = match crate::arrow_ffi::import_stream(obj) {
            Ok(chunked) => chunked,
            Err(e) if !without_pyarrow(py, &e) => return Err(e),
            Err(_) => return numpy_instead(obj),
        };
        let mut chunks = Vec::with_capacity(chunked.len());
        let mut at = 0;
        for chunk in &chunked {
            // A null's index counts from the column's start.
            arrow(py, chunk.clone()).map_err(|e| match first_null(chunk) {
                Some(i) => null_error(py, at + i),
                None => e,
            })?;
            at += chunk.len();
            chunks.push(chunk.clone());
        }
        return Ok(Ids::Chunked(chunks));
    }
    listed(obj)
}

/// A column with numpy's protocol and a numpy integer dtype (a pandas `Series` or `Index`
/// of `int64`/`uint64`) as the ndarray it views, read in place; `None` for anything else.
fn numpy_integers<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = obj.py();
    if !obj.hasattr("__array__")? || !obj.hasattr("dtype")? {
        return Ok(None);
    }
    let np = py.import("numpy")?;
    let integer = np
        .call_method1(
            "issubdtype",
            (obj.getattr("dtype")?, np.getattr("integer")?),
        )
        .and_then(|b| b.extract::<bool>())
        .unwrap_or(false);
    match integer {
        true => Ok(Some(np.call_method1("asarray", (obj,))?)),
        false => Ok(None),
    }
}

/// Whether reading through the Arrow protocol failed because the object's library needs
/// pyarrow for it and pyarrow is not installed (pandas does).
fn without_pyarrow(py: Python<'_>, e: &PyErr) -> bool {
    e.is_instance_of::<pyo3::exceptions::PyImportError>(py)
}

/// The object as numpy gives it, for a column whose Arrow export needs a missing pyarrow.
fn numpy_instead<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Ids<'py>> {
    let py = obj.py();
    let np = py.import("numpy")?;
    if obj.hasattr("isna")? {
        // A pandas nullable column: numpy would turn its missing values into floats.
        let missing = np.call_method1("flatnonzero", (obj.call_method0("isna")?,))?;
        if let Ok(Some(i)) = missing
            .call_method0("tolist")?
            .extract::<Vec<usize>>()
            .map(|v| v.first().copied())
        {
            return Err(layout_error(
                py,
                format!(
                    "the ID at index {i} is missing: drop or fill the missing values first (e.g. .dropna())"
                ),
            ));
        }
    }
    read(&np.call_method1("asarray", (obj,))?)
}

/// Any iterable of ints, copied.
fn listed<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Ids<'py>> {
    let py = obj.py();
    let mut ids = Vec::new();
    for (i, item) in obj
        .try_iter()
        .map_err(|_| layout_error(py, EXPECTED))?
        .enumerate()
    {
        let item = item?;
        let id = match item.extract::<u64>() {
            Ok(v) => v,
            Err(_) => match item.extract::<i64>() {
                Ok(v) => v as u64,
                Err(_) => {
                    return Err(layout_error(
                        py,
                        format!(
                            "the ID at index {i} ({}) is not an integer of 64 bits: give ints from -2**63 to 2**64-1",
                            item.repr().map(|r| r.to_string()).unwrap_or_default()
                        ),
                    ));
                }
            },
        };
        ids.push(id);
    }
    Ok(Ids::Owned(ids))
}

/// An Arrow array's IDs: `uint64` or `int64`, no nulls.
fn arrow<'py>(py: Python<'py>, array: ArrayRef) -> PyResult<Ids<'py>> {
    if !matches!(array.data_type(), DataType::UInt64 | DataType::Int64) {
        return Err(layout_error(
            py,
            format!(
                "the IDs are an Arrow array of {}: {EXPECTED}",
                array.data_type()
            ),
        ));
    }
    if let Some(i) = first_null(&array) {
        return Err(null_error(py, i));
    }
    Ok(Ids::Arrow(array))
}

/// The index of an Arrow array's first null.
fn first_null(array: &ArrayRef) -> Option<usize> {
    let nulls = array.nulls().filter(|n| n.null_count() > 0)?;
    (0..array.len()).find(|&i| nulls.is_null(i))
}

fn null_error(py: Python<'_>, i: usize) -> PyErr {
    layout_error(
        py,
        format!(
            "the ID at index {i} is null: drop or fill the nulls first (e.g. pyarrow.compute.drop_null)"
        ),
    )
}
