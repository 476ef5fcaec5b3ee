//! What a store implements and the helpers it may use: the [`ClaimStore`] trait, the
//! requests and answers that cross it ([`ClaimRequest`], [`Claimed`], [`ClaimInfo`],
//! [`Repaired`]), the parse of a store's URL ([`StoreUrl`]), where a coordinator keeps a
//! namespace's records ([`Keys`]), the text of a reservation on a coordinator
//! ([`parse_reserved`], [`Listing`]), and a network client's runtime
//! ([`Runtime`], feature `tokio`).
//!
//! A user of claims needs none of it beyond [`ClaimStore`]'s listing methods; an author of a
//! store (a Redis, SQL or Consul one) implements [`ClaimStore`] with these and checks it
//! with the `flakeid-testkit` crate's conformance suite.

use core::fmt;
use core::ops::Range;
use core::time::Duration;
use std::string::String;
use std::vec::Vec;

use super::ClaimError;

mod keys;
mod layouts;
mod reserved;
#[cfg(feature = "tokio")]
mod runtime;
mod url;

pub use keys::{Keys, Record};
pub use layouts::{layout_preset, layout_record};
pub use reserved::{
    Listing, claim_record, claim_token, parse_claim_record, parse_reserved, unreachable,
};
#[cfg(feature = "tokio")]
pub use runtime::Runtime;
pub use url::{FromUrl, StoreUrl};

pub use super::access::{read_key, read_pem};

/// What a store needs to take a node id: where, from which ids, for whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRequest<'a> {
    /// The namespace (checked by [`check_namespace`](super::check_namespace) before the store sees it).
    pub namespace: &'a str,
    /// The ids to take the lowest free one of.
    pub pool: Range<u64>,
    /// Who asks, as [`ClaimInfo::holder`] will show it.
    pub instance: &'a str,
}

/// A node id a store handed out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    /// The namespace.
    pub namespace: String,
    /// The node id.
    pub node: u64,
    /// The last reservation stored for this id by anyone (Unix ns; 0 if none): the holder
    /// mints nothing before it.
    pub not_before_unix_ns: u64,
    /// Whether the claim has a reserved window to renew and a fence. [`StaticNode`](super::StaticNode)'s do
    /// not: the orchestrator guarantees uniqueness.
    pub fenced: bool,
    /// The store's handle for this claim (a lease id, a session, an open file), opaque to
    /// the generator.
    pub token: u64,
}

/// A node id's entry in a store, as [`ClaimStore::list`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimInfo {
    /// The node id.
    pub node: u64,
    /// Whether it is held now.
    pub state: NodeState,
    /// The instance that holds it (or last held it).
    pub holder: Option<String>,
    /// The last reservation stored (Unix ns): the next holder starts there.
    pub reserved_until_unix_ns: u64,
    /// Why the entry is [`NodeState::Corrupt`]: what is wrong and where.
    pub problem: Option<String>,
}

/// A claimant's place in a namespace's line of those waiting for a free id
/// ([`ClaimStore::join_line`]): the store's key for it, which [`ClaimStore::line`]
/// reports and [`ClaimStore::leave_line`] removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    /// The namespace whose line it is in.
    pub namespace: String,
    /// The store's name for this place (a znode's, a key's, a file's), unique in the line.
    pub key: String,
}

/// One claimant waiting in a namespace's line, as [`ClaimStore::line`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiter {
    /// The store's name for its place ([`Ticket::key`]).
    pub key: String,
    /// The instance that waits.
    pub instance: String,
}

/// A namespace of a store, as [`ClaimStore::namespaces`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceInfo {
    /// The namespace.
    pub namespace: String,
    /// The layout of its IDs as the first claim recorded it (a canonical layout string,
    /// see [`ClaimStore::bind_layout`]); `None` for a namespace no claim has recorded one
    /// for yet.
    pub layout: Option<String>,
    /// Why its record cannot be read, if so.
    pub problem: Option<String>,
}

