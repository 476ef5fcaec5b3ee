//! Observability hooks (features `metrics` and `tracing`), called only on the slow paths.
//! With both features off these are empty inline functions: nothing is compiled in.
//!
//! | event | `metrics` | `tracing` (target `flakeid`) |
//! |---|---|---|
//! | a tick's sequence ran out and the caller had to wait for the next | counter `flakeid_sequence_exhausted_total` | `debug` event |
//! | the clock read earlier than the last tick used | counter `flakeid_clock_behind_total`, histogram `flakeid_clock_behind_seconds` | `warn` event with `behind_ns` and the policy |
//! | a claim was taken (its first reservation stored) | counter `flakeid_claims_taken_total` | `info` event with the node, namespace, store, holder and reservation |
//! | a claim's renewal failed (the store unreachable, or the claim lost) | counter `flakeid_claim_renewal_failures_total`, and `flakeid_claim_lost_total` when the store said the id is someone else's | `warn` event with the node and the error; `error` when the claim is lost |
//! | a renewal succeeded after failures | counter `flakeid_claim_renewals_recovered_total` | `info` event with the node and how many renewals failed |
//! | a generator was built on a layout that runs out within its end warning ([`GeneratorBuilder::end_warning`](crate::GeneratorBuilder::end_warning), a year by default) | gauge `flakeid_layout_seconds_left` | `warn` event with the layout, its end and the seconds left |
//! | a claim was released | counter `flakeid_claims_released_total` | `info` event with the node and the reservation left |

use core::time::Duration;

use crate::generator::ClockPolicy;

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

/// A generator was built on a layout that runs out in `left` (zero: already has).
#[inline(never)]
pub(crate) fn layout_ends_soon(layout: &crate::Layout, left: Duration) {
    #[cfg(feature = "metrics")]
    metrics::gauge!("flakeid_layout_seconds_left").set(left.as_secs_f64());
    #[cfg(feature = "tracing")]
    tracing::warn!(
        target: "flakeid",
        layout = %layout,
        end = %crate::rfc3339::Timestamp(layout.end_unix_ns()),
        seconds_left = left.as_secs(),
        "the layout runs out soon: after its end no ID can be minted in it; move to a layout with a later end (a later epoch or more time bits)"
    );
    let _ = (layout, left);
}

/// A claim's renewal failed: the store did not take the new reservation.
#[cfg(feature = "claim")]
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
    if lost {
        tracing::error!(target: "flakeid", node, lost, error = %error, "claim lost");
    } else {
        tracing::warn!(target: "flakeid", node, lost, error = %error, "claim renewal failed");
    }
    let _ = (node, error, lost);
}

/// A claim was taken: its first reservation is in the store.
#[cfg(feature = "claim")]
#[inline(always)]
pub(crate) fn claim_taken(
    node: u64,
    namespace: &str,
    store: &dyn core::fmt::Display,
    instance: &str,
    reserved_until_unix_ns: Option<u64>,
) {
    #[cfg(feature = "metrics")]
    metrics::counter!("flakeid_claims_taken_total").increment(1);
    #[cfg(feature = "tracing")]
    tracing::info!(
        target: "flakeid",
        node,
        namespace,
        store = %store,
        instance,
        reserved_until_unix_ns,
        "claimed node id"
    );
    let _ = (node, namespace, store, instance, reserved_until_unix_ns);
}

/// A renewal succeeded after `failed` renewals in a row had failed.
#[cfg(feature = "claim")]
#[inline(always)]
pub(crate) fn claim_recovered(node: u64, failed: u64) {
    #[cfg(feature = "metrics")]
    metrics::counter!("flakeid_claim_renewals_recovered_total").increment(1);
    #[cfg(feature = "tracing")]
    tracing::info!(target: "flakeid", node, failed, "claim renewal recovered");
    let _ = (node, failed);
}

/// A claim was released, its reservation cut to `reserved_until_unix_ns`; `error` if the
/// store did not take the release.
#[cfg(feature = "claim")]
#[inline(always)]
pub(crate) fn claim_released(
    node: u64,
    reserved_until_unix_ns: u64,
    error: Option<&dyn core::fmt::Display>,
) {
    #[cfg(feature = "metrics")]
    metrics::counter!("flakeid_claims_released_total").increment(1);
    #[cfg(feature = "tracing")]
    match error {
        None => tracing::info!(target: "flakeid", node, reserved_until_unix_ns, "claim released"),
        Some(error) => tracing::warn!(
            target: "flakeid",
            node,
            reserved_until_unix_ns,
            error = %error,
            "claim release not stored (the lease or session ends it)"
        ),
    }
    let _ = (node, reserved_until_unix_ns, error);
}
