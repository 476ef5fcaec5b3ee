//! The library's errors as the package's Python exceptions (`flakeid_rs/_errors.py`):
//! `LayoutError` (a layout, a value or an ID that does not fit), `MintError` (with
//! `retry_after`, seconds or `None`), `ClaimError` (with `kind`), `ForkError`.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

use flakeid::MintError;
use flakeid::claim::ClaimError;

/// An exception class of `flakeid_rs._errors`, looked up once.
fn class<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyType>>,
    name: &str,
) -> PyResult<Bound<'py, PyType>> {
    cell.get_or_try_init(py, || {
        let module = py.import("flakeid_rs._errors")?;
        Ok::<_, PyErr>(module.getattr(name)?.cast_into::<PyType>()?.unbind())
    })
    .map(|c| c.bind(py).clone())
}

/// Makes the exception `name` with `message`, and `attrs` set on it.
fn raise(
    py: Python<'_>,
    cell: &'static PyOnceLock<Py<PyType>>,
    name: &str,
    message: String,
    attrs: &[(&str, Bound<'_, PyAny>)],
) -> PyErr {
    match class(py, cell, name).and_then(|c| c.call1((message,))) {
        Ok(e) => {
            for (k, v) in attrs {
                if let Err(err) = e.setattr(*k, v) {
                    return err;
                }
            }
            PyErr::from_value(e)
        }
        Err(e) => e,
    }
}

static LAYOUT: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static MINT: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static CLAIM: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static FORK: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// A layout, a value or an ID that does not fit: `LayoutError` (also a `ValueError`).
pub(crate) fn layout_error(py: Python<'_>, message: impl std::fmt::Display) -> PyErr {
    raise(py, &LAYOUT, "LayoutError", message.to_string(), &[])
}

/// The library's general error, by what it is about: a mint failure is a `MintError`,
/// everything else a `LayoutError` (settings or input that do not fit).
pub(crate) fn error(py: Python<'_>, e: flakeid::Error) -> PyErr {
    match e {
        flakeid::Error::Mint(m) => mint_error(py, m),
        e => layout_error(py, e),
    }
}

/// `MintError`, with `retry_after` in seconds (`None` when a retry cannot help).
pub(crate) fn mint_error(py: Python<'_>, e: MintError) -> PyErr {
    let retry = match e.retry_after() {
        Some(d) => pyo3::types::PyFloat::new(py, d.as_secs_f64()).into_any(),
        None => py.None().into_bound(py),
    };
    raise(
        py,
        &MINT,
        "MintError",
        e.to_string(),
        &[("retry_after", retry)],
    )
}

/// `ClaimError`, with `kind`: `settings`, `unavailable`, `busy`, `not_owner`, `access`,
/// `corrupt` or `cancelled`: what to do about it.
pub(crate) fn claim_error(py: Python<'_>, e: ClaimError) -> PyErr {
    let kind = e.kind().name();
    let kind = pyo3::types::PyString::new(py, kind).into_any();
    // Where the library says "apart from the URL", Python's word for it.
    let message = match e {
        ClaimError::PasswordInUrl { .. } | ClaimError::NoPassword { .. } => {
            format!("{e} (here: the password= argument)")
        }
        e => e.to_string(),
    };
    raise(py, &CLAIM, "ClaimError", message, &[("kind", kind)])
}

/// `ForkError`: a generator or claim made before this process forked.
pub(crate) fn fork_error(py: Python<'_>, what: &str, pid: u32) -> PyErr {
    raise(
        py,
        &FORK,
        "ForkError",
        format!(
            "this {what} was made in process {pid}, before a fork: in the child it could mint IDs its parent mints too, so it refuses; make a new one in the child (a claim of its own for a claimed generator)"
        ),
        &[],
    )
}

/// `ClaimError` of kind `released`: minting on a claim after `release()`.
pub(crate) fn released_error(py: Python<'_>, node: u64) -> PyErr {
    let kind = pyo3::types::PyString::new(py, "released").into_any();
    raise(
        py,
        &CLAIM,
        "ClaimError",
        format!(
            "the claim on node {node} was released: nothing is minted on it any more; claim again with flakeid_rs.claim"
        ),
        &[("kind", kind)],
    )
}
