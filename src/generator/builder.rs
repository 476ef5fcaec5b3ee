//! [`GeneratorBuilder`]: the node id (checked), clock, clock policy, wait bound and resume
//! point of a [`Generator`].

use core::fmt;
use core::time::Duration;

use crossbeam_utils::CachePadded;

#[cfg(feature = "std")]
use super::LeaseWaiters;
use super::path::{FastPath, Path};
use super::{ClockPolicy, DEFAULT_MAX_WAIT, DefaultClock, Generator, TickGate, Unfenced};
use crate::clock::Clock;
use crate::error::Error;
use crate::generator::state::{self, Shape};
use crate::id::Id;
use crate::layout::Layout;
#[cfg(feature = "std")]
use crate::node;
use crate::sync::AtomicU64;

#[cfg(feature = "std")]
impl Generator<DefaultClock> {
    /// Starts building a generator for `layout`, on the default clock ([`DefaultClock`]).
    pub fn builder(layout: Layout) -> GeneratorBuilder<DefaultClock> {
        GeneratorBuilder::with_clock(layout, DefaultClock::new())
    }
}

impl<C: Clock> GeneratorBuilder<C> {
    /// Starts building a generator for `layout` on `clock`: the way in without `std`,
    /// where there is no default clock (with it, [`Generator::builder`] then
    /// [`GeneratorBuilder::clock`] does the same).
    pub fn with_clock(layout: Layout, clock: C) -> GeneratorBuilder<C> {
        GeneratorBuilder {
            layout,
            node: NodeSpec::Unset,
            common: Common::default(),
            resume_after: None,
            clock,
        }
    }
}

enum NodeSpec {
    Unset,
    Node(u64),
    DatacenterWorker(Option<u64>, Option<u64>),
    #[cfg(feature = "std")]
    PrivateIp,
}

/// The node-id hook; shared (an `Arc`) so that a sharded builder checks every shard's id
/// with the one hook.
#[cfg(feature = "std")]
pub(crate) type NodeCheck = std::sync::Arc<dyn Fn(u64) -> bool + Send + Sync>;
#[cfg(not(feature = "std"))]
pub(crate) type NodeCheck = fn(u64) -> bool;

/// What [`GeneratorBuilder`] and [`ShardedBuilder`](crate::generator::ShardedBuilder) set alike, for
/// every generator they build; [`common_setters`] writes the setters of both.
#[derive(Clone)]
pub(crate) struct Common {
    pub(crate) check: Option<NodeCheck>,
    pub(crate) policy: ClockPolicy,
    pub(crate) max_wait: Duration,
    pub(crate) fast_path: FastPath,
    pub(crate) short_slice: bool,
    pub(crate) end_warning: Duration,
}

impl Default for Common {
    fn default() -> Self {
        Common {
            check: None,
            policy: ClockPolicy::default(),
            max_wait: DEFAULT_MAX_WAIT,
            fast_path: FastPath::CompareAndSwap,
            short_slice: true,
            end_warning: crate::layout::END_WARNING,
        }
    }
}

impl Common {
    /// Says, once for each build (not once a shard), that `layout` runs out within the end
    /// warning. Only where it can be heard: without metrics and tracing there is nowhere to
    /// say it (the tool and the service say it themselves).
    pub(crate) fn warn_if_ending<C: Clock>(&self, layout: &Layout, clock: &C) {
        #[cfg(any(feature = "metrics", feature = "tracing"))]
        if let Some(left) = layout.ends_within(self.end_warning, i128::from(clock.unix_ns())) {
            crate::observe::layout_ends_soon(layout, left);
        }
        let _ = (layout, clock);
    }

    /// Runs the hook on `node`: [`Error::NodeRejected`] if it says no.
    pub(crate) fn check(&self, node: u64) -> Result<u64, Error> {
        match &self.check {
            Some(check) if !check(node) => Err(Error::NodeRejected { node }),
            _ => Ok(node),
        }
    }
}

