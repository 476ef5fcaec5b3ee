//! The generator's state machine, written once as plain functions over plain integers.
//!
//! The generator keeps one packed word (see [`Shape`]) in an `AtomicU64`; [`reserve`]
//! takes the word it loaded and the clock's tick and says what the next word is, or why
//! there is none. The generator, the loom models, the property tests and the fuzz targets
//! all drive this same function.

use crate::generator::policy::ClockPolicy;

/// The top bit of the generator's word: set while a [`crate::generator::Lease`] holds the generator.
/// Packed words never use it (the generator refuses a layout whose reachable ticks and
/// sequence need more than 63 bits: [`Shape::word_bits`]), and [`reserve`] must never see
/// it: the generator strips or waits on it first.
pub const LEASED: u64 = 1 << 63;

/// The layout facts the state machine needs, derived once from a [`Layout`](crate::Layout).
///
/// The packed word, most significant bit first:
///
/// | bits | holds |
/// |---|---|
/// | 63 | the lease bit ([`LEASED`]), kept out of this function's way |
/// | 62 ..= `tick_shift + tick width` | always 0 |
/// | ..= `tick_shift` | last tick used |
/// | `tick_shift - 1` ..= `sequence_bits` | the guard (`guard_bits` wide, often none) |
/// | `sequence_bits - 1` ..= 0 | last sequence number used in that tick |
///
/// Invariant: the word is never below an ID's word that was handed out, and an ID's word
/// is handed out once, by whoever moved the word onto it (by compare-and-swap from the
/// value the new one was computed from, or by `fetch_add`).
///
/// **The guard.** A generator that mints by `fetch_add` (see `Generator`'s fast path) adds
/// 1 without looking first, so the add that follows a full sequence would carry into the
/// tick and claim the next tick before the clock reaches it. The guard field catches that
/// carry instead: a word with any guard bit set is *spent* (its tick has no sequence left),
/// is never an ID, and the slow path treats it as a full sequence. A spent word can be
/// compacted back down to [`Shape::spent_floor`] (every word above that floor in the tick
/// is spent, so nobody holds one).
///
/// **The gap.** A compare-and-swap generator's word never carries out of its sequence (the
/// fast path steps only a word with sequence left; the slow path packs a new tick), so its
/// guard field is free for another use: [`Shape::of`] makes it the node bits the layout
/// puts between the time and the sequence (all zero in the word), so that the word is the
/// ID less its node, shifted right by the sequence's shift, and an ID is one shift and one
/// OR away (`(word << sequence_shift) | node`). It does so where the word still fits in 63
/// bits; a 64-bit layout whose time field reaches the top bit (Discord's, Instagram's)
/// keeps the sequence right under the tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Width of the sequence field.
    pub sequence_bits: u32,
    /// Largest sequence number.
    pub max_sequence: u64,
    /// Largest tick count a generator can reach: the layout's, or the last tick a clock
    /// of `u64` nanoseconds names (in 2554), whichever comes first.
    pub max_ticks: u64,
    /// Width of the guard between the sequence and the tick: 0 for a compare-and-swap
    /// generator, the word's spare bits for one that mints by `fetch_add`.
    pub guard_bits: u32,
}

impl Shape {
    /// The shape of a compare-and-swap generator's word for `layout`: the node bits between
    /// the time and the sequence as its guard (the gap: see the type's docs) where the word
    /// still fits in 63 bits, else no guard. Its tick field is bounded by what the clock
    /// reaches, not the layout's time field: a 64-bit layout with no node field (Mastodon's
    /// 48 time + 16 sequence) still packs in 63 bits, since no clock names a tick past 2^45
    /// milliseconds.
    pub fn of(layout: &crate::Layout) -> Shape {
        let packed = Self::packed(layout);
        let gapped = Shape {
            guard_bits: layout.time_shift() - layout.sequence_shift() - layout.sequence_bits(),
            ..packed
        };
        if gapped.word_bits() <= 63 {
            gapped
        } else {
            packed
        }
    }

    /// The shape of a layout's word with no guard: the tick right above the sequence.
    pub fn packed(layout: &crate::Layout) -> Shape {
        let reach = (u64::MAX - layout.tick0_ns()) / layout.unit_ns();
        Shape {
            sequence_bits: layout.sequence_bits(),
            max_sequence: layout.max_sequence(),
            max_ticks: layout.max_ticks().min(reach),
            guard_bits: 0,
        }
    }