/// What [`ClaimStore::repair`] found and stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repaired {
    /// The reservation stored before (Unix ns), if it could be read.
    pub previous_unix_ns: Option<u64>,
    /// The reservation stored now (Unix ns): the next holder starts there.
    pub reserved_until_unix_ns: u64,
}

/// `Ok` if `asked` is the layout `recorded` for `namespace`, else
/// [`ClaimError::LayoutMismatch`] naming both: what a store's
/// [`bind_layout`](ClaimStore::bind_layout) answers when the namespace has a record.
pub fn same_layout(namespace: &str, recorded: &str, asked: &str) -> Result<(), ClaimError> {
    if recorded == asked {
        Ok(())
    } else {
        Err(ClaimError::LayoutMismatch {
            namespace: namespace.into(),
            recorded: recorded.into(),
            asked: asked.into(),
        })
    }
}

/// Whether a node id is held, as a store sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NodeState {
    /// A live holder owns it.
    Held,
    /// Its holder went away without releasing it (killed, or its lease expired): free to
    /// take, after its reservation.
    Expired,
    /// Its holder released it: free to take, after its reservation.
    Released,
    /// Its stored data cannot be read ([`ClaimInfo::problem`] says why): claims skip it,
    /// and nothing overwrites it, until an operator repairs or removes it.
    Corrupt,
}

impl NodeState {
    /// The state's name in `flakeid claims`.
    pub const fn name(self) -> &'static str {
        match self {
            NodeState::Held => "held",
            NodeState::Expired => "expired",
            NodeState::Released => "released",
            NodeState::Corrupt => "corrupt",
        }
    }
}

