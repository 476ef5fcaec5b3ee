//! Loom model of a sleeper's slot on the async timer (`src/wait/slot.rs`, this very file
//! included here): the timer fires the slot on its thread while the sleeping task polls
//! it; however the two interleave, a poll that finds the slot not fired is woken once it
//! fires (no wake lost between its check and the storing of its waker: a lost one would
//! leave the task asleep for good). Run with `RUSTFLAGS="--cfg flakeid_loom"` (see
//! `.ci/run`).
#![cfg(flakeid_loom)]

#[path = "../../src/wait/slot.rs"]
#[allow(dead_code)]
mod slot;

use core::task::Waker;

use flakeid_loom_tests::{model, must_fail};
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;
use slot::Slot;

/// The two ways to keep a sleeper: the timer's, and a known-wrong one.
trait Sleeper: Default + Send + Sync + 'static {
    fn poll(&self, waker: &Waker) -> bool;
    fn fire(&self);
}

impl Sleeper for Slot {
    fn poll(&self, waker: &Waker) -> bool {
        Slot::poll(self, waker)
    }
    fn fire(&self) {
        Slot::fire(self);
    }
}

/// Checks whether it fired, then stores the waker, each on its own: a fire in between
/// finds no waker to call, and the sleeper never hears of it.
#[derive(Default)]
struct CheckThenStore {
    fired: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Sleeper for CheckThenStore {
    fn poll(&self, waker: &Waker) -> bool {
        if self.fired.load(Ordering::SeqCst) {
            return true;
        }
        *self.waker.lock().unwrap() = Some(waker.clone());
        false
    }
    fn fire(&self) {
        self.fired.store(true, Ordering::SeqCst);
        if let Some(w) = self.waker.lock().unwrap().take() {
            w.wake();
        }
    }
}

/// The waker of the model's task: whether it was called.
#[derive(Default)]
struct Woken(std::sync::atomic::AtomicBool);

impl std::task::Wake for Woken {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The timer fires on its thread while the task polls: once both are done, the poll found
/// the slot fired or the task was woken.
fn race<S: Sleeper>() {
    let slot = Arc::new(S::default());
    let timer = {
        let slot = slot.clone();
        thread::spawn(move || slot.fire())
    };
    let woken = std::sync::Arc::new(Woken::default());
    let ready = slot.poll(&Waker::from(woken.clone()));
    timer.join().unwrap();
    assert!(
        ready || woken.0.load(std::sync::atomic::Ordering::SeqCst),
        "the timer fired and the sleeper was never woken"
    );
}

/// The timer's slot: the task always wakes.
#[test]
fn a_fired_sleeper_always_wakes() {
    model("a sleeper's slot on the timer", race::<Slot>);
}

/// The model bites: a check and a store apart lose the wake.
#[test]
fn a_check_apart_from_the_store_is_caught() {
    let message = must_fail("a lost wake", || {
        loom::model(race::<CheckThenStore>);
    });
    assert!(
        message.contains("never woken"),
        "failed for another reason: {message}"
    );
}
