//! The lock-free generator: one packed `AtomicU64` advanced by compare-and-swap.

use core::fmt;
use core::time::Duration;

use crossbeam_utils::CachePadded;

use crate::clock::{Clock, MonotonicClock};
use crate::error::Error;
use crate::id::Id;
use crate::layout::Layout;
use crate::node;
use crate::state::{self, ClockPolicy, Shape, Step};
use crate::sync::{self, AtomicU64, Ordering};

/// The default bound on any wait: sequence exhaustion or a clock that is behind.
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(1);

/// Below this much time left, a waiting thread spins instead of sleeping.
const SPIN_BELOW: Duration = Duration::from_micros(50);
/// Above this much time left, a waiting thread sleeps (all but `SLEEP_MARGIN` of it).
const SLEEP_ABOVE: Duration = Duration::from_millis(2);
const SLEEP_MARGIN: Duration = Duration::from_millis(1);

/// Mints unique, strictly increasing IDs of one layout for one node.
///
/// Share one generator per node (in an `Arc` or a `static`) among all threads: it is
/// `Sync`, lock-free, and allocates nothing per ID. Creating a generator per call is the
/// classic way to get duplicates; don't.
///
/// ```
/// use flakeid::{Generator, Layout};
///
/// let generator = Generator::builder(Layout::snowflake())
///     .datacenter(3)
///     .worker(17)
///     .build()?;
/// let a = generator.next_id()?;
/// let b = generator.next_id()?;
/// assert!(b > a);
/// let parts = Layout::snowflake().decompose(b.get())?;
/// assert_eq!(Layout::snowflake().split_node(parts.node), (3, 17));
/// # Ok::<(), flakeid::Error>(())
/// ```
pub struct Generator<C = MonotonicClock> {
    /// The packed (last tick, last sequence) word, most significant bit first:
    ///
    /// | bits | holds |
    /// |---|---|
    /// | 63 ..= `sequence_bits + time_bits` | always 0 |
    /// | `sequence_bits + time_bits - 1` ..= `sequence_bits` | last tick used |
    /// | `sequence_bits - 1` ..= 0 | last sequence number used in that tick |
    ///
    /// Invariant: it only increases, and only by a CAS from the word the new one was
    /// computed from (by [`state::reserve`]), so no (tick, sequence) is handed out twice.
    /// The node is not stored: it is OR-ed in on the way out. Padded so that minting
    /// threads do not bounce the line that holds the read-only fields below.
    state: CachePadded<AtomicU64>,
    shape: Shape,
    /// `state` bits that stay in place in the ID (the sequence, in Snowflake's order);
    /// the other state bits move up past the node field.
    low_mask: u64,
    node_bits: u32,
    /// The node id, already shifted into place.
    node_field: u64,
    unit_ns: u64,
    epoch_tick: u64,
    policy: ClockPolicy,
    max_wait: Duration,
    layout: Layout,
    node: u64,
    clock: C,
}

