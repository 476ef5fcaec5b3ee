//! Time sources. A [`Clock`] tells the current time in Unix nanoseconds.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::sync::{AtomicU64, Ordering};

/// A source of the current time, in nanoseconds since 1970-01-01T00:00:00Z.
///
/// A generator reads its clock once per ID on the fast path, so implementations should be
/// cheap. The generator never trusts the clock for uniqueness: IDs stay unique and strictly
/// increasing whatever the clock returns; the clock only decides the time part.
pub trait Clock {
    /// The current time in Unix nanoseconds.
    fn unix_ns(&self) -> u64;
}

impl<C: Clock + ?Sized> Clock for &C {
    #[inline]
    fn unix_ns(&self) -> u64 {
        (**self).unix_ns()
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    #[inline]
    fn unix_ns(&self) -> u64 {
        (**self).unix_ns()
    }
}

/// The wall clock in Unix nanoseconds (0 before 1970, saturating far in the future).
pub(crate) fn system_unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The default clock: monotonic (`quanta`, the TSC where it is reliable), anchored once to
/// the wall clock when it is created.
///
/// An NTP step of the wall clock after that does not move it, so within one process the
/// time part never goes backwards. It drifts from the wall clock as the TSC and NTP
/// disagree (typically microseconds per second at most); create a new generator to
/// re-anchor.
#[derive(Debug, Clone)]
pub struct MonotonicClock {
    clock: quanta::Clock,
    anchor_raw: u64,
    anchor_unix_ns: u64,
}

impl MonotonicClock {
    /// Anchors a new monotonic clock to the current wall-clock time.
    pub fn new() -> Self {
        static CALIBRATED: OnceLock<quanta::Clock> = OnceLock::new();
        let clock = CALIBRATED.get_or_init(quanta::Clock::new).clone();
        let anchor_raw = clock.raw();
        MonotonicClock {
            anchor_raw,
            anchor_unix_ns: system_unix_ns(),
            clock,
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    #[inline]
    fn unix_ns(&self) -> u64 {
        let elapsed = self.clock.delta_as_nanos(self.anchor_raw, self.clock.raw());
        self.anchor_unix_ns.saturating_add(elapsed)
    }
}

/// The wall clock (`SystemTime::now`), as the reference implementations read it: it can
/// step backwards under NTP or an operator, which the generator's
/// [`ClockPolicy`](crate::ClockPolicy) then handles.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[inline]
    fn unix_ns(&self) -> u64 {
        system_unix_ns()
    }
}

/// A clock that moves only when told to: for tests, simulations and `no_std`-style callers
/// that bring their own time. Clones share one time.
#[derive(Debug, Clone)]
pub struct ManualClock {
    ns: Arc<AtomicU64>,
}

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

    /// Steps forward.
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        self.ns.fetch_add(by, Ordering::AcqRel);
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

impl Clock for ManualClock {
    #[inline]
    fn unix_ns(&self) -> u64 {
        self.ns.load(Ordering::Acquire)
    }
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use super::*;

    #[test]
    fn monotonic_clock_tracks_wall_clock_and_never_goes_back() {
        let c = MonotonicClock::new();
        let wall = system_unix_ns();
        let mut last = c.unix_ns();
        assert!(last.abs_diff(wall) < 50_000_000, "{last} vs {wall}");
        for _ in 0..100_000 {
            let now = c.unix_ns();
            assert!(now >= last);
            last = now;
        }
        std::thread::sleep(Duration::from_millis(20));
        let moved = c.unix_ns() - last;
        assert!(
            moved >= 15_000_000,
            "moved only {moved} ns over a 20 ms sleep"
        );
    }

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
    }
}
