//! `flakeid_rs.ClaimedGenerator` (`flakeid_rs.claim`): minting on a node id claimed from a
//! store and fenced, released with the object, at fork and at exit; and `flakeid_rs.claims`,
//! what a store holds. Stores are opened through `flakeid_stores::open`.

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwapOption;
use flakeid::claim::{self, ClaimError, ClaimStore, ClaimedGenerator, Claims, OpenOptions, Secret};
use flakeid::clock::MonotonicClock;
use flakeid::{Generator, Layout};
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors::claim_error;
use crate::layout::PyLayout;

use crate::mint::{Born, MintCalls, seconds};

/// A generator on a node id claimed from a store and fenced (see `flakeid_rs.claim`): it
/// mints only inside the window the store accepted, renewed in the background; released
/// by `release()`, at the end of a `with` block, when it is collected, and at exit.
#[pyclass(
    frozen,
    subclass,
    module = "flakeid_rs._native",
    name = "ClaimedGenerator"
)]
pub(crate) struct PyClaimed {
    g: ArcSwapOption<ClaimedGenerator<MonotonicClock>>,
    layout: Layout,
    node: u64,
    max_wait: Duration,
    born: Born,
}

impl Drop for PyClaimed {
    fn drop(&mut self) {
        self.leave_if_forked();
    }
}

/// Opens the store `url` names, through the one composition of every store.
pub(crate) fn open(url: &str, options: &OpenOptions) -> Result<Arc<dyn ClaimStore>, ClaimError> {
    flakeid_stores::open(url, options)
}

/// The store's options: a password (the URL's `user=`), a lease TTL.
fn options(py: Python<'_>, password: Option<String>, ttl: Option<f64>) -> PyResult<OpenOptions> {
    let mut o = OpenOptions::default();
    if let Some(p) = password {
        o = o.password(Secret::new(p));
    }
    if let Some(ttl) = ttl {
        o = o.ttl(seconds(py, "ttl", ttl)?);
    }
    Ok(o)
}

impl PyClaimed {
    /// In a forked child, lets go of its copy of the parent's claim without releasing it
    /// (that would end the parent's lease and let another holder take the id), so it is
    /// neither released nor minted on here; whether it did.
    fn leave_if_forked(&self) -> bool {
        let forked = self.born.forked();
        if forked {
            std::mem::forget(self.g.swap(None));
        }
        forked
    }

    /// The claimed generator to mint with, unless the process forked or it was released.
    fn minting(&self, py: Python<'_>) -> PyResult<Arc<ClaimedGenerator<MonotonicClock>>> {
        self.born.check(py, "claimed generator")?;
        self.g
            .load_full()
            .ok_or_else(|| crate::errors::released_error(py, self.node))
    }
}

