//! Fleet-safe node ids: a generator **claims** its node id from a store and mints only
//! inside a **reserved window** of time that the store has accepted.
//!
//! Every generator of this crate is unique for one node id; in a fleet, duplicates come
//! from two processes with one node id. A claim closes that gap:
//!
//! - A claim on node id N gives its holder the ticks `[not_before, reserved_until)`.
//!   `not_before` is the last reservation *anyone* stored for N; the holder extends
//!   `reserved_until` ahead of its clock (now + window) by a write that succeeds only while
//!   it still owns N, and only then mints in it.
//! - The generator's **fence** lets it mint a tick only below `reserved_until`. It is read
//!   when the tick changes, never on the same-tick fast path. At the fence the generator
//!   waits for a renewal (bounded by `max_wait`), then fails closed with
//!   [`MintError::ReservationExpired`](crate::MintError::ReservationExpired), or with
//!   [`MintError::ClaimLost`](crate::MintError::ClaimLost) once the store said the id is
//!   someone else's; it recovers by itself when a renewal lands.
//!
//! A claimed generator is a [`ClaimedGenerator`]: a [`Generator`](crate::Generator) whose
//! [tick gate](crate::generator::TickGate) is the claim ([`ClaimGate`]). It mints like any
//! generator, and adds [`claim_status`](crate::Generator::claim_status) and
//! [`renew_claim`](crate::Generator::renew_claim); dropping it releases the claim, the
//! reservation cut to the last tick minted. A plain generator has no claim and no claim
//! methods.
//!
//! So two holders of one node id never mint the same tick, whatever happens in between: a
//! `kill -9`, a pause longer than the lease, clocks that disagree between hosts, a clock set
//! back across a restart. What a holder that comes back late can do is mint up to its own
//! fence, which the next holder starts after.
//!
//! ```
//! use std::time::Duration;
//! use flakeid::claim::{Claims, FileStore};
//! use flakeid::{Generator, Layout};
//!
//! let dir = std::env::temp_dir().join(format!("flakeid-doc-{}", std::process::id()));
//! let claims = Claims::new(FileStore::open(&dir)?)
//!     .namespace("orders")
//!     .nodes(0..32)
//!     .window(Duration::from_secs(5));
//! let generator = Generator::builder(Layout::snowflake()).build_claimed(claims)?;
//! let id = generator.next_id()?;
//! let status = generator.claim_status();
//! assert_eq!(status.node, generator.node());
//! println!("{id} on node {}, reserved until {:?}", status.node, status.reserved_until_unix_ns);
//! drop(generator); // releases node 0, with the reservation cut to what was minted
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The stores: [`FileStore`] (`file:DIR`, one host), `EtcdStore` (`etcd://`, feature
//! `etcd`: a fleet), `ZooKeeperStore` (`zookeeper://`, feature `zookeeper`), [`MemoryStore`] (`memory:`, one process: tests and simulations),
//! [`StaticNode`] (`static:N`, `static:pod`: the orchestrator guarantees uniqueness, no
//! fence). [`open`] reads a store's URL; the
//! [`ClaimStore`] trait is what a Redis, SQL or Consul store implements.

mod access;
mod claimed;
mod claims;
mod error;
#[cfg(feature = "etcd")]
mod etcd;
mod fence;
#[cfg(unix)]
mod file;
mod holder;
mod memory;
mod open;
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
mod remote;
mod static_node;
mod take;
#[cfg(feature = "zookeeper")]
mod zookeeper;

use core::fmt;
use core::ops::Range;
use core::time::Duration;
use std::string::String;
use std::vec::Vec;

pub use access::{Access, ReadAccess, Secret};
pub use claimed::{ClaimGate, ClaimedGenerator};
pub use claims::Claims;
pub use error::{ClaimError, ClaimErrorKind};
#[cfg(feature = "etcd")]
pub use etcd::EtcdStore;
pub use fence::{ClaimState, Fence};
#[cfg(unix)]
pub use file::FileStore;
pub use holder::ClaimStatus;
pub(crate) use holder::Holder;
pub use memory::MemoryStore;
pub use open::{OpenOptions, check_namespace, default_instance, open, open_with};
pub use static_node::StaticNode;
#[cfg(feature = "zookeeper")]
pub use zookeeper::ZooKeeperStore;

/// The namespace a claim lives in when none is given.
pub const DEFAULT_NAMESPACE: &str = "default";
/// The default reserved window: how far ahead of the clock a holder reserves.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(5);
/// What the default wait for a free id adds to the store's lease TTL and the window (see
/// [`Claims::pool_wait`]).
pub const DEFAULT_POOL_WAIT: Duration = Duration::from_secs(1);
/// The longest window a claim takes: a reservation is a promise that nobody mints on the
/// id until it ends, so a longer one only makes a dead holder's id unusable for longer.
pub const MAX_WINDOW: Duration = Duration::from_secs(24 * 60 * 60);
/// The shortest renewal period ([`Claims::renew_every`]): every renewal is a durable write.
pub const MIN_RENEW_EVERY: Duration = Duration::from_millis(10);

/// What a store needs to take a node id: where, from which ids, for whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRequest<'a> {
    /// The namespace (checked by [`check_namespace`] before the store sees it).
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
    /// Whether the claim has a reserved window to renew and a fence. [`StaticNode`]'s do
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

/// The record of a layout in a store ([`ClaimStore::bind_layout`]): the layout string of
/// what decides the value of an ID (field widths, order, unit, epoch, grid), without the
/// datacenter split of the node field, which names bits but does not move them.
pub fn layout_record(layout: &crate::Layout) -> String {
    layout.without_datacenter_split().to_string()
}

/// The preset a layout record is, if it is one: `snowflake` for
/// `layout_record(&Layout::snowflake())`, as the tool and the messages name it.
pub fn layout_preset(record: &str) -> Option<&'static str> {
    let record = layout_record(&record.parse::<crate::Layout>().ok()?);
    crate::Layout::presets()
        .iter()
        .find(|p| layout_record(&p.layout) == record)
        .map(|p| p.name)
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
/// The contract, which the fence's guarantee rests on (`tests/common/conformance.rs` checks
/// it against every store of this crate, the real etcd and ZooKeeper included):
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
    /// that answers once the member in use has stopped answering (an attempt that times
    /// out, the pause, a second attempt), with leases of `ttl`; `None` if the store's
    /// client keeps its lease alive by itself (a ZooKeeper session) or it has no leases.
    /// A claim whose renewal period plus this does not fit in nine tenths of the TTL is
    /// refused ([`ClaimError::TtlTooShort`]).
    fn failover_bound(&self, ttl: Duration) -> Option<Duration> {
        let _ = ttl;
        None
    }

    /// What the store found unsafe about its setup or repaired in it, for the operator (the
    /// tool prints these once the claim is taken): for a ZooKeeper store, a store without a
    /// user, or a znode whose ACL it made creator-only. Empty by default.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
}