impl<C> fmt::Debug for Generator<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Generator")
            .field("layout", &self.layout)
            .field("node", &self.node)
            .field("policy", &self.policy)
            .field("max_wait", &self.max_wait)
            .field("state", &self.state.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Generator<MonotonicClock> {
    /// Starts building a generator for `layout`, on the default monotonic clock.
    pub fn builder(layout: Layout) -> GeneratorBuilder<MonotonicClock> {
        GeneratorBuilder {
            layout,
            node: NodeSpec::Unset,
            check: None,
            policy: ClockPolicy::default(),
            max_wait: DEFAULT_MAX_WAIT,
            resume_after: None,
            clock: MonotonicClock::new(),
        }
    }
}

impl<C: Clock> Generator<C> {
    /// The layout IDs are minted in.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The node id stamped into every ID.
    pub fn node(&self) -> u64 {
        self.node
    }

    /// The clock policy.
    pub fn policy(&self) -> ClockPolicy {
        self.policy
    }

    /// The bound on any wait.
    pub fn max_wait(&self) -> Duration {
        self.max_wait
    }

    /// The clock.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// The last ID this generator handed out (or would have at tick 0 with a full
    /// sequence, before the first). Persist it and pass it to
    /// [`GeneratorBuilder::resume_after`] to survive a restart onto a rolled-back clock.
    pub fn last_id(&self) -> Id {
        Id::from_raw(self.id_of(self.state.load(Ordering::Acquire)))
    }

    #[inline(always)]
    fn id_of(&self, word: u64) -> u64 {
        ((word & !self.low_mask) << self.node_bits) | (word & self.low_mask) | self.node_field
    }

    /// The clock's tick; may lie past the lifetime, which [`state::reserve`] reports.
    #[inline(always)]
    fn now_ticks(&self) -> Result<u64, Error> {
        let ns = self.clock.unix_ns();
        let tick = ns / self.unit_ns;
        match tick.checked_sub(self.epoch_tick) {
            Some(t) => Ok(t),
            None => Err(self.before_epoch(ns)),
        }
    }

    #[cold]
    fn before_epoch(&self, ns: u64) -> Error {
        Error::BeforeEpoch {
            by: Duration::from_nanos(self.layout.epoch_unix_ns().saturating_sub(ns)),
        }
    }

    /// Mints the next ID, waiting (bounded by `max_wait`) when the tick's sequence is used
    /// up or the policy says to wait for the clock.
    ///
    /// IDs from one generator strictly increase, whatever the clock does.
    #[inline]
    pub fn next_id(&self) -> Result<Id, Error> {
        // Acquire on every load of the word, and AcqRel on the CAS, order this thread's
        // clock read after the clock read of whoever stored the word it sees: with a clock
        // that is monotonic across cores, a thread never sees a tick "from the future".
        let mut word = self.state.load(Ordering::Acquire);
        let mut waited = None;
        loop {
            let now = self.now_ticks()?;
            match state::reserve(self.shape, word, now, self.policy, 1) {
                Step::Mint { first, .. } => {
                    // A spurious failure of the weak CAS only costs one more trip around
                    // the loop with a fresh word and clock, so the loop is correct whether
                    // or not spurious failures happen (loom never injects them).
                    match self.state.compare_exchange_weak(
                        word,
                        first,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => return Ok(Id::from_raw(self.id_of(first))),
                        Err(actual) => word = actual,
                    }
                }
                other => word = self.stall(other, &mut waited)?,
            }
        }
    }

    /// Mints up to `out.len()` IDs, reserving a run of sequence numbers with one
    /// compare-and-swap per tick, and returns how many it wrote (like `Read::read`).
    ///
    /// It waits, bounded, as [`Generator::next_id`] does, so it normally fills the whole
    /// slice. If an error stops it after some IDs were written, it returns that shorter
    /// count (the IDs written are valid) and the next call reports the error; it returns
    /// `Err` only when it wrote nothing. IDs are strictly increasing within the slice and
    /// after every ID this generator minted before.
    pub fn next_ids(&self, out: &mut [Id]) -> Result<usize, Error> {
        let mut filled = 0;
        let mut word = self.state.load(Ordering::Acquire);
        let mut waited = None;
        let stop = |filled, e| if filled > 0 { Ok(filled) } else { Err(e) };
        while filled < out.len() {
            let now = match self.now_ticks() {
                Ok(now) => now,
                Err(e) => return stop(filled, e),
            };
            let want = (out.len() - filled) as u64;
            match state::reserve(self.shape, word, now, self.policy, want) {
                Step::Mint { first, last } => match self.state.compare_exchange_weak(
                    word,
                    last,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => {
                        let run = (last - first + 1) as usize;
                        for (slot, w) in out[filled..filled + run].iter_mut().zip(first..=last) {
                            *slot = Id::from_raw(self.id_of(w));
                        }
                        filled += run;
                        word = last;
                    }
                    Err(actual) => word = actual,
                },
                other => match self.stall(other, &mut waited) {
                    Ok(w) => word = w,
                    Err(e) => return stop(filled, e),
                },
            }
        }
        Ok(filled)
    }

    /// Mints the next ID without waiting: when it would have to wait, it returns
    /// [`Error::WouldBlock`] with how long.
    #[inline]
    pub fn try_next_id(&self) -> Result<Id, Error> {
        let mut word = self.state.load(Ordering::Acquire);
        loop {
            let now = self.now_ticks()?;
            match state::reserve(self.shape, word, now, self.policy, 1) {
                Step::Mint { first, .. } => match self.state.compare_exchange_weak(
                    word,
                    first,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => return Ok(Id::from_raw(self.id_of(first))),
                    Err(actual) => word = actual,
                },
                Step::WaitFor { until } => {
                    let target = self.tick_start_ns(until)?;
                    let now_ns = self.clock.unix_ns();
                    if now_ns < target {
                        return Err(Error::WouldBlock {
                            wait: Duration::from_nanos(target - now_ns),
                        });
                    }
                    word = self.state.load(Ordering::Acquire);
                }
                other => return Err(self.refusal(other, word)),
            }
        }
    }

    /// The rare paths of minting: waits for the clock, or turns the step into an error.
    /// Returns a fresh word to retry with.
    #[cold]
    #[inline(never)]
    fn stall(&self, step: Step, waited: &mut Option<std::time::Instant>) -> Result<u64, Error> {
        match step {
            Step::WaitFor { until } => {
                self.wait_for(until, waited)?;
                Ok(self.state.load(Ordering::Acquire))
            }
            other => Err(self.refusal(other, self.state.load(Ordering::Relaxed))),
        }
    }

    #[cold]
    fn refusal(&self, step: Step, word: u64) -> Error {
        match step {
            Step::Behind { ticks } => {
                // How far behind the start of the last tick the clock reads.
                let last_start = self.layout.unix_ns_of(self.shape.ticks(word));
                let now = u128::from(self.clock.unix_ns());
                let by = last_start.saturating_sub(now).max(u128::from(ticks.min(1)));
                Error::ClockBehind {
                    by: Duration::from_nanos(u64::try_from(by).unwrap_or(u64::MAX)),
                }
            }
            _ => Error::PastLifetime {
                end_unix_ms: self.layout.end_unix_ms(),
            },
        }
    }

    fn tick_start_ns(&self, tick: u64) -> Result<u64, Error> {
        u64::try_from(self.layout.unix_ns_of(tick)).map_err(|_| Error::PastLifetime {
            end_unix_ms: self.layout.end_unix_ms(),
        })
    }

    /// Waits until the clock reaches the start of tick `until`: sleeps while far, yields
    /// when near, spins at the boundary. Fails at once if the wait would overrun the bound.
    #[cold]
    fn wait_for(&self, until: u64, waited: &mut Option<std::time::Instant>) -> Result<(), Error> {
        let target = self.tick_start_ns(until)?;
        loop {
            let now = self.clock.unix_ns();
            if now >= target {
                return Ok(());
            }
            let needed = Duration::from_nanos(target - now);
            let spent = waited.get_or_insert_with(std::time::Instant::now).elapsed();
            if spent.saturating_add(needed) > self.max_wait {
                return Err(Error::WaitTooLong {
                    needed,
                    bound: self.max_wait,
                });
            }
            if needed > SLEEP_ABOVE {
                sync::sleep(needed - SLEEP_MARGIN);
            } else if needed > SPIN_BELOW {
                sync::yield_now();
            } else {
                sync::spin_loop();
            }
        }
    }
}

enum NodeSpec {
    Unset,
    Node(u64),
    DatacenterWorker(Option<u64>, Option<u64>),
    PrivateIp,
}

type NodeCheck = Box<dyn Fn(u64) -> bool + Send + Sync>;

/// Configures a [`Generator`]: node id, clock, clock policy and wait bound.
pub struct GeneratorBuilder<C = MonotonicClock> {
    layout: Layout,
    node: NodeSpec,
    check: Option<NodeCheck>,
    policy: ClockPolicy,
    max_wait: Duration,
    resume_after: Option<u64>,
    clock: C,
}

impl<C> fmt::Debug for GeneratorBuilder<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeneratorBuilder")
            .field("layout", &self.layout)
            .field("policy", &self.policy)
            .field("max_wait", &self.max_wait)
            .finish_non_exhaustive()
    }
}

