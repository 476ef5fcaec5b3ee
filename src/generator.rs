//! The lock-free generator: one packed `AtomicU64` advanced by compare-and-swap.

use core::fmt;
use core::time::Duration;

use crossbeam_utils::CachePadded;

use crate::clock::Clock;
#[cfg(feature = "std")]
use crate::clock::MonotonicClock;

/// The clock a generator gets when none is named: the monotonic clock with `std`; without
/// `std` there is none, and [`Generator::with_clock`] names one.
#[cfg(feature = "std")]
pub type DefaultClock = MonotonicClock;
/// The clock a generator gets when none is named: the monotonic clock with `std`; without
/// `std` there is none, and [`Generator::with_clock`] names one.
#[cfg(not(feature = "std"))]
pub type DefaultClock = crate::clock::NoClock;

/// When the current wait began: an `Instant` with `std`, else a reading of the clock.
#[cfg(feature = "std")]
type WaitStart = std::time::Instant;
#[cfg(not(feature = "std"))]
type WaitStart = u64;

/// The time one call (or one [`Ids`] iterator, over all its runs) has spent waiting, which
/// `max_wait` bounds as a whole: the waits already over, and the one under way.
#[derive(Debug, Default)]
pub(crate) struct WaitBudget {
    spent: Duration,
    since: Option<WaitStart>,
}

/// Where threads waiting for a [`Lease`] to end sleep, so that they burn no core; the
/// lease's drop wakes them. (Without `std` they yield-spin, bounded by `max_wait`.)
///
/// The handshake: a waiter takes `lock`, checks the lease bit and, if it is set, sleeps
/// on `wake` (which releases `lock`); the lease's drop clears the bit, then takes `lock`
/// and wakes everyone. Either the waiter held `lock` first, and is asleep before the drop
/// can notify, or the drop did, and its cleared bit is visible once the waiter takes
/// `lock`: no wake-up is lost, without leaning on `SeqCst`. (A waiter count that let the
/// drop skip `lock` would need a store-load fence pairing; loom found the lost wake-up of
/// that design under its model, so the drop takes the uncontended lock every time: tens
/// of nanoseconds, once per lease.) Sleeps are timed (the rest of the bound) all the
/// same. Modelled in `loom-tests`, with the known-wrong order (notify, then clear) that
/// loom catches.
#[cfg(feature = "std")]
#[derive(Debug)]
struct LeaseWaiters {
    lock: sync::Mutex<()>,
    wake: sync::Condvar,
}
use crate::error::Error;
use crate::id::Id;
use crate::layout::Layout;
#[cfg(feature = "std")]
use crate::node;
use crate::state::{self, ClockPolicy, Shape, Step};
use crate::sync::{self, AtomicU64, Ordering};

/// The default bound on the waits of one call (see [`GeneratorBuilder::max_wait`]).
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(1);

/// The longest back-off after lost CAS races: 2^BACKOFF_CAP spin hints.
const BACKOFF_CAP: u32 = 6;

/// Below this much time left, a waiting thread spins instead of sleeping.
const SPIN_BELOW: Duration = Duration::from_micros(50);
/// Above this much time left, a waiting thread sleeps (all but `SLEEP_MARGIN` of it).
const SLEEP_ABOVE: Duration = Duration::from_micros(300);
const SLEEP_MARGIN: Duration = Duration::from_micros(150);

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
pub struct Generator<C = DefaultClock> {
    /// The packed (last tick, last sequence) word, plus the lease bit; see [`Shape`] for
    /// the bit table and the invariant. The node is not stored: it is OR-ed in on the way
    /// out. Padded so that minting threads do not bounce the line that holds the
    /// read-only fields below.
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
    #[cfg(feature = "std")]
    lease_waiters: LeaseWaiters,
    clock: C,
}

impl<C> fmt::Debug for Generator<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let word = self.state.load(Ordering::Relaxed);
        f.debug_struct("Generator")
            .field("layout", &self.layout)
            .field("node", &self.node)
            .field("policy", &self.policy)
            .field("max_wait", &self.max_wait)
            .field("state", &(word & !state::LEASED))
            .field("leased", &(word & state::LEASED != 0))
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "std")]
impl Generator<MonotonicClock> {
    /// Starts building a generator for `layout`, on the default monotonic clock.
    pub fn builder(layout: Layout) -> GeneratorBuilder<MonotonicClock> {
        Generator::with_clock(layout, MonotonicClock::new())
    }
}

