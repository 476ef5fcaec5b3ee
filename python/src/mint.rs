//! `flakeid.Generator` (node ids given) and `flakeid.ClaimedGenerator` (a node id claimed
//! from a store and fenced): `next_id`, `try_next_id`, `next_ids(n)` into numpy; the GIL
//! released whenever a call waits (the next tick, a renewal at a fence, the store). Both
//! refuse to mint in a process forked after they were made (`ForkError`); a claimed one
//! forked is never released by the child (the claim is the parent's). `claims(url)` lists
//! what a store holds.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use arc_swap::ArcSwapOption;
use flakeid::claim::store::{FromUrl, StoreUrl};
use flakeid::claim::{self, ClaimError, ClaimStore, ClaimedGenerator, Claims, OpenOptions, Secret};
use flakeid::clock::MonotonicClock;
use flakeid::{Generator, Id, Layout, MintError};
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors::{claim_error, fork_error, layout_error, mint_error};
use crate::layout::PyLayout;

/// Forks this process has been through, counted in each child (`os.register_at_fork`).
static FORKS: AtomicU64 = AtomicU64::new(0);

/// Called in a forked child before it runs anything else.
#[pyfunction]
pub(crate) fn _after_fork_in_child() {
    FORKS.fetch_add(1, Ordering::SeqCst);
}

/// Where and when (in forks) an object was made.
#[derive(Clone, Copy)]
struct Born {
    forks: u64,
    pid: u32,
}

impl Born {
    fn now() -> Born {
        Born {
            forks: FORKS.load(Ordering::SeqCst),
            pid: std::process::id(),
        }
    }

    fn forked(&self) -> bool {
        FORKS.load(Ordering::Relaxed) != self.forks
    }

    fn check(&self, py: Python<'_>, what: &str) -> PyResult<()> {
        if self.forked() {
            return Err(fork_error(py, what, self.pid));
        }
        Ok(())
    }
}

/// A wait bound in seconds, as a `Duration`.
fn seconds(py: Python<'_>, what: &str, s: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(s).map_err(|_| {
        layout_error(
            py,
            format!("{what} {s} is not a number of seconds: give one from 0 up"),
        )
    })
}

/// The most IDs one `next_ids` call mints (2 GiB of IDs): mint more in batches.
const MAX_BATCH: u64 = 1 << 28;

/// A count of IDs: an int from 0 to [`MAX_BATCH`]; else a `ValueError` naming the limit.
fn count(n: &Bound<'_, PyAny>) -> PyResult<usize> {
    match n.extract::<u64>() {
        Ok(n) if n <= MAX_BATCH => Ok(n as usize),
        _ => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "n={} is not a count of IDs one call mints: give an int from 0 to 2**28 ({MAX_BATCH}), and mint more in batches",
            n.repr().map(|r| r.to_string()).unwrap_or_default()
        ))),
    }
}

/// A buffer of `n` IDs to mint into, or `MemoryError` when there is no room for it.
fn buffer(n: usize) -> PyResult<Vec<Id>> {
    let mut ids = Vec::new();
    ids.try_reserve_exact(n).map_err(|_| {
        pyo3::exceptions::PyMemoryError::new_err(format!(
            "no memory for {n} IDs ({} bytes): mint fewer at a time",
            n.saturating_mul(8)
        ))
    })?;
    ids.resize(n, Id::default());
    Ok(ids)
}

/// Whether minting would have to wait (the next tick, a renewal, a lease).
fn waits(e: &MintError) -> bool {
    matches!(
        e,
        MintError::WouldBlock { .. } | MintError::Leased | MintError::ReservationExpired { .. }
    )
}

/// The minting calls both classes share, over any generator.
struct MintCalls<'a, 'py, C: flakeid::Clock + Sync, T: flakeid::generator::TickGate + Sync> {
    g: &'a Generator<C, T>,
    py: Python<'py>,
}

impl<'py, C: flakeid::Clock + Sync, T: flakeid::generator::TickGate + Sync>
    MintCalls<'_, 'py, C, T>
{
    fn next_id(&self) -> PyResult<u64> {
        match self.g.try_next_id() {
            Ok(id) => Ok(id.get()),
            Err(e) if waits(&e) => self
                .py
                .detach(|| self.g.next_id())
                .map(Id::get)
                .map_err(|e| mint_error(self.py, e)),
            Err(e) => Err(mint_error(self.py, e)),
        }
    }

    fn try_next_id(&self) -> PyResult<u64> {
        self.g
            .try_next_id()
            .map(Id::get)
            .map_err(|e| mint_error(self.py, e))
    }

    fn next_ids(&self, n: &Bound<'_, PyAny>) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let n = count(n)?;
        let mut ids = buffer(n)?;
        let g = self.g;
        let ids = self.py.detach(|| {
            let mut done = 0;
            while done < n {
                match g.next_ids(&mut ids[done..]) {
                    // Nothing left in the tick: the blocking call waits for the next one.
                    Ok(0) => {
                        ids[done] = g.next_id()?;
                        done += 1;
                    }
                    Ok(k) => done += k,
                    Err(e) => return Err(e),
                }
            }
            Ok(ids)
        });
        let ids = ids.map_err(|e| mint_error(self.py, e))?;
        Ok(PyArray1::from_slice(self.py, Id::as_u64s(&ids)))
    }

    fn try_next_ids(&self, n: &Bound<'_, PyAny>) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let n = count(n)?;
        let mut ids = buffer(n)?;
        let k = match n {
            0 => 0,
            _ => self
                .g
                .try_next_ids(&mut ids)
                .map_err(|e| mint_error(self.py, e))?,
        };
        Ok(PyArray1::from_slice(self.py, Id::as_u64s(&ids[..k])))
    }
}

