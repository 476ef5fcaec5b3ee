//! A layout's clock arithmetic: instants to ticks and back ([`Layout::ticks_at`],
//! [`Layout::unix_ns_of`], ...), every result checked against the time field.

#[cfg(feature = "std")]
use std::time::{SystemTime, UNIX_EPOCH};

use super::*;

impl Layout {
    /// The tick count of an instant given in Unix nanoseconds (any `i128`: before 1970 is
    /// [`Error::BeforeEpoch`], past the layout's end [`Error::PastLifetime`], even past
    /// the year 2554 that clocks stop at, so every decoded time composes back).
    pub fn ticks_at(&self, unix_ns: i128) -> Result<u64, Error> {
        let epoch_ns = i128::from(self.epoch_unix_ns);
        let tick = (unix_ns - i128::from(self.phase_ns())).div_euclid(i128::from(self.unit_ns));
        let ticks = tick - i128::from(self.epoch_tick());
        if ticks < 0 {
            return Err(Error::BeforeEpoch {
                by: duration_of_ns(epoch_ns.saturating_sub(unix_ns)),
                epoch_unix_ns: self.epoch_unix_ns,
            });
        }
        if ticks > i128::from(self.max_ticks()) {
            return Err(Error::PastLifetime {
                end_unix_ms: self.end_unix_ms(),
            });
        }
        Ok(ticks as u64)
    }

    #[cfg(feature = "std")]
    /// The tick count of a [`SystemTime`] (see [`Layout::ticks_at`]).
    pub fn ticks_at_time(&self, time: SystemTime) -> Result<u64, Error> {
        self.ticks_at(system_time_ns(time))
    }

    /// `ticks` if it fits the time field, else [`Error::OutOfRange`].
    pub(super) fn check_ticks(&self, ticks: u64) -> Result<u64, Error> {
        check(Field::Ticks, ticks, self.max_ticks())
    }

    /// Unix nanoseconds at the start of tick `ticks` (unit-aligned, like Sonyflake's
    /// `ToTime`): the one to use for exact arithmetic. A tick count wider than the time
    /// field is [`Error::OutOfRange`]; every other value has an exact answer.
    #[inline]
    pub fn unix_ns_of(&self, ticks: u64) -> Result<i128, Error> {
        self.check_ticks(ticks)?;
        Ok(
            (i128::from(self.epoch_tick()) + i128::from(ticks)) * i128::from(self.unit_ns)
                + i128::from(self.phase_ns()),
        )
    }

    /// Unix milliseconds (rounded down) at the start of tick `ticks`: what JSON and most
    /// databases store. A tick count wider than the time field is [`Error::OutOfRange`];
    /// for every other value the answer fits (`build` bounds a layout's end to 63 bits of
    /// milliseconds).
    #[inline]
    pub fn unix_ms_of(&self, ticks: u64) -> Result<u64, Error> {
        if ticks < self.cuts.ms_ticks_end {
            // Whole-millisecond units and a tick count in the field: tick 0's start in ms,
            // plus whole units (fits: `build` bounds the layout's end to 63 bits of
            // milliseconds).
            return Ok(self.tick0_ms + ticks * self.unit_ms);
        }
        self.unix_ms_of_exact(ticks)
    }

    /// [`Layout::unix_ms_of`] where the multiply-add does not apply: a unit that is not a
    /// whole number of milliseconds, or a tick count past the field (refused).
    #[cold]
    fn unix_ms_of_exact(&self, ticks: u64) -> Result<u64, Error> {
        let ticks = self.check_ticks(ticks)?;
        Ok(self.unix_ns_of(ticks)?.div_euclid(i128::from(NS_PER_MS)) as u64)
    }

    /// [`Layout::unix_ms_of`] for the batch decoder, which flags rows wider than the layout
    /// itself: any `ticks`, exact for those that fit, meaningless (but no panic) beyond.
    #[inline]
    pub(crate) fn unix_ms_of_unchecked(&self, ticks: u64) -> u64 {
        if self.unit_ms != 0 {
            return self.tick0_ms.wrapping_add(ticks.wrapping_mul(self.unit_ms));
        }
        let ns = (u128::from(self.epoch_tick()) + u128::from(ticks))
            .saturating_mul(u128::from(self.unit_ns))
            .saturating_add(u128::from(self.phase_ns()));
        (ns / u128::from(NS_PER_MS)) as u64
    }

    #[cfg(feature = "std")]
    /// The start of tick `ticks` as a [`SystemTime`], for std's time APIs. A tick count
    /// wider than the time field is [`Error::OutOfRange`], and so is a time this
    /// platform's `SystemTime` cannot hold.
    pub fn time_of(&self, ticks: u64) -> Result<SystemTime, Error> {
        let ns = self.unix_ns_of(ticks)?;
        UNIX_EPOCH
            .checked_add(duration_of_ns(ns))
            .ok_or(Error::OutOfRange {
                field: Field::Ticks,
                value: ticks,
                max: self.max_ticks(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    /// `unix_ms_of`'s short path (whole-millisecond units: tick 0's start in ms plus whole
    /// units, derived when the layout is made) gives what the exact 128-bit arithmetic gives,
    /// for units of whole and part milliseconds, on both grids, at both ends of the time field;
    /// and so does the batch decoder's unchecked form.
    #[test]
    fn unix_ms_of_matches_the_exact_arithmetic() {
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let units_ns = [
            1,
            999,
            1_000,
            250_000,
            1_000_000,
            1_500_000,
            10_000_000,
            1_000_000_000,
        ];
        let mut checked = 0;
        for round in 0..400 {
            let unit = units_ns[round % units_ns.len()];
            let Ok(l) = Layout::builder()
                .time_bits(20 + (next() % 22) as u32)
                .sequence_bits(8)
                .node_bits(2)
                .unit(Duration::from_nanos(unit))
                .epoch_unix_ms(next() % 1_700_000_000_000)
                .grid(if round % 2 == 0 {
                    Grid::Unix
                } else {
                    Grid::Epoch
                })
                .build()
            else {
                continue;
            };
            for ticks in [0, 1, next() % l.max_ticks(), l.max_ticks()] {
                let exact = l.unix_ns_of(ticks).unwrap().div_euclid(1_000_000) as u64;
                assert_eq!(l.unix_ms_of(ticks), Ok(exact), "{l} {ticks}");
                assert_eq!(l.unix_ms_of_unchecked(ticks), exact, "{l} {ticks}");
                checked += 1;
            }
        }
        assert!(checked > 500, "{checked}");
    }
}
