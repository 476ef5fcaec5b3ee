//! `NativeGenerator`: minting on a node id given, claimed from a store, or claimed once
//! per process (`shared.rs`). `nextId` waits for the next tick at most `maxWait` on the
//! calling (event loop) thread and refuses past it; `nextIdAsync` and `nextIdsAsync` wait
//! on a thread of libuv's pool and resolve a promise, so the event loop never waits.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use flakeid::claim::ClaimedGenerator;
use flakeid::clock::MonotonicClock;
use flakeid::generator::TickGate;
use flakeid::{Clock, ClockPolicy, Generator, Id, MintError};
use napi::bindgen_prelude::{AsyncTask, BigInt, BigUint64Array};
use napi::{Env, Task};
use napi_derive::napi;

use crate::errors::{RELEASED, error, mint_error, range_error};
use crate::layout::NodeLayout;
use crate::numbers::{MAX_SAFE, Whole, count, whole};

/// The most IDs one `nextIds` call mints (2 GiB of IDs): mint more in batches.
pub(crate) const MAX_BATCH: u64 = 1 << 28;

/// What a generator of any gate does for the addon.
pub(crate) trait Mints: Send + Sync {
    /// One ID, waiting at most `max_wait`.
    fn id(&self) -> Result<u64, MintError>;
    /// One ID without waiting.
    fn try_id(&self) -> Result<u64, MintError>;
    /// `out.len()` IDs, each wait at most `max_wait`.
    fn ids(&self, out: &mut [Id]) -> Result<usize, MintError>;
    /// As many of `out.len()` IDs as there are without waiting.
    fn try_ids(&self, out: &mut [Id]) -> Result<usize, MintError>;
}

impl<C: Clock + Send + Sync, T: TickGate + Send + Sync> Mints for Generator<C, T> {
    fn id(&self) -> Result<u64, MintError> {
        self.next_id().map(Id::get)
    }

    fn try_id(&self) -> Result<u64, MintError> {
        self.try_next_id().map(Id::get)
    }

    fn ids(&self, out: &mut [Id]) -> Result<usize, MintError> {
        self.next_ids(out)
    }

    fn try_ids(&self, out: &mut [Id]) -> Result<usize, MintError> {
        self.try_next_ids(out)
    }
}

/// Whether minting may succeed after a wait (the next tick, a renewal, a lease).
fn waits(e: &MintError) -> bool {
    matches!(
        e,
        MintError::WouldBlock { .. }
            | MintError::WaitTooLong { .. }
            | MintError::Leased
            | MintError::ReservationExpired { .. }
    )
}

/// A claimed generator, until it is released (then `None`): shared by every
/// `NativeGenerator` made on the claim, in any thread of the process.
pub(crate) struct ClaimSlot {
    pub(crate) g: ArcSwapOption<ClaimedGenerator<MonotonicClock>>,
    pub(crate) node: u64,
    /// Told of the claim's changes (the claim's `on_change`).
    pub(crate) watchers: Arc<crate::watch::Watchers>,
}

impl ClaimSlot {
    /// The slot of `g`, whose claim tells `watchers` of its changes.
    pub(crate) fn new(
        g: ClaimedGenerator<MonotonicClock>,
        watchers: Arc<crate::watch::Watchers>,
    ) -> ClaimSlot {
        ClaimSlot {
            node: g.node(),
            g: ArcSwapOption::from_pointee(g),
            watchers,
        }
    }

    /// Releases the claim (its holder releases it when the last minting call is done).
    pub(crate) fn release(&self) {
        self.g.store(None);
    }
}

/// What a `NativeGenerator` mints with.
pub(crate) enum Minter {
    Plain(Arc<Generator<MonotonicClock>>),
    Claimed(Arc<ClaimSlot>),
}

impl Minter {
    /// The generator to mint with now, or why not (the claim was released).
    fn get(&self) -> napi::Result<Arc<dyn Mints>> {
        match self {
            Minter::Plain(g) => Ok(Arc::clone(g) as Arc<dyn Mints>),
            Minter::Claimed(slot) => match slot.g.load_full() {
                Some(g) => Ok(g as Arc<dyn Mints>),
                None => Err(error(
                    RELEASED,
                    "released",
                    format!(
                        "the claim on node {} was released (close()): nothing is minted on it any more; claim again",
                        slot.node
                    ),
                )),
            },
        }
    }
}

/// IDs of the tick now, for the package's `nextId()` to hand out one by one while that
/// tick lasts (`untilMs`, Unix milliseconds): a call across to the addon costs more than
/// the BigInt it returns, so the JavaScript side asks for a few at a time.
#[napi(object)]
pub struct TickBatch {
    pub ids: BigUint64Array,
    pub until_ms: f64,
}

/// The most IDs one `nextIdsInTick` call mints.
const MAX_TICK_BATCH: usize = 4096;

