//! The lock-free generator: one packed `AtomicU64` advanced by compare-and-swap, and the
//! calls that mint one ID. The rest, one concern per file: `fast` (same tick, sequence
//! left: the fast paths), `slow` (a tick changes, waits, refusals), `batch` (`next_ids`, [`Ids`]), `lease` ([`Lease`]),
//! `builder` ([`GeneratorBuilder`]), `policy` ([`ClockPolicy`]).

mod batch;
mod builder;
mod fast;
pub(crate) mod gate;
mod lease;
mod path;
mod policy;
#[cfg(feature = "std")]
pub(crate) mod sharded;
mod slow;
pub(crate) mod state;

pub use batch::{Ids, LeaseIds};
pub use builder::GeneratorBuilder;
#[cfg(feature = "std")]
pub(crate) use builder::{Common, common_setters};
pub use gate::{TickGate, Unfenced};
pub use lease::Lease;
#[cfg(feature = "std")]
use lease::LeaseWaiters;
pub use path::FastPath;
use path::Path;
pub use policy::ClockPolicy;
#[cfg(feature = "std")]
pub use sharded::{ShardedBuilder, ShardedGenerator};
pub(crate) use slow::WaitBudget;

use core::fmt;
use core::time::Duration;

use crossbeam_utils::CachePadded;

use crate::clock::Clock;
use crate::error::MintError;
use crate::id::Id;
use crate::layout::Layout;
use crate::sync::{AtomicU64, Ordering};
use state::Shape;

/// The clock a generator gets when none is named: the [`CoarseClock`](crate::clock::CoarseClock),
/// the [`MonotonicClock`](crate::clock::MonotonicClock) plus a reading a background thread publishes every millisecond.
///
/// The trade-off: the same-tick fast path reads that published value (one relaxed load)
/// instead of the TSC, so an ID's time can lag the true time by about one millisecond
/// (plus however late the OS wakes the thread); every decision that changes the tick is
/// still taken on the precise clock, so uniqueness and order do not depend on it, and no ID
/// is ever ahead of the clock. Name [`MonotonicClock`](crate::clock::MonotonicClock) (`.clock(MonotonicClock::new())`)
/// for IDs whose time is exact to the tick, at a TSC read per ID. The default exists with
/// `std` only; without it there is no default, and [`GeneratorBuilder::with_clock`] names
/// the clock.
#[cfg(all(feature = "std", not(flakeid_loom)))]
pub type DefaultClock = crate::clock::CoarseClock;
/// Under the loom models (no background thread there), the default is the precise clock.
#[cfg(all(feature = "std", flakeid_loom))]
pub type DefaultClock = crate::clock::MonotonicClock;
/// Without `std` the default clock type parameter is this placeholder, which cannot be
/// named by a public path nor made, so no `no_std` code can depend on the default: turning
/// `std` on (it makes the default [`CoarseClock`](crate::clock::CoarseClock)) then breaks nothing.
#[cfg(not(feature = "std"))]
pub type DefaultClock = crate::clock::NoDefaultClock;

/// The default bound on the waits of one call (see [`GeneratorBuilder::max_wait`]).
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(1);

/// The most IDs [`Generator::next_ids_async`] mints in one poll before it gives its thread
/// back to the runtime: one Snowflake tick's sequence, about 10 µs of minting at 2.5 ns
/// an ID. A task beside a batch of any size on the same thread waits no longer than that
/// (and a batch that waits for the next tick holds no thread at all).
#[cfg(feature = "tokio")]
pub const ASYNC_POLL_IDS: usize = 4096;

