//! [`Minter`]: the sharded generator the routes mint from, plain or on claimed node ids,
//! with the waits a request may make and the readiness it reports.

use std::time::Duration;

use flakeid::claim::{ClaimGate, ClaimState, ClaimStatus};
use flakeid::{Id, Layout, MintError, ShardedGenerator};

/// The generator behind the routes: one shard per worker thread (a thread mints on its
/// home shard), each its own node id, given or claimed.
#[derive(Debug)]
pub enum Minter {
    /// Node ids given (`--node`): nothing to renew, always ready.
    Plain(ShardedGenerator),
    /// Node ids claimed from a store, each shard fenced by its claim.
    Claimed {
        /// The shards.
        shards: ShardedGenerator<flakeid::DefaultClock, ClaimGate>,
        /// Below this much fence left a shard reports not ready (a third of the window:
        /// one renewal missed), so a load balancer stops sending before the fence.
        ready_margin: Duration,
    },
}

/// A node id the server mints on, and its claim if it was claimed.
#[derive(Debug, Clone)]
pub struct NodeStatus {
    /// The node id.
    pub node: u64,
    /// Its claim's state, for claimed node ids.
    pub claim: Option<ClaimStatus>,
}

/// Whether the server can mint now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// Every node id can mint.
    Ready,
    /// Some cannot, for now (a renewal is late, the server drains): the reason.
    NotReady(String),
    /// A claim is gone for good (lost to another holder, or nothing renews it): the
    /// server must stop, so that its supervisor starts a new one.
    Lost(String),
}

impl Minter {
    /// The layout.
    pub fn layout(&self) -> &Layout {
        match self {
            Minter::Plain(g) => g.home_shard().layout(),
            Minter::Claimed { shards, .. } => shards.home_shard().layout(),
        }
    }

    /// One ID without waiting, or the error that says why not (a wait is
    /// [`MintError::WouldBlock`]).
    #[inline]
    pub fn try_next_id(&self) -> Result<Id, MintError> {
        match self {
            Minter::Plain(g) => g.try_next_id(),
            Minter::Claimed { shards, .. } => shards.try_next_id(),
        }
    }

    /// One ID, awaiting tokio's timer for the next tick (or a renewal at a fence) within
    /// the generator's wait bound.
    pub async fn next_id(&self) -> Result<Id, MintError> {
        match self.try_next_id() {
            Err(
                MintError::WouldBlock { .. }
                | MintError::Leased
                | MintError::ReservationExpired { .. },
            ) => match self {
                Minter::Plain(g) => g.next_id_async().await,
                Minter::Claimed { shards, .. } => shards.next_id_async().await,
            },
            done => done,
        }
    }

    /// Fills `out` (waiting for the next tick as the library does, within the wait
    /// bound), or fails with the error that stopped it before the first ID. Blocks the
    /// thread: call it where blocking is allowed (`block_in_place`).
    pub fn fill(&self, out: &mut [Id]) -> Result<(), MintError> {
        let mut done = 0;
        while done < out.len() {
            let n = match self {
                Minter::Plain(g) => g.next_ids(&mut out[done..]),
                Minter::Claimed { shards, .. } => shards.next_ids(&mut out[done..]),
            }?;
            if n == 0 {
                // The wait bound passed before one more ID: report it as a mint would.
                match self {
                    Minter::Plain(g) => g.next_id(),
                    Minter::Claimed { shards, .. } => shards.next_id(),
                }
                .map(|id| out[done] = id)?;
                done += 1;
            }
            done += n;
        }
        Ok(())
    }

    /// Every node id, with its claim.
    pub fn nodes(&self) -> Vec<NodeStatus> {
        match self {
            Minter::Plain(g) => g
                .shards()
                .iter()
                .map(|s| NodeStatus {
                    node: s.node(),
                    claim: None,
                })
                .collect(),
            Minter::Claimed { shards, .. } => shards
                .shards()
                .iter()
                .map(|s| NodeStatus {
                    node: s.node(),
                    claim: Some(s.claim_status()),
                })
                .collect(),
        }
    }

    /// Ready while every claim is held and its fence is more than the margin ahead.
    pub fn readiness(&self) -> Readiness {
        let Minter::Claimed {
            shards,
            ready_margin,
        } = self
        else {
            return Readiness::Ready;
        };
        for shard in shards.shards() {
            let s = shard.claim_status();
            match s.state {
                ClaimState::Lost | ClaimState::Released => {
                    return Readiness::Lost(format!(
                        "node {}'s claim is lost: another holder has it",
                        s.node
                    ));
                }
                ClaimState::Stopped => {
                    return Readiness::Lost(format!(
                        "nothing renews node {}'s claim any more",
                        s.node
                    ));
                }
                _ => {}
            }
            if let Some(left) = s.fence_left
                && left <= *ready_margin
            {
                let why = s
                    .last_error
                    .map(|e| format!(" (the last renewal failed: {e})"))
                    .unwrap_or_default();
                return Readiness::NotReady(format!(
                    "node {}'s fence is {} ms ahead, renewals are late{why}",
                    s.node,
                    left.as_millis()
                ));
            }
        }
        Readiness::Ready
    }
}
