//! Batches: [`Generator::next_ids`] into a slice, and the [`Ids`] iterator, each reserving
//! a run of sequence numbers with one compare-and-swap per tick.

use super::{DefaultClock, Generator, TickGate, Unfenced, WaitBudget};
use crate::clock::Clock;
use crate::error::MintError;
use crate::id::Id;

impl<C: Clock, G: TickGate> Generator<C, G> {
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
    pub fn next_ids(&self, out: &mut [Id]) -> Result<usize, MintError> {
        self.fill::<false, true>(out)
    }

    /// Mints up to `out.len()` IDs without waiting: what the current tick (and, if the
    /// clock has moved on, the ticks up to now) still has, one compare-and-swap per tick.
    /// Returns how many it wrote, at least 1; when not even one ID can be minted without
    /// waiting, it fails with [`MintError::WouldBlock`] (how long to wait) or
    /// [`MintError::Leased`], as [`Generator::try_next_id`] does. IDs are strictly
    /// increasing within the slice and after every ID this generator minted before.
    ///
    /// ```
    /// use flakeid::{Generator, Id, Layout};
    ///
    /// let generator = Generator::builder(Layout::snowflake()).datacenter(1).worker(1).build()?;
    /// let mut out = [Id::default(); 10_000];
    /// // Never a wait: what this tick still has (at most 4,096), and the ticks the clock
    /// // passed meanwhile (a thread descheduled between the two lines finds more).
    /// let n = generator.try_next_ids(&mut out)?;
    /// assert!(n >= 1);
    /// assert!(out[..n].windows(2).all(|w| w[0] < w[1]));
    /// # Ok::<(), flakeid::Error>(())
    /// ```
    pub fn try_next_ids(&self, out: &mut [Id]) -> Result<usize, MintError> {
        self.fill::<false, false>(out)
    }

    /// `BLOCK`: wait (bounded) for the next tick when a tick runs out; otherwise stop
    /// there (an error only if nothing was written).
    pub(super) fn fill<const LEASED: bool, const BLOCK: bool>(
        &self,
        out: &mut [Id],
    ) -> Result<usize, MintError> {
        let mut filled = 0;
        let mut budget = WaitBudget::default();
        while filled < out.len() {
            match self.reserve::<LEASED, BLOCK>((out.len() - filled) as u64, &mut budget) {
                Ok((first, last)) => {
                    let run = (last - first + 1) as usize;
                    affine_fill(
                        &mut out[filled..filled + run],
                        self.id_of(first),
                        self.sequence_step(),
                    );
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
    /// [`MintError::WaitTooLong`] when the bound is spent, the iterator yields that error once
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
    pub fn ids(&self, count: usize) -> Ids<'_, C, G> {
        Ids::new(self, count)
    }
}

/// The iterator of [`Generator::ids`] (and, as [`LeaseIds`], of
/// [`Lease::ids`](crate::generator::Lease::ids)): `count` IDs reserved in runs, one compare-and-swap
/// (or, leased, one store) per run.
#[derive(Debug)]
pub struct Ids<'g, C = DefaultClock, G: TickGate = Unfenced, const LEASED: bool = false> {
    generator: &'g Generator<C, G>,
    /// The next ID of the reserved run, and how many of the run are left; IDs of a run
    /// are one sequence step apart.
    id: u64,
    in_run: u64,
    remaining: usize,
    /// Every run's waits count against one `max_wait`.
    budget: WaitBudget,
}

/// The iterator of [`Lease::ids`](crate::generator::Lease::ids): runs reserved with plain stores.
pub type LeaseIds<'l, C = DefaultClock, G = Unfenced> = Ids<'l, C, G, true>;

impl<'g, C: Clock, G: TickGate, const LEASED: bool> Ids<'g, C, G, LEASED> {
    /// `count` IDs from `generator`; `LEASED` only for the holder of its lease.
    pub(super) fn new(generator: &'g Generator<C, G>, count: usize) -> Self {
        Ids {
            generator,
            id: 0,
            in_run: 0,
            remaining: count,
            budget: WaitBudget::default(),
        }
    }

    /// Reserves the next run (as much of the rest as fits in the current tick).
    fn refill(&mut self) -> Result<(), MintError> {
        let (first, last) = self
            .generator
            .reserve_run::<LEASED>(self.remaining as u64, &mut self.budget)?;
        self.id = self.generator.id_of(first);
        self.in_run = last - first + 1;
        Ok(())
    }
}

impl<C: Clock, G: TickGate, const LEASED: bool> Iterator for Ids<'_, C, G, LEASED> {
    type Item = Result<Id, MintError>;

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

impl<C: Clock, G: TickGate, const LEASED: bool> core::iter::FusedIterator
    for Ids<'_, C, G, LEASED>
{
}

/// Writes `base`, `base + step`, `base + 2 step`... into `out`: a run lies in one tick, so
/// its IDs are evenly spaced, one sequence step apart. A plain affine fill the compiler
/// vectorises; consecutive IDs (the sequence as the low field, `step` 1) get a loop of
/// their own, an add per lane and no multiply (there is no 64-bit vector multiply before
/// AVX-512).
#[inline]
pub(crate) fn affine_fill(out: &mut [Id], base: u64, step: u64) {
    if step == 1 {
        for (k, slot) in out.iter_mut().enumerate() {
            *slot = Id::from_raw(base + k as u64);
        }
    } else {
        for (k, slot) in out.iter_mut().enumerate() {
            *slot = Id::from_raw(base + k as u64 * step);
        }
    }
}