/// Durable storage of claims: what the claim model needs from a coordinator.
///
/// The contract, which the fence's guarantee rests on (the `flakeid-testkit` crate checks it
/// against every store of the workspace, the real etcd and ZooKeeper included, and against
/// yours):
/// - [`claim`](ClaimStore::claim) takes the lowest id of the pool that no live holder
///   owns and whose data is readable, and returns the last reservation stored for it by
///   anyone. An id whose data cannot be read is skipped, never overwritten. With none
///   free it returns [`ClaimError::PoolFull`] at once (the caller waits and retries),
///   naming the unreadable ids.
/// - [`renew`](ClaimStore::renew) stores a new reservation durably **only while the claim
///   is still this holder's**, and returns [`ClaimError::NotOwner`] otherwise. It returns
///   `Ok` only once the write is durable (fsynced, or acknowledged by a quorum). The
///   ownership check and the write are one atomic step: no claim of the id by another
///   holder can come between them.
/// - Stored reservations never go backwards except through `release`, whose caller
///   guarantees it minted nothing at or past the value it gives: a renewal stores the
///   larger of what is stored and what it was given, also when renewals overlap or a
///   late write arrives after a newer one.
/// - [`release`](ClaimStore::release) stores the final reservation and frees the id.
/// - Data that cannot be read is [`ClaimError::Corrupt`], naming the file or key; it is
///   never read as 0 and never overwritten, except by [`repair`](ClaimStore::repair).
/// - A renewal or release of a claim that is still this holder's whose reservation was
///   removed (by hand) stores it again; a release of a claim that is no longer this
///   holder's stores its final reservation where none is stored, and changes nothing where
///   one is.
/// - A namespace is one ID space of one layout: [`bind_layout`](ClaimStore::bind_layout)
///   records the first claim's and refuses any other.
pub trait ClaimStore: Send + Sync + fmt::Debug {
    /// The store's URL, for messages (`file:/var/lib/flakeid`).
    fn url(&self) -> String;
    /// Takes the lowest free id of `request.pool`.
    fn claim(&self, request: &ClaimRequest<'_>) -> Result<Claimed, ClaimError>;
    /// Stores `reserved_until_unix_ns` for the claim if it is still this holder's.
    fn renew(&self, claimed: &Claimed, reserved_until_unix_ns: u64) -> Result<(), ClaimError>;
    /// Stores the final reservation and frees the id.
    fn release(&self, claimed: &Claimed, reserved_until_unix_ns: u64) -> Result<(), ClaimError>;
    /// Every node id of `namespace` the store knows, in id order.
    fn list(&self, namespace: &str) -> Result<Vec<ClaimInfo>, ClaimError>;

    /// How long a claim lives without a renewal, for a store whose claims are leases
    /// (etcd, ZooKeeper, memory); `None` for one whose claims live as long as the holder
    /// (file, static). A background renewal must come at least twice per lease: a claim
    /// whose renewal period is longer than half of it is refused.
    fn lease_ttl(&self) -> Option<Duration> {
        None
    }

    /// Records `layout` (a [`layout_record`]) as the layout of `namespace`'s IDs if the
    /// namespace has none recorded, in one atomic step (of two first claims with different
    /// layouts one records, the other is refused); `Ok` if `layout` is the one recorded,
    /// [`ClaimError::LayoutMismatch`] if another is (see [`same_layout`]). Two layouts in
    /// one namespace can mint equal IDs from different node ids.
    fn bind_layout(&self, namespace: &str, layout: &str) -> Result<(), ClaimError>;

    /// Every namespace the store holds, in name order, with its recorded layout.
    fn namespaces(&self) -> Result<Vec<NamespaceInfo>, ClaimError>;

    /// Repairs node `node` of `namespace`, which no live holder may own
    /// ([`ClaimError::NodeHeld`] otherwise): stores, as its released reservation, the
    /// larger of `reserved_until_unix_ns` and what was stored (where it can be read),
    /// replacing data that cannot be read. The caller gives a time past the highest any
    /// holder of the id could have minted (now plus the largest window and clock skew).
    fn repair(
        &self,
        namespace: &str,
        node: u64,
        reserved_until_unix_ns: u64,
    ) -> Result<Repaired, ClaimError>;

    /// For a store whose claims are leases: how long a renewal can take to reach a member
    /// that answers once the member in use has stopped answering or died (for etcd an
    /// attempt that times out, the pause, a second attempt; for a ZooKeeper ensemble the
    /// client's move to another server, or a leader election), with leases of `ttl`;
    /// `None` if there is no other member to reach (one server) or no lease.
    /// A claim whose renewal period plus this does not fit in nine tenths of the TTL is
    /// refused ([`ClaimError::TtlTooShort`]).
    fn failover_bound(&self, ttl: Duration) -> Option<Duration> {
        let _ = ttl;
        None
    }

    /// Puts a claimant that found the pool full (or found others waiting) in
    /// `namespace`'s line, so that freed ids go to claimants in the order they began
    /// waiting: the claim takes ids only once [`line`](ClaimStore::line) puts it first.
    /// A place whose claimant died leaves the line by itself, within the store's lease
    /// (the TTL) or at once where the store can tell. `Ok(None)`, the default, for a
    /// store without a line: its waiters take freed ids in no set order.
    fn join_line(&self, namespace: &str, instance: &str) -> Result<Option<Ticket>, ClaimError> {
        let _ = (namespace, instance);
        Ok(None)
    }

    /// The live claimants waiting in `namespace`'s line, first first. Empty by default.
    fn line(&self, namespace: &str) -> Result<Vec<Waiter>, ClaimError> {
        let _ = namespace;
        Ok(Vec::new())
    }

    /// Keeps `ticket`'s place while its claimant waits (a lease's keep-alive), called
    /// before each look at the line; [`ClaimError::NotOwner`] if the place is gone (its
    /// lease lapsed), and the claimant joins again at the back. `Ok` by default.
    fn stay_in_line(&self, ticket: &Ticket) -> Result<(), ClaimError> {
        let _ = ticket;
        Ok(())
    }

    /// Takes `ticket`'s place out of the line (the claimant got its ids or stopped
    /// waiting); best effort: a place left behind goes by itself as a dead claimant's does.
    fn leave_line(&self, ticket: &Ticket) {
        let _ = ticket;
    }

    /// What the store found unsafe about its setup or repaired in it, for the operator (the
    /// tool prints these once the claim is taken): for a ZooKeeper store, a store without a
    /// user, or a znode whose ACL it made creator-only. Empty by default.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
}