#[pymethods]
impl PyClaimed {
    #[new]
    #[pyo3(signature = (url, *, namespace="default", nodes=None, layout=None, window=5.0, ttl=None, instance=None, pool_wait=None, password=None, max_wait=0.1))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        url: &str,
        namespace: &str,
        nodes: Option<(u64, u64)>,
        layout: Option<PyRef<'_, PyLayout>>,
        window: f64,
        ttl: Option<f64>,
        instance: Option<String>,
        pool_wait: Option<f64>,
        password: Option<String>,
        max_wait: f64,
    ) -> PyResult<PyClaimed> {
        let layout = layout.map_or_else(Layout::snowflake, |l| l.layout);
        let options = options(py, password, ttl)?;
        let window = seconds(py, "window", window)?;
        let max_wait = seconds(py, "max_wait", max_wait)?;
        let pool_wait = pool_wait.map(|w| seconds(py, "pool_wait", w)).transpose()?;
        let url = url.to_string();
        let namespace = namespace.to_string();
        let built = py.detach(move || {
            let mut claims = Claims::new(open(&url, &options)?)
                .namespace(namespace)
                .window(window);
            if let Some((start, end)) = nodes {
                claims = claims.nodes(start..end);
            }
            if let Some(i) = instance {
                claims = claims.instance(i);
            }
            if let Some(w) = pool_wait {
                claims = claims.pool_wait(w);
            }
            Generator::builder(layout)
                .clock(MonotonicClock::new())
                .max_wait(max_wait)
                .build_claimed(claims)
        });
        let g = built.map_err(|e| claim_error(py, e))?;
        crate::values::warn_if_ending(py, &layout)?;
        Ok(PyClaimed {
            layout,
            node: g.node(),
            max_wait,
            g: ArcSwapOption::from_pointee(g),
            born: Born::now(),
        })
    }

    /// The layout.
    #[getter]
    fn layout(&self) -> PyLayout {
        PyLayout::of(self.layout)
    }

    /// The node id claimed.
    #[getter]
    fn node(&self) -> u64 {
        self.node
    }

    /// The bound on one call's waits, in seconds.
    #[getter]
    fn max_wait(&self) -> f64 {
        self.max_wait.as_secs_f64()
    }

    /// Whether the claim was released (nothing is minted after).
    #[getter]
    fn released(&self) -> bool {
        self.g.load().is_none()
    }

    fn next_id(&self, py: Python<'_>) -> PyResult<u64> {
        let g = self.minting(py)?;
        MintCalls { g: &g, py }.next_id()
    }

    fn try_next_id(&self, py: Python<'_>) -> PyResult<u64> {
        let g = self.minting(py)?;
        MintCalls { g: &g, py }.try_next_id()
    }

    fn next_ids<'py>(
        &self,
        py: Python<'py>,
        n: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let g = self.minting(py)?;
        MintCalls { g: &g, py }.next_ids(n)
    }

    fn try_next_ids<'py>(
        &self,
        py: Python<'py>,
        n: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let g = self.minting(py)?;
        MintCalls { g: &g, py }.try_next_ids(n)
    }

    /// The claim's state: `store`, `namespace`, `node`, `instance`, `state`, `fenced`,
    /// `not_before_unix_ns`, `reserved_until_unix_ns`, `fence_left` (seconds),
    /// `renewals`, `failures`, `last_error`.
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let g = self.g.load();
        let d = PyDict::new(py);
        let Some(g) = g.as_ref() else {
            d.set_item("node", self.node)?;
            d.set_item("state", "released")?;
            return Ok(d);
        };
        let s = g.claim_status();
        d.set_item("store", s.store)?;
        d.set_item("namespace", s.namespace)?;
        d.set_item("node", s.node)?;
        d.set_item("instance", s.instance)?;
        d.set_item("state", s.state.to_string())?;
        d.set_item("fenced", s.fenced)?;
        d.set_item("not_before_unix_ns", s.not_before_unix_ns)?;
        d.set_item("reserved_until_unix_ns", s.reserved_until_unix_ns)?;
        d.set_item("fence_left", s.fence_left.map(|l| l.as_secs_f64()))?;
        d.set_item("renewals", s.renewals)?;
        d.set_item("failures", s.failures)?;
        d.set_item("last_error", s.last_error.map(|e| e.to_string()))?;
        Ok(d)
    }

    /// Releases the claim (its reservation cut to what was minted), so another holder can
    /// take the id at once. Minting after is a `ClaimError`. Idempotent.
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        if self.leave_if_forked() {
            return Ok(());
        }
        let g = self.g.swap(None);
        py.detach(move || drop(g));
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.release(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!(
            "ClaimedGenerator(node={}, layout={})",
            self.node, self.layout
        )
    }
}

/// What a store holds: with `namespace`, each node id of it (`node`, `state`, `holder`,
/// `reserved_until_unix_ns`, `problem`); without, each namespace (`namespace`, `layout`,
/// `held`).
#[pyfunction]
#[pyo3(signature = (url, namespace=None, *, password=None, ttl=None))]
pub(crate) fn claims<'py>(
    py: Python<'py>,
    url: &str,
    namespace: Option<&str>,
    password: Option<String>,
    ttl: Option<f64>,
) -> PyResult<Bound<'py, PyList>> {
    let options = options(py, password, ttl)?;
    let url = url.to_string();
    let namespace = namespace.map(str::to_string);
    let listed = py.detach(move || {
        let store = open(&url, &options)?;
        match namespace {
            Some(ns) => store.list(&ns).map(Listed::Nodes),
            None => store.namespaces().map(Listed::Namespaces),
        }
    });
    let out = PyList::empty(py);
    match listed.map_err(|e| claim_error(py, e))? {
        Listed::Nodes(nodes) => {
            for n in nodes {
                let d = PyDict::new(py);
                d.set_item("node", n.node)?;
                d.set_item("state", format!("{:?}", n.state).to_lowercase())?;
                d.set_item("holder", n.holder)?;
                d.set_item("reserved_until_unix_ns", n.reserved_until_unix_ns)?;
                d.set_item("problem", n.problem)?;
                out.append(d)?;
            }
        }
        Listed::Namespaces(all) => {
            for n in all {
                let d = PyDict::new(py);
                d.set_item("namespace", n.namespace)?;
                d.set_item("layout", n.layout)?;
                out.append(d)?;
            }
        }
    }
    Ok(out)
}

enum Listed {
    Nodes(Vec<claim::ClaimInfo>),
    Namespaces(Vec<claim::NamespaceInfo>),
}
