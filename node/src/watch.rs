//! Who hears of a claim's changes: the listeners of each JavaScript environment that
//! watches it, told from the thread that made the change (`Claims::on_change`).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use flakeid::claim::ClaimState;
use napi::Status;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};

/// A listener of a claim's changes: a JavaScript function of one environment, called on
/// its event loop with the new state's name, and not keeping that loop alive.
pub(crate) type Listener = ThreadsafeFunction<String, (), String, Status, false, true>;

/// The listeners of one claim, from every environment that watches it (a process's
/// shared claim has one per `worker_thread` that listens).
#[derive(Default)]
pub(crate) struct Watchers {
    list: Mutex<Vec<(u32, Listener)>>,
    next: AtomicU32,
}

impl Watchers {
    /// Adds a listener; the number `remove` takes.
    pub(crate) fn add(&self, listener: Listener) -> u32 {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.list
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((id, listener));
        id
    }

    /// Removes the listener `add` numbered `id`.
    pub(crate) fn remove(&self, id: u32) {
        let mut list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        list.retain(|(i, _)| *i != id);
    }

    /// Tells every listener the claim's new state, without waiting for any; one whose
    /// environment has ended is dropped.
    pub(crate) fn tell(&self, state: ClaimState) {
        let name = state_name(state);
        let mut list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        list.retain(|(_, f)| {
            f.call(name.clone(), ThreadsafeFunctionCallMode::NonBlocking) != Status::Closing
        });
    }
}

/// A claim's state by its name in JavaScript.
pub(crate) fn state_name(state: ClaimState) -> String {
    match state {
        ClaimState::Active => "active".into(),
        ClaimState::Renewing => "renewing".into(),
        ClaimState::Lost => "lost".into(),
        ClaimState::Released => "released".into(),
        other => format!("{other:?}").to_lowercase(),
    }
}
