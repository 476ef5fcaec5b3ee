//! [`MonotonicClock`], the default: `quanta`'s counter (the TSC where it is reliable),
//! anchored once to the wall clock.

use super::{Clock, system_unix_ns};

/// The default clock: monotonic (`quanta`, the TSC where it is reliable), anchored once to
/// the wall clock when it is created.
///
/// An NTP step of the wall clock after that does not move it, so within one process the
/// time part never goes backwards. It drifts from the wall clock as the TSC and NTP
/// disagree (typically microseconds per second at most); create a new generator to
/// re-anchor.
#[derive(Debug, Clone)]
pub struct MonotonicClock {
    #[cfg(not(miri))]
    clock: quanta::Clock,
    #[cfg(not(miri))]
    anchor_raw: u64,
    /// Under Miri, which cannot run quanta's `cpuid`/`rdtsc`, std's monotonic clock.
    #[cfg(miri)]
    anchor: std::time::Instant,
    anchor_unix_ns: u64,
}

impl MonotonicClock {
    /// Anchors a new monotonic clock to the current wall-clock time.
    #[cfg(not(miri))]
    pub fn new() -> Self {
        static CALIBRATED: std::sync::OnceLock<quanta::Clock> = std::sync::OnceLock::new();
        let clock = CALIBRATED.get_or_init(quanta::Clock::new).clone();
        let anchor_raw = clock.raw();
        MonotonicClock {
            anchor_raw,
            anchor_unix_ns: system_unix_ns(),
            clock,
        }
    }

    /// Anchors a new monotonic clock to the current wall-clock time.
    #[cfg(miri)]
    pub fn new() -> Self {
        MonotonicClock {
            anchor: std::time::Instant::now(),
            anchor_unix_ns: system_unix_ns(),
        }
    }
}

#[cfg(all(test, feature = "std", not(miri)))]
impl MonotonicClock {
    /// The anchor: the raw counter and the wall-clock reading taken together.
    pub(super) fn anchor(&self) -> (u64, u64) {
        (self.anchor_raw, self.anchor_unix_ns)
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
        #[cfg(not(miri))]
        let elapsed = self.clock.delta_as_nanos(self.anchor_raw, self.clock.raw());
        #[cfg(miri)]
        let elapsed = u64::try_from(self.anchor.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.anchor_unix_ns.saturating_add(elapsed)
    }
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn monotonic_clock_tracks_wall_clock_and_never_goes_back() {
        let c = MonotonicClock::new();
        let before = system_unix_ns();
        let mut last = c.unix_ns();
        let after = system_unix_ns();
        // Within 50 ms of the wall clock read just before and just after.
        assert!(
            last + 50_000_000 >= before && last <= after + 50_000_000,
            "{before} <= {last} <= {after}"
        );
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
}
