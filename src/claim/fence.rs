//! [`Fence`]: the window of ticks a claimed generator may mint in, shared by the minting
//! threads (which read it when the tick changes) and the renewal (which raises it after
//! the store has accepted a new reservation).

use crate::sync::{AtomicU64, Ordering};

/// What a claim is doing, as [`Fence`] keeps it (one atomic word).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ClaimState {
    /// The last renewal succeeded: the holder owns the node id and its reservation.
    Active,
    /// The last renewal failed (the store did not answer, or answered with an error other
    /// than "not yours"): the holder mints until its fence, then waits for a renewal.
    Renewing,
    /// The store said the node id is no longer this holder's (its lease expired, or the id
    /// was given to another): no renewal is tried again, minting ends at the fence.
    Lost,
    /// The holder released the claim (the generator was dropped).
    Released,
    /// Nothing renews the claim any more: its background renewal panicked, or the tokio
    /// runtime it ran on shut down. Minting ends at the fence, for good.
    Stopped,
}

impl ClaimState {
    const fn to_word(self) -> u64 {
        match self {
            ClaimState::Active => 0,
            ClaimState::Renewing => 1,
            ClaimState::Lost => 2,
            ClaimState::Released => 3,
            ClaimState::Stopped => 4,
        }
    }

    const fn from_word(word: u64) -> ClaimState {
        match word {
            0 => ClaimState::Active,
            1 => ClaimState::Renewing,
            2 => ClaimState::Lost,
            4 => ClaimState::Stopped,
            _ => ClaimState::Released,
        }
    }

    /// The state's name in `flakeid claims` and in messages.
    pub const fn name(self) -> &'static str {
        match self {
            ClaimState::Active => "active",
            ClaimState::Renewing => "renewing",
            ClaimState::Lost => "lost",
            ClaimState::Released => "released",
            ClaimState::Stopped => "stopped",
        }
    }
}

impl core::fmt::Display for ClaimState {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// The ticks a claimed generator may mint: every tick below `until`.
///
/// The invariant that makes two holders of one node id disjoint: `until` only rises, and
/// only to the tick of a reservation the store has already accepted (written durably,
/// conditionally on ownership). A new holder starts at the tick of the last accepted
/// reservation, so it is never below anything a fence let through. Lowering `until`, or
/// raising it before the store accepts, breaks this; the loom model
/// `a_fence_published_before_the_write_is_caught` shows the second.
#[derive(Debug)]
pub struct Fence {
    /// The first tick the holder may not mint.
    until: AtomicU64,
    /// The accepted reservation, Unix ns (what `until` was computed from).
    reserved_ns: AtomicU64,
    state: AtomicU64,
}

impl Fence {
    /// A fence at `until` (a tick), from a reservation of `reserved_ns`.
    pub fn new(until: u64, reserved_ns: u64) -> Fence {
        Fence {
            until: AtomicU64::new(until),
            reserved_ns: AtomicU64::new(reserved_ns),
            state: AtomicU64::new(ClaimState::Active.to_word()),
        }
    }

    /// The first tick that may not be minted.
    #[inline]
    pub fn until(&self) -> u64 {
        // Acquire pairs with `grant`'s release: a minting thread that sees the raised
        // fence also sees the state the renewal wrote before it.
        self.until.load(Ordering::Acquire)
    }

    /// Whether `tick` may be minted now.
    #[inline]
    pub fn allows(&self, tick: u64) -> bool {
        tick < self.until()
    }

    /// The last reservation the store accepted, Unix ns.
    pub fn reserved_ns(&self) -> u64 {
        self.reserved_ns.load(Ordering::Acquire)
    }

    /// Raises the fence to `until` after the store accepted a reservation of
    /// `reserved_ns`. Never lowers it. Call only after the write succeeded.
    pub fn grant(&self, until: u64, reserved_ns: u64) {
        self.reserved_ns.fetch_max(reserved_ns, Ordering::AcqRel);
        self.until.fetch_max(until, Ordering::AcqRel);
        self.set_state(ClaimState::Active);
    }

    /// The claim's state.
    pub fn state(&self) -> ClaimState {
        ClaimState::from_word(self.state.load(Ordering::Acquire))
    }

    /// Records the claim's state; `Lost` and `Released` are final and stay, and `Stopped`
    /// gives way only to those two.
    pub fn set_state(&self, state: ClaimState) {
        let mut current = self.state.load(Ordering::Acquire);
        loop {
            match ClaimState::from_word(current) {
                ClaimState::Lost | ClaimState::Released => return,
                ClaimState::Stopped
                    if !matches!(state, ClaimState::Lost | ClaimState::Released) =>
                {
                    return;
                }
                _ => {}
            }
            match self.state.compare_exchange_weak(
                current,
                state.to_word(),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(actual) => current = actual,
            }
        }
    }
}
