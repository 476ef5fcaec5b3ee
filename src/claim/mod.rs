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
//! The stores here: [`FileStore`] (`file:DIR`, one host), [`MemoryStore`] (`memory:`, one
//! process: tests and simulations), [`StaticNode`] (`static:N`, `static:pod`: the
//! orchestrator guarantees uniqueness, no fence). A fleet's stores are crates of their own
//! on the same trait: `flakeid-etcd` (`etcd://`) and `flakeid-zookeeper` (`zookeeper://`).
//! [`open`] reads a store's URL; [`store`] is what a store implements (the [`ClaimStore`]
//! trait, which a Redis, SQL or Consul store implements too) and the helpers it may use.

mod access;
mod build;
mod cancel;
mod claimed;
mod claims;
mod error;
pub(crate) mod fence;
#[cfg(unix)]
mod file;
mod holder;
mod memory;
mod names;
mod open;
mod options;
mod reason;
mod static_node;
pub mod store;
mod take;

use core::time::Duration;

pub use access::{Access, ReadAccess, Secret};
pub use cancel::Cancel;
pub use claimed::{ClaimGate, ClaimedGenerator};
pub use claims::{Claims, IntoClaimStore};
pub use error::{ClaimError, ClaimErrorKind};
pub use fence::ClaimState;
pub(crate) use fence::Fence;
#[cfg(unix)]
pub use file::FileStore;
pub use holder::ClaimStatus;
pub(crate) use holder::Holder;
pub use memory::MemoryStore;
pub use names::{check_namespace, default_instance};
pub use open::{open, open_url, open_with};
pub use options::OpenOptions;
pub use reason::Reason;
pub use static_node::StaticNode;
pub use store::{ClaimInfo, ClaimStore, NamespaceInfo, NodeState};

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
