//! Sleeping to a sub-millisecond deadline in async code, on any runtime, without holding
//! a worker thread (feature `std`).
//!
//! tokio's timer counts whole milliseconds: `tokio::time::sleep(Duration::from_micros(300))`
//! wakes one to two milliseconds later, so a batch that awaits the next tick of a 1 ms
//! layout that way loses one or two ticks in every three (53-80% of the cap, measured).
//! [`sleep`] keeps its deadline to the microsecond instead: one timer thread per process
//! (started at the first sleep, named `flakeid-timer`) sleeps to the earliest deadline of
//! all sleepers and wakes each sleeper's task when its time comes; the task itself never
//! blocks its thread. [`Generator::next_id_async`](crate::Generator::next_id_async) and
//! [`Generator::next_ids_async`](crate::Generator::next_ids_async) wait with it, and
//! `flakeid serve` does too.
//!
//! On Linux the timer thread asks for a timer slack of 1 µs and the shortest time slice
//! (100 µs, Linux 6.12 and later; its own, no other thread's), so a sleeper wakes within a
//! few microseconds of its deadline, even beside busy threads. Where the thread cannot be
//! started, a sleep still ends on time by waking its own task at every poll until the
//! deadline (the runtime stays free to run other tasks).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use std::time::{Duration, Instant};
//!
//! let started = Instant::now();
//! flakeid::wait::sleep(Duration::from_micros(300)).await;
//! assert!(started.elapsed() >= Duration::from_micros(300));
//! # }
//! ```

#[cfg(all(any(target_os = "linux", target_os = "android"), not(flakeid_loom)))]
pub(crate) mod slice;
pub(crate) mod slot;

use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use slot::Slot;

/// Sleeps for `duration` (see the [module](self)); a duration past what an `Instant` can
/// hold sleeps a year, as good as for ever.
pub fn sleep(duration: Duration) -> Sleep {
    let now = Instant::now();
    sleep_until(
        now.checked_add(duration)
            .unwrap_or(now + Duration::from_secs(86_400 * 365)),
    )
}

/// Asks the scheduler for the shortest time slice (100 µs) for the calling thread, once per
/// thread, and says whether the thread now has a slice that short (Linux 6.12 and later;
/// elsewhere nothing happens and the answer is `false`).
///
/// Beside busy threads Linux runs a thread that wakes, at a tick's boundary say, only when
/// the running thread's slice (0.75-3 ms) ends; with the short slice it runs as it wakes.
/// The thread's share of the CPU is unchanged, only how finely it is cut, and it keeps the
/// slice for the rest of its life. A real-time, batch or idle thread, a kernel before 6.12
/// and a sandbox that refuses the call are left as they are. The generator's waits ask for
/// it themselves (see [`GeneratorBuilder::short_slice`](crate::GeneratorBuilder::short_slice));
/// this is for a loop of its own around
/// [`try_next_ids`](crate::Generator::try_next_ids) and [`sleep`], on the thread that
/// mints:
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), flakeid::Error> {
/// use std::time::Duration;
/// use flakeid::{Generator, Id, Layout, MintError};
///
/// let generator = Generator::builder(Layout::snowflake()).node(1).build()?;
/// let mut out = vec![Id::default(); 10_000];
/// let mut filled = 0;
/// while filled < out.len() {
///     match generator.try_next_ids(&mut out[filled..]) {
///         Ok(n) => filled += n,
///         Err(MintError::WouldBlock { wait_ns }) => {
///             flakeid::wait::short_slice();
///             flakeid::wait::sleep(Duration::from_nanos(wait_ns)).await;
///         }
///         Err(e) => return Err(e.into()),
///     }
/// }
/// # Ok(())
/// # }
/// ```
pub fn short_slice() -> bool {
    #[cfg(all(any(target_os = "linux", target_os = "android"), not(flakeid_loom)))]
    {
        slice::shorten();
        slice::fair_slice_of(0).is_some_and(|s| s > 0 && s <= slice::SHORT)
    }
    #[cfg(not(all(any(target_os = "linux", target_os = "android"), not(flakeid_loom))))]
    false
}

/// Sleeps until `deadline` (see the [module](self)).
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        deadline,
        slot: None,
    }
}

/// The future of [`sleep`] and [`sleep_until`]: ready once its deadline passed.
#[derive(Debug)]
#[must_use = "a sleep does nothing unless awaited"]
pub struct Sleep {
    deadline: Instant,
    /// Its slot on the timer, once it waits there.
    slot: Option<Arc<Slot>>,
}

impl Sleep {
    /// When the sleep ends.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if let Some(slot) = &self.slot {
            // Fired only once the deadline passed.
            return if slot.poll(cx.waker()) {
                Poll::Ready(())
            } else {
                Poll::Pending
            };
        }
        if Instant::now() >= self.deadline {
            return Poll::Ready(());
        }
        let Some(timer) = Timer::get() else {
            // No timer thread: come back at once, until the deadline.
            cx.waker().wake_by_ref();
            return Poll::Pending;
        };
        let slot = Arc::new(Slot::default());
        slot.poll(cx.waker());
        timer.add(self.deadline, Arc::clone(&slot));
        self.slot = Some(slot);
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(slot) = &self.slot {
            slot.forget();
        }
    }
}