impl<C: Clock> Generator<C> {
    /// Starts building a generator for `layout` on `clock` (the way in without `std`,
    /// where there is no default clock).
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
        self.id(self.state.load(Ordering::Acquire) & !state::LEASED)
    }

    /// How far apart two IDs of consecutive sequence numbers in one tick lie: 1 when the
    /// sequence is the low field, `2^node_bits` when the node is.
    #[inline(always)]
    fn sequence_step(&self) -> u64 {
        if self.low_mask != 0 {
            1
        } else {
            1 << self.node_bits
        }
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
            epoch_unix_ns: self.layout.epoch_unix_ns(),
        }
    }

    /// Mints the next ID, waiting (bounded by `max_wait`) when the tick's sequence is used
    /// up or the policy says to wait for the clock.
    ///
    /// IDs from one generator strictly increase, whatever the clock does. If the
    /// generator is [leased](Generator::lease), this waits (bounded by `max_wait`) for the
    /// lease to end, then fails with [`Error::Leased`].
    #[inline]
    pub fn next_id(&self) -> Result<Id, Error> {
        match self.mint_same_tick() {
            Ok(id) => Ok(id),
            Err(_) => self.next_id_slow::<false>(),
        }
    }

    /// The fast path, shared by [`Generator::next_id`] and [`Generator::try_next_id`]:
    /// CAS loops while the word's tick is current and has sequence left; otherwise hands
    /// back the word it last saw, for the slow path.
    #[inline(always)]
    fn mint_same_tick(&self) -> Result<Id, u64> {
        // Acquire on every load of the word, and AcqRel on the CAS, order this thread's
        // clock read after the clock read of whoever stored the word it sees: with a clock
        // that is monotonic across cores, a thread never sees a tick "from the future".
        let mut word = self.state.load(Ordering::Acquire);
        let mut failures = 0;
        while let Some(next) = self.same_tick_step(word) {
            // A failed CAS (lost race or spurious) means retry with a fresh word, so the
            // loop is correct whether or not spurious failures happen.
            match self
                .state
                .compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Ok(self.id(next)),
                Err(actual) => word = self.back_off(actual, &mut failures),
            }
        }
        Err(word)
    }

    /// The fast path's whole decision: if the clock's recent reading lies inside the tick
    /// of `word` and that tick has sequence numbers left, the next word is `word + 1`
    /// (exactly what [`state::reserve`] says for that case, under every policy). No
    /// division: the tick's start is one multiplication. Anything else (a new tick, an
    /// exhausted sequence, a clock that reads behind, a leased word, whose lease bit makes
    /// its tick absurdly far away) goes to the slow path, which decides on the precise
    /// clock.
    #[inline(always)]
    fn same_tick_step(&self, word: u64) -> Option<u64> {
        if self.shape.sequence(word) == self.shape.max_sequence {
            return None;
        }
        let now = u128::from(self.clock.recent_unix_ns());
        (now.wrapping_sub(self.tick_start_of(word)) < u128::from(self.unit_ns)).then_some(word + 1)
    }

    /// Start of `word`'s tick in Unix ns: [`Layout::unix_ns_of`] on the generator's cached
    /// epoch tick, so no division.
    #[inline(always)]
    fn tick_start_of(&self, word: u64) -> u128 {
        u128::from(self.epoch_tick + self.shape.ticks(word)) * u128::from(self.unit_ns)
    }

    /// How far the precise clock reads behind the start of `word`'s tick (0 if not).
    fn behind_by(&self, word: u64) -> u128 {
        self.tick_start_of(word)
            .saturating_sub(u128::from(self.clock.unix_ns()))
    }

    #[inline(always)]
    fn id(&self, word: u64) -> Id {
        Id::from_raw(self.id_of(word))
    }

    /// After a lost CAS race, with the word the CAS found: retry with it at once the
    /// first time (the failed CAS left the line in this core's cache), and after further
    /// losses spin a little first, exponentially longer (up to `2^BACKOFF_CAP` spin
    /// hints), so the threads stop bouncing the line. Under loom one hint (a yield there).
    #[cold]
    fn back_off(&self, actual: u64, failures: &mut u32) -> u64 {
        if *failures > 0 {
            let spins = if cfg!(flakeid_loom) {
                1
            } else {
                1 << (*failures).min(BACKOFF_CAP)
            };
            for _ in 0..spins {
                sync::spin_loop();
            }
        }
        *failures += 1;
        actual
    }

    #[cold]
    #[inline(never)]
    fn next_id_slow<const LEASED: bool>(&self) -> Result<Id, Error> {
        self.reserve_run::<LEASED>(1, &mut WaitBudget::default())
            .map(|(first, _)| self.id(first))
    }

    /// Loads the word: the lease holder is its only writer, everyone else acquires.
    #[inline(always)]
    fn load_word<const LEASED: bool>(&self) -> u64 {
        if LEASED {
            self.state.load(Ordering::Relaxed) & !state::LEASED
        } else {
            self.state.load(Ordering::Acquire)
        }
    }

    /// Moves the word from `word` to `next`: by CAS, or, for the lease holder (the only
    /// writer while the lease bit is set, since every CAS expects a word without it), by
    /// a plain store that keeps the lease bit.
    #[inline(always)]
    fn commit<const LEASED: bool>(&self, word: u64, next: u64) -> Result<(), u64> {
        if LEASED {
            self.state.store(next | state::LEASED, Ordering::Relaxed);
            Ok(())
        } else {
            self.state
                .compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire)
                .map(drop)
        }
    }

    /// Reserves a run of up to `want` sequence numbers in one tick, on the precise clock:
    /// the slow path of single minting and the one path of batch minting. Waits for the
    /// next tick, for a clock that is behind under [`ClockPolicy::Wait`], and for a lease
    /// held by another thread, all charged to `budget`, which `max_wait` bounds. Returns
    /// the first and last word of the run.
    #[inline(never)]
    fn reserve_run<const LEASED: bool>(
        &self,
        want: u64,
        budget: &mut WaitBudget,
    ) -> Result<(u64, u64), Error> {
        let result = self.reserve_run_waiting::<LEASED>(want, budget);
        // Time between two runs of an `Ids` iterator is the consumer's, not a wait.
        budget.spent = self.waited(budget);
        budget.since = None;
        result
    }

    fn reserve_run_waiting<const LEASED: bool>(
        &self,
        want: u64,
        waited: &mut WaitBudget,
    ) -> Result<(u64, u64), Error> {
        let mut word = self.load_word::<LEASED>();
        loop {
            if !LEASED && word & state::LEASED != 0 {
                self.wait_for_lease(waited)?;
                word = self.load_word::<LEASED>();
                continue;
            }
            let now = self.now_ticks()?;
            let step = state::reserve(self.shape, word, now, self.policy, want);
            self.observe(word, now, step);
            match step {
                Step::Mint { first, last } => match self.commit::<LEASED>(word, last) {
                    Ok(()) => return Ok((first, last)),
                    Err(actual) => word = actual,
                },
                Step::WaitFor { until } => {
                    self.wait_for(until, waited)?;
                    word = self.load_word::<LEASED>();
                }
                other => return Err(self.refusal(other, word)),
            }
        }
    }

    /// Mints up to `out.len()` IDs, reserving a run of sequence numbers with one
    /// compare-and-swap per tick, and returns how many it wrote (like `Read::read`).
    ///
    /// It waits as [`Generator::next_id`] does, and `max_wait` bounds the whole call: all
    /// its waits together (one per tick the slice spans), not each. So it fills the whole
    /// slice when the layout's rate allows that within the bound; when the bound (or any
    /// other error) stops it after some IDs were written, it returns that shorter count
    /// (the IDs written are valid) and the next call reports the error if it persists; it
    /// returns `Err` only when it wrote nothing. IDs are strictly increasing within the
    /// slice and after every ID this generator minted before.
    pub fn next_ids(&self, out: &mut [Id]) -> Result<usize, Error> {
        self.fill::<false>(out)
    }

    fn fill<const LEASED: bool>(&self, out: &mut [Id]) -> Result<usize, Error> {
        let mut filled = 0;
        let mut budget = WaitBudget::default();
        while filled < out.len() {
            match self.reserve_run::<LEASED>((out.len() - filled) as u64, &mut budget) {
                Ok((first, last)) => {
                    let run = (last - first + 1) as usize;
                    // A run lies in one tick, so its IDs are evenly spaced: one sequence
                    // step apart. A plain affine fill, which the compiler vectorises.
                    let (base, step) = (self.id_of(first), self.sequence_step());
                    for (k, slot) in out[filled..filled + run].iter_mut().enumerate() {
                        *slot = Id::from_raw(base + k as u64 * step);
                    }
                    filled += run;
                }
                Err(_) if filled > 0 => return Ok(filled),
                Err(e) => return Err(e),
            }
        }
        Ok(filled)
    }

    /// An iterator over `count` new IDs that reserves them in runs, one compare-and-swap
    /// per run (a run is as much of the rest as fits in the current tick), with the
    /// waiting and clock policy of [`Generator::next_id`]. It allocates nothing.
    ///
    /// `max_wait` bounds all the iterator's waits together, over every run (time the
    /// consumer spends between items does not count). After an error, such as
    /// [`Error::WaitTooLong`] when the bound is spent, the iterator yields that error once
    /// and then ends.
    ///
    /// **Order.** The iterator's own IDs strictly increase. A run is reserved when the
    /// iterator reaches it, so its IDs carry the time of that moment even if they are
    /// consumed later, and every ID the generator hands out after the reservation (to any
    /// caller, this thread included) is larger than the whole run. So on one thread,
    /// `ids.next()`, then `generator.next_id()`, then `ids.next()` gives a, b, c with
    /// a < c < b: the rule is "strictly increasing in the order of reservation", and a
    /// run is reserved at once, not ID by ID.
    ///
    /// ```
    /// use flakeid::{Generator, Layout};
    ///
    /// let generator = Generator::builder(Layout::snowflake()).datacenter(1).worker(1).build()?;
    /// let ids: Vec<_> = generator.ids(10_000).collect::<Result<_, _>>()?;
    /// assert_eq!(ids.len(), 10_000);
    /// assert!(ids.windows(2).all(|w| w[0] < w[1]));
    /// # Ok::<(), flakeid::Error>(())
    /// ```
    pub fn ids(&self, count: usize) -> Ids<'_, C> {
        Ids {
            generator: self,
            id: 0,
            in_run: 0,
            remaining: count,
            budget: WaitBudget::default(),
        }
    }

    /// Takes this generator for the calling code alone: until the [`Lease`] is dropped,
    /// it mints with a plain load and store instead of a compare-and-swap (about the
    /// cost of a non-thread-safe generator), and other callers of this generator wait
    /// (bounded by `max_wait`, then [`Error::Leased`]). Meant for a thread that owns a
    /// shard, e.g. one pinned to a core (see [`crate::ShardedGenerator`]).
    ///
    /// Fails with [`Error::Leased`] if it is already leased. The lease is one bit of the
    /// state word, set and cleared by compare-and-swap and store, so IDs stay unique and
    /// increasing across leases and shared use.
    pub fn lease(&self) -> Result<Lease<'_, C>, Error> {
        let mut word = self.state.load(Ordering::Acquire);
        loop {
            if word & state::LEASED != 0 {
                return Err(Error::Leased);
            }
            match self.state.compare_exchange_weak(
                word,
                word | state::LEASED,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(Lease::new(self, word)),
                Err(actual) => word = actual,
            }
        }
    }

    /// Whether a [`Lease`] is held on this generator right now.
    pub fn is_leased(&self) -> bool {
        self.state.load(Ordering::Acquire) & state::LEASED != 0
    }

    /// Mints the next ID without waiting: when it would have to wait, it returns
    /// [`Error::WouldBlock`] with how long (and [`Error::Leased`] while leased).
    #[inline]
    pub fn try_next_id(&self) -> Result<Id, Error> {
        self.mint_same_tick()
            .or_else(|word| self.try_next_id_slow::<false>(word))
    }

    #[cold]
    #[inline(never)]
    fn try_next_id_slow<const LEASED: bool>(&self, mut word: u64) -> Result<Id, Error> {
        loop {
            if !LEASED && word & state::LEASED != 0 {
                return Err(Error::Leased);
            }
            let now = self.now_ticks()?;
            match state::reserve(self.shape, word, now, self.policy, 1) {
                Step::Mint { first, .. } => match self.commit::<LEASED>(word, first) {
                    Ok(()) => return Ok(self.id(first)),
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
                    word = self.load_word::<LEASED>();
                }
                other => return Err(self.refusal(other, word)),
            }
        }
    }

    /// Mints the next ID, awaiting tokio's timer instead of spinning or sleeping the thread
    /// when the tick's sequence is used up or the clock is behind under
    /// [`ClockPolicy::Wait`] (feature `tokio`). Meant for the long units (Sonyflake's
    /// 10 ms): tokio's timer has millisecond resolution, so with 1 ms ticks the
    /// blocking [`Generator::next_id`] loses less of the cap. The total wait is bounded by
    /// `max_wait`, as for the blocking calls; a lease held elsewhere is awaited too.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), flakeid::Error> {
    /// use flakeid::{Generator, Layout};
    ///
    /// let generator = Generator::builder(Layout::sonyflake()).machine_id(7).build()?;
    /// let a = generator.next_id_async().await?;
    /// let b = generator.next_id_async().await?;
    /// assert!(b > a);
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "tokio")]
    pub async fn next_id_async(&self) -> Result<Id, Error> {
        let started = std::time::Instant::now();
        loop {
            let wait = match self.try_next_id() {
                Err(Error::WouldBlock { wait }) => wait,
                Err(Error::Leased) => Duration::from_millis(1),
                done => return done,
            };
            let spent = started.elapsed();
            if spent.saturating_add(wait) > self.max_wait {
                return Err(Error::WaitTooLong {
                    needed: wait,
                    waited: spent,
                    bound: self.max_wait,
                });
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// Reports what the slow path met (features `metrics`, `tracing`); empty without them.
    #[inline(always)]
    fn observe(&self, word: u64, now: u64, step: Step) {
        #[cfg(any(feature = "metrics", feature = "tracing"))]
        {
            let last = self.shape.ticks(word);
            if now < last {
                let by = u64::try_from(self.behind_by(word)).unwrap_or(u64::MAX);
                crate::observe::clock_behind(Duration::from_nanos(by), self.policy);
            }
            if matches!(step, Step::WaitFor { until } if until > last) {
                crate::observe::sequence_exhausted();
            }
        }
        let _ = (word, now, step);
    }

    /// How long this call has waited so far: the waits over, plus the one under way
    /// (whose count starts on first use).
    fn waited(&self, budget: &mut WaitBudget) -> Duration {
        #[cfg(feature = "std")]
        let current = budget
            .since
            .get_or_insert_with(std::time::Instant::now)
            .elapsed();
        #[cfg(not(feature = "std"))]
        let current = {
            let now = self.clock.unix_ns();
            Duration::from_nanos(now.saturating_sub(*budget.since.get_or_insert(now)))
        };
        budget.spent.saturating_add(current)
    }

    /// Waits for another thread's lease to end (asleep, with `std`); fails once
    /// `max_wait` is spent.
    #[cold]
    fn wait_for_lease(&self, budget: &mut WaitBudget) -> Result<(), Error> {
        let spent = self.waited(budget);
        let Some(left) = self.max_wait.checked_sub(spent).filter(|l| !l.is_zero()) else {
            return Err(Error::Leased);
        };
        #[cfg(feature = "std")]
        {
            let w = &self.lease_waiters;
            let guard = w.lock.lock().unwrap_or_else(|e| e.into_inner());
            if self.state.load(Ordering::Acquire) & state::LEASED != 0 {
                drop(w.wake.wait_timeout(guard, left));
            }
        }
        #[cfg(not(feature = "std"))]
        {
            let _ = left;
            sync::yield_now();
        }
        Ok(())
    }

    /// After the lease bit was cleared: wakes the threads waiting for it.
    fn wake_lease_waiters(&self) {
        #[cfg(feature = "std")]
        {
            let w = &self.lease_waiters;
            let _guard = w.lock.lock().unwrap_or_else(|e| e.into_inner());
            w.wake.notify_all();
        }
    }

    #[cold]
    fn refusal(&self, step: Step, word: u64) -> Error {
        match step {
            Step::Behind { ticks } => {
                // How far behind the start of the last tick the clock reads.
                let by = self.behind_by(word).max(u128::from(ticks.min(1)));
                Error::ClockBehind {
                    by: Duration::from_nanos(u64::try_from(by).unwrap_or(u64::MAX)),
                }
            }
            _ => Error::PastLifetime {
                end_unix_ms: self.layout.end_unix_ms(),
            },
        }
    }

    /// The start of `tick` on the clock's scale: past the layout's end
    /// [`Error::PastLifetime`], past what `u64` nanoseconds name [`Error::ClockRangeEnd`].
    fn tick_start_ns(&self, tick: u64) -> Result<u64, Error> {
        let past_lifetime = || Error::PastLifetime {
            end_unix_ms: self.layout.end_unix_ms(),
        };
        let ns = self.layout.unix_ns_of(tick).map_err(|_| past_lifetime())?;
        u64::try_from(ns).map_err(|_| Error::ClockRangeEnd)
    }

    /// Waits until the clock reaches the start of tick `until`: sleeps while far, yields
    /// when near, spins at the boundary. Fails at once if the wait would overrun the bound.
    #[cold]
    fn wait_for(&self, until: u64, waited: &mut WaitBudget) -> Result<(), Error> {
        let target = self.tick_start_ns(until)?;
        loop {
            let now = self.clock.unix_ns();
            if now >= target {
                return Ok(());
            }
            let needed = Duration::from_nanos(target - now);
            let spent = self.waited(waited);
            if spent.saturating_add(needed) > self.max_wait {
                return Err(Error::WaitTooLong {
                    needed,
                    waited: spent,
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

/// The iterator of [`Generator::ids`]: `count` IDs reserved in runs, one CAS per run.
#[derive(Debug)]
pub struct Ids<'g, C = DefaultClock> {
    generator: &'g Generator<C>,
    /// The next ID of the reserved run, and how many of the run are left; IDs of a run
    /// are one sequence step apart.
    id: u64,
    in_run: u64,
    remaining: usize,
    /// Every run's waits count against one `max_wait`.
    budget: WaitBudget,
}

impl<C: Clock> Ids<'_, C> {
    /// Reserves the next run (as much of the rest as fits in the current tick).
    fn refill(&mut self) -> Result<(), Error> {
        let (first, last) = self
            .generator
            .reserve_run::<false>(self.remaining as u64, &mut self.budget)?;
        self.id = self.generator.id_of(first);
        self.in_run = last - first + 1;
        Ok(())
    }
}

impl<C: Clock> Iterator for Ids<'_, C> {
    type Item = Result<Id, Error>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        if self.in_run == 0
            && let Err(e) = self.refill()
        {
            self.remaining = 0;
            return Some(Err(e));
        }
        let id = self.id;
        self.id += self.generator.sequence_step();
        self.in_run -= 1;
        self.remaining -= 1;
        Some(Ok(Id::from_raw(id)))
    }

    /// Internal iteration (`for_each`, `sum`, `fold`...) runs each reserved run as one
    /// tight loop.
    fn fold<B, F>(mut self, init: B, mut f: F) -> B
    where
        F: FnMut(B, Self::Item) -> B,
    {
        let mut acc = init;
        let step = self.generator.sequence_step();
        while self.remaining > 0 {
            if self.in_run == 0
                && let Err(e) = self.refill()
            {
                return f(acc, Err(e));
            }
            let run = self.in_run.min(self.remaining as u64);
            let base = self.id;
            for k in 0..run {
                acc = f(acc, Ok(Id::from_raw(base + k * step)));
            }
            self.id += run * step;
            self.in_run -= run;
            self.remaining -= run as usize;
        }
        acc
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        // An error can end the iterator early; only the reserved rest is sure.
        let reserved = usize::try_from(self.in_run).unwrap_or(usize::MAX);
        (reserved.min(self.remaining), Some(self.remaining))
    }
}

impl<C: Clock> core::iter::FusedIterator for Ids<'_, C> {}

/// Exclusive use of a [`Generator`] (see [`Generator::lease`]): mints without a
/// compare-and-swap. Dropping it hands the generator back to everyone.
///
/// ```
/// use flakeid::{CoarseClock, Generator, Layout};
///
/// let generator = Generator::builder(Layout::snowflake())
///     .datacenter(1)
///     .worker(1)
///     .clock(CoarseClock::new())
///     .build()?;
/// let mut lease = generator.lease()?;
/// let a = lease.next_id()?;
/// assert!(generator.try_next_id().is_err(), "leased to someone else");
/// drop(lease);
/// assert!(generator.next_id()? > a);
/// # Ok::<(), flakeid::Error>(())
/// ```
#[derive(Debug)]
pub struct Lease<'g, C: Clock = DefaultClock> {
    generator: &'g Generator<C>,
    /// A copy of the word (the lease holder is its only writer), so the fast path reads
    /// no shared memory but the clock.
    word: u64,
    /// Start of the word's tick in Unix ns, and the tick's length; a length of 0 when the
    /// start does not fit in a `u64` (then every call takes the slow path).
    tick_start: u64,
    tick_len: u64,
}

impl<'g, C: Clock> Lease<'g, C> {
    fn new(generator: &'g Generator<C>, word: u64) -> Self {
        let mut lease = Lease {
            generator,
            word,
            tick_start: 0,
            tick_len: 0,
        };
        lease.cache(word);
        lease
    }

    fn cache(&mut self, word: u64) {
        let g = self.generator;
        self.word = word;
        (self.tick_start, self.tick_len) = match u64::try_from(g.tick_start_of(word)) {
            Ok(start) if start.checked_add(g.unit_ns).is_some() => (start, g.unit_ns),
            _ => (0, 0),
        };
    }

    /// Mints the next ID as [`Generator::next_id`] does, with a store instead of a CAS.
    #[inline]
    pub fn next_id(&mut self) -> Result<Id, Error> {
        match self.mint_same_tick() {
            Some(id) => Ok(id),
            None => self.next_id_slow(),
        }
    }

    /// Mints the next ID without waiting, as [`Generator::try_next_id`] does: when it
    /// would have to wait it returns [`Error::WouldBlock`] with how long.
    #[inline]
    pub fn try_next_id(&mut self) -> Result<Id, Error> {
        match self.mint_same_tick() {
            Some(id) => Ok(id),
            None => self.try_next_id_slow(),
        }
    }

    /// The fast path: the same decision as `Generator::same_tick_step`, on the cached
    /// tick bounds, and a plain store.
    #[inline(always)]
    fn mint_same_tick(&mut self) -> Option<Id> {
        let g = self.generator;
        let word = self.word;
        if g.shape.sequence(word) != g.shape.max_sequence
            && g.clock.recent_unix_ns().wrapping_sub(self.tick_start) < self.tick_len
        {
            let next = word + 1;
            self.word = next;
            let _ = g.commit::<true>(word, next);
            return Some(g.id(next));
        }
        None
    }

    #[cold]
    #[inline(never)]
    fn next_id_slow(&mut self) -> Result<Id, Error> {
        let result = self
            .generator
            .reserve_run::<true>(1, &mut WaitBudget::default());
        self.cache(self.generator.load_word::<true>());
        result.map(|(first, _)| self.generator.id(first))
    }

    #[cold]
    #[inline(never)]
    fn try_next_id_slow(&mut self) -> Result<Id, Error> {
        let result = self.generator.try_next_id_slow::<true>(self.word);
        self.cache(self.generator.load_word::<true>());
        result
    }

    /// Mints up to `out.len()` IDs as [`Generator::next_ids`] does.
    pub fn next_ids(&mut self, out: &mut [Id]) -> Result<usize, Error> {
        let result = self.generator.fill::<true>(out);
        self.cache(self.generator.load_word::<true>());
        result
    }

    /// The leased generator.
    pub fn generator(&self) -> &Generator<C> {
        self.generator
    }
}

impl<C: Clock> Drop for Lease<'_, C> {
    fn drop(&mut self) {
        let cell = &self.generator.state;
        // Release: whoever next acquires the word sees it after every store of the lease.
        // Then the waiters are woken (see `LeaseWaiters`: clear first, then notify).
        cell.store(
            cell.load(Ordering::Relaxed) & !state::LEASED,
            Ordering::Release,
        );
        self.generator.wake_lease_waiters();
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
    /// long fails at once with [`Error::WaitTooLong`]. `Duration::ZERO` never waits for
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
                lock: sync::Mutex::new(()),
                wake: sync::Condvar::new(),
            },
            clock: self.clock,
        })
    }
}
