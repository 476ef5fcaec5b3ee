//! The fast paths: the compare-and-swap one inlined into callers (`plain`: the word is the
//! ID less its node), the others out of line (by `fetch_add`, and the repair of an add
//! that made no ID; by compare-and-swap where the ID's fields must be moved apart), and
//! what they share: the clock's recent reading and the tick the word was last moved into.

use super::path::Path;
use super::{BACKOFF_CAP, Generator, TickGate};
use crate::clock::Clock;
use crate::generator::state;
use crate::id::Id;
use crate::sync::{self, Ordering};

impl<C: Clock, G: TickGate> Generator<C, G> {
    /// The clock's recent reading, from its published atomic where it has one (the
    /// [`CoarseClock`](crate::clock::CoarseClock)'s: one load, no call through the clock).
    #[inline(always)]
    pub(super) fn recent_ns(&self) -> u64 {
        #[cfg(target_has_atomic = "64")]
        if let Some(recent) = self.clock.recent_atomic() {
            return recent.load(core::sync::atomic::Ordering::Relaxed);
        }
        self.clock.recent_unix_ns()
    }

    /// Whether the clock's recent reading lies in the tick the word was last moved into
    /// (see `tick_start`): the fast path's whole test of the time, one load, one
    /// subtraction, one comparison (a reading before the tick wraps to far above its
    /// length).
    #[inline(always)]
    pub(super) fn in_entered_tick(&self) -> bool {
        let start = self.tick_start.load(Ordering::Acquire);
        self.recent_ns().wrapping_sub(start) < self.unit_ns
    }

    /// The start of `word`'s tick in Unix ns, in `u64`: a word's tick is at most
    /// [`Shape::max_ticks`], whose start fits (the shape bounds it by the clock's reach).
    #[inline(always)]
    pub(super) fn tick_start_u64(&self, word: u64) -> u64 {
        debug_assert!(word & state::LEASED == 0 && self.shape.ticks(word) <= self.shape.max_ticks);
        (word >> self.tick_shift)
            .wrapping_mul(self.unit_ns)
            .wrapping_add(self.tick0_ns)
    }

    /// After the slow path moved the word to `word` (by its compare-and-swap, or the lease
    /// holder's store): raises `tick_start` to the start of `word`'s tick, if below.
    #[inline]
    pub(super) fn entered(&self, word: u64) {
        let start = self.tick_start_u64(word);
        if self.tick_start.load(Ordering::Relaxed) < start {
            self.tick_start.fetch_max(start, Ordering::Release);
        }
    }

    /// The fast path, shared by [`Generator::next_id`] and [`Generator::try_next_id`]: the
    /// ID, or 0 on a miss, for the slow path (no ID is 0: no generator mints in tick 0, the
    /// tick of its first word, whose sequence is full). Inlined where the generator is
    /// `plain`; out of line, by `fetch_add` or by CAS on a word whose ID needs its fields
    /// moved apart.
    #[inline(always)]
    pub(crate) fn mint_same_tick(&self) -> u64 {
        if matches!(self.path, Path::Plain) {
            self.mint_by_cas::<true>()
        } else {
            self.mint_other()
        }
    }

    /// The compare-and-swap fast path: one CAS while the word's tick is current and has
    /// sequence left; the ID, or 0 for the slow path. `ALIGNED` (the path inlined into
    /// callers, `plain`): the word is the ID less its node, so the ID is one shift and one
    /// OR (and never 0: the word's tick never is, and the shift loses none of its bits).
    /// A lost race goes on in [`Generator::mint_by_cas_contended`], out of line, so the
    /// uncontended path carries no retry state.
    #[inline(always)]
    fn mint_by_cas<const ALIGNED: bool>(&self) -> u64 {
        // Acquire on every load of the word, and AcqRel on the CAS, order this thread's
        // clock read after the clock read of whoever stored the word it sees: with a clock
        // that is monotonic across cores, a thread never sees a tick "from the future".
        let word = self.state.load(Ordering::Acquire);
        let Some(next) = self.same_tick_step(word) else {
            return 0;
        };
        match self
            .state
            .compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) if ALIGNED => self.id_of_aligned(next),
            Ok(_) => self.id_of(next),
            Err(actual) => self.mint_by_cas_contended(actual).map_or(0, Id::get),
        }
    }

    /// The fast paths that are not `plain`: by `fetch_add`, or by CAS on a word whose ID
    /// needs its fields moved apart. The ID, or 0 on a miss. Out of line, so the inlined
    /// path stays small.
    #[inline(never)]
    fn mint_other(&self) -> u64 {
        if self.path.by_add() {
            self.mint_by_add().map_or(0, Id::get)
        } else {
            self.mint_by_cas::<false>()
        }
    }

    /// The fast path after a failed CAS (a lost race, or a spurious failure), with the word
    /// the CAS found: CAS loops, backing off, while that word's tick is current and has
    /// sequence left; otherwise `None`, for the slow path. A failed CAS means retry
    /// with a fresh word, so the loop is correct whether or not spurious failures happen.
    #[cold]
    #[inline(never)]
    fn mint_by_cas_contended(&self, mut word: u64) -> Option<Id> {
        let mut failures = 0;
        while let Some(next) = self.same_tick_step(word) {
            match self
                .state
                .compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(self.id(next)),
                Err(actual) => word = self.back_off(actual, &mut failures),
            }
        }
        None
    }

    /// The fast path's whole decision: if the word has sequence left (and no lease bit and
    /// no guard bit) and the clock's recent reading lies in the tick the word was last
    /// moved into, the next word is `word + 1` (what [`state::reserve`] says for a clock in
    /// the word's tick, under every policy). Anything else (a new tick, an exhausted
    /// sequence, a clock that reads behind, a leased word) goes to the slow path, which
    /// decides on the precise clock.
    #[inline(always)]
    fn same_tick_step(&self, word: u64) -> Option<u64> {
        if word & self.live_mask >= self.shape.max_sequence {
            return None;
        }
        self.in_entered_tick().then_some(word + 1)
    }

    /// After a lost CAS race, with the word the CAS found: retry with it at once the
    /// first time (the failed CAS left the line in this core's cache), and after further
    /// losses spin a little first, exponentially longer (up to `2^BACKOFF_CAP` spin
    /// hints), so the threads stop bouncing the line. Under loom one hint (a yield there).
    #[cold]
    pub(super) fn back_off(&self, actual: u64, failures: &mut u32) -> u64 {
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
    pub(super) fn mint_by_add(&self) -> Option<Id> {
        // AcqRel, as the CAS path: this thread's clock read comes after the clock read of
        // whoever made the word it added to.
        let word = self.state.fetch_add(1, Ordering::AcqRel).wrapping_add(1);
        // The start of the word's own tick (not the generator's `tick_start`, which may lag
        // the tick the add landed in, and would turn a good word into a gap).
        if word & self.miss_mask == 0
            && self.recent_ns().wrapping_sub(self.tick_start_u64(word)) < self.unit_ns
        {
            return Some(self.id(word));
        }
        self.missed_add(word);
        None
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
    pub(super) fn missed_add(&self, made: u64) {
        if made & state::LEASED != 0 {
            // The lease holder's `held` is the word; this lands on a copy it overwrites.
            return;
        }
        let Err(mut word) =
            self.state
                .compare_exchange(made, made - 1, Ordering::AcqRel, Ordering::Acquire)
        else {
            return;
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
    }
}
