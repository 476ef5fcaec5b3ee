//! A claim's renewal: one at a time, recorded, in the background on a thread or a task, stopped for good when its runner dies.

use super::*;

/// The first pause before a failed background renewal is tried again.
const RETRY_AFTER: Duration = Duration::from_millis(100);

impl Shared {
    pub(super) fn renew(&self) -> Result<(), ClaimError> {
        let one = self.one_at_a_time.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = self.final_error() {
            return Err(e);
        }
        let step = |now| {
            renew_step(
                &*self.store,
                &self.claimed,
                &self.fence,
                &self.layout,
                now,
                self.window_ns,
            )
        };
        let asked = self.clock.unix_ns();
        let mut result = step(asked);
        // A renewal that landed late (its store was cut off, then came back) carries a
        // reservation reckoned from the clock when it began: the fence is then less than a
        // window ahead, and would come close again before the next renewal. Renew once
        // more at once, from the clock now.
        let now = self.clock.unix_ns();
        let every_ns = u64::try_from(self.every.as_nanos()).unwrap_or(u64::MAX);
        if result.is_ok() && now.saturating_sub(asked) > every_ns / 2 {
            self.record(&result);
            result = step(now);
        }
        drop(one);
        self.record(&result);
        self.tell();
        result.map(drop)
    }

    /// Tells [`Claims::on_change`] the claim's state, if it changed since last told. The
    /// lock keeps the changes in order when two threads tell at once; a panic in the
    /// callback is its own and stops neither the renewal nor the release.
    pub(super) fn tell(&self) {
        let Some(f) = &self.on_change else { return };
        let mut told = self.told.lock().unwrap_or_else(|e| e.into_inner());
        let now = self.fence.state();
        if *told != now {
            *told = now;
            let node = self.claimed.node;
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(node, now)));
        }
    }

    /// The error a renewal meets once the claim's state is final.
    pub(super) fn final_error(&self) -> Option<ClaimError> {
        match self.fence.state() {
            ClaimState::Lost | ClaimState::Released => Some(ClaimError::NotOwner {
                namespace: self.claimed.namespace.clone(),
                node: self.claimed.node,
            }),
            ClaimState::Active | ClaimState::Renewing | ClaimState::Stopped => None,
        }
    }

    pub(super) fn record(&self, result: &Result<u64, ClaimError>) {
        let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        match &result {
            Ok(_) => {
                stats.renewals += 1;
                stats.last_error = None;
                #[cfg(any(feature = "metrics", feature = "tracing"))]
                if stats.streak > 0 {
                    crate::observe::claim_recovered(self.claimed.node, stats.streak);
                }
                stats.streak = 0;
            }
            Err(e) => {
                stats.failures += 1;
                stats.streak += 1;
                stats.last_error = Some(e.clone());
                #[cfg(any(feature = "metrics", feature = "tracing"))]
                crate::observe::claim_renewal_failed(
                    self.claimed.node,
                    matches!(e, ClaimError::NotOwner { .. }),
                    e,
                );
            }
        }
    }

    /// Whether the holder asked the renewal to stop (its release).
    pub(super) fn stopping(&self) -> bool {
        *self.stop.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks the claim as renewed by nobody, with why: the renewal ended other than by the
    /// holder's release or a lost claim.
    pub(super) fn stopped(&self, reason: String) {
        if self.stopping() || matches!(self.fence.state(), ClaimState::Lost | ClaimState::Stopped) {
            return;
        }
        self.fence.set_state(ClaimState::Stopped);
        let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        stats.failures += 1;
        stats.last_error = Some(ClaimError::RenewalStopped {
            node: self.claimed.node,
            reason,
        });
        drop(stats);
        self.tell();
    }

    /// One background renewal; a panic in the store's code ends the renewal, and the
    /// claim says so.
    pub(super) fn renew_in_background(&self) -> Result<(), ()> {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.renew())) {
            Ok(_) => Ok(()),
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| String::from(*s))
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".into());
                self.stopped(format!("the renewal panicked: {what}"));
                Err(())
            }
        }
    }

    /// How long the background renewal waits before its next attempt: `every` after a
    /// renewal that landed; after one that failed, [`RETRY_AFTER`] doubled with each
    /// failure in a row, up to `every`. A store that refused at once (a client between
    /// servers) is asked again well before the fence runs low, and one that stays down is
    /// not asked more than a few times a second.
    pub(super) fn next_wait(&self, every: Duration) -> Duration {
        retry_wait(
            self.stats.lock().unwrap_or_else(|e| e.into_inner()).streak,
            every,
        )
    }

    /// The background renewal: every `every` ([`next_wait`](Self::next_wait) after a
    /// failure), until stopped or the claim is lost.
    pub(super) fn run(&self, every: Duration) {
        let _guard = StopGuard(self, "the renewal thread ended");
        let mut stop = self.stop.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let wait = self.next_wait(every);
            stop = match self.wake.wait_timeout_while(stop, wait, |s| !*s) {
                Ok((guard, _)) => guard,
                Err(e) => e.into_inner().0,
            };
            if *stop {
                return;
            }
            drop(stop);
            if self.renew_in_background().is_err() || self.fence.state() == ClaimState::Lost {
                return;
            }
            stop = self.stop.lock().unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// The pause before the next background renewal after `streak` failures in a row.
fn retry_wait(streak: u64, every: Duration) -> Duration {
    match streak {
        0 => every,
        n => RETRY_AFTER.saturating_mul(1 << (n - 1).min(16)).min(every),
    }
}

/// Marks the claim stopped, saying why, when the renewal ends other than by the holder's
/// release: a thread that unwinds, a task that its runtime drops.
pub(super) struct StopGuard<S: core::ops::Deref<Target = Shared>>(
    pub(super) S,
    pub(super) &'static str,
);

impl<S: core::ops::Deref<Target = Shared>> Drop for StopGuard<S> {
    fn drop(&mut self) {
        self.0.stopped(self.1.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After a landed renewal the next comes a period later; after a failure, 100 ms
    /// later, doubled with each failure in a row and never past the period.
    #[test]
    fn a_failed_renewal_is_tried_again_sooner_than_a_period() {
        let every = Duration::from_millis(1333);
        assert_eq!(retry_wait(0, every), every);
        let waits: Vec<u128> = (1..=6).map(|n| retry_wait(n, every).as_millis()).collect();
        assert_eq!(waits, [100, 200, 400, 800, 1333, 1333]);
        assert_eq!(retry_wait(u64::MAX, every), every);
        let short = Duration::from_millis(30);
        assert_eq!(retry_wait(1, short), short);
    }
}
