//! A layout's clock arithmetic: instants to ticks and back ([`Layout::ticks_at`],
//! [`Layout::unix_ns_of`], ...), every result checked against the time field; and how long
//! a layout has left ([`Layout::time_left`], [`Layout::ends_within`]).

#[cfg(feature = "std")]
use std::time::{SystemTime, UNIX_EPOCH};

use super::*;

/// How long before a layout runs out flakeid warns by default: a year
/// ([`Layout::ends_within`], [`GeneratorBuilder::end_warning`](crate::GeneratorBuilder::end_warning),
/// the tool and the service).
pub const END_WARNING: Duration = Duration::from_secs(365 * 24 * 3600);

impl Layout {
    /// How long this layout has left at `unix_ns` (Unix nanoseconds) before its end
    /// ([`Layout::end_unix_ns`]), the first instant it cannot hold: zero at or past it.
    pub fn time_left(&self, unix_ns: i128) -> Duration {
        duration_of_ns(self.end_unix_ns().saturating_sub(unix_ns).max(0))
    }

    /// The time left ([`Layout::time_left`]) where this layout runs out within `margin` of
    /// `unix_ns`, or already has (zero); `None` where its end lies further off, or the
    /// margin is zero. The generator, the tool and the service warn on it, from
    /// [`END_WARNING`] (a year) before the end by default.
    ///
    /// ```
    /// use core::time::Duration;
    /// use flakeid::Layout;
    /// use flakeid::layout::END_WARNING;
    ///
    /// // 2^30 ms (12.4 days) from its epoch: ends soon.
    /// let short: Layout = "time=30,seq=12,node=10,epoch=2026-01-01T00:00:00Z".parse()?;
    /// let now = 1_767_225_600_000_000_000 + 86_400_000_000_000; // a day in
    /// let left = short.ends_within(END_WARNING, now).unwrap();
    /// assert!(left > Duration::from_secs(11 * 86_400) && left < Duration::from_secs(12 * 86_400));
    /// assert_eq!(short.ends_within(Duration::ZERO, now), None);
    /// assert_eq!(Layout::snowflake().ends_within(END_WARNING, now), None);
    /// # Ok::<(), flakeid::Error>(())
    /// ```
    pub fn ends_within(&self, margin: Duration, unix_ns: i128) -> Option<Duration> {
        let left = self.time_left(unix_ns);
        (!margin.is_zero() && left <= margin).then_some(left)
    }

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
