//! One sleeper's slot on the timer: whether its time came, and the waker to call when it
//! does. The timer fires it once; the future polls it any number of times. Both sides
//! take the one lock, so a poll that finds the slot not fired has stored its waker before
//! the timer can look for it (no wake is lost between the two). The loom model in
//! `loom-tests/tests/wait.rs` runs this very file under `--cfg flakeid_loom`.

use core::task::Waker;

#[cfg(flakeid_loom)]
use loom::sync::Mutex;
#[cfg(not(flakeid_loom))]
use std::sync::Mutex;

/// A sleeper's slot: fired or not, and the waker of its last poll.
#[derive(Debug, Default)]
pub struct Slot {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    fired: bool,
    waker: Option<Waker>,
}

impl Slot {
    /// Whether the slot fired; if not, `waker` is kept (in place of an earlier one) for
    /// the timer to call.
    pub fn poll(&self, waker: &Waker) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.fired {
            return true;
        }
        match &mut state.waker {
            Some(kept) if kept.will_wake(waker) => {}
            kept => *kept = Some(waker.clone()),
        }
        false
    }

    /// The time came: marks the slot fired and wakes its sleeper (outside the lock).
    pub fn fire(&self) {
        let waker = {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            state.fired = true;
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// The sleeper is gone: its waker is dropped now, not when the timer comes to it.
    pub fn forget(&self) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).waker = None;
    }
}