    /// This shape with a guard of every spare bit of the 63 (none if there are none).
    pub const fn guarded(self) -> Shape {
        let plain = Shape {
            guard_bits: 0,
            ..self
        };
        Shape {
            guard_bits: 63u32.saturating_sub(plain.word_bits()),
            ..self
        }
    }

    /// Bits a word of this shape needs: the largest tick's width plus the guard's and the
    /// sequence's. A generator needs at most 63 (the top bit is [`LEASED`]).
    pub const fn word_bits(self) -> u32 {
        (u64::BITS - self.max_ticks.leading_zeros()) + self.guard_bits + self.sequence_bits
    }

    /// Where the tick field starts.
    pub const fn tick_shift(self) -> u32 {
        self.sequence_bits + self.guard_bits
    }

    /// The guard field's bits (0 without a guard).
    pub const fn guard_mask(self) -> u64 {
        ((1u64 << self.guard_bits) - 1) << self.sequence_bits
    }

    /// The word a new generator starts from: tick 0 with a full sequence, as Sonyflake
    /// does, so the first ID is minted at the clock's tick with sequence 0 and the time part
    /// of an ID is never 0.
    pub const fn initial(self) -> u64 {
        self.max_sequence
    }

    /// Packs (tick, sequence); both must be in range.
    pub const fn pack(self, ticks: u64, sequence: u64) -> u64 {
        ticks << self.tick_shift() | sequence
    }

    /// The tick of a word.
    pub const fn ticks(self, word: u64) -> u64 {
        word >> self.tick_shift()
    }

    /// The sequence number of a word.
    pub const fn sequence(self, word: u64) -> u64 {
        word & self.max_sequence
    }

    /// Whether `word` is spent: a guard bit is set, so its tick has no sequence left and
    /// the word is no ID (see the type's docs).
    pub const fn is_spent(self, word: u64) -> bool {
        word & self.guard_mask() != 0
    }

    /// The lowest spent word of `word`'s tick, which a spent word may be compacted to.
    pub const fn spent_floor(self, word: u64) -> u64 {
        self.pack(self.ticks(word), 0) | (1 << self.sequence_bits)
    }

    /// Whether `word` is spent past the guard's top bit: time to compact it, so that
    /// however many adds follow, they cannot carry into the tick (each adder compacts
    /// before it returns, so more than 2^(`sequence_bits + guard_bits - 1`) threads would
    /// have to be caught between their add and their compaction at once).
    pub const fn needs_compaction(self, word: u64) -> bool {
        self.guard_bits > 0 && word & (1 << (self.tick_shift() - 1)) != 0
    }

    /// The last word of `word`'s tick: its full sequence.
    pub const fn tick_end(self, word: u64) -> u64 {
        self.pack(self.ticks(word), self.max_sequence)
    }

    /// The word an ID-minting reader should see: a spent word as its tick's last sequence
    /// number (what [`Generator::last_id`](crate::Generator::last_id) reports).
    pub const fn settled(self, word: u64) -> u64 {
        if self.is_spent(word) {
            self.tick_end(word)
        } else {
            word
        }
    }
}

/// What the state machine says about one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The words `first..=last` (consecutive, in one tick) are free: store `last` and hand
    /// out one ID per word.
    Mint {
        /// First word handed out.
        first: u64,
        /// Last word handed out; the new state.
        last: u64,
    },
    /// Nothing can be minted until the clock reaches tick `until`.
    WaitFor {
        /// The tick to wait for.
        until: u64,
    },
    /// The clock is this many ticks behind the last tick and the policy is to refuse.
    Behind {
        /// Ticks behind.
        ticks: u64,
    },
    /// The layout's lifetime is used up: the clock is past it, or the last tick's sequence
    /// is exhausted.
    Expired,
}