/// A generator as the package's `Generator` and `ClaimedGenerator` use it.
#[napi]
pub struct NativeGenerator {
    pub(crate) minter: Minter,
    pub(crate) layout: flakeid::Layout,
    pub(crate) node: u64,
    /// How long an async call waits in all before it gives up.
    pub(crate) async_wait: Duration,
}

/// The settings of a generator: `maxWaitMs` (how long a synchronous call may hold the
/// event loop for the next tick), `asyncWaitMs` (how long an async call waits in all),
/// `clockPolicy` (`continue`, `reject` or `wait`).
#[napi(object)]
pub struct MintOptions {
    pub max_wait_ms: Option<f64>,
    pub async_wait_ms: Option<f64>,
    pub clock_policy: Option<String>,
}

/// The default bound on a synchronous call's wait: 2 ms (two of Twitter's ticks).
pub(crate) const DEFAULT_MAX_WAIT: Duration = Duration::from_millis(2);
/// The default bound on an async call's waits: 10 s.
pub(crate) const DEFAULT_ASYNC_WAIT: Duration = Duration::from_secs(10);

/// A bound in milliseconds, or why not.
pub(crate) fn millis(what: &str, ms: Option<f64>, default: Duration) -> napi::Result<Duration> {
    match ms {
        None => Ok(default),
        Some(ms) if (0.0..=86_400_000.0).contains(&ms) => Ok(Duration::from_secs_f64(ms / 1e3)),
        Some(ms) => Err(range_error(format!(
            "{what} {ms} is not a wait: give milliseconds from 0 to 86400000"
        ))),
    }
}

/// A clock policy by its name.
pub(crate) fn policy(name: Option<&str>) -> napi::Result<ClockPolicy> {
    match name {
        None | Some("continue") => Ok(ClockPolicy::Continue),
        Some("reject") => Ok(ClockPolicy::Reject),
        Some("wait") => Ok(ClockPolicy::Wait),
        Some(other) => Err(range_error(format!(
            "clockPolicy {other:?} is not a policy: give \"continue\" (the default), \"reject\" or \"wait\""
        ))),
    }
}

/// The parsed options: sync bound, async bound, policy.
pub(crate) fn options(o: Option<&MintOptions>) -> napi::Result<(Duration, Duration, ClockPolicy)> {
    Ok((
        millis("maxWaitMs", o.and_then(|o| o.max_wait_ms), DEFAULT_MAX_WAIT)?,
        millis(
            "asyncWaitMs",
            o.and_then(|o| o.async_wait_ms),
            DEFAULT_ASYNC_WAIT,
        )?,
        policy(o.and_then(|o| o.clock_policy.as_deref()))?,
    ))
}

#[napi]
impl NativeGenerator {
    /// A generator of `layout` on `node`.
    #[napi(constructor, catch_unwind)]
    pub fn new(
        layout: &NodeLayout,
        node: Whole,
        options: Option<MintOptions>,
    ) -> napi::Result<NativeGenerator> {
        let l = layout.layout;
        let node = whole("node", &node, l.max_node())?;
        let (max_wait, async_wait, policy) = self::options(options.as_ref())?;
        let g = Generator::builder(l)
            .clock(MonotonicClock::new())
            .node(node)
            .max_wait(max_wait)
            .policy(policy)
            .build()
            .map_err(crate::errors::core_error)?;
        Ok(NativeGenerator {
            minter: Minter::Plain(Arc::new(g)),
            layout: l,
            node,
            async_wait,
        })
    }

    /// The node id.
    #[napi(getter)]
    pub fn node(&self) -> f64 {
        self.node as f64
    }

    /// The layout.
    #[napi(getter)]
    pub fn layout(&self) -> NodeLayout {
        NodeLayout::of(self.layout)
    }

    /// The next ID (`nextIdNumber`'s; the package's `nextId` takes batches of a tick).
    fn next_id(&self) -> napi::Result<u64> {
        self.minter.get()?.id().map_err(mint_error)
    }

    /// Up to `want` IDs of one tick (at least one, waiting for the next tick as `nextId`
    /// does where this one has none left), and when that tick ends.
    #[napi(catch_unwind)]
    pub fn next_ids_in_tick(&self, want: u32) -> napi::Result<TickBatch> {
        let g = self.minter.get()?;
        let want = (want as usize).clamp(1, MAX_TICK_BATCH);
        let mut ids = vec![Id::default(); want];
        let n = match g.try_ids(&mut ids) {
            Ok(n) => n,
            Err(e) if waits(&e) => 0,
            Err(e) => return Err(mint_error(e)),
        };
        let ids: Vec<u64> = match n {
            0 => vec![g.id().map_err(mint_error)?],
            // In place: an `Id` is a `u64`.
            n => ids.into_iter().take(n).map(Id::get).collect(),
        };
        let last = ids[ids.len() - 1];
        let l = &self.layout;
        let ticks = l.decompose(last).map_err(crate::errors::core_error)?.ticks;
        // The end of the last ID's tick; a layout's last tick ends at its end.
        let until_ns = l
            .unix_ns_of(ticks.saturating_add(1))
            .unwrap_or(l.end_unix_ns());
        Ok(TickBatch {
            ids: BigUint64Array::new(ids),
            until_ms: (until_ns / 1_000_000) as f64,
        })
    }