/// The longest back-off after lost CAS races: 2^BACKOFF_CAP spin hints.
const BACKOFF_CAP: u32 = 6;

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
///
/// `G` is what may hold the generator at a tick: nothing ([`Unfenced`], the default), or
/// the fence of a claimed node id (the claim layer's `ClaimGate`, made by its
/// `build_claimed` on this builder).
pub struct Generator<C = DefaultClock, G: TickGate = Unfenced> {
    /// The packed (last tick, last sequence) word, plus the lease bit; see [`Shape`] for
    /// the bit table and the invariant. The node is not stored: it is OR-ed in on the way
    /// out. Padded so that minting threads do not bounce the line that holds the
    /// read-only fields below.
    state: CachePadded<AtomicU64>,
    /// How the fast path mints: by `fetch_add` (the word has a guard: see [`Shape`]) or by
    /// compare-and-swap, on a word that is the ID less its node (`aligned`: the shape's gap,
    /// see [`Shape`], so that an ID is `(word << sequence_shift) | node_field`) or not.
    path: Path,
    /// The bits of a word handed back by `fetch_add` that make it no ID: the lease bit and
    /// the guard.
    miss_mask: u64,
    /// The compare-and-swap path's one test of a word: `word & live_mask` is below the
    /// largest sequence number exactly when the word has no lease bit, no guard bit and
    /// sequence left.
    live_mask: u64,
    /// While leased, the word as the lease holder (its only reader and writer) has it; the
    /// shared `state` then holds the lease bit and whatever blind adds of other threads
    /// land on it, which the lease's end overwrites with this.
    held: AtomicU64,
    shape: Shape,
    /// The start (in Unix ns) of the tick a slow path last moved the word into (at first,
    /// of the first word's tick): the fast path mints in the word's tick while the clock's
    /// recent reading lies in the tick that starts here (one subtraction and comparison, no
    /// multiplication). Raised (`fetch_max`, Release) only after the compare-and-swap that
    /// entered the tick, so a fast path that reads a start (Acquire) also sees the word in
    /// that tick or later, and its compare-and-swap from an older word fails: an ID is never
    /// of a tick that ended before the reading its minter took (modelled in `loom-tests`,
    /// with the known-wrong order, raised before the compare-and-swap, that loom catches).
    /// It may lag the word's tick by the instant between another thread's compare-and-swap
    /// and its raise: a reading in that earlier tick then mints in the word's, which the
    /// precise clock reached, or misses, and the slow path raises it.
    tick_start: AtomicU64,
    /// `shape.tick_shift()`, kept so the slow path does not add it up.
    tick_shift: u32,
    /// Where a word's tick and sequence go in the ID.
    time_shift: u32,
    sequence_shift: u32,
    /// The node id, already shifted into place.
    node_field: u64,
    unit_ns: u64,
    /// The start of tick 0 in Unix ns (on either [`Grid`](crate::layout::Grid)): tick `k` starts at
    /// `tick0_ns + k x unit_ns`.
    tick0_ns: u64,
    policy: ClockPolicy,
    max_wait: Duration,
    /// Whether a thread that sleeps to a tick asks for a short time slice (see
    /// [`GeneratorBuilder::short_slice`]).
    short_slice: bool,
    layout: Layout,
    node: u64,
    #[cfg(feature = "std")]
    lease_waiters: LeaseWaiters,
    /// What may hold the generator at a tick (zero-sized when nothing can).
    pub(crate) gate: G,
    clock: C,
}

impl<C, G: TickGate> Drop for Generator<C, G> {
    /// Tells the gate the last tick minted in (a claim releases its reservation cut
    /// there; [`Unfenced`] does nothing). No thread can mint any more, so the next holder
    /// of a claimed id need not wait for the rest of the window. A lease still marked on
    /// the word (one that was forgotten, or leaked) minted from its own copy of the word,
    /// which it stores before it mints in a tick: the cut takes the later of the two,
    /// never below an ID handed out.
    fn drop(&mut self) {
        if G::FENCED {
            let last = self.shape.ticks(self.last_word());
            self.gate.release(last);
        }
    }
}

impl<C, G: TickGate> Generator<C, G> {
    /// Leaves this generator leased for good, so its fast path always misses (the
    /// sharded generator's stand-in for a thread with no slot; never minted on).
    #[cfg(feature = "std")]
    pub(crate) fn make_inert(&self) {
        self.state.store(state::LEASED, Ordering::Release);
    }

    /// The word of the last ID handed out, as [`Generator::last_id`] reports it: a spent
    /// word as its tick's last, and while the word is leased, the lease's own word as the
    /// end of its tick (the holder stores a word of a tick before it mints in that tick).
    fn last_word(&self) -> u64 {
        let word = self.state.load(Ordering::Acquire);
        let mut last = self.shape.settled(word & !state::LEASED);
        if word & state::LEASED != 0 {
            last = last.max(self.shape.tick_end(self.held.load(Ordering::Relaxed)));
        }
        last
    }
}

impl<C, G: TickGate> fmt::Debug for Generator<C, G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let word = self.state.load(Ordering::Relaxed);
        let mut d = f.debug_struct("Generator");
        d.field("layout", &self.layout)
            .field("node", &self.node)
            .field("policy", &self.policy)
            .field("max_wait", &self.max_wait)
            .field("short_slice", &self.short_slice)
            .field("state", &(word & !state::LEASED))
            .field("leased", &(word & state::LEASED != 0));
        if G::FENCED {
            d.field("gate", &self.gate);
        }
        d.finish_non_exhaustive()
    }
}

impl<C: Clock, G: TickGate> Generator<C, G> {
    /// The fast path in use: what [`GeneratorBuilder::fast_path`] asked for, or
    /// [`FastPath::CompareAndSwap`] where `FetchAdd` cannot be used (see [`FastPath`]).
    pub fn fast_path(&self) -> FastPath {
        self.path.fast_path()
    }

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

    /// Whether a thread that sleeps to the next tick asks for a short time slice (see
    /// [`GeneratorBuilder::short_slice`]).
    pub fn short_slice(&self) -> bool {
        self.short_slice
    }

