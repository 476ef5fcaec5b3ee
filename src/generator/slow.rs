//! The slow path: the tick changes, the sequence runs out, the clock reads behind, a
//! lease is held elsewhere. Every wait is charged to one [`WaitBudget`] per call, which
//! `max_wait` bounds.

use core::time::Duration;

use super::{Generator, TickGate};
use crate::clock::Clock;
use crate::error::MintError;
use crate::generator::state::{self, Step};
use crate::id::Id;
use crate::sync;

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
    /// Whether this call counts among the shared minters waiting for a lease to end
    /// (new leases give way to them; see [`Generator::lease`]).
    pub(super) waits_for_lease: bool,
}

/// Below this much time left, a waiting thread spins instead of sleeping: less than a
/// sleep's own cost (a system call each way and the timer's slack, 50 µs by default).
/// Above it the thread sleeps to the boundary itself, not short of it: a thread that woke
/// early and spun, or yielded, on a busy host is sent behind every other runnable thread
/// and wakes a tick or more late, where a wake anywhere inside the new tick still mints
/// all of it (docs/design.md, "Waiting for the next tick").
const SPIN_BELOW: Duration = Duration::from_micros(20);

impl<C: Clock, G: TickGate> Generator<C, G> {
    /// The slow path of `next_id` (`BLOCK`) and of `try_next_id` (not): one ID.
    #[cold]
    #[inline(never)]
    pub(super) fn next_id_slow<const LEASED: bool, const BLOCK: bool>(
        &self,
    ) -> Result<Id, MintError> {
        self.reserve::<LEASED, BLOCK>(1, &mut WaitBudget::default())
            .map(|(first, _)| self.id(first))
    }

    /// Reserves a run of up to `want` sequence numbers in one tick, on the precise clock:
    /// the slow path of single minting and the one path of batch minting. Waits for the
    /// next tick, for a clock that is behind under [`ClockPolicy::Wait`], and for a lease
    /// held by another thread, all charged to `budget`, which `max_wait` bounds. Returns
    /// the first and last word of the run.
    #[inline(never)]
    pub(super) fn reserve_run<const LEASED: bool>(
        &self,
        want: u64,
        budget: &mut WaitBudget,
    ) -> Result<(u64, u64), MintError> {
        self.reserve::<LEASED, true>(want, budget)
    }

    /// The one loop of every slow path. `BLOCK`: wait (bounded) where a wait is needed;
    /// otherwise fail with `WouldBlock` or `Leased` instead.
    pub(super) fn reserve<const LEASED: bool, const BLOCK: bool>(
        &self,
        want: u64,
        budget: &mut WaitBudget,
    ) -> Result<(u64, u64), MintError> {
        let result = self.reserve_run_waiting::<LEASED, BLOCK>(want, budget);
        if budget.waits_for_lease {
            self.stop_waiting_for_lease();
            budget.waits_for_lease = false;
        }
        // Time between two runs of an `Ids` iterator is the consumer's, not a wait: close
        // the wait under way, if any (none, and no clock read, on a tick change that did
        // not wait).
        if budget.since.is_some() {
            budget.spent = self.waited(budget);
            budget.since = None;
        }
        result
    }

    fn reserve_run_waiting<const LEASED: bool, const BLOCK: bool>(
        &self,
        want: u64,
        waited: &mut WaitBudget,
    ) -> Result<(u64, u64), MintError> {
        let mut word = self.load_word::<LEASED>();
        loop {
            if !LEASED && word & state::LEASED != 0 {
                if !BLOCK {
                    return Err(MintError::Leased);
                }
                self.wait_for_lease(waited)?;
                word = self.load_word::<LEASED>();
                continue;
            }
            let now = self.now_ticks()?;
            let step = state::reserve(self.shape, word, now, self.policy, want);
            self.observe(word, now, step);
            match step {
                Step::Mint { first, last } => {
                    // The gate (a claimed generator's fence), asked only here: the fast
                    // path stays in a tick that passed it. Unfenced: no code at all.
                    if G::FENCED {
                        let tick = self.shape.ticks(first);
                        if !self.gate.allows(tick) {
                            self.wait_for_gate::<BLOCK>(tick, waited)?;
                            word = self.load_word::<LEASED>();
                            continue;
                        }
                    }
                    match self.commit::<LEASED>(word, last) {
                        Ok(()) => {
                            // After the commit, never before: see `tick_start`.
                            self.entered(last);
                            return Ok((first, last));
                        }
                        Err(actual) => word = actual,
                    }
                }
                Step::WaitFor { until } => {
                    if BLOCK {
                        self.wait_for(until, waited)?;
                    } else {
                        let target = self.tick_start_ns(until)?;
                        let now_ns = self.clock.unix_ns();
                        if now_ns < target {
                            return Err(MintError::WouldBlock {
                                wait_ns: target - now_ns,
                            });
                        }
                    }
                    word = self.load_word::<LEASED>();
                }
                other => return Err(self.refusal(other, word)),
            }
        }
    }

