//! Time sources. A [`Clock`] tells the current time in Unix nanoseconds.

#[cfg(feature = "std")]
use std::sync::Arc;
#[cfg(feature = "std")]
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[cfg(all(feature = "std", target_has_atomic = "64"))]
use crate::sync::{AtomicU64, Ordering};

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
}

/// The placeholder default clock without `std` (see
/// [`DefaultClock`](crate::DefaultClock)): it reads 0, before every epoch, so a
/// generator on it mints nothing. Name a real clock with
/// [`Generator::with_clock`](crate::Generator::with_clock).
#[cfg(not(feature = "std"))]
#[derive(Debug, Clone, Copy, Default)]
pub struct NoClock;

#[cfg(not(feature = "std"))]
impl Clock for NoClock {
    fn unix_ns(&self) -> u64 {
        0
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
}

/// The monotonic clock plus a cheap coarse reading for the fast path: a background thread
/// publishes the time every `interval` (1 ms by default) into one shared atomic, so
/// [`Clock::recent_unix_ns`] is a single relaxed load, while [`Clock::unix_ns`] still reads
/// the [`MonotonicClock`] (and publishes what it read, so the coarse reading catches up at
/// once when a generator moves to a new tick).
///
/// What it costs: an ID's time may lag the true time by about one `interval` (plus however
/// late the OS wakes the thread), never more than [`Clock::unix_ns`] would say, and never
/// backwards. Uniqueness and order do not depend on it: the generator takes every decision
/// that changes the tick on the precise reading. One thread serves every `CoarseClock`
/// made by [`CoarseClock::new`]; it exits when the last of them is dropped.
///
/// ```
/// use flakeid::{Clock, CoarseClock};
///
/// let clock = CoarseClock::new();
/// assert!(clock.recent_unix_ns() <= clock.unix_ns());
/// ```
#[cfg(all(feature = "std", target_has_atomic = "64", not(flakeid_loom)))]
#[derive(Debug, Clone)]
pub struct CoarseClock {
    shared: Arc<Ticker>,
    /// False only if the background thread could not be started: then the coarse
    /// reading is the precise one.
    ticking: bool,
}

#[cfg(all(feature = "std", target_has_atomic = "64", not(flakeid_loom)))]
#[derive(Debug)]
struct Ticker {
    /// The latest published reading of `precise`, in Unix ns; only ever raised.
    recent: crossbeam_utils::CachePadded<AtomicU64>,
    /// The one precise clock (one anchor) of the ticker and of every `CoarseClock` it
    /// serves, so what the ticker publishes is on the scale of what each instance reads.
    precise: MonotonicClock,
}

/// Publish a precise reading only when the coarse one lags it by more than this, so a
/// thread spinning on the precise clock does not write the shared line every iteration.
#[cfg(all(feature = "std", target_has_atomic = "64", not(flakeid_loom)))]
const PUBLISH_SLACK_NS: u64 = 1_000;

#[cfg(all(feature = "std", target_has_atomic = "64", not(flakeid_loom)))]
impl CoarseClock {
    /// The default interval between two publications by the background thread.
    pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(1);

    /// A coarse clock served by the process-wide background thread (started on first use,
    /// publishing every [`CoarseClock::DEFAULT_INTERVAL`]).
    pub fn new() -> Self {
        static SHARED: std::sync::Mutex<std::sync::Weak<Ticker>> =
            std::sync::Mutex::new(std::sync::Weak::new());
        let mut slot = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(shared) = slot.upgrade() {
            return CoarseClock {
                shared,
                ticking: true,
            };
        }
        let clock = Self::with_interval(Self::DEFAULT_INTERVAL);
        if clock.ticking {
            *slot = Arc::downgrade(&clock.shared);
        }
        clock
    }

    /// A coarse clock with its own background thread publishing every `interval`
    /// (at least 10 µs).
    pub fn with_interval(interval: Duration) -> Self {
        let interval = interval.max(Duration::from_micros(10));
        let precise = MonotonicClock::new();
        let shared = Arc::new(Ticker {
            recent: crossbeam_utils::CachePadded::new(AtomicU64::new(precise.unix_ns())),
            precise,
        });
        let weak = Arc::downgrade(&shared);
        let spawned = std::thread::Builder::new()
            .name("flakeid-coarse-clock".into())
            .spawn(move || {
                while let Some(t) = weak.upgrade() {
                    t.recent.fetch_max(t.precise.unix_ns(), Ordering::Relaxed);
                    drop(t);
                    std::thread::sleep(interval);
                }
            });
        CoarseClock {
            shared,
            ticking: spawned.is_ok(),
        }
    }
}

#[cfg(all(feature = "std", target_has_atomic = "64", not(flakeid_loom)))]
impl Default for CoarseClock {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(all(feature = "std", target_has_atomic = "64", not(flakeid_loom)))]
impl Clock for CoarseClock {
    #[inline]
    fn unix_ns(&self) -> u64 {
        let now = self.shared.precise.unix_ns();
        if now > self.shared.recent.load(Ordering::Relaxed) + PUBLISH_SLACK_NS {
            self.shared.recent.fetch_max(now, Ordering::Relaxed);
        }
        now
    }

    #[inline]
    fn recent_unix_ns(&self) -> u64 {
        if self.ticking {
            self.shared.recent.load(Ordering::Relaxed)
        } else {
            self.shared.precise.unix_ns()
        }
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

#[cfg(feature = "std")]
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
    fn anchor(&self) -> (u64, u64) {
        (self.anchor_raw, self.anchor_unix_ns)
    }
}

#[cfg(feature = "std")]
impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(feature = "std")]
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

    #[test]
    fn coarse_clocks_made_apart_share_one_anchor() {
        let a = CoarseClock::new();
        // Long enough that a second anchoring reads a different wall clock and TSC.
        std::thread::sleep(Duration::from_millis(20));
        let b = CoarseClock::new();
        assert!(Arc::ptr_eq(&a.shared, &b.shared), "one ticker");
        // One anchor for the ticker and every instance: the published reading and every
        // instance's precise reading are on one scale, so the coarse one never leads.
        assert_eq!(a.shared.precise.anchor(), b.shared.precise.anchor());
        for _ in 0..100_000 {
            let recent = b.recent_unix_ns();
            assert!(recent <= b.unix_ns());
            assert!(a.recent_unix_ns() <= a.unix_ns());
        }
    }
}
