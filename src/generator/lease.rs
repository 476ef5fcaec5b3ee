//! [`Lease`]: one caller mints alone, on its own copy of the word (a plain store per
//! tick); everyone else sleeps until it ends (bounded).

use super::{DefaultClock, Generator, LeaseIds, TickGate, Unfenced, WaitBudget};
use crate::clock::Clock;
use crate::error::MintError;
use crate::generator::state;
use crate::id::Id;
use crate::sync::{self, Ordering};

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
///
/// The count under `lock` is the shared minters waiting for a lease to end: while it is
/// not zero, [`Generator::lease`] refuses, so that a thread that leases in a loop cannot
/// take the word again and again before a waiting `next_id` gets its turn.
#[cfg(feature = "std")]
#[derive(Debug)]
pub(super) struct LeaseWaiters {
    pub(super) lock: sync::Mutex<u64>,
    pub(super) wake: sync::Condvar,
}

#[cfg(feature = "std")]
impl LeaseWaiters {
    /// `lock` taken: the count of shared minters waiting for the lease to end.
    fn count(&self) -> sync::MutexGuard<'_, u64> {
        self.lock.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<C: Clock, G: TickGate> Generator<C, G> {
    /// How many shared minters wait for the lease to end now (for tests that wait for a
    /// waiter instead of sleeping; see `__private::lease_waiters`).
    #[cfg(feature = "std")]
    pub(crate) fn lease_waiter_count(&self) -> u64 {
        *self.lease_waiters.count()
    }

    /// Takes this generator for the calling code alone: until the [`Lease`] is dropped,
    /// it mints on its own copy of the word, with no compare-and-swap and no shared store
    /// but one per tick (less than a non-thread-safe generator costs), and other callers
    /// of this generator wait (bounded by `max_wait`, then [`MintError::Leased`]). Meant
    /// for a thread that owns a shard, e.g. one pinned to a core (see
    /// [`crate::ShardedGenerator`]).
    ///
    /// Fails with [`MintError::Leased`] if it is already leased. The lease is one bit of the
    /// state word, set and cleared by compare-and-swap and store, so IDs stay unique and
    /// increasing across leases and shared use.
    ///
    /// It also fails with [`MintError::Leased`] while a shared minter (`next_id`,
    /// `next_ids`, `ids`) waits for a lease to end: the word goes to the waiter first, so
    /// leases taken in a loop do not starve shared minting.
    pub fn lease(&self) -> Result<Lease<'_, C, G>, MintError> {
        #[cfg(feature = "std")]
        if *self.lease_waiters.count() > 0 {
            return Err(MintError::Leased);
        }
        let mut word = self.state.load(Ordering::Acquire);
        loop {
            if word & state::LEASED != 0 {
                return Err(MintError::Leased);
            }
            match self.state.compare_exchange_weak(
                word,
                word | state::LEASED,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    // From here the holder's word is `held`: adds of other threads may
                    // land on the shared one (and are overwritten when the lease ends).
                    // A spent word starts the lease as its tick's last word, which it is
                    // to the state machine: the holder's cached counts never see a guard.
                    let word = self.shape.settled(word);
                    self.held.store(word, Ordering::Relaxed);
                    return Ok(Lease::new(self, word));
                }
                Err(actual) => word = actual,
            }
        }
    }

    /// Whether a [`Lease`] is held on this generator right now.
    pub fn is_leased(&self) -> bool {
        self.state.load(Ordering::Acquire) & state::LEASED != 0
    }

    /// Waits for another thread's lease to end (asleep, with `std`); fails once
    /// `max_wait` is spent.
    #[cold]
    pub(super) fn wait_for_lease(&self, budget: &mut WaitBudget) -> Result<(), MintError> {
        let spent = self.waited(budget);
        let Some(left) = self.max_wait.checked_sub(spent).filter(|l| !l.is_zero()) else {
            return Err(MintError::Leased);
        };
        #[cfg(feature = "std")]
        {
            let w = &self.lease_waiters;
            let mut guard = w.count();
            if !budget.waits_for_lease {
                budget.waits_for_lease = true;
                *guard += 1;
            }
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

    /// A call that waited for a lease is done (minted, or gave up): new leases need not
    /// give way to it any more.
    pub(super) fn stop_waiting_for_lease(&self) {
        #[cfg(feature = "std")]
        {
            let mut waiting = self.lease_waiters.count();
            *waiting = waiting.saturating_sub(1);
        }
    }

    /// After the lease bit was cleared: wakes the threads waiting for it.
    pub(super) fn wake_lease_waiters(&self) {
        #[cfg(feature = "std")]
        {
            let w = &self.lease_waiters;
            let _guard = w.count();
            w.wake.notify_all();
        }
    }
}

/// Exclusive use of a [`Generator`] (see [`Generator::lease`]): mints without a
/// compare-and-swap. Dropping it hands the generator back to everyone.
///
/// ```
/// use flakeid::{Generator, Layout};
/// use flakeid::clock::CoarseClock;
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
pub struct Lease<'g, C: Clock = DefaultClock, G: TickGate = Unfenced> {
    generator: &'g Generator<C, G>,
    /// The word when the cache below was taken (the lease holder is the word's only
    /// writer). The fast path moves `id` on and writes nothing shared: the word of the last
    /// ID is [`Lease::current_word`], and goes back to the generator's `held` only when the
    /// lease leaves the fast path ([`Lease::write_back`]: the slow path, a batch, an
    /// iterator, the drop). So the fast path reads no shared memory but the clock's.
    word: u64,
    /// Start of the word's tick in Unix ns, and the tick's length; a length of 0 when the
    /// start does not fit in a `u64`, or after [`Lease::ids`] left this copy stale (then
    /// every call takes the slow path, which takes a fresh one).
    tick_start: u64,
    tick_len: u64,
    /// The last ID minted, the ID of `word`, how far apart consecutive sequence numbers'
    /// IDs lie, and the ID of the tick's last word (full sequence): the fast path's next ID
    /// is `id + step`, with no repacking (`Generator::id_of` of the next word, which the
    /// tests check it against), while `id` is below `last`.
    id: u64,
    first: u64,
    step: u64,
    last: u64,
    /// The clock's [`Clock::recent_atomic`], read here without going through the clock.
    recent: Option<&'g core::sync::atomic::AtomicU64>,
}