    /// Mints the next ID, awaiting the next tick instead of spinning or sleeping the thread
    /// when the tick's sequence is used up or the clock is behind under
    /// [`ClockPolicy::Wait`](crate::ClockPolicy::Wait) (feature `tokio`). The wait is
    /// [`wait::sleep`](crate::wait::sleep), kept to the microsecond (tokio's own timer
    /// rounds up to whole milliseconds, a tick or two lost at every wait of a 1 ms layout),
    /// and holds no thread: other tasks run meanwhile. The total wait is bounded by
    /// `max_wait`, as for the blocking calls; a lease held elsewhere is awaited too, and so
    /// is a renewal at a claimed generator's fence.
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
    pub async fn next_id_async(&self) -> Result<Id, MintError> {
        let started = std::time::Instant::now();
        loop {
            let wait = match self.try_next_id() {
                Err(MintError::WouldBlock { wait_ns }) => Duration::from_nanos(wait_ns),
                Err(MintError::Leased) => Duration::from_millis(1),
                // At a claimed generator's fence: await a renewal, as `next_id` waits for
                // one, and report the fence (not the wait) once the bound is spent.
                Err(e @ MintError::ReservationExpired { .. }) => {
                    let wait = Duration::from_millis(1);
                    if started.elapsed() + wait > self.max_wait {
                        return Err(e);
                    }
                    wait
                }
                done => return done,
            };
            self.within_bound(started.elapsed(), wait)?;
            self.ask_short_slice();
            crate::wait::sleep(wait).await;
        }
    }

