//! The Arrow C data interface through Python's PyCapsule protocol, by hand: an array
//! (`__arrow_c_array__`) or a stream of them (`__arrow_c_stream__`, a chunked array) from any
//! library that exports one (pyarrow, polars, pandas, DuckDB), and a record batch out to
//! pyarrow. A binding crate for this brought Arrow's casting, selection and ordering
//! kernels into the extension (3 MB of its 13.5), none of which it uses.

use std::ffi::CStr;

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema, from_ffi, to_ffi};
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{Array, ArrayRef, RecordBatch, StructArray, make_array};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

const SCHEMA: &CStr = c"arrow_schema";
const ARRAY: &CStr = c"arrow_array";
const STREAM: &CStr = c"arrow_array_stream";

fn invalid(what: &str, e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("{what}: {e}"))
}

/// The array `obj` exports with `__arrow_c_array__`.
#[allow(unsafe_code)] // FFI: the Arrow C data interface
pub(crate) fn import_array(obj: &Bound<'_, PyAny>) -> PyResult<ArrayRef> {
    let pair = obj.call_method0("__arrow_c_array__")?;
    let schema = pair.get_item(0)?.cast_into::<PyCapsule>()?;
    let array = pair.get_item(1)?.cast_into::<PyCapsule>()?;
    let schema = schema
        .pointer_checked(Some(SCHEMA))?
        .cast::<FFI_ArrowSchema>();
    let array = array.pointer_checked(Some(ARRAY))?.cast::<FFI_ArrowArray>();
    // SAFETY: capsules of these names hold an ArrowSchema and an ArrowArray (the protocol's
    // contract, checked by name above) that live as long as the capsules, which `pair`
    // keeps. `from_raw` moves the array out and marks the capsule's copy released, so its
    // destructor frees nothing twice; the schema is only read.
    let data = unsafe { from_ffi(FFI_ArrowArray::from_raw(array.as_ptr()), schema.as_ref()) }
        .map_err(|e| invalid("an Arrow array that cannot be read", e))?;
    Ok(make_array(data))
}

/// The arrays of the stream `obj` exports with `__arrow_c_stream__` (a chunked array's
/// chunks), in order.
#[allow(unsafe_code)] // FFI: the Arrow C data interface
pub(crate) fn import_stream(obj: &Bound<'_, PyAny>) -> PyResult<Vec<ArrayRef>> {
    let capsule = obj
        .call_method0("__arrow_c_stream__")?
        .cast_into::<PyCapsule>()?;
    let raw = capsule
        .pointer_checked(Some(STREAM))?
        .cast::<FFI_ArrowArrayStream>();
    // SAFETY: a capsule of this name holds an ArrowArrayStream (checked by name). `from_raw`
    // moves it out and marks the capsule's copy released; the stream is released when
    // `stream` drops.
    let mut stream = unsafe { FFI_ArrowArrayStream::from_raw(raw.as_ptr()) };
    let (Some(get_schema), Some(get_next)) = (stream.get_schema, stream.get_next) else {
        return Err(invalid("an Arrow stream", "it has no callbacks"));
    };
    let mut schema = FFI_ArrowSchema::empty();
    // SAFETY: the stream's own callback, given the stream and a schema for it to fill.
    if unsafe { get_schema(&mut stream, &mut schema) } != 0 {
        return Err(invalid("an Arrow stream", last_error(&mut stream)));
    }
    let mut chunks = Vec::new();
    loop {
        let mut array = FFI_ArrowArray::empty();
        // SAFETY: the stream's own callback, given the stream and an array for it to fill.
        if unsafe { get_next(&mut stream, &mut array) } != 0 {
            return Err(invalid("an Arrow stream", last_error(&mut stream)));
        }
        // The end of the stream: an array left released.
        if array.is_released() {
            return Ok(chunks);
        }
        // SAFETY: an array the stream produced, of the schema it gave.
        let data = unsafe { from_ffi(array, &schema) }
            .map_err(|e| invalid("an Arrow stream's array that cannot be read", e))?;
        chunks.push(make_array(data));
    }
}

/// The stream's message for its last failed call.
#[allow(unsafe_code)] // FFI: the Arrow C data interface
fn last_error(stream: &mut FFI_ArrowArrayStream) -> String {
    let Some(get_last_error) = stream.get_last_error else {
        return "it failed and says no more".into();
    };
    // SAFETY: the stream's own callback; it returns null or a string it owns until the
    // stream's next call, copied out here at once.
    let text = unsafe { get_last_error(stream) };
    if text.is_null() {
        return "it failed and says no more".into();
    }
    // SAFETY: not null: a NUL-terminated string the stream owns (above).
    unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

/// `batch` as a `pyarrow.RecordBatch`, handed over through the C data interface.
pub(crate) fn to_pyarrow<'py>(py: Python<'py>, batch: RecordBatch) -> PyResult<Bound<'py, PyAny>> {
    let data = StructArray::from(batch).into_data();
    let (array, schema) = to_ffi(&data).map_err(|e| invalid("a record batch", e))?;
    // The capsules own the structs: pyarrow moves them out (marking them released), and a
    // capsule dropped unread releases its struct by the struct's own `Drop`.
    let schema = PyCapsule::new_with_value(py, schema, SCHEMA)?;
    let array = PyCapsule::new_with_value(py, array, ARRAY)?;
    py.import("pyarrow")?
        .getattr("RecordBatch")?
        .call_method1("_import_from_c_capsule", (schema, array))
}
