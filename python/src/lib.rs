//! `flakeid_rs._native`: the extension module of the `flakeid` Python package (PyO3). The
//! package (`flakeid_rs/__init__.py`) re-exports it with the exception classes, the asyncio
//! helpers, the fork hook and the release at exit; `flakeid_rs/_native.pyi` types it.

mod arrow_ffi;
mod claimed;
mod columns;
mod decode;
mod errors;
mod ids;
mod layout;
mod mint;
mod values;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<layout::PyLayout>()?;
    m.add_class::<mint::PyGenerator>()?;
    m.add_class::<claimed::PyClaimed>()?;
    m.add_function(wrap_pyfunction!(claimed::claims, m)?)?;
    m.add_function(wrap_pyfunction!(mint::_after_fork_in_child, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
