//! [`CoarseClock`]: the monotonic clock plus a reading a background thread publishes every
//! millisecond, one relaxed load for the generator's fast path.

use std::sync::Arc;
use std::time::Duration;

use super::{Clock, MonotonicClock};
use crate::sync::{AtomicU64, Ordering};

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
/// use flakeid::{Clock};
/// use flakeid::clock::CoarseClock;
///
/// let clock = CoarseClock::new();
/// assert!(clock.recent_unix_ns() <= clock.unix_ns());
/// ```
#[derive(Debug, Clone)]
pub struct CoarseClock {
    shared: Arc<Ticker>,
    /// False only if the background thread could not be started: then the coarse
    /// reading is the precise one.
    ticking: bool,
}

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
const PUBLISH_SLACK_NS: u64 = 1_000;

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
        match spawned {
            Ok(_) => CoarseClock {
                shared,
                ticking: true,
            },
            Err(_) => Self::without_thread(shared),
        }
    }

    /// The clock when its thread could not start: nothing will publish, so the atomic
    /// holds [`NO_RECENT_READING`](super::NO_RECENT_READING) and the fast paths that load it
    /// take the precise clock (the thread never ran: this store is the only write).
    fn without_thread(shared: Arc<Ticker>) -> Self {
        shared
            .recent
            .store(super::NO_RECENT_READING, Ordering::Relaxed);
        CoarseClock {
            shared,
            ticking: false,
        }
    }
}

impl Default for CoarseClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for CoarseClock {
    /// The precise reading, never below what was published: another core's reading,
    /// published a moment ago, can lead this core's by a nanosecond or so (their
    /// time-stamp counters are not exactly in step under a hypervisor), and the coarse
    /// reading never leads the precise one.
    #[inline]
    fn unix_ns(&self) -> u64 {
        let now = self.shared.precise.unix_ns();
        if !self.ticking {
            return now;
        }
        let recent = self.shared.recent.load(Ordering::Relaxed);
        if now > recent + PUBLISH_SLACK_NS {
            self.shared.recent.fetch_max(now, Ordering::Relaxed);
        }
        now.max(recent)
    }

    #[inline]
    fn recent_unix_ns(&self) -> u64 {
        if self.ticking {
            self.shared.recent.load(Ordering::Relaxed)
        } else {
            self.shared.precise.unix_ns()
        }
    }

    #[inline]
    fn recent_atomic(&self) -> Option<&core::sync::atomic::AtomicU64> {
        // Without the thread it holds `NO_RECENT_READING`: no test of `ticking` per read.
        Some(&*self.shared.recent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without its thread (as when the OS refuses one) the coarse reading is the precise
    /// one, however long ago the last precise read was, and the published atomic holds no
    /// reading: the fast path never mints on a stale reading.
    #[test]
    fn without_a_thread_the_coarse_reading_is_the_precise_one() {
        let precise = MonotonicClock::new();
        let ticker = Ticker {
            recent: crossbeam_utils::CachePadded::new(AtomicU64::new(precise.unix_ns())),
            precise,
        };
        let clock = CoarseClock::without_thread(Arc::new(ticker));
        // A fast path that loads the atomic (the generator's, a lease's) sees no reading,
        // not the one taken when the clock was made, which may lie in the tick it mints in.
        assert_eq!(
            clock.recent_atomic().map(|a| a.load(Ordering::Relaxed)),
            Some(super::super::NO_RECENT_READING)
        );
        for _ in 0..3 {
            let before = clock.unix_ns();
            std::thread::sleep(Duration::from_millis(5));
            let recent = clock.recent_unix_ns();
            assert!(
                recent >= before + 5_000_000,
                "{recent} lags {before} + 5 ms"
            );
            assert!(recent <= clock.unix_ns());
        }
        let layout = crate::Layout::snowflake();
        let generator = crate::Generator::builder(layout)
            .node(1)
            .clock(clock.clone())
            .build()
            .unwrap();
        let ms = |id: crate::Id| {
            let ticks = layout.decompose(id.get()).unwrap().ticks;
            layout.unix_ms_of(ticks).unwrap()
        };
        let a = generator.next_id().unwrap();
        std::thread::sleep(Duration::from_millis(5));
        let b = generator.next_id().unwrap();
        assert!(
            ms(b) >= ms(a) + 5,
            "the second ID's time moved with the clock"
        );
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