/// The setters [`GeneratorBuilder`] and [`ShardedBuilder`](crate::generator::ShardedBuilder) share,
/// written once; the builder's `common` field holds what they set.
macro_rules! common_setters {
    () => {
        /// What to do when the clock reads earlier than the last tick used (see
        /// [`ClockPolicy`](crate::ClockPolicy)).
        pub fn policy(mut self, policy: $crate::ClockPolicy) -> Self {
            self.common.policy = policy;
            self
        }

        /// The bound on the total time one call waits (default
        /// [`DEFAULT_MAX_WAIT`](crate::generator::DEFAULT_MAX_WAIT)): all the waits of one `next_id`
        /// or `next_ids` call, or of one `ids` iterator, together, whether for the next
        /// tick, a clock behind under [`ClockPolicy::Wait`](crate::ClockPolicy::Wait), or
        /// another thread's lease. A wait known to be too long fails at once with
        /// [`MintError::WaitTooLong`](crate::MintError::WaitTooLong). `Duration::ZERO`
        /// never waits for the clock. Also the furthest ahead of the clock a resume point
        /// may lie.
        pub fn max_wait(mut self, bound: core::time::Duration) -> Self {
            self.common.max_wait = bound;
            self
        }

        /// How long before its layout runs out a generator warns, when it is built
        /// (default [`END_WARNING`](crate::layout::END_WARNING), a year): a `warn` event
        /// with the end and the time left (feature `tracing`) and the gauge
        /// `flakeid_layout_seconds_left` (feature `metrics`). `Duration::ZERO` never
        /// warns. A layout that runs out stops minting ([`MintError::PastLifetime`](crate::MintError)),
        /// as Baidu's uid-generator's default layout did on 2024-11-20.
        pub fn end_warning(mut self, margin: core::time::Duration) -> Self {
            self.common.end_warning = margin;
            self
        }

        /// How the fast path advances the shared word (default
        /// [`FastPath::CompareAndSwap`](crate::generator::FastPath::CompareAndSwap)); see
        /// [`FastPath`](crate::generator::FastPath) for the trade-off. A claimed generator, or a layout
        /// with no spare bit in the word, keeps the compare-and-swap;
        /// [`Generator::fast_path`](crate::Generator::fast_path) says which is in use.
        pub fn fast_path(mut self, path: $crate::generator::FastPath) -> Self {
            self.common.fast_path = path;
            self
        }

        /// Whether a thread that sleeps to the next tick asks the scheduler for a short
        /// time slice (default `true`; Linux 6.12 and later, elsewhere nothing happens).
        ///
        /// Beside busy threads, Linux runs a thread that woke at a tick's boundary only
        /// when the running thread's slice (0.75-3 ms) ends, so it mints in fewer ticks
        /// (`next_id` at Snowflake's cap beside eight busy threads on two cores: 84% of
        /// the cap). Asking for the shortest slice, 100 µs, lets it run as it wakes
        /// (94-99%). The thread's share of the CPU is unchanged, only how finely it is
        /// cut; it keeps the slice for the rest of its life, asked for once, the first
        /// time it waits for a tick. Real-time, batch and idle threads are left alone,
        /// as is a thread whose slice is that short already. `false` leaves every
        /// caller's scheduling as it is. The async calls ask on the thread that awaits
        /// the tick (the runtime's), and flakeid's own timer thread, which wakes them,
        /// always asks. See also [`wait::short_slice`](crate::wait::short_slice).
        pub fn short_slice(mut self, ask: bool) -> Self {
            self.common.short_slice = ask;
            self
        }

        /// A hook that may refuse a node id (Sonyflake's `CheckMachineID`): return `false`
        /// and `build` fails with [`Error::NodeRejected`](crate::Error::NodeRejected).
        #[cfg(feature = "std")]
        pub fn check_node(mut self, check: impl Fn(u64) -> bool + Send + Sync + 'static) -> Self {
            self.common.check = Some(std::sync::Arc::new(check));
            self
        }

        /// A hook that may refuse a node id (Sonyflake's `CheckMachineID`): return `false`
        /// and `build` fails with [`Error::NodeRejected`](crate::Error::NodeRejected).
        /// (Without `std`, a plain function.)
        #[cfg(not(feature = "std"))]
        pub fn check_node(mut self, check: fn(u64) -> bool) -> Self {
            self.common.check = Some(check);
            self
        }
    };
}
#[cfg(feature = "std")]
pub(crate) use common_setters;