impl<C> GeneratorBuilder<C> {
    /// The node id (the whole node field; Sonyflake's machine id). Range-checked at build.
    pub fn node(mut self, node: u64) -> Self {
        self.node = NodeSpec::Node(node);
        self
    }

    /// Sonyflake's name for [`GeneratorBuilder::node`].
    pub fn machine_id(self, machine_id: u64) -> Self {
        self.node(machine_id)
    }

    /// Snowflake's datacenter id; give [`GeneratorBuilder::worker`] too.
    pub fn datacenter(mut self, datacenter: u64) -> Self {
        self.node = match self.node {
            NodeSpec::DatacenterWorker(_, w) => NodeSpec::DatacenterWorker(Some(datacenter), w),
            _ => NodeSpec::DatacenterWorker(Some(datacenter), None),
        };
        self
    }

    /// Snowflake's worker id; give [`GeneratorBuilder::datacenter`] too.
    pub fn worker(mut self, worker: u64) -> Self {
        self.node = match self.node {
            NodeSpec::DatacenterWorker(d, _) => NodeSpec::DatacenterWorker(d, Some(worker)),
            _ => NodeSpec::DatacenterWorker(None, Some(worker)),
        };
        self
    }

    /// Sonyflake's default machine id: the low 16 bits of the first private IPv4 address
    /// (see [`node::private_ip_machine_id`]). Beware: hosts in different /16 networks can
    /// get the same id.
    pub fn machine_id_from_private_ip(mut self) -> Self {
        self.node = NodeSpec::PrivateIp;
        self
    }