    /// Fills up to `out.len()` IDs, awaiting the next tick (as [`Generator::next_id_async`]
    /// does: never spinning or sleeping the thread) when a tick runs out, and returns how
    /// many it wrote (feature `tokio`). It gives its thread back to the runtime after
    /// every [`ASYNC_POLL_IDS`](crate::generator::ASYNC_POLL_IDS) IDs at most (about 10 µs
    /// of minting), so that other tasks on the thread wait no longer than that for a batch
    /// of any size.
    /// The waits together are bounded by `max_wait`; when the bound stops it after some
    /// IDs, it returns that shorter count, and it fails only when it wrote nothing (as
    /// [`Generator::next_ids`] does). IDs are strictly increasing within the slice and
    /// after every ID this generator minted before.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), flakeid::Error> {
    /// use flakeid::{Generator, Id, Layout};
    ///
    /// let generator = Generator::builder(Layout::snowflake()).datacenter(1).worker(1).build()?;
    /// let mut out = vec![Id::default(); 10_000]; // more than two ticks' worth
    /// let n = generator.next_ids_async(&mut out).await?;
    /// assert_eq!(n, 10_000);
    /// assert!(out.windows(2).all(|w| w[0] < w[1]));
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "tokio")]
    pub async fn next_ids_async(&self, out: &mut [Id]) -> Result<usize, MintError> {
        let started = std::time::Instant::now();
        let mut filled = 0;
        let mut since_yield = 0;
        while filled < out.len() {
            if since_yield >= super::ASYNC_POLL_IDS {
                since_yield = 0;
                crate::wait::yield_now().await;
            }
            let end = out.len().min(filled + super::ASYNC_POLL_IDS - since_yield);
            let wait = match self.try_next_ids(&mut out[filled..end]) {
                Ok(n) => {
                    filled += n;
                    since_yield += n;
                    continue;
                }
                Err(MintError::WouldBlock { wait_ns }) => Duration::from_nanos(wait_ns),
                Err(MintError::Leased) => Duration::from_millis(1),
                Err(e @ MintError::ReservationExpired { .. }) => {
                    let wait = Duration::from_millis(1);
                    if started.elapsed() + wait > self.max_wait {
                        return if filled > 0 { Ok(filled) } else { Err(e) };
                    }
                    wait
                }
                Err(_) if filled > 0 => return Ok(filled),
                Err(e) => return Err(e),
            };
            since_yield = 0;
            match self.within_bound(started.elapsed(), wait) {
                Ok(()) => {
                    self.ask_short_slice();
                    crate::wait::sleep(wait).await
                }
                Err(_) if filled > 0 => return Ok(filled),
                Err(e) => return Err(e),
            }
        }
        Ok(filled)
    }

    /// Reports what the slow path met (features `metrics`, `tracing`); empty without them.
    #[inline(always)]
    pub(super) fn observe(&self, word: u64, now: u64, step: Step) {
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
    pub(super) fn waited(&self, budget: &mut WaitBudget) -> Duration {
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

    #[cold]
    pub(super) fn refusal(&self, step: Step, word: u64) -> MintError {
        match step {
            Step::Behind { ticks } => {
                // How far behind the start of the last tick the clock reads.
                let by = self.behind_by(word).max(u128::from(ticks.min(1)));
                MintError::ClockBehind {
                    by_ns: u64::try_from(by).unwrap_or(u64::MAX),
                }
            }
            _ => self.past_lifetime(),
        }
    }

    /// The error of a used-up lifetime: the clock past the layout's end, or its last tick
    /// spent; [`MintError::ClockRangeEnd`] when that last tick is the clock's, not the
    /// layout's.
    #[cold]
    fn past_lifetime(&self) -> MintError {
        if self.shape.max_ticks < self.layout.max_ticks() {
            return MintError::ClockRangeEnd;
        }
        MintError::PastLifetime {
            end_unix_ms: self.layout.end_unix_ms(),
        }
    }

    /// Whether waiting `needed` more, after `spent`, stays within `max_wait`; if not, the
    /// error that says so. Every wait checks here first, so a wait known to be too long
    /// fails at once.
    fn within_bound(&self, spent: Duration, needed: Duration) -> Result<(), MintError> {
        if spent.saturating_add(needed) > self.max_wait {
            return Err(MintError::wait_too_long(needed, spent));
        }
        Ok(())
    }

    /// The start of `tick` on the clock's scale: past the layout's end
    /// [`MintError::PastLifetime`], past what `u64` nanoseconds name [`MintError::ClockRangeEnd`].
    pub(super) fn tick_start_ns(&self, tick: u64) -> Result<u64, MintError> {
        let ns = self
            .layout
            .unix_ns_of(tick)
            .map_err(|_| self.past_lifetime())?;
        u64::try_from(ns).map_err(|_| MintError::ClockRangeEnd)
    }

    /// At the gate (a claimed generator's fence), for `tick`: waits (bounded by
    /// `max_wait`, and only if `BLOCK`) for it to open (a renewal to move the fence past
    /// `tick`). Fails closed: with the gate's final error once it cannot open (the claim
    /// is lost, or nothing renews it), [`MintError::ReservationExpired`] when it did not
    /// open in time.
    #[cold]
    fn wait_for_gate<const BLOCK: bool>(
        &self,
        tick: u64,
        budget: &mut WaitBudget,
    ) -> Result<(), MintError> {
        let node = self.node;
        /// Counts the caller as waiting at the gate from when it is made until it drops.
        struct Waiting<'a, G: TickGate>(&'a G);
        impl<'a, G: TickGate> Waiting<'a, G> {
            fn enter(gate: &'a G) -> Self {
                gate.waiting(true);
                Waiting(gate)
            }
        }
        impl<G: TickGate> Drop for Waiting<'_, G> {
            fn drop(&mut self) {
                self.0.waiting(false);
            }
        }
        let mut waiting = None;
        loop {
            if self.gate.allows(tick) {
                return Ok(());
            }
            if let Some(e) = self.gate.closed(node) {
                return Err(e);
            }
            let left = self.max_wait.saturating_sub(self.waited(budget));
            if !BLOCK || left.is_zero() {
                return Err(MintError::ReservationExpired { node });
            }
            waiting.get_or_insert_with(|| Waiting::enter(&self.gate));
            sync::sleep(left.min(Duration::from_micros(500)));
        }
    }

    /// Before a sleep to a tick: asks, once per thread, for the short time slice if this
    /// generator does (see [`GeneratorBuilder::short_slice`](crate::GeneratorBuilder::short_slice)).
    fn ask_short_slice(&self) {
        if self.short_slice {
            sync::shorten_slice();
        }
    }

    /// Waits until the clock reaches the start of tick `until`: sleeps to the boundary,
    /// spins only the last [`SPIN_BELOW`]. Fails at once if the wait would overrun the
    /// bound.
    #[cold]
    pub(super) fn wait_for(&self, until: u64, waited: &mut WaitBudget) -> Result<(), MintError> {
        let target = self.tick_start_ns(until)?;
        loop {
            let now = self.clock.unix_ns();
            if now >= target {
                return Ok(());
            }
            let needed = Duration::from_nanos(target - now);
            self.within_bound(self.waited(waited), needed)?;
            if needed > SPIN_BELOW {
                self.ask_short_slice();
                sync::sleep(needed);
            } else {
                sync::spin_loop();
            }
        }
    }
}
