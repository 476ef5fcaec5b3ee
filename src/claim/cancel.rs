//! [`Cancel`]: calls off a claim that is still waiting for its node ids (a signal while a
//! server starts), so that it returns at once with whatever it took released.

use core::time::Duration;
use std::sync::{Arc, Condvar, Mutex};

/// A handle that calls off the claims given it ([`Claims::cancel_on`](super::Claims::cancel_on)):
/// a claim waiting for usable ids (a full pool, a store that cannot be reached) wakes at
/// once, releases what it took and fails with
/// [`ClaimError::Cancelled`](super::ClaimError::Cancelled). A claim already taken is not
/// affected: drop its generator to release it. Clones share the one state.
///
/// ```
/// use flakeid::claim::{Cancel, ClaimError, Claims, MemoryStore};
/// use flakeid::{Generator, Layout};
///
/// let store = MemoryStore::new();
/// let cancel = Cancel::new();
/// cancel.cancel(); // a SIGTERM came first
/// let claims = Claims::new(store).nodes(0..4).cancel_on(cancel);
/// let built = Generator::builder(Layout::snowflake()).build_claimed(claims);
/// assert!(matches!(built, Err(ClaimError::Cancelled { .. })));
/// ```
#[derive(Clone, Default)]
pub struct Cancel(Arc<(Mutex<bool>, Condvar)>);

impl core::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("Cancel").field(&self.is_cancelled()).finish()
    }
}

impl Cancel {
    /// A handle not yet cancelled.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Calls off every claim given this handle (or a clone of it), now and later.
    pub fn cancel(&self) {
        let (flag, wake) = &*self.0;
        *flag.lock().unwrap_or_else(|e| e.into_inner()) = true;
        wake.notify_all();
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        *self.0.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleeps for `d` or until cancelled; whether it was cancelled.
    pub(crate) fn sleep(&self, d: Duration) -> bool {
        let (flag, wake) = &*self.0;
        let guard = flag.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, _) = wake
            .wait_timeout_while(guard, d, |cancelled| !*cancelled)
            .unwrap_or_else(|e| e.into_inner());
        *guard
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sleep ends as soon as the handle (through any clone) is cancelled, and says so; an
    /// uncancelled sleep lasts its time and says it was not.
    #[test]
    fn a_cancel_wakes_a_sleeper_at_once() {
        let c = Cancel::new();
        assert!(!c.sleep(Duration::from_millis(5)));
        let other = c.clone();
        let sleeper = std::thread::spawn(move || {
            let started = std::time::Instant::now();
            (other.sleep(Duration::from_secs(60)), started.elapsed())
        });
        c.cancel();
        let (cancelled, slept) = sleeper.join().unwrap();
        assert!(cancelled && slept < Duration::from_secs(30), "{slept:?}");
        assert!(c.is_cancelled() && c.sleep(Duration::from_secs(60)));
    }
}