    /// The next ID without waiting: a `FLAKEID_WOULD_BLOCK` error where it would.
    #[napi(catch_unwind)]
    pub fn try_next_id(&self) -> napi::Result<u64> {
        self.minter.get()?.try_id().map_err(mint_error)
    }

    /// The next ID as a number: only a layout whose IDs stay below 2^53 (`jsSafe`) has
    /// them exact.
    #[napi(catch_unwind)]
    pub fn next_id_number(&self) -> napi::Result<f64> {
        if self.layout.max_id() > MAX_SAFE {
            return Err(range_error(format!(
                "this layout's IDs reach {} bits, past what a JavaScript number holds exactly (53): use nextId() (a BigInt) or nextIdString(), or a layout of 53 bits or fewer (Layout.jsSafe())",
                self.layout.bits()
            )));
        }
        self.next_id().map(|id| id as f64)
    }

    /// `n` IDs into a `BigUint64Array` (waiting for ticks as a batch needs, each wait at
    /// most `maxWait`).
    #[napi(catch_unwind)]
    pub fn next_ids(&self, n: f64) -> napi::Result<BigUint64Array> {
        let n = count("n", n, MAX_BATCH)?;
        mint_many(&*self.minter.get()?, n, None).map(BigUint64Array::new)
    }

    /// The next ID, waiting on libuv's pool (never on the event loop), at most
    /// `asyncWaitMs` in all.
    #[napi(ts_return_type = "Promise<bigint>", catch_unwind)]
    pub fn next_id_async(&self) -> napi::Result<AsyncTask<MintOne>> {
        Ok(AsyncTask::new(MintOne {
            g: self.minter.get()?,
            wait: self.async_wait,
        }))
    }

    /// `n` IDs into a `BigUint64Array`, minted on libuv's pool.
    #[napi(ts_return_type = "Promise<BigUint64Array>", catch_unwind)]
    pub fn next_ids_async(&self, n: f64) -> napi::Result<AsyncTask<MintMany>> {
        let n = count("n", n, MAX_BATCH)?;
        Ok(AsyncTask::new(MintMany {
            g: self.minter.get()?,
            n,
            wait: self.async_wait,
        }))
    }
}

/// `n` IDs; with a `deadline`, a wait that fails is tried again until then.
fn mint_many(g: &dyn Mints, n: usize, deadline: Option<Instant>) -> napi::Result<Vec<u64>> {
    let mut ids = Vec::new();
    ids.try_reserve_exact(n).map_err(|_| {
        range_error(format!(
            "no memory for {n} IDs ({} bytes): mint fewer at a time",
            n.saturating_mul(8)
        ))
    })?;
    ids.resize(n, Id::default());
    let mut done = 0;
    while done < n {
        match g.ids(&mut ids[done..]) {
            Ok(k) => done += k,
            Err(e) if waits(&e) && deadline.is_some_and(|d| Instant::now() < d) => {
                std::thread::sleep(retry(&e));
            }
            Err(e) => return Err(mint_error(e)),
        }
    }
    Ok(ids.into_iter().map(Id::get).collect())
}

/// How long to sleep before trying a wait again.
fn retry(e: &MintError) -> Duration {
    e.retry_after()
        .unwrap_or(Duration::from_micros(100))
        .clamp(Duration::from_micros(20), Duration::from_millis(100))
}

/// One ID minted on libuv's pool for `nextIdAsync`.
pub struct MintOne {
    g: Arc<dyn Mints>,
    wait: Duration,
}

impl Task for MintOne {
    type Output = u64;
    type JsValue = BigInt;

    fn compute(&mut self) -> napi::Result<u64> {
        let deadline = Instant::now() + self.wait;
        loop {
            match self.g.id() {
                Ok(id) => return Ok(id),
                Err(e) if waits(&e) && Instant::now() < deadline => {
                    std::thread::sleep(retry(&e));
                }
                Err(e) => return Err(mint_error(e)),
            }
        }
    }

    fn resolve(&mut self, _env: Env, id: u64) -> napi::Result<BigInt> {
        Ok(BigInt::from(id))
    }
}

/// IDs minted on libuv's pool for `nextIdsAsync`.
pub struct MintMany {
    g: Arc<dyn Mints>,
    n: usize,
    wait: Duration,
}

impl Task for MintMany {
    type Output = Vec<u64>;
    type JsValue = BigUint64Array;

    fn compute(&mut self) -> napi::Result<Vec<u64>> {
        mint_many(&*self.g, self.n, Some(Instant::now() + self.wait))
    }

    fn resolve(&mut self, _env: Env, ids: Vec<u64>) -> napi::Result<BigUint64Array> {
        Ok(BigUint64Array::new(ids))
    }
}
