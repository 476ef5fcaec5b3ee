//! How long a connection's responses that wait for the client have not moved: a count of
//! the responses that wait, and the moment they last moved. The clock is the caller's
//! (nanoseconds after the connection opened), so that the loom model in
//! `loom-tests/tests/stall.rs` runs this very file under `--cfg flakeid_loom`.

#[cfg(flakeid_loom)]
use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
#[cfg(not(flakeid_loom))]
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The responses of one connection that wait for the client, and when they last moved.
#[derive(Debug, Default)]
pub struct Stall {
    /// Responses that wait for the client: an answer not taken yet, or a frame handed
    /// over; not one whose body has nothing to send (a watch with no news).
    waiting: AtomicUsize,
    /// When they last moved: a body polled again after a frame, or the first response
    /// to wait after none did. A new answer beside one that waits does not count.
    progress_ns: AtomicU64,
}

impl Stall {
    /// A response starts to wait for the client at `now_ns`: the clock of the stall starts
    /// then if none waited before. The moment is stored before the count is raised, so
    /// that a reader who sees the count sees the moment too, never the one of an earlier
    /// wait (which would close a connection idle for an hour the instant it answers).
    pub fn starts_waiting(&self, now_ns: u64) {
        if self.waiting.load(Ordering::SeqCst) == 0 {
            self.progress_ns.store(now_ns, Ordering::SeqCst);
        }
        self.waiting.fetch_add(1, Ordering::SeqCst);
    }

    /// A response stops waiting for the client (sent, dropped, or its body has nothing
    /// to send yet).
    pub fn stops_waiting(&self) {
        self.waiting.fetch_sub(1, Ordering::SeqCst);
    }

    /// A response moved at `now_ns`: the client took what it waited for.
    pub fn progressed(&self, now_ns: u64) {
        self.progress_ns.store(now_ns, Ordering::SeqCst);
    }

    /// How many responses wait for the client.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }

    /// How long, at `now_ns`, the responses that wait for the client have not moved
    /// (`None`: none waits).
    pub fn stalled_for(&self, now_ns: u64) -> Option<u64> {
        if self.waiting.load(Ordering::SeqCst) == 0 {
            return None;
        }
        Some(now_ns.saturating_sub(self.progress_ns.load(Ordering::SeqCst)))
    }
}
