//! How a generator mints on its fast path: [`FastPath`], the choice a builder is given, and
//! `Path`, the one the built generator takes (a layout or a claim may refuse `FetchAdd`).

/// How a generator's fast path (same tick, sequence left: nearly every ID) advances the
/// shared word; set with [`GeneratorBuilder::fast_path`](super::GeneratorBuilder::fast_path). Both give the same guarantees
/// (unique, strictly increasing, never ahead of the clock) and, on one thread, the very
/// same IDs.
///
/// Measured on a 2-vCPU AMD EPYC (Zen 4), `cargo bench --bench mint`, two runs
/// (BENCHMARKS.md; contention rows are ns per ID over all threads):
///
/// | ns per ID | 1 thread | 2 threads | 4 threads (2 cores) |
/// |---|---|---|---|
/// | `CompareAndSwap` | 3.3 | 3.4 - 5.2 | 3.5 - 6.0 |
/// | `FetchAdd` | 2.5 | 6.7 - 6.8 | 7.1 - 7.4 |
/// | ferroid's `AtomicSnowflakeGenerator` | 3.3 | 11.1 - 12.1 | 11.5 - 12.5 |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum FastPath {
    /// A load, the decision, and a compare-and-swap, retried after a lost race with an
    /// exponential back-off (the default). Under contention the back-off lets one thread
    /// mint a run while the other waits, so the cache line stays put: the best throughput
    /// when threads share one generator, at the price of fairness (a loser may retry).
    #[default]
    CompareAndSwap,
    /// One `fetch_add` per ID, then the decision on the word it made: wait-free (no
    /// retry, whatever other threads do), and the fastest uncontended shared path (the
    /// decision hides behind the add). Under contention every ID moves the cache line
    /// between cores, so two threads hammering one generator get about half the
    /// throughput of `CompareAndSwap`'s back-off, but each gets its share. The word keeps
    /// a guard field between sequence and tick (see the crate's state notes), so it needs
    /// a spare bit: the layouts that have none, and claimed generators (whose tick
    /// changes must all pass the fence on the slow path), keep `CompareAndSwap`.
    FetchAdd,
}

/// The fast path a built generator takes, fixed by its builder: by compare-and-swap or by
/// `fetch_add`, and whether the word is the ID less its node (`aligned`: the ID is one
/// shift and one OR) or needs its tick and sequence moved apart.
/// Its bit 0 says "spread", its bit 1 "by add", so each question is one bit test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Path {
    /// Compare-and-swap on an aligned word: the path inlined into callers.
    Plain = 0,
    /// Compare-and-swap on a word whose fields move apart.
    Spread = 1,
    /// `fetch_add` on an aligned word.
    AddAligned = 2,
    /// `fetch_add` on a word whose fields move apart.
    AddSpread = 3,
}

impl Path {
    /// The path of a generator that mints by `fetch_add` or not, on an aligned word or not.
    pub(crate) const fn of(fetch_add: bool, aligned: bool) -> Path {
        match (fetch_add, aligned) {
            (false, true) => Path::Plain,
            (false, false) => Path::Spread,
            (true, true) => Path::AddAligned,
            (true, false) => Path::AddSpread,
        }
    }

    /// Whether the word is the ID less its node.
    #[inline(always)]
    pub(crate) const fn aligned(self) -> bool {
        self as u8 & 1 == 0
    }

    /// Whether the fast path mints by `fetch_add`.
    #[inline(always)]
    pub(crate) const fn by_add(self) -> bool {
        self as u8 & 2 != 0
    }

    /// The [`FastPath`] it is.
    pub(crate) const fn fast_path(self) -> FastPath {
        if self.by_add() {
            FastPath::FetchAdd
        } else {
            FastPath::CompareAndSwap
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_path_answers_what_it_was_made_of() {
        for fetch_add in [false, true] {
            for aligned in [false, true] {
                let path = Path::of(fetch_add, aligned);
                assert_eq!(
                    (path.by_add(), path.aligned()),
                    (fetch_add, aligned),
                    "{path:?}"
                );
                let asked = if fetch_add {
                    FastPath::FetchAdd
                } else {
                    FastPath::CompareAndSwap
                };
                assert_eq!(path.fast_path(), asked);
            }
        }
        assert_eq!(Path::of(false, true), Path::Plain);
    }
}
