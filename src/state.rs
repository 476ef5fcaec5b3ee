//! The generator's state machine, written once as plain functions over plain integers.
//!
//! The generator keeps one packed word (see [`Shape`]) in an `AtomicU64`; [`reserve`]
//! takes the word it loaded and the clock's tick and says what the next word is, or why
//! there is none. The generator, the loom models, the property tests and the fuzz targets
//! all drive this same function.

use crate::generator::ClockPolicy;

/// The top bit of the generator's word: set while a [`crate::Lease`] holds the generator.
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
/// | 62 ..= `sequence_bits + time_bits` | always 0 |
/// | `sequence_bits + time_bits - 1` ..= `sequence_bits` | last tick used |
/// | `sequence_bits - 1` ..= 0 | last sequence number used in that tick |
///
/// Invariant: the word only ever increases, by compare-and-swap from the value the new one
/// was computed from, so each (tick, sequence) pair is handed out at most once. Adding 1
/// to a word whose sequence is full carries into the tick, which is exactly "move to the
/// next tick with sequence 0".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Width of the sequence field.
    pub sequence_bits: u32,
    /// Largest sequence number.
    pub max_sequence: u64,
    /// Largest tick count a generator can reach: the layout's, or the last tick a clock
    /// of `u64` nanoseconds names (in 2554), whichever comes first.
    pub max_ticks: u64,
}

impl Shape {
    /// The shape of a layout's state word. Its tick field is bounded by what the clock
    /// reaches, not the layout's time field: a 64-bit layout with no node field (Mastodon's
    /// 48 time + 16 sequence) still packs in 63 bits, since no clock names a tick past
    /// 2^45 milliseconds.
    pub fn of(layout: &crate::Layout) -> Shape {
        let reach = (u64::MAX - layout.tick0_ns()) / layout.unit_ns();
        Shape {
            sequence_bits: layout.sequence_bits(),
            max_sequence: layout.max_sequence(),
            max_ticks: layout.max_ticks().min(reach),
        }
    }

    /// Bits a word of this shape needs: the largest tick's width plus the sequence's. A
    /// generator needs at most 63 (the top bit is [`LEASED`]).
    pub const fn word_bits(self) -> u32 {
        (u64::BITS - self.max_ticks.leading_zeros()) + self.sequence_bits
    }

    /// The word a new generator starts from: tick 0 with a full sequence, as Sonyflake
    /// does, so the first ID is minted at the clock's tick with sequence 0 and the time part
    /// of an ID is never 0.
    pub const fn initial(self) -> u64 {
        self.max_sequence
    }

    /// Packs (tick, sequence); both must be in range.
    pub const fn pack(self, ticks: u64, sequence: u64) -> u64 {
        ticks << self.sequence_bits | sequence
    }

    /// The tick of a word.
    pub const fn ticks(self, word: u64) -> u64 {
        word >> self.sequence_bits
    }

    /// The sequence number of a word.
    pub const fn sequence(self, word: u64) -> u64 {
        word & self.max_sequence
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
    let left = shape.max_sequence - shape.sequence(word);
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

    const S: Shape = Shape {
        sequence_bits: 2,
        max_sequence: 3,
        max_ticks: 15,
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
            };
            let policy = [Reject, Continue, Wait][round % 3];
            let mut word = shape.initial();
            let mut clock = 1u64;
            let mut minted = 0;
            for _ in 0..500 {
                match next() % 4 {
                    0 => clock += next() % 3,
                    1 => clock = clock.saturating_sub(next() % 3),
                    _ => {}
                }
                let want = 1 + next() % 5;
                match reserve(shape, word, clock, policy, want) {
                    Step::Mint { first, last } => {
                        assert!(first > word && last >= first && last - first < want);
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
                        assert!(clock > shape.max_ticks || shape.ticks(word) == shape.max_ticks);
                        break;
                    }
                }
            }
            assert!(minted > 0);
        }
    }
}