    /// A hook that may refuse the node id (Sonyflake's `CheckMachineID`): return `false`
    /// and `build` fails with [`Error::NodeRejected`].
    pub fn check_node(mut self, check: impl Fn(u64) -> bool + Send + Sync + 'static) -> Self {
        self.check = Some(Box::new(check));
        self
    }

    /// What to do when the clock reads earlier than the last tick used.
    pub fn policy(mut self, policy: ClockPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The bound on any wait (default [`DEFAULT_MAX_WAIT`]); `Duration::ZERO` never waits
    /// for the clock.
    pub fn max_wait(mut self, bound: Duration) -> Self {
        self.max_wait = bound;
        self
    }

    /// Starts after an ID minted earlier (by this node, persisted across a restart): every
    /// new ID is larger, even if the clock now reads earlier.
    pub fn resume_after(mut self, last_id: u64) -> Self {
        self.resume_after = Some(last_id);
        self
    }

    /// Uses another clock, e.g. [`SystemClock`](crate::SystemClock) or
    /// [`ManualClock`](crate::ManualClock).
    pub fn clock<D: Clock>(self, clock: D) -> GeneratorBuilder<D> {
        GeneratorBuilder {
            layout: self.layout,
            node: self.node,
            check: self.check,
            policy: self.policy,
            max_wait: self.max_wait,
            resume_after: self.resume_after,
            clock,
        }
    }

    fn resolve_node(&self) -> Result<u64, Error> {
        let l = &self.layout;
        let node = match self.node {
            NodeSpec::Unset if l.node_bits() == 0 => 0,
            NodeSpec::Unset => return Err(Error::NodeMissing),
            NodeSpec::Node(n) => n,
            NodeSpec::DatacenterWorker(Some(d), Some(w)) => return l.node_of(d, w),
            NodeSpec::DatacenterWorker(..) => return Err(Error::NodeMissing),
            NodeSpec::PrivateIp => u64::from(node::private_ip_machine_id()?),
        };
        l.check_node(node)
    }
}

impl<C: Clock> GeneratorBuilder<C> {
    /// Checks the node id and builds the generator.
    pub fn build(self) -> Result<Generator<C>, Error> {
        let node = self.resolve_node()?;
        if let Some(check) = &self.check
            && !check(node)
        {
            return Err(Error::NodeRejected { node });
        }
        let layout = self.layout;
        let shape = Shape::of(&layout);
        let mut word = shape.initial();
        if let Some(last) = self.resume_after {
            let parts = layout.decompose(last)?;
            word = word.max(shape.pack(parts.ticks, parts.sequence));
        }
        Ok(Generator {
            state: CachePadded::new(AtomicU64::new(word)),
            shape,
            low_mask: match layout.order() {
                crate::Order::TimeNodeSequence => layout.max_sequence(),
                crate::Order::TimeSequenceNode => 0,
            },
            node_bits: layout.node_bits(),
            node_field: node << layout.node_shift(),
            unit_ns: layout.unit_ns(),
            epoch_tick: layout.epoch_tick(),
            policy: self.policy,
            max_wait: self.max_wait,
            layout,
            node,
            clock: self.clock,
        })
    }
}
