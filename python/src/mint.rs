//! `flakeid_rs.Generator` (node ids given), and what it shares with `ClaimedGenerator`
//! (`claimed.rs`): `next_id`, `try_next_id`, `next_ids(n)` into numpy; the GIL released
//! whenever a call waits (the next tick, a renewal at a fence, the store). Both refuse to
//! mint in a process forked after they were made (`ForkError`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use flakeid::clock::MonotonicClock;
use flakeid::error::Field;
use flakeid::{Generator, Id, Layout, MintError};
use numpy::PyArray1;
use pyo3::prelude::*;

use crate::errors::{fork_error, layout_error, mint_error};
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
pub(crate) struct Born {
    forks: u64,
    pid: u32,
}

impl Born {
    pub(crate) fn now() -> Born {
        Born {
            forks: FORKS.load(Ordering::SeqCst),
            pid: std::process::id(),
        }
    }

    pub(crate) fn forked(&self) -> bool {
        FORKS.load(Ordering::Relaxed) != self.forks
    }

    pub(crate) fn check(&self, py: Python<'_>, what: &str) -> PyResult<()> {
        if self.forked() {
            return Err(fork_error(py, what, self.pid));
        }
        Ok(())
    }
}

/// A wait bound in seconds, as a `Duration`.
pub(crate) fn seconds(py: Python<'_>, what: &str, s: f64) -> PyResult<Duration> {
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
pub(crate) struct MintCalls<
    'a,
    'py,
    C: flakeid::Clock + Sync,
    T: flakeid::generator::TickGate + Sync,
> {
    pub(crate) g: &'a Generator<C, T>,
    pub(crate) py: Python<'py>,
}

impl<'py, C: flakeid::Clock + Sync, T: flakeid::generator::TickGate + Sync>
    MintCalls<'_, 'py, C, T>
{
    pub(crate) fn next_id(&self) -> PyResult<u64> {
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

    pub(crate) fn try_next_id(&self) -> PyResult<u64> {
        self.g
            .try_next_id()
            .map(Id::get)
            .map_err(|e| mint_error(self.py, e))
    }

    pub(crate) fn next_ids(&self, n: &Bound<'_, PyAny>) -> PyResult<Bound<'py, PyArray1<u64>>> {
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

    pub(crate) fn try_next_ids(&self, n: &Bound<'_, PyAny>) -> PyResult<Bound<'py, PyArray1<u64>>> {
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
/// `flakeid_rs.claim`).
#[pyclass(frozen, subclass, module = "flakeid_rs._native", name = "Generator")]
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
            (Field::Datacenter, datacenter),
            (Field::Worker, worker),
            (Field::Process, process),
            (Field::Machine, machine),
        ];
        b = match crate::values::node_of_names(py, &layout, node, named)? {
            Some(n) => b.node(n),
            None if layout.node_bits() == 0 => b,
            None => {
                return Err(layout_error(
                    py,
                    format!(
                        "give {} (each process its own: two generators on one node id mint the same IDs), or use flakeid_rs.claim(url) to have a store hand them out",
                        crate::values::accepted(&layout)
                    ),
                ));
            }
        };
        let g = b.build().map_err(|e| crate::errors::error(py, e))?;
        crate::values::warn_if_ending(py, &layout)?;
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
