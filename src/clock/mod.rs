//! Time sources. A [`Clock`] tells the current time in Unix nanoseconds. The precise
//! [`MonotonicClock`] (the default) is `monotonic`, the [`CoarseClock`] that adds a cheap
//! reading for the fast path `coarse`; here are the trait, the wall clock and the
//! [`ManualClock`] of tests.

#[cfg(all(feature = "std", target_has_atomic = "64", not(flakeid_loom)))]
mod coarse;
#[cfg(feature = "std")]
mod monotonic;
#[cfg(not(feature = "std"))]
mod no_default;

#[cfg(all(feature = "std", target_has_atomic = "64", not(flakeid_loom)))]
pub use coarse::CoarseClock;
#[cfg(feature = "std")]
pub use monotonic::MonotonicClock;
#[cfg(not(feature = "std"))]
pub(crate) use no_default::NoDefaultClock;

#[cfg(feature = "std")]
use std::sync::Arc;
#[cfg(feature = "std")]
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[cfg(all(feature = "std", target_has_atomic = "64"))]
use crate::sync::{AtomicU64, Ordering};

/// The last instant a clock of `u64` Unix nanoseconds can name:
/// 2554-07-21T23:34:33.709551615Z. Layouts may last longer (their IDs decode and compose
/// past it), but no [`Clock`] reaches further, so generators stop there with
/// [`MintError::ClockRangeEnd`](crate::MintError::ClockRangeEnd).
pub const CLOCK_END_UNIX_NS: u64 = u64::MAX;

/// What a [`Clock::recent_atomic`] holds when the clock has no recent reading to give (a
/// [`CoarseClock`] whose background thread could not start): read it as "ask
/// [`Clock::unix_ns`]". A generator reads it as past its tick (only the last tick the clock
/// reaches, in 2554, holds it), so it takes its slow path, which reads [`Clock::unix_ns`].
pub const NO_RECENT_READING: u64 = u64::MAX;

/// A source of the current time, in nanoseconds since 1970-01-01T00:00:00Z.
///
/// A generator reads its clock once per ID on the fast path, so implementations should be
/// cheap. The generator never trusts the clock for uniqueness: IDs stay unique and strictly
/// increasing whatever the clock returns; the clock only decides the time part.
pub trait Clock {
    /// The current time in Unix nanoseconds.
    fn unix_ns(&self) -> u64;

    /// A cheaper reading that may lag behind [`Clock::unix_ns`] (by a bounded amount the
    /// clock documents) but is never ahead of it. The generator's fast path reads this one
    /// and only mints on it when it falls inside the tick already in use; every other
    /// decision (a new tick, a wait, a clock that seems behind) is taken on
    /// [`Clock::unix_ns`]. The default is [`Clock::unix_ns`] itself.
    #[inline]
    fn recent_unix_ns(&self) -> u64 {
        self.unix_ns()
    }

    /// Where [`Clock::recent_unix_ns`] comes from, when it is one relaxed load of an atomic
    /// that holds Unix nanoseconds (as the [`CoarseClock`]'s published reading is): then a
    /// [`Lease`](crate::generator::Lease) keeps the reference and loads it itself, one indirection less
    /// per ID, and so does a generator's fast path. Every load of it must obey
    /// [`Clock::recent_unix_ns`]'s rules (never ahead of [`Clock::unix_ns`], a bounded lag),
    /// for as long as the clock lives, or read [`NO_RECENT_READING`] (`u64::MAX`): no
    /// reading to give, so the reader takes the precise clock (a generator reads it as past
    /// its tick and goes to its slow path). The default is `None`: readers call
    /// [`Clock::recent_unix_ns`].
    #[cfg(target_has_atomic = "64")]
    #[inline]
    fn recent_atomic(&self) -> Option<&core::sync::atomic::AtomicU64> {
        None
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    #[inline]
    fn unix_ns(&self) -> u64 {
        (**self).unix_ns()
    }

    #[inline]
    fn recent_unix_ns(&self) -> u64 {
        (**self).recent_unix_ns()
    }

    #[cfg(target_has_atomic = "64")]
    #[inline]
    fn recent_atomic(&self) -> Option<&core::sync::atomic::AtomicU64> {
        (**self).recent_atomic()
    }
}

#[cfg(feature = "std")]
impl<C: Clock + ?Sized> Clock for Arc<C> {
    #[inline]
    fn unix_ns(&self) -> u64 {
        (**self).unix_ns()
    }

