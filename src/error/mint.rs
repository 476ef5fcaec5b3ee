//! [`MintError`]: why a minting call handed out no ID. Sixteen bytes, like the `Id` it
//! stands in for: `Result<Id, MintError>` is two words.

use core::fmt;
use core::time::Duration;

use crate::rfc3339::Timestamp;

/// Why a minting call ([`Generator::next_id`](crate::Generator::next_id), `try_next_id`,
/// `next_ids`, [`Ids`](crate::generator::Ids), [`Lease`](crate::generator::Lease), the sharded calls) handed out
/// no ID. No variant changes the generator: a retry is always safe, and
/// [`MintError::retry_after`] says when one can succeed.
///
/// | error | what happened | what to do |
/// |---|---|---|
/// | `WouldBlock` | `try_next_id` would have had to wait | retry after `wait` (or call `next_id`) |
/// | `WaitTooLong` | the wait needed would pass `max_wait` | retry later, or raise `max_wait` |
/// | `ClockBehind` | the clock reads behind the last tick and the policy is `Reject` | retry once the clock catches up, or use `ClockPolicy::Continue` |
/// | `Leased` | another caller holds a [`Lease`](crate::generator::Lease) | retry after it ends |
/// | `BeforeEpoch` | the clock reads before the layout's epoch | fix the clock or the layout |
/// | `ReservationExpired` | a claimed generator reached the end of its reserved window and no renewal landed within `max_wait` | retry later: minting resumes by itself once a renewal lands |
/// | `ClaimLost` | the claim store gave the node id to another holder; the window is used up | build a new generator (a new claim) |
/// | `RenewalStopped` | nothing renews the claim any more (its renewal panicked, its runtime shut down); the window is used up | build a new generator (a new claim) |
/// | `PastLifetime`, `ClockRangeEnd` | the layout (or the clock's range) is used up | a new layout: retrying never helps |
///
/// Durations are `u64` nanoseconds (and microseconds for `waited_us`) to keep the error
/// small; the methods return them as [`Duration`]s.
///
/// ```
/// use flakeid::{Id, MintError};
///
/// assert_eq!(size_of::<Result<Id, MintError>>(), 16);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MintError {
    /// A non-blocking call would have had to wait this long.
    WouldBlock {
        /// Nanoseconds to wait before trying again.
        wait_ns: u64,
    },
    /// The call would have to wait longer than its bound allows: it has waited `waited_us`
    /// already, and the clock must still advance `needed_ns`, which would take the total
    /// past [`GeneratorBuilder::max_wait`](crate::GeneratorBuilder::max_wait).
    WaitTooLong {
        /// Nanoseconds the clock must still advance.
        needed_ns: u64,
        /// Microseconds this call (or [`Ids`](crate::generator::Ids) iterator) had waited already
        /// (saturating at `u32::MAX`, 71 minutes).
        waited_us: u32,
    },
    /// The clock is behind the last tick used and the policy is to refuse
    /// ([`ClockPolicy::Reject`](crate::ClockPolicy::Reject), Twitter's rule).
    ClockBehind {
        /// Nanoseconds behind the start of the last tick.
        by_ns: u64,
    },
    /// The generator is leased ([`Generator::lease`](crate::Generator::lease)) to other
    /// code: it could not be leased again, or the lease did not end within the wait bound.
    Leased,
    /// The clock reads before the layout's epoch.
    BeforeEpoch {
        /// Nanoseconds before the epoch.
        by_ns: u64,
    },
    /// The clock is at or past the first instant the layout cannot represent, or the last
    /// tick's sequence is used up.
    PastLifetime {
        /// The first instant that no longer fits, in Unix milliseconds.
        end_unix_ms: u64,
    },
    /// A claimed generator ([`GeneratorBuilder::build_claimed`](crate::GeneratorBuilder::build_claimed))
    /// reached the end of its reserved window (its fence) and no renewal landed within
    /// `max_wait`: the claim store is slow or unreachable. Nothing outside the window is
    /// minted; minting resumes by itself once a renewal lands.
    ReservationExpired {
        /// The claimed node id.
        node: u64,
    },
    /// A claimed generator reached the end of its reserved window after the claim store
    /// said its node id is no longer its own (its lease expired, or the id was given to
    /// another holder). It mints nothing more; a new generator makes a new claim.
    ClaimLost {
        /// The node id that was lost.
        node: u64,
    },
    /// A claimed generator reached the end of its reserved window and nothing renews its
    /// claim any more (its background renewal panicked, or the tokio runtime it ran on
    /// shut down). It mints nothing more; a new generator makes a new claim.
    RenewalStopped {
        /// The claimed node id.
        node: u64,
    },
    /// The generator reached the last instant a clock of `u64` nanoseconds can name
    /// ([`CLOCK_END_UNIX_NS`](crate::clock::CLOCK_END_UNIX_NS), in 2554) before the end of its
    /// layout: the layout's later ticks decode and compose, but cannot be minted.
    ClockRangeEnd,
}

