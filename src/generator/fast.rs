//! The wait-free fast path (`FastPath::FetchAdd`): one `fetch_add`, and the repair of an add that made no ID.

use super::{Generator, TickGate};
use crate::clock::Clock;
use crate::id::Id;
use crate::state;
use crate::sync::Ordering;

impl<C: Clock, G: TickGate> Generator<C, G> {
    /// The wait-free fast path: one `fetch_add`, and the ID is the word it made if that
    /// word is an ID (no lease bit, no guard bit) of the tick the clock's recent reading
    /// lies in. Anything else is a miss, which hands out nothing: the add is undone if no
    /// other thread came after it, else the word made is skipped (a gap in the sequence,
    /// harmless) and a spent word compacted (see [`Shape`]); then the slow path decides on
    /// the precise clock. A miss on a leased word lands on a word the lease holder
    /// overwrites.
    ///
    /// Why it is sound: every word is made by exactly one add or CAS, so no two callers
    /// get the same word; a word of the current tick with no guard bit is one the
    /// compare-and-swap path would have handed out next (`word + 1` with sequence left);
    /// and the add after a full sequence sets the guard instead of claiming the next tick,
    /// so the tick still only changes on the slow path. Modelled in `loom-tests`, with the
    /// known-wrong carry (the next tick taken by the add) that loom catches.
    #[inline(always)]
    pub(super) fn mint_by_add(&self) -> Result<Id, u64> {
        // AcqRel, as the CAS path: this thread's clock read comes after the clock read of
        // whoever made the word it added to.
        let word = self.state.fetch_add(1, Ordering::AcqRel).wrapping_add(1);
        if word & self.miss_mask == 0
            && u128::from(self.clock.recent_unix_ns()).wrapping_sub(self.tick_start_of(word))
                < u128::from(self.unit_ns)
        {
            return Ok(self.id(word));
        }
        Err(self.missed_add(word))
    }

    /// After an add that made no ID: undoes it if no other thread's add or CAS came after
    /// (always, on one thread, so one thread's IDs are exactly those of the CAS path), else
    /// leaves the skipped word as a gap and, if the word is spent past the guard's top bit,
    /// compacts it, so that adds cannot run the guard into the next tick. Each adder does
    /// this before it returns, so between two compactions at most one add per thread lands
    /// past the top bit.
    ///
    /// The undo is sound: while the word still equals the one this add made, every add
    /// made after it was undone by its maker and no CAS moved it (a CAS only moves it to a
    /// word it hands out), so nothing above `made - 1` was handed out.
    #[cold]
    #[inline(never)]
    pub(super) fn missed_add(&self, made: u64) -> u64 {
        if made & state::LEASED != 0 {
            // The lease holder's `held` is the word; this lands on a copy it overwrites.
            return made;
        }
        let Err(mut word) =
            self.state
                .compare_exchange(made, made - 1, Ordering::AcqRel, Ordering::Acquire)
        else {
            return made;
        };
        while word & state::LEASED == 0 && self.shape.needs_compaction(word) {
            match self.state.compare_exchange_weak(
                word,
                self.shape.spent_floor(word),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(actual) => word = actual,
            }
        }
        made
    }
}