impl<'g, C: Clock, G: TickGate> Lease<'g, C, G> {
    fn new(generator: &'g Generator<C, G>, word: u64) -> Self {
        let mut lease = Lease {
            generator,
            word,
            tick_start: 0,
            tick_len: 0,
            id: 0,
            first: 0,
            step: 1,
            last: word,
            recent: generator.clock.recent_atomic(),
        };
        lease.cache(word);
        lease
    }

    /// Stores the word of the last ID minted into the generator's `held`, which the fast
    /// path does not write. Only while this copy is live (`tick_len` != 0): after
    /// [`Lease::ids`] the iterator moved `held` on and the copy is stale; when the tick's
    /// start does not fit, the fast path never mints and the word is `held` already.
    #[inline(always)]
    fn write_back(&self) {
        if self.tick_len != 0 {
            let word = self.current_word();
            let _ = self.generator.commit::<true>(word, word);
        }
    }

    fn cache(&mut self, word: u64) {
        let g = self.generator;
        self.word = word;
        (self.tick_start, self.tick_len) = match u64::try_from(g.tick_start_of(word)) {
            Ok(start) if start.checked_add(g.unit_ns).is_some() => (start, g.unit_ns),
            _ => (0, 0),
        };
        self.id = g.id_of(word);
        self.first = self.id;
        self.step = g.sequence_step();
        self.last = g.id_of(g.shape.tick_end(word));
    }

    /// The word of the last ID minted: the cached one, moved on by the fast path's mints.
    fn current_word(&self) -> u64 {
        self.word + (self.id - self.first) / self.step
    }

    /// Mints the next ID as [`Generator::next_id`] does, on the lease's copy of the word
    /// instead of by CAS.
    #[inline]
    pub fn next_id(&mut self) -> Result<Id, MintError> {
        match self.mint_same_tick() {
            Some(id) => Ok(id),
            None => self.mint_slow::<true>(),
        }
    }

