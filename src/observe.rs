//! Observability hooks (features `metrics` and `tracing`), called only on the slow paths.
//! With both features off these are empty inline functions: nothing is compiled in.
//!
//! | event | `metrics` | `tracing` (target `flakeid`) |
//! |---|---|---|
//! | a tick's sequence ran out and the caller had to wait for the next | counter `flakeid_sequence_exhausted_total` | `debug` event |
//! | the clock read earlier than the last tick used | counter `flakeid_clock_behind_total`, histogram `flakeid_clock_behind_seconds` | `warn` event with `behind_ns` and the policy |
//! | a claim's renewal failed (the store unreachable, or the claim lost) | counter `flakeid_claim_renewal_failures_total`, and `flakeid_claim_lost_total` when the store said the id is someone else's | `warn` event with the node and the error |

use core::time::Duration;

use crate::policy::ClockPolicy;

/// A tick's sequence ran out: the caller waits for (or is refused) the next tick.
#[inline(always)]
pub(crate) fn sequence_exhausted() {
    #[cfg(feature = "metrics")]
    metrics::counter!("flakeid_sequence_exhausted_total").increment(1);
    #[cfg(feature = "tracing")]
    tracing::debug!(target: "flakeid", "sequence exhausted; waiting for the next tick");
}

/// The clock read `by` earlier than the start of the last tick used.
#[inline(always)]
pub(crate) fn clock_behind(by: Duration, policy: ClockPolicy) {
    #[cfg(feature = "metrics")]
    {
        metrics::counter!("flakeid_clock_behind_total").increment(1);
        metrics::histogram!("flakeid_clock_behind_seconds").record(by.as_secs_f64());
    }
    #[cfg(feature = "tracing")]
    tracing::warn!(
        target: "flakeid",
        behind_ns = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX),
        policy = ?policy,
        "clock behind the last tick used"
    );
    let _ = (by, policy);
}

/// A claim's renewal failed: the store did not take the new reservation.
#[inline(always)]
pub(crate) fn claim_renewal_failed(node: u64, lost: bool, error: &dyn core::fmt::Display) {
    #[cfg(feature = "metrics")]
    {
        metrics::counter!("flakeid_claim_renewal_failures_total").increment(1);
        if lost {
            metrics::counter!("flakeid_claim_lost_total").increment(1);
        }
    }
    #[cfg(feature = "tracing")]
    tracing::warn!(target: "flakeid", node, lost, error = %error, "claim renewal failed");
    let _ = (node, error, lost);
}