    /// The clock.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// The last ID this generator handed out (or would have at tick 0 with a full
    /// sequence, before the first). Persist it and pass it to
    /// [`GeneratorBuilder::resume_after`] to survive a restart onto a rolled-back clock.
    ///
    /// Never below the last ID handed out: a word the fast path spent (see [`Shape`]) reads
    /// as its tick's last ID, and so does the word of a [`Lease`] held right now (its
    /// holder writes the word back when it leaves a tick, not per ID; it never mints past
    /// that tick first). So readings around a lease are not monotonic (one taken during a
    /// lease can lie above one taken after it); each is at or above every ID whose minting
    /// happens before it (an ID sent to the reading thread, or minted before a join).
    pub fn last_id(&self) -> Id {
        self.id(self.last_word())
    }

    /// How far apart two IDs of consecutive sequence numbers in one tick lie: 1 when the
    /// sequence is the low field, `2^node_bits` when the node is.
    #[inline(always)]
    pub(super) fn sequence_step(&self) -> u64 {
        1 << self.sequence_shift
    }

    /// The ID of a word that is not spent: one shift and one OR where the word is the ID
    /// less its node (see [`Shape`]), else the tick and the sequence moved apart.
    #[inline(always)]
    pub(super) fn id_of(&self, word: u64) -> u64 {
        if self.path.aligned() {
            self.id_of_aligned(word)
        } else {
            ((word >> self.tick_shift) << self.time_shift)
                | (self.shape.sequence(word) << self.sequence_shift)
                | self.node_field
        }
    }

    /// [`Generator::id_of`] where the word is the ID less its node (`aligned`).
    #[inline(always)]
    fn id_of_aligned(&self, word: u64) -> u64 {
        debug_assert!(self.path.aligned());
        (word << self.sequence_shift) | self.node_field
    }

    /// The clock's tick; may lie past the lifetime, which [`state::reserve`] reports.
    #[inline(always)]
    pub(super) fn now_ticks(&self) -> Result<u64, MintError> {
        let ns = self.clock.unix_ns();
        // floor((ns - phase) / unit) - epoch_tick, in one step.
        match ns.checked_sub(self.tick0_ns) {
            Some(since) => Ok(since / self.unit_ns),
            None => Err(self.before_epoch(ns)),
        }
    }

    #[cold]
    pub(super) fn before_epoch(&self, ns: u64) -> MintError {
        MintError::BeforeEpoch {
            by_ns: self.layout.epoch_ns().saturating_sub(ns),
        }
    }

    /// Mints the next ID, waiting (bounded by `max_wait`) when the tick's sequence is used
    /// up or the policy says to wait for the clock.
    ///
    /// IDs from one generator strictly increase, whatever the clock does. If the
    /// generator is [leased](Generator::lease), this waits (bounded by `max_wait`) for the
    /// lease to end, then fails with [`MintError::Leased`].
    #[inline]
    pub fn next_id(&self) -> Result<Id, MintError> {
        match self.mint_same_tick() {
            0 => self.next_id_slow::<false, true>(),
            id => Ok(Id::from_raw(id)),
        }
    }

    /// Start of `word`'s tick in Unix ns: [`Layout::unix_ns_of`] on the generator's cached
    /// epoch tick, so no division.
    #[inline(always)]
    pub(super) fn tick_start_of(&self, word: u64) -> u128 {
        u128::from(self.shape.ticks(word)) * u128::from(self.unit_ns) + u128::from(self.tick0_ns)
    }

    /// How far the precise clock reads behind the start of `word`'s tick (0 if not).
    pub(super) fn behind_by(&self, word: u64) -> u128 {
        self.tick_start_of(word)
            .saturating_sub(u128::from(self.clock.unix_ns()))
    }

    #[inline(always)]
    pub(super) fn id(&self, word: u64) -> Id {
        Id::from_raw(self.id_of(word))
    }

    /// Loads the word: the lease holder reads its own (`held`), everyone else acquires the
    /// shared one.
    #[inline(always)]
    pub(super) fn load_word<const LEASED: bool>(&self) -> u64 {
        if LEASED {
            self.held.load(Ordering::Relaxed)
        } else {
            self.state.load(Ordering::Acquire)
        }
    }

    /// Moves the word from `word` to `next`: by CAS, or, for the lease holder (the only
    /// writer of `held`, and no CAS succeeds on the shared word while its lease bit is
    /// set), by a plain store to `held`.
    #[inline(always)]
    pub(super) fn commit<const LEASED: bool>(&self, word: u64, next: u64) -> Result<(), u64> {
        if LEASED {
            self.held.store(next, Ordering::Relaxed);
            Ok(())
        } else {
            self.state
                .compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire)
                .map(drop)
        }
    }

    /// Mints the next ID without waiting: when it would have to wait, it returns
    /// [`MintError::WouldBlock`] with how long (and [`MintError::Leased`] while leased).
    #[inline]
    pub fn try_next_id(&self) -> Result<Id, MintError> {
        match self.mint_same_tick() {
            0 => self.next_id_slow::<false, false>(),
            id => Ok(Id::from_raw(id)),
        }
    }
}
