//! [`ClaimGate`], the tick gate of a claimed generator, and [`ClaimedGenerator`]: a
//! generator plus the claim it owns (its status, its renewal and its release).

use super::holder::Holder;
use super::{ClaimError, ClaimState, ClaimStatus};
use crate::clock::Clock;
use crate::error::MintError;
use crate::generator::{DefaultClock, Generator, TickGate};

/// A generator on a node id claimed from a store
/// ([`GeneratorBuilder::build_claimed`](crate::GeneratorBuilder::build_claimed)): every
/// minting method of [`Generator`], each ID inside a reservation the store accepted, plus
/// [`claim_status`](Generator::claim_status) and [`renew_claim`](Generator::renew_claim).
/// Dropping it releases the claim, its reservation cut to the last tick minted.
pub type ClaimedGenerator<C = DefaultClock> = Generator<C, ClaimGate>;

/// The [`TickGate`] of a claimed node id: the claim, renewed in the background, whose
/// fence allows only the ticks of the reservation the store last accepted. Owned by its
/// [`ClaimedGenerator`]; made only by the builders' `build_claimed`.
#[derive(Debug)]
pub struct ClaimGate {
    holder: Holder,
}

impl ClaimGate {
    pub(crate) fn new(holder: Holder) -> ClaimGate {
        ClaimGate { holder }
    }

    /// The claim, for the loom models of the renewal order (through `__private`).
    pub(crate) fn holder(&self) -> &Holder {
        &self.holder
    }
}

impl crate::generator::gate::sealed::Sealed for ClaimGate {}

impl TickGate for ClaimGate {
    const FENCED: bool = true;

    fn first_tick(&self) -> u64 {
        self.holder.first_tick()
    }

    #[inline]
    fn allows(&self, tick: u64) -> bool {
        self.holder.fence().allows(tick)
    }

    fn closed(&self, node: u64) -> Option<MintError> {
        match self.holder.fence().state() {
            ClaimState::Lost | ClaimState::Released => Some(MintError::ClaimLost { node }),
            ClaimState::Stopped => Some(MintError::RenewalStopped { node }),
            ClaimState::Active | ClaimState::Renewing => None,
        }
    }

    fn waiting(&self, entered: bool) {
        self.holder.waiting(entered);
    }

    fn release(&mut self, last_tick: u64) {
        self.holder.release(Some(last_tick));
    }
}

impl<C: Clock> Generator<C, ClaimGate> {
    /// The state of the node id's claim: the store, the node, whether renewals succeed,
    /// the reservation and how long the fence has left.
    pub fn claim_status(&self) -> ClaimStatus {
        self.gate.holder.status()
    }

    /// Renews the claim now, on this thread: reserves `now + window` in the store and,
    /// once the store accepted it, moves the fence there. The background renewal does
    /// this every third of the window; call it yourself with
    /// [`Claims::manual_renewal`](super::Claims::manual_renewal).
    pub fn renew_claim(&self) -> Result<(), ClaimError> {
        self.gate.holder.renew()
    }
}
