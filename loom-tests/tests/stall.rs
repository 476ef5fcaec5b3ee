//! Loom model of the service's stall clock (`serve/src/stall.rs`, this very file included
//! here): a connection idle for an hour answers a request while its watch reads how long
//! its responses have waited for the client; the watch never sees the new answer's wait
//! timed from the hour-old moment (it would close the connection at once as stalled). Run
//! with `RUSTFLAGS="--cfg flakeid_loom"` (see `.ci/run`).
#![cfg(flakeid_loom)]

#[path = "../../serve/src/stall.rs"]
#[allow(dead_code)]
mod stall;

use flakeid_loom_tests::{model, must_fail};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use loom::thread;
use stall::Stall;

/// An hour, in ns: when the connection last moved before the new answer.
const HOUR: u64 = 3_600_000_000_000;

/// The two ways to start a wait: the service's, and a known-wrong one.
trait Clock: Send + Sync + 'static {
    fn starts_waiting(&self, now_ns: u64);
    fn stops_waiting(&self);
    fn stalled_for(&self, now_ns: u64) -> Option<u64>;
}

impl Clock for Stall {
    fn starts_waiting(&self, now_ns: u64) {
        Stall::starts_waiting(self, now_ns);
    }
    fn stops_waiting(&self) {
        Stall::stops_waiting(self);
    }
    fn stalled_for(&self, now_ns: u64) -> Option<u64> {
        Stall::stalled_for(self, now_ns)
    }
}

/// Raises the count first and sets the moment after: a reader in between sees a wait
/// with the moment of the last one.
#[derive(Default)]
struct CountFirst {
    waiting: AtomicUsize,
    progress_ns: AtomicU64,
}

impl Clock for CountFirst {
    fn starts_waiting(&self, now_ns: u64) {
        if self.waiting.fetch_add(1, Ordering::SeqCst) == 0 {
            self.progress_ns.store(now_ns, Ordering::SeqCst);
        }
    }
    fn stops_waiting(&self) {
        self.waiting.fetch_sub(1, Ordering::SeqCst);
    }
    fn stalled_for(&self, now_ns: u64) -> Option<u64> {
        if self.waiting.load(Ordering::SeqCst) == 0 {
            return None;
        }
        Some(now_ns.saturating_sub(self.progress_ns.load(Ordering::SeqCst)))
    }
}

/// A response waited at 0 and went (the connection then idle for an hour); at `HOUR`
/// two answers start to wait on two threads while the watch reads the stall at
/// `HOUR + 1`: it sees none, or one of at most 1 ns, never an hour.
fn race<C: Clock>(clock: C) {
    let clock = Arc::new(clock);
    clock.starts_waiting(0);
    clock.stops_waiting();
    let answer = || {
        let clock = clock.clone();
        thread::spawn(move || clock.starts_waiting(HOUR))
    };
    let (a, b) = (answer(), answer());
    let seen = clock.stalled_for(HOUR + 1);
    assert!(
        seen.is_none_or(|ns| ns <= 1),
        "a new answer timed from an hour ago: stalled {seen:?} ns"
    );
    a.join().unwrap();
    b.join().unwrap();
    assert_eq!(clock.stalled_for(HOUR + 1), Some(1));
}

/// The service's clock: a new answer's wait starts when it does.
#[test]
fn a_new_wait_is_timed_from_its_own_start() {
    model("the stall clock of a connection", || race(Stall::default()));
}

/// The model bites: a count raised before the moment is set lets the watch time the new
/// answer from an hour ago.
#[test]
fn a_count_raised_before_the_moment_is_caught() {
    let message = must_fail("a wait timed from an hour ago", || {
        loom::model(|| race(CountFirst::default()));
    });
    assert!(
        message.contains("timed from an hour ago"),
        "failed for another reason: {message}"
    );
}