/// A generator on a node id given: `Generator(layout, node=3)` or
/// `Generator(layout, datacenter=1, worker=7)`. Safe to share between threads; each ID is
/// unique and larger than the one before. Give each process its own node id (or use
/// `flakeid.claim`).
#[pyclass(frozen, subclass, module = "flakeid._native", name = "Generator")]
pub(crate) struct PyGenerator {
    // Boxed: the generator's state is aligned to a cache line, which a Python object's
    // memory is not.
    g: Box<Generator<MonotonicClock>>,
    born: Born,
}

#[pymethods]
impl PyGenerator {
    #[new]
    #[pyo3(signature = (layout=None, *, node=None, datacenter=None, worker=None, process=None, machine=None, max_wait=0.1))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        layout: Option<PyRef<'_, PyLayout>>,
        node: Option<&Bound<'_, PyAny>>,
        datacenter: Option<&Bound<'_, PyAny>>,
        worker: Option<&Bound<'_, PyAny>>,
        process: Option<&Bound<'_, PyAny>>,
        machine: Option<&Bound<'_, PyAny>>,
        max_wait: f64,
    ) -> PyResult<PyGenerator> {
        let layout = layout.map_or_else(Layout::snowflake, |l| l.layout);
        let mut b = Generator::builder(layout)
            .clock(MonotonicClock::new())
            .max_wait(seconds(py, "max_wait", max_wait)?);
        let named = [
            ("datacenter", datacenter),
            ("worker", worker),
            ("process", process),
            ("machine", machine),
        ];
        b = match crate::layout::node_of_names(py, &layout, node, named)? {
            Some(n) => b.node(n),
            None if layout.node_bits() == 0 => b,
            None => {
                let (high, low) = flakeid_text::NodeFields::of(&layout).split_names;
                let parts = match layout.datacenter_bits() {
                    0 => String::new(),
                    _ => format!(", or {high}= and {low}= together"),
                };
                return Err(layout_error(
                    py,
                    format!(
                        "give node=N{parts} (each process its own: two generators on one node id mint the same IDs), or use flakeid.claim(url) to have a store hand them out"
                    ),
                ));
            }
        };
        let g = b.build().map_err(|e| crate::errors::error(py, e))?;
        Ok(PyGenerator {
            g: Box::new(g),
            born: Born::now(),
        })
    }

    /// The layout.
    #[getter]
    fn layout(&self) -> PyLayout {
        PyLayout::of(*self.g.layout())
    }

    /// The node id.
    #[getter]
    fn node(&self) -> u64 {
        self.g.node()
    }

    /// The bound on one call's waits, in seconds.
    #[getter]
    fn max_wait(&self) -> f64 {
        self.g.max_wait().as_secs_f64()
    }

    /// The next ID; waits (the GIL released, bounded by `max_wait`) when the tick's
    /// sequence ran out. `MintError` when it cannot.
    fn next_id(&self, py: Python<'_>) -> PyResult<u64> {
        self.born.check(py, "generator")?;
        MintCalls { g: &self.g, py }.next_id()
    }

    /// The next ID without waiting: `MintError` with `retry_after` (seconds) when it would
    /// have to wait (the pattern for asyncio: `next_id_async`).
    fn try_next_id(&self, py: Python<'_>) -> PyResult<u64> {
        self.born.check(py, "generator")?;
        MintCalls { g: &self.g, py }.try_next_id()
    }

    /// `n` IDs, strictly increasing, as a numpy `uint64` array, minted in runs by the
    /// batch minter with the GIL released.
    fn next_ids<'py>(
        &self,
        py: Python<'py>,
        n: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<u64>>> {
        self.born.check(py, "generator")?;
        MintCalls { g: &self.g, py }.next_ids(n)
    }

    /// Up to `n` IDs without waiting (what the current tick has left; at least one, or
    /// `MintError` with `retry_after`).
    fn try_next_ids<'py>(
        &self,
        py: Python<'py>,
        n: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<u64>>> {
        self.born.check(py, "generator")?;
        MintCalls { g: &self.g, py }.try_next_ids(n)
    }

    fn __repr__(&self) -> String {
        format!(
            "Generator(node={}, layout={})",
            self.g.node(),
            self.g.layout()
        )
    }
}

/// A generator on a node id claimed from a store and fenced (see `flakeid.claim`): it
/// mints only inside the window the store accepted, renewed in the background; released
/// by `release()`, at the end of a `with` block, when it is collected, and at exit.
#[pyclass(
    frozen,
    subclass,
    module = "flakeid._native",
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

/// Opens the store `url` names: etcd and ZooKeeper by their packages, the rest by the
/// library (file, memory, static).
pub(crate) fn open(url: &str, options: &OpenOptions) -> Result<Arc<dyn ClaimStore>, ClaimError> {
    let parsed = StoreUrl::parse(url)?;
    match parsed.scheme() {
        "etcd" | "etcds" => {
            flakeid_etcd::EtcdStore::from_url(&parsed, options).map(|s| Arc::new(s) as _)
        }
        "zookeeper" => {
            flakeid_zookeeper::ZooKeeperStore::from_url(&parsed, options).map(|s| Arc::new(s) as _)
        }
        _ => claim::open_url(&parsed, options),
    }
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
            let mut claims = Claims::with_store(open(&url, &options)?)
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