    /// Mints the next ID without waiting, as [`Generator::try_next_id`] does: when it
    /// would have to wait it returns [`MintError::WouldBlock`](crate::MintError::WouldBlock) with how long.
    #[inline]
    pub fn try_next_id(&mut self) -> Result<Id, MintError> {
        match self.mint_same_tick() {
            Some(id) => Ok(id),
            None => self.mint_slow::<false>(),
        }
    }

    /// The fast path: the generator's decision (sequence left, and the clock's recent
    /// reading inside the word's tick) on the lease's cached bounds; no store but its own.
    #[inline(always)]
    fn mint_same_tick(&mut self) -> Option<Id> {
        if self.id == self.last || self.recent_ns().wrapping_sub(self.tick_start) >= self.tick_len {
            return None;
        }
        self.id += self.step;
        Some(Id::from_raw(self.id))
    }

    /// The clock's recent reading: from its published atomic if it has one.
    #[inline(always)]
    fn recent_ns(&self) -> u64 {
        match self.recent {
            Some(recent) => recent.load(core::sync::atomic::Ordering::Relaxed),
            None => self.generator.clock.recent_unix_ns(),
        }
    }

    /// The slow path of both: the generator's (it reloads the word itself, so a copy
    /// `ids` left stale does no harm), then a fresh copy of the word.
    #[cold]
    #[inline(never)]
    fn mint_slow<const BLOCK: bool>(&mut self) -> Result<Id, MintError> {
        self.write_back();
        let result = self.generator.next_id_slow::<true, BLOCK>();
        self.cache(self.generator.load_word::<true>());
        result
    }

    /// Mints up to `out.len()` IDs as [`Generator::next_ids`] does.
    pub fn next_ids(&mut self, out: &mut [Id]) -> Result<usize, MintError> {
        self.write_back();
        let result = self.generator.fill::<true, true>(out);
        self.cache(self.generator.load_word::<true>());
        result
    }

    /// An iterator over `count` new IDs, as [`Generator::ids`] gives, reserved with a
    /// store per run instead of a compare-and-swap. The lease is borrowed while it lives.
    ///
    /// ```
    /// use flakeid::{Generator, Layout};
    ///
    /// let generator = Generator::builder(Layout::snowflake()).node(3).build()?;
    /// let mut lease = generator.lease()?;
    /// let ids: Vec<_> = lease.ids(1000).collect::<Result<_, _>>()?;
    /// assert!(ids.windows(2).all(|w| w[0] < w[1]));
    /// assert!(lease.next_id()? > ids[999]);
    /// # Ok::<(), flakeid::Error>(())
    /// ```
    pub fn ids(&mut self, count: usize) -> LeaseIds<'_, C, G> {
        // The iterator moves the word on its own; the cached copy is stale from here, so
        // the next mint takes the slow path, which reloads it. (Invalidated now, not when
        // the iterator is dropped, so a leaked iterator cannot leave a stale cache.)
        self.write_back();
        self.tick_len = 0;
        LeaseIds::new(self.generator, count)
    }

    /// The leased generator.
    pub fn generator(&self) -> &Generator<C, G> {
        self.generator
    }
}

impl<C: Clock, G: TickGate> Drop for Lease<'_, C, G> {
    fn drop(&mut self) {
        self.write_back();
        let g = self.generator;
        // The holder's word, without the lease bit, over whatever blind adds landed on the
        // shared one (they handed out nothing). Release: whoever next acquires the word
        // sees it after every store of the lease. Then the waiters are woken (see
        // `LeaseWaiters`: clear first, then notify).
        let held = g.held.load(Ordering::Relaxed);
        let mut word = g.state.load(Ordering::Relaxed);
        while let Err(actual) =
            g.state
                .compare_exchange_weak(word, held, Ordering::AcqRel, Ordering::Relaxed)
        {
            word = actual;
        }
        self.generator.wake_lease_waiters();
    }
}