impl MintError {
    /// How long until a retry can succeed, when that is known: the wait of `WouldBlock`,
    /// the clock's way to go of `WaitTooLong`, `ClockBehind` and `BeforeEpoch`. `None` for
    /// `Leased` (it ends when its holder drops it) and for the errors no retry fixes
    /// (`PastLifetime`, `ClockRangeEnd`; see [`MintError::is_final`]).
    pub const fn retry_after(&self) -> Option<Duration> {
        match *self {
            MintError::WouldBlock { wait_ns: ns }
            | MintError::WaitTooLong { needed_ns: ns, .. }
            | MintError::ClockBehind { by_ns: ns }
            | MintError::BeforeEpoch { by_ns: ns } => Some(Duration::from_nanos(ns)),
            _ => None,
        }
    }

    /// How long the call had waited, for `WaitTooLong`.
    pub const fn waited(&self) -> Option<Duration> {
        match *self {
            MintError::WaitTooLong { waited_us, .. } => {
                Some(Duration::from_micros(waited_us as u64))
            }
            _ => None,
        }
    }

    /// Whether no retry can ever succeed: the layout's lifetime (or the clock's range) is
    /// used up, or the generator's claim is lost.
    pub const fn is_final(&self) -> bool {
        matches!(
            self,
            MintError::PastLifetime { .. }
                | MintError::ClockRangeEnd
                | MintError::ClaimLost { .. }
                | MintError::RenewalStopped { .. }
        )
    }

    /// `WaitTooLong` of the clock's way still to go and the time already waited, each
    /// saturating at its field's bound (a caller that waits on its own timer, as an async
    /// batch does, reports its bound this way).
    ///
    /// ```
    /// use core::time::Duration;
    /// use flakeid::MintError;
    ///
    /// let e = MintError::wait_too_long(Duration::from_millis(3), Duration::from_millis(100));
    /// assert_eq!(e.retry_after(), Some(Duration::from_millis(3)));
    /// assert_eq!(e.waited(), Some(Duration::from_millis(100)));
    /// ```
    pub fn wait_too_long(needed: Duration, waited: Duration) -> MintError {
        MintError::WaitTooLong {
            needed_ns: u64::try_from(needed.as_nanos()).unwrap_or(u64::MAX),
            waited_us: u32::try_from(waited.as_micros()).unwrap_or(u32::MAX),
        }
    }
}

impl fmt::Display for MintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = Duration::from_nanos;
        match *self {
            MintError::WouldBlock { wait_ns } => write!(
                f,
                "would block for {:?}: retry then, or call next_id to wait",
                d(wait_ns)
            ),
            MintError::WaitTooLong {
                needed_ns,
                waited_us,
            } => write!(
                f,
                "waited {:?}, and the clock must advance {:?} more, past the wait bound (max_wait). Nothing was minted by this step: retry later, or raise max_wait",
                Duration::from_micros(u64::from(waited_us)),
                d(needed_ns)
            ),
            MintError::ClockBehind { by_ns } => write!(
                f,
                "clock moved backwards; refusing to generate ids for {:?} (retry once the clock has caught up, or use ClockPolicy::Continue)",
                d(by_ns)
            ),
            MintError::Leased => f.write_str(
                "the generator is leased to other code (Generator::lease): retry once the lease is dropped",
            ),
            MintError::BeforeEpoch { by_ns } => write!(
                f,
                "the clock reads {:?} before the layout's epoch: check the clock, or use a layout with an earlier epoch",
                d(by_ns)
            ),
            MintError::PastLifetime { end_unix_ms } => write!(
                f,
                "over the time limit: the layout's lifetime ends at {}; mint with a new layout (a later epoch or more time bits)",
                Timestamp(i128::from(end_unix_ms) * 1_000_000)
            ),
            MintError::ReservationExpired { node } => write!(
                f,
                "reserved window ended: node {node}'s reservation was not renewed in time (the claim store is slow or unreachable), so nothing past it is minted; retry later: minting resumes by itself once a renewal lands"
            ),
            MintError::RenewalStopped { node } => write!(
                f,
                "renewal stopped: nothing renews node {node}'s claim any more (its renewal thread panicked or its runtime shut down) and its reserved window is used up; build a new generator to claim again"
            ),
            MintError::ClaimLost { node } => write!(
                f,
                "claim lost: node {node} is no longer this generator's (its lease expired or another holder took it) and its reserved window is used up; start again to claim a new node id"
            ),
            MintError::ClockRangeEnd => write!(
                f,
                "the clock cannot count past {} (u64 nanoseconds), before this layout ends: its later IDs decode and compose but cannot be minted",
                Timestamp(i128::from(crate::clock::CLOCK_END_UNIX_NS))
            ),
        }
    }
}

impl core::error::Error for MintError {}
