//! [`ClockPolicy`]: what a generator does when the clock reads behind its last tick.

/// What a generator does when the clock reads earlier than the last tick it used.
///
/// In every policy IDs stay unique and strictly increasing; they differ in whether a call
/// fails, keeps minting on the last tick, or waits. Every wait is bounded by the
/// generator's `max_wait`; past it a call fails with
/// [`MintError::WaitTooLong`](crate::MintError::WaitTooLong)(crate::MintError::WaitTooLong) instead of blocking for hours.
///
/// More policies may come (a `match` needs a `_` arm).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ClockPolicy {
    /// Twitter Snowflake's rule: fail with
    /// [`MintError::ClockBehind`](crate::MintError::ClockBehind)(crate::MintError::ClockBehind) naming how far behind, and change
    /// no state.
    Reject,
    /// Sonyflake's rule (the default): keep counting the sequence on the last tick; when it
    /// runs out, move to the next tick and wait until the clock reaches it. Small backward
    /// steps cost nothing; a large one fails fast once the sequence runs out.
    #[default]
    Continue,
    /// Wait until the clock catches up with the last tick, then mint as usual.
    Wait,
}