/// The fetch_add fast path needs a guard that more than 2^16 threads caught between their
/// add and their compaction cannot overflow (see [`Shape::needs_compaction`]): the sequence
/// and guard together wider than 16 bits, by one.
const MIN_ADDERS_LOG2: u32 = 16;

/// Configures a [`Generator`]: node id, clock, clock policy and wait bound.
pub struct GeneratorBuilder<C = DefaultClock> {
    pub(crate) layout: Layout,
    node: NodeSpec,
    pub(crate) common: Common,
    pub(crate) resume_after: Option<u64>,
    pub(crate) clock: C,
}

impl<C> fmt::Debug for GeneratorBuilder<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeneratorBuilder")
            .field("layout", &self.layout)
            .field("policy", &self.common.policy)
            .field("max_wait", &self.common.max_wait)
            .finish_non_exhaustive()
    }
}

impl<C> GeneratorBuilder<C> {
    common_setters!();

    /// The node id (the whole node field; Sonyflake's machine id). Range-checked at build.
    pub fn node(mut self, node: u64) -> Self {
        self.node = NodeSpec::Node(node);
        self
    }

    /// [`GeneratorBuilder::node`] under Sonyflake's documented name for it (`MachineID` in
    /// its `Settings`), for Sonyflake layouts.
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
    #[cfg(feature = "std")]
    pub fn machine_id_from_private_ip(mut self) -> Self {
        self.node = NodeSpec::PrivateIp;
        self
    }

    /// Starts after an ID minted earlier (by this node, persisted across a restart): every
    /// new ID is larger, even if the clock now reads earlier.
    ///
    /// `build` refuses an ID that cannot be this node's last: one that does not fit the
    /// layout ([`Error::IdOutOfLayout`]), one of another node ([`Error::ResumeOtherNode`]),
    /// and one whose tick starts further ahead of the clock than `max_wait`
    /// ([`Error::ResumeAhead`]: an ID of another layout, or of a clock far ahead; the
    /// generator could mint only the rest of that tick before failing every call).
    pub fn resume_after(mut self, last_id: Id) -> Self {
        self.resume_after = Some(last_id.get());
        self
    }

    /// Uses another clock, e.g. [`SystemClock`](crate::clock::SystemClock) or
    /// [`ManualClock`](crate::clock::ManualClock).
    pub fn clock<D: Clock>(self, clock: D) -> GeneratorBuilder<D> {
        GeneratorBuilder {
            layout: self.layout,
            node: self.node,
            common: self.common,
            resume_after: self.resume_after,
            clock,
        }
    }

    /// The node id the generator will get: resolved from what was set (a node, a
    /// datacenter and worker, the private IP), checked against the layout and put to the
    /// hook, as `build` does, without building.
    ///
    /// ```
    /// use flakeid::{Error, Generator, Layout};
    ///
    /// let b = Generator::builder(Layout::snowflake()).datacenter(3).worker(17);
    /// assert_eq!(b.node_id()?, 3 << 5 | 17);
    /// let missing = Generator::builder(Layout::snowflake()).datacenter(3);
    /// assert_eq!(missing.node_id(), Err(Error::NodeMissing));
    /// # Ok::<(), flakeid::Error>(())
    /// ```
    pub fn node_id(&self) -> Result<u64, Error> {
        let node = self.resolve_node()?;
        self.common.check(self.layout.check_node(node)?)
    }

    fn resolve_node(&self) -> Result<u64, Error> {
        let l = &self.layout;
        let node = match self.node {
            NodeSpec::Unset if l.node_bits() == 0 => 0,
            NodeSpec::Unset => return Err(Error::NodeMissing),
            NodeSpec::Node(n) => n,
            NodeSpec::DatacenterWorker(Some(d), Some(w)) => return l.node_of(d, w),
            NodeSpec::DatacenterWorker(..) => return Err(Error::NodeMissing),
            #[cfg(feature = "std")]
            NodeSpec::PrivateIp => u64::from(node::private_ip_machine_id()?),
        };
        Ok(node)
    }
}

