//! [`GeneratorBuilder`]: the node id (checked), clock, clock policy, wait bound and resume
//! point of a [`Generator`].

use core::fmt;
use core::time::Duration;

use crossbeam_utils::CachePadded;

#[cfg(feature = "std")]
use super::LeaseWaiters;
use super::{ClockPolicy, DEFAULT_MAX_WAIT, DefaultClock, Generator};
use crate::clock::Clock;
#[cfg(feature = "std")]
use crate::clock::MonotonicClock;
use crate::error::Error;
use crate::id::Id;
use crate::layout::Layout;
#[cfg(feature = "std")]
use crate::node;
use crate::state::Shape;
use crate::sync::AtomicU64;

#[cfg(feature = "std")]
impl Generator<MonotonicClock> {
    /// Starts building a generator for `layout`, on the default monotonic clock.
    pub fn builder(layout: Layout) -> GeneratorBuilder<MonotonicClock> {
        GeneratorBuilder::with_clock(layout, MonotonicClock::new())
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
            check: None,
            policy: ClockPolicy::default(),
            max_wait: DEFAULT_MAX_WAIT,
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

#[cfg(feature = "std")]
type NodeCheck = Box<dyn Fn(u64) -> bool + Send + Sync>;
#[cfg(not(feature = "std"))]
type NodeCheck = fn(u64) -> bool;

/// Configures a [`Generator`]: node id, clock, clock policy and wait bound.
pub struct GeneratorBuilder<C = DefaultClock> {
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
    #[cfg(feature = "std")]
    pub fn machine_id_from_private_ip(mut self) -> Self {
        self.node = NodeSpec::PrivateIp;
        self
    }

    /// A hook that may refuse the node id (Sonyflake's `CheckMachineID`): return `false`
    /// and `build` fails with [`Error::NodeRejected`].
    #[cfg(feature = "std")]
    pub fn check_node(mut self, check: impl Fn(u64) -> bool + Send + Sync + 'static) -> Self {
        self.check = Some(Box::new(check));
        self
    }

    /// A hook that may refuse the node id (Sonyflake's `CheckMachineID`): return `false`
    /// and `build` fails with [`Error::NodeRejected`]. (Without `std`, a plain function.)
    #[cfg(not(feature = "std"))]
    pub fn check_node(mut self, check: fn(u64) -> bool) -> Self {
        self.check = Some(check);
        self
    }

    /// What to do when the clock reads earlier than the last tick used.
    pub fn policy(mut self, policy: ClockPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The bound on the total time one call waits (default [`DEFAULT_MAX_WAIT`]): all the
    /// waits of one [`Generator::next_id`] or [`Generator::next_ids`] call, or of one
    /// [`Generator::ids`] iterator, together, whether for the next tick, a clock behind
    /// under [`ClockPolicy::Wait`], or another thread's lease. A wait known to be too
    /// long fails at once with [`MintError::WaitTooLong`](crate::MintError::WaitTooLong). `Duration::ZERO` never waits for
    /// the clock. Also the furthest ahead of the clock [`GeneratorBuilder::resume_after`]
    /// accepts.
    pub fn max_wait(mut self, bound: Duration) -> Self {
        self.max_wait = bound;
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
            #[cfg(feature = "std")]
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
            if parts.node != node {
                return Err(Error::ResumeOtherNode {
                    id_node: parts.node,
                    node,
                });
            }
            let ahead = layout.unix_ns_of(parts.ticks)? - i128::from(self.clock.unix_ns());
            if ahead > self.max_wait.as_nanos() as i128 {
                return Err(Error::ResumeAhead {
                    ahead: crate::layout::duration_of_ns(ahead),
                    bound: self.max_wait,
                });
            }
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
            #[cfg(feature = "std")]
            lease_waiters: LeaseWaiters {
                lock: crate::sync::Mutex::new(()),
                wake: crate::sync::Condvar::new(),
            },
            clock: self.clock,
        })
    }
}