/// Gives the thread back to the runtime once: ready at the second poll (the task is
/// woken at once), so that other tasks on the thread run in between.
#[cfg(feature = "tokio")]
pub(crate) fn yield_now() -> YieldNow {
    YieldNow { yielded: false }
}

/// The future of [`yield_now`].
#[cfg(feature = "tokio")]
pub(crate) struct YieldNow {
    yielded: bool,
}

#[cfg(feature = "tokio")]
impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// A sleeper on the timer: its deadline, the order it came in (equal deadlines fire in
/// that order), and its slot.
struct Due {
    at: Instant,
    order: u64,
    slot: Arc<Slot>,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.order) == (other.at, other.order)
    }
}

impl Eq for Due {}

impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Due {
    /// Reversed: the heap's top is the earliest.
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        (other.at, other.order).cmp(&(self.at, self.order))
    }
}

struct Queue {
    heap: BinaryHeap<Due>,
    added: u64,
}

/// The process's timer: the sleepers, earliest first, and the thread that fires them.
struct Timer {
    queue: Mutex<Queue>,
    /// Told when a sleeper comes first.
    earlier: Condvar,
}

static TIMER: Timer = Timer {
    queue: Mutex::new(Queue {
        heap: BinaryHeap::new(),
        added: 0,
    }),
    earlier: Condvar::new(),
};

impl Timer {
    /// The timer, its thread started at the first call; `None` where the thread could
    /// not be started.
    fn get() -> Option<&'static Timer> {
        static STARTED: OnceLock<bool> = OnceLock::new();
        let started = STARTED.get_or_init(|| {
            std::thread::Builder::new()
                .name("flakeid-timer".into())
                .spawn(|| TIMER.run())
                .is_ok()
        });
        started.then_some(&TIMER)
    }

    /// Adds a sleeper, and tells the thread if it comes first.
    fn add(&self, at: Instant, slot: Arc<Slot>) {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        let first = queue.heap.peek().is_none_or(|top| at < top.at);
        let order = queue.added;
        queue.added = order.wrapping_add(1);
        queue.heap.push(Due { at, order, slot });
        drop(queue);
        if first {
            self.earlier.notify_one();
        }
    }

    /// The timer thread: fires each sleeper whose deadline passed (outside the lock: a
    /// waker may run code of its runtime), sleeps to the earliest of the rest.
    fn run(&self) {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            // Its own slack only: the default (50 µs) would make every wake that late.
            #[cfg(not(any(miri, flakeid_loom)))]
            let _ = slice::set_timer_slack(1_000);
            // Run as it wakes beside busy threads, not when their slice ends.
            #[cfg(not(flakeid_loom))]
            slice::shorten();
        }
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let now = Instant::now();
            let next = queue.heap.peek().map(|top| top.at);
            queue = match next {
                Some(at) if at <= now => {
                    let due = queue.heap.pop();
                    drop(queue);
                    if let Some(due) = due {
                        due.slot.fire();
                    }
                    self.queue.lock().unwrap_or_else(|p| p.into_inner())
                }
                Some(at) => {
                    self.earlier
                        .wait_timeout(queue, at - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
                None => self.earlier.wait(queue).unwrap_or_else(|p| p.into_inner()),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sleep never ends before its deadline, and sleeps of different lengths end in
    /// the order of their deadlines.
    #[test]
    fn sleeps_end_at_their_deadlines_in_order() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let started = Instant::now();
            let order = Arc::new(Mutex::new(Vec::new()));
            let mut tasks = Vec::new();
            for us in [900u64, 100, 500, 300, 700] {
                let order = Arc::clone(&order);
                tasks.push(tokio::spawn(async move {
                    let s = sleep(Duration::from_micros(us));
                    let deadline = s.deadline();
                    s.await;
                    assert!(Instant::now() >= deadline);
                    order.lock().unwrap().push(us);
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
            assert!(started.elapsed() >= Duration::from_micros(900));
            assert_eq!(*order.lock().unwrap(), [100, 300, 500, 700, 900]);
        });
    }

    /// A sleep dropped before its deadline leaves the timer working for the others.
    #[test]
    fn a_dropped_sleep_leaves_the_others_on_time() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let dropped = sleep(Duration::from_micros(200));
            let waker = std::task::Waker::noop();
            let mut dropped = Box::pin(dropped);
            assert!(
                dropped
                    .as_mut()
                    .poll(&mut Context::from_waker(waker))
                    .is_pending()
            );
            drop(dropped);
            let kept = sleep(Duration::from_micros(400));
            let deadline = kept.deadline();
            kept.await;
            assert!(Instant::now() >= deadline);
        });
    }
}