    #[inline]
    fn recent_unix_ns(&self) -> u64 {
        (**self).recent_unix_ns()
    }

    #[cfg(target_has_atomic = "64")]
    #[inline]
    fn recent_atomic(&self) -> Option<&core::sync::atomic::AtomicU64> {
        (**self).recent_atomic()
    }
}

#[cfg(feature = "std")]
/// The wall clock in Unix nanoseconds (0 before 1970, saturating far in the future).
pub(crate) fn system_unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(feature = "std")]
/// The wall clock (`SystemTime::now`), as the reference implementations read it: it can
/// step backwards under NTP or an operator, which the generator's
/// [`ClockPolicy`](crate::ClockPolicy) then handles.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

#[cfg(feature = "std")]
impl Clock for SystemClock {
    #[inline]
    fn unix_ns(&self) -> u64 {
        system_unix_ns()
    }
}

#[cfg(all(feature = "std", target_has_atomic = "64"))]
/// A clock that moves only when told to: for tests, simulations and `no_std`-style callers
/// that bring their own time. Clones share one time.
#[derive(Debug, Clone)]
pub struct ManualClock {
    ns: Arc<AtomicU64>,
}

#[cfg(all(feature = "std", target_has_atomic = "64"))]
impl ManualClock {
    /// A clock standing at `unix_ns`.
    pub fn new(unix_ns: u64) -> Self {
        ManualClock {
            ns: Arc::new(AtomicU64::new(unix_ns)),
        }
    }

    /// A clock standing at `unix_ms` milliseconds.
    pub fn from_unix_ms(unix_ms: u64) -> Self {
        Self::new(unix_ms.saturating_mul(1_000_000))
    }

    /// Sets the time.
    pub fn set(&self, unix_ns: u64) {
        self.ns.store(unix_ns, Ordering::Release);
    }

    /// Steps forward (saturating at `u64::MAX` ns, the end of every clock's range, as
    /// [`ManualClock::step_back`] saturates at the Unix epoch).
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        // Under loom the step stays one atomic add, the single event the models
        // interleave (a compare-and-swap loop changes what loom explores: 705 instead of
        // 18,491 interleavings for two threads racing a clock step); the models never
        // come near the end of the range.
        #[cfg(flakeid_loom)]
        self.ns.fetch_add(by, Ordering::AcqRel);
        #[cfg(not(flakeid_loom))]
        let _ = self
            .ns
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |ns| {
                Some(ns.saturating_add(by))
            });
    }

    /// Steps back (saturating at the Unix epoch).
    pub fn step_back(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let _ = self
            .ns
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |ns| {
                Some(ns.saturating_sub(by))
            });
    }
}

#[cfg(all(feature = "std", target_has_atomic = "64"))]
impl Clock for ManualClock {
    #[inline]
    fn unix_ns(&self) -> u64 {
        self.ns.load(Ordering::Acquire)
    }
}

#[cfg(all(test, feature = "std", not(flakeid_loom)))]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::from_unix_ms(1_000);
        let shared = c.clone();
        assert_eq!(c.unix_ns(), 1_000_000_000);
        shared.advance(Duration::from_millis(5));
        assert_eq!(c.unix_ns(), 1_005_000_000);
        shared.step_back(Duration::from_secs(2));
        assert_eq!(c.unix_ns(), 0);
        c.set(42);
        assert_eq!(shared.unix_ns(), 42);
        // Both directions saturate: never a wrap to 1970 or to 2554.
        c.set(u64::MAX - 5);
        c.advance(Duration::from_nanos(10));
        assert_eq!(c.unix_ns(), u64::MAX);
        c.advance(Duration::MAX);
        assert_eq!(c.unix_ns(), u64::MAX);
        c.step_back(Duration::MAX);
        assert_eq!(c.unix_ns(), 0);
    }
}