/// Decides the next words from the current `word`, the clock's tick `now` (which may lie
/// past the lifetime) and the policy, for up to `want` IDs (at least 1).
#[inline(always)]
pub fn reserve(shape: Shape, word: u64, now: u64, policy: ClockPolicy, want: u64) -> Step {
    let last_tick = shape.ticks(word);
    let extra = want.saturating_sub(1);
    if now > last_tick {
        if now > shape.max_ticks {
            return Step::Expired;
        }
        let first = shape.pack(now, 0);
        return Step::Mint {
            first,
            last: first + extra.min(shape.max_sequence),
        };
    }
    if now < last_tick {
        match policy {
            ClockPolicy::Reject => {
                return Step::Behind {
                    ticks: last_tick - now,
                };
            }
            ClockPolicy::Wait => return Step::WaitFor { until: last_tick },
            ClockPolicy::Continue => {}
        }
    }
    // A spent word (guard bit set) has no sequence left.
    let left = if shape.is_spent(word) {
        0
    } else {
        shape.max_sequence - shape.sequence(word)
    };
    if left > 0 {
        Step::Mint {
            first: word + 1,
            last: word + 1 + extra.min(left - 1),
        }
    } else if last_tick >= shape.max_ticks {
        Step::Expired
    } else {
        Step::WaitFor {
            until: last_tick + 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ClockPolicy::*;

    impl Shape {
        fn with_ticks(self, max_ticks: u64) -> Shape {
            Shape { max_ticks, ..self }
        }
    }

    const S: Shape = Shape {
        sequence_bits: 2,
        max_sequence: 3,
        max_ticks: 15,
        guard_bits: 0,
    };

    #[test]
    fn new_tick_starts_at_sequence_zero() {
        for p in [Reject, Continue, Wait] {
            assert_eq!(
                reserve(S, S.initial(), 5, p, 1),
                Step::Mint {
                    first: S.pack(5, 0),
                    last: S.pack(5, 0)
                }
            );
        }
    }

    #[test]
    fn same_tick_counts_on_then_waits_for_the_next() {
        for p in [Reject, Continue, Wait] {
            let w = S.pack(5, 2);
            assert_eq!(
                reserve(S, w, 5, p, 1),
                Step::Mint {
                    first: S.pack(5, 3),
                    last: S.pack(5, 3)
                }
            );
            assert_eq!(
                reserve(S, S.pack(5, 3), 5, p, 1),
                Step::WaitFor { until: 6 }
            );
        }
    }

    #[test]
    fn clock_behind_under_each_policy() {
        let w = S.pack(9, 1);
        assert_eq!(reserve(S, w, 7, Reject, 1), Step::Behind { ticks: 2 });
        assert_eq!(reserve(S, w, 7, Wait, 1), Step::WaitFor { until: 9 });
        assert_eq!(
            reserve(S, w, 7, Continue, 1),
            Step::Mint {
                first: S.pack(9, 2),
                last: S.pack(9, 2)
            }
        );
        assert_eq!(
            reserve(S, S.pack(9, 3), 7, Continue, 1),
            Step::WaitFor { until: 10 }
        );
    }

    #[test]
    fn lifetime_edges() {
        assert_eq!(reserve(S, S.initial(), 16, Continue, 1), Step::Expired);
        assert_eq!(
            reserve(S, S.initial(), 15, Continue, 1),
            Step::Mint {
                first: S.pack(15, 0),
                last: S.pack(15, 0)
            }
        );
        for p in [Reject, Continue, Wait] {
            assert_eq!(reserve(S, S.pack(15, 3), 15, p, 1), Step::Expired);
        }
        assert_eq!(reserve(S, S.pack(15, 3), 3, Continue, 1), Step::Expired);
    }

    #[test]
    fn batches_stay_inside_one_tick() {
        assert_eq!(
            reserve(S, S.initial(), 4, Continue, 100),
            Step::Mint {
                first: S.pack(4, 0),
                last: S.pack(4, 3)
            }
        );
        assert_eq!(
            reserve(S, S.pack(4, 0), 4, Continue, 2),
            Step::Mint {
                first: S.pack(4, 1),
                last: S.pack(4, 2)
            }
        );
        assert_eq!(
            reserve(S, S.pack(4, 1), 4, Continue, 100),
            Step::Mint {
                first: S.pack(4, 2),
                last: S.pack(4, 3)
            }
        );
    }

    #[test]
    fn a_guarded_word_spends_its_tick_instead_of_carrying() {
        let g = S.guarded();
        assert_eq!(g.guard_bits, 63 - 4 - 2);
        assert_eq!(g.word_bits(), 63);
        let full = g.pack(5, 3);
        // The add after a full sequence sets the guard, not the tick.
        let spent = full + 1;
        assert!(g.is_spent(spent) && !g.is_spent(full));
        assert_eq!(g.ticks(spent), 5);
        assert_eq!(g.settled(spent), full);
        assert_eq!(g.spent_floor(spent + 1000), spent);
        // A spent word is a full sequence to the state machine, under every policy.
        for p in [Reject, Continue, Wait] {
            assert_eq!(reserve(g, spent + 7, 5, p, 1), Step::WaitFor { until: 6 });
            assert_eq!(
                reserve(g, spent + 7, 6, p, 3),
                Step::Mint {
                    first: g.pack(6, 0),
                    last: g.pack(6, 2)
                }
            );
        }
        assert_eq!(
            reserve(g.with_ticks(5), spent, 5, Continue, 1),
            Step::Expired
        );
        // Compaction is due at the guard's top bit, and not before.
        let top = 1u64 << (g.tick_shift() - 1);
        assert!(!g.needs_compaction(g.pack(5, 0) | (top - 1)));
        assert!(g.needs_compaction(g.pack(5, 0) | top));
        assert!(!S.needs_compaction(full + 1), "no guard, no compaction");
    }

    /// A compare-and-swap word is the ID less its node, shifted right by the sequence's
    /// shift, where that fits in 63 bits: Snowflake's node bits are its gap, Sonyflake's
    /// sequence sits right under the tick, and Discord's 64 bits keep the packed word.
    #[test]
    fn a_word_is_the_id_less_its_node_where_it_fits() {
        use crate::Layout;
        for layout in [
            Layout::snowflake(),
            Layout::sonyflake(),
            Layout::mastodon(),
            Layout::discord(),
            Layout::instagram(),
        ] {
            let shape = Shape::of(&layout);
            assert!(shape.word_bits() <= 63, "{layout}");
            let aligned = shape.tick_shift() + layout.sequence_shift() == layout.time_shift();
            let (ticks, sequence, node) = (12_345, layout.max_sequence() / 3, layout.max_node());
            let word = shape.pack(ticks, sequence);
            if aligned {
                assert_eq!(
                    word << layout.sequence_shift() | node << layout.node_shift(),
                    layout.compose(ticks, sequence, node).unwrap(),
                    "{layout}"
                );
            }
            let gap = layout.time_shift() - layout.sequence_shift() - layout.sequence_bits();
            let fits = Shape::packed(&layout).word_bits() + gap <= 63;
            assert_eq!(aligned, fits, "{layout}");
        }
        assert_eq!(Shape::of(&Layout::snowflake()).guard_bits, 10);
        assert_eq!(Shape::of(&Layout::sonyflake()).guard_bits, 0);
        assert_eq!(
            Shape::of(&Layout::discord()),
            Shape::packed(&Layout::discord())
        );
    }

    /// Drives the machine with random clocks and policies: every minted word is larger
    /// than every earlier one, and never past the lifetime.
    #[test]
    fn words_strictly_increase_under_random_clocks() {
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for round in 0..200 {
            let shape = Shape {
                sequence_bits: (round % 5) as u32,
                max_sequence: (1 << (round % 5)) - 1,
                max_ticks: 63,
                guard_bits: [0, 2, 3][round % 3],
            };
            let policy = [Reject, Continue, Wait][round % 3];
            let mut word = shape.initial();
            let mut clock = 1u64;
            let mut minted = 0;
            let mut minted_last = 0;
            for _ in 0..500 {
                match next() % 4 {
                    0 => clock += next() % 3,
                    1 => clock = clock.saturating_sub(next() % 3),
                    _ => {}
                }
                // A guarded word also takes blind adds (the fetch_add fast path's misses),
                // compacted as the generator does.
                if shape.guard_bits > 0 && next() % 3 == 0 {
                    for _ in 0..next() % 9 {
                        word += 1;
                        if shape.needs_compaction(word) {
                            word = shape.spent_floor(word);
                        }
                    }
                }
                let want = 1 + next() % 5;
                match reserve(shape, word, clock, policy, want) {
                    Step::Mint { first, last } => {
                        assert!(first > word && last >= first && last - first < want);
                        assert!(!shape.is_spent(first) && !shape.is_spent(last));
                        assert!(first > minted_last || minted == 0);
                        minted_last = last;
                        assert_eq!(shape.ticks(first), shape.ticks(last));
                        assert!(shape.ticks(last) <= shape.max_ticks);
                        word = last;
                        minted += 1;
                    }
                    Step::WaitFor { until } => {
                        assert!(until > clock);
                        clock = until;
                    }
                    Step::Behind { ticks } => {
                        assert_eq!(policy, Reject);
                        assert_eq!(ticks, shape.ticks(word) - clock);
                    }
                    Step::Expired => {
                        assert!(
                            clock > shape.max_ticks || shape.ticks(word) == shape.max_ticks,
                            "{shape:?} {word:#x} {clock}"
                        );
                        break;
                    }
                }
            }
            assert!(minted > 0);
        }
    }
}