impl<C: Clock> GeneratorBuilder<C> {
    /// Checks the node id (range and hook) and the resume point, and builds the generator.
    pub fn build(self) -> Result<Generator<C>, Error> {
        let node = self.resolve_node()?;
        self.common.warn_if_ending(&self.layout, &self.clock);
        Generator::assemble(
            self.layout,
            node,
            &self.common,
            self.resume_after,
            Unfenced,
            self.clock,
        )
    }
}

impl<C: Clock, G: TickGate> Generator<C, G> {
    /// Where both builders end: checks `node` (against the layout and the hook) and the
    /// resume point, and makes the generator.
    pub(crate) fn assemble(
        layout: Layout,
        node: u64,
        common: &Common,
        resume_after: Option<u64>,
        gate: G,
        clock: C,
    ) -> Result<Generator<C, G>, Error> {
        let node = common.check(layout.check_node(node)?)?;
        let shape = Shape::of(&layout);
        if shape.word_bits() > 63 {
            return Err(Error::CannotMint {
                bits: shape.word_bits(),
                max: 63,
            });
        }
        // The fetch_add fast path where it is sound and its guard is wide enough (see
        // `Shape`): not for a claimed generator, whose every tick change must pass the
        // fence on the slow path, which a carry out of an overflowing guard would skip.
        let guarded = shape.guarded();
        let fetch_add = !G::FENCED
            && common.fast_path == FastPath::FetchAdd
            && guarded.guard_bits > 0
            && guarded.sequence_bits + guarded.guard_bits > MIN_ADDERS_LOG2;
        let shape = if fetch_add { guarded } else { shape };
        let path = Path::of(
            fetch_add,
            shape.tick_shift() + layout.sequence_shift() == layout.time_shift(),
        );
        let mut word = shape.initial();
        if let Some(last) = resume_after {
            let parts = layout.decompose(last)?;
            if parts.node != node {
                return Err(Error::ResumeOtherNode {
                    id_node: parts.node,
                    node,
                });
            }
            let ahead = layout.unix_ns_of(parts.ticks)? - i128::from(clock.unix_ns());
            // Past the clock's reach is ahead of every wait (and would not pack).
            if ahead > common.max_wait.as_nanos() as i128 || parts.ticks > shape.max_ticks {
                return Err(Error::ResumeAhead {
                    ahead: crate::layout::duration_of_ns(ahead),
                    bound: common.max_wait,
                });
            }
            word = word.max(shape.pack(parts.ticks, parts.sequence));
        }
        if G::FENCED {
            // Nothing before the previous holder's reservation; and a full sequence, so
            // that the first ID takes the slow path, which checks the fence.
            let first = gate.first_tick();
            // A reservation past the clock's reach leaves nothing to mint: the last
            // reachable tick, full, which the slow path reports as the clock's end.
            if first > 0 {
                let last = (first - 1).min(shape.max_ticks);
                word = word.max(shape.pack(last, shape.max_sequence));
            }
            word |= shape.max_sequence;
        }
        let generator = Generator {
            state: CachePadded::new(AtomicU64::new(word)),
            path,
            miss_mask: state::LEASED | shape.guard_mask(),
            live_mask: state::LEASED | shape.guard_mask() | shape.max_sequence,
            held: AtomicU64::new(word),
            shape,
            tick_start: AtomicU64::new(0),
            tick_shift: shape.tick_shift(),
            time_shift: layout.time_shift(),
            sequence_shift: layout.sequence_shift(),
            node_field: node << layout.node_shift(),
            unit_ns: layout.unit_ns(),
            tick0_ns: layout.tick0_ns(),
            policy: common.policy,
            max_wait: common.max_wait,
            short_slice: common.short_slice,
            layout,
            node,
            #[cfg(feature = "std")]
            lease_waiters: LeaseWaiters {
                lock: crate::sync::Mutex::new(0),
                wake: crate::sync::Condvar::new(),
            },
            gate,
            clock,
        };
        // The first word's tick counts as entered (see `tick_start`): a resumed word
        // with sequence left mints on the fast path only while the clock reads its tick.
        generator.entered(word);
        Ok(generator)
    }
}
