//! The conformance suite of flakeid's [`ClaimStore`] contract: what a store of node-id
//! claims must do so that two holders never mint the same ID. It runs against every store
//! of the flakeid workspace (memory and file in the core's tests, a real etcd in
//! flakeid-etcd's, a real ZooKeeper in flakeid-zookeeper's, a real PostgreSQL in
//! flakeid-postgres's), and against yours: add this
//! crate as a dev-dependency, implement [`Backend`] for your store (a handle, and the faults
//! only your test can cause: take an id away from its holder, damage stored data), and call
//! [`run_all`] from a test.
//!
//! ```no_run
//! use std::sync::Arc;
//! use flakeid::claim::store::Claimed;
//! use flakeid::claim::{ClaimStore, MemoryStore};
//!
//! struct Mine(MemoryStore);
//!
//! impl flakeid_testkit::Backend for Mine {
//!     fn handle(&self) -> Arc<dyn ClaimStore> {
//!         Arc::new(self.0.client())
//!     }
//!     fn lose(&self, _: &Arc<dyn ClaimStore>, _: &Claimed) {
//!         // Make the holder's lease lapse (here: let its TTL pass).
//!         # unimplemented!()
//!     }
//!     fn corrupt(&self, namespace: &str, node: u64) {
//!         self.0.set_corrupt(namespace, node);
//!     }
//!     fn raw(&self, _: &str, _: u64) -> Option<Vec<u8>> {
//!         None
//!     }
//!     fn remove_reservation(&self, _: &str, _: u64) -> bool {
//!         false
//!     }
//! }
//!
//! flakeid_testkit::run_all(&Mine(MemoryStore::new()), "mine");
//! ```
//!
//! Each check uses its own namespaces (named after `tag`), so a store that keeps its data
//! between runs needs a fresh tag or a fresh store each run. A check that fails panics with
//! what the store did.
//!
//! What every store must do (the loom and property models assume the same):
//! - claim the lowest free id, and hand the next holder the last reservation stored;
//! - never lower a stored reservation on renewal: not when renewals come out of order, not
//!   when they overlap;
//! - refuse a renewal or release by a holder that lost the id ([`ClaimError::NotOwner`]),
//!   and write nothing for it;
//! - fail closed on data it cannot read: skip that id, list it as corrupt, never overwrite;
//!   repair it only by [`ClaimStore::repair`], to a reservation past what was stored;
//! - write a removed reservation again while the holder owns the id, and leave a lost
//!   holder's final reservation where none is stored;
//! - keep one layout per namespace;
//! - and, through the claim layer above it, give a sharded claimant all its ids or none.
//!
//! What the fields and answers the kit checks mean:
//! - [`Claimed::fenced`]: `true` when the claim has a reservation to renew and the holder
//!   mints only below it (every store the kit is meant for); `false` (`static:`) says the
//!   orchestrator, not the store, keeps the id unique: such a store has no fence for the
//!   kit to check.
//! - [`Claimed::token`]: the store's own handle on this claim (etcd's lease id,
//!   ZooKeeper's session, the file store's lock), opaque to the generator and handed back
//!   with every renewal and release, so that the store can tell the holder that lost the
//!   id from the one that holds it now and refuse the first ([`ClaimError::NotOwner`]).
//! - A full pool: [`ClaimStore::claim`] returns [`ClaimError::PoolFull`] (the namespace,
//!   the pool, how many of its ids are held, which were skipped as corrupt); the claim layer
//!   waits (`Claims::pool_wait`) and tries again, in line where the store keeps one
//!   ([`ClaimStore::join_line`]).
//! - A coordinator that keeps a claim key (`nodes/N`, the holder) apart from the
//!   reservation (`reserved/N`) builds each [`ClaimInfo`] for [`ClaimStore::list`] with
//!   `flakeid::claim::store::Listing`, which reads the two in either order and marks
//!   data it cannot read as corrupt.
//!
//! A store on a database that other teams' roles share (a SQL store) also implements
//! [`SharedDatabase`] and calls [`run_shared`]: a schema another role made or may write
//! to, a trigger, rule or row-level security that rewrites the store's writes, a table
//! without its primary key or unlogged, each refused when the store opens.
//!
//! The kit drives the store from one process (several handles, several threads): it
//! cannot show that two processes or two hosts racing for one id are kept apart. That
//! atomicity is the store's to prove, against its own server (the workspace's fleet tests
//! do it with real processes, `kill -9` and partitions).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod checks;
mod shared;
mod waiting;

use std::sync::Arc;
use std::time::{Duration, Instant};

pub use checks::{
    a_holder_that_lost_its_id_writes_nothing, a_lost_claim_never_reaches_a_later_one,
    a_removed_reservation_is_no_reset, claims_the_lowest_free_id, one_namespace_is_one_layout,
    overlapping_renewals_keep_the_maximum, renewals_never_lower_the_reservation,
    repairs_store_a_reservation_past_what_was_stored, unreadable_data_fails_closed,
};
pub use shared::{SharedDatabase, Tampering, a_rewritten_renewal_fails, run_shared};
pub use waiting::{
    waiters_are_served_in_the_order_they_began_waiting, waiting_sets_never_split_a_pool,
};

use flakeid::claim::store::{ClaimRequest, Claimed};
use flakeid::claim::{ClaimError, ClaimInfo, ClaimStore};

/// A store under test: handles on it, and the faults only its test can cause.
pub trait Backend {
    /// A new handle on the store: another host.
    fn handle(&self) -> Arc<dyn ClaimStore>;
    /// Takes `claimed` away from its holder for good while the holder's handle lives on:
    /// its lease lapses, its lock file is removed, its ephemeral node goes, its
    /// reservation is rewritten (so a store that may attach a claim again while nobody
    /// touched the id cannot). Afterwards another handle, or the same one, can claim the
    /// id.
    fn lose(&self, store: &Arc<dyn ClaimStore>, claimed: &Claimed);
    /// Overwrites node `node`'s stored reservation in `namespace` with bytes no version
    /// of flakeid wrote.
    fn corrupt(&self, namespace: &str, node: u64);
    /// The bytes stored as node `node`'s reservation.
    fn raw(&self, namespace: &str, node: u64) -> Option<Vec<u8>>;
    /// Removes node `node`'s stored reservation, as an operator might by hand; `false` if
    /// the store has no way to (those checks are skipped, saying so).
    fn remove_reservation(&self, namespace: &str, node: u64) -> bool;
}

/// 2027-01-15T08:00:00Z, as the base of the reservations the checks store.
pub(crate) const T: u64 = 1_800_000_000_000_000_000;
pub(crate) const SECOND: u64 = 1_000_000_000;

pub(crate) fn request<'a>(namespace: &'a str, pool: std::ops::Range<u64>) -> ClaimRequest<'a> {
    ClaimRequest {
        namespace,
        pool,
        instance: "conformance",
    }
}

/// The entry of `node` in `namespace`.
pub(crate) fn info(store: &dyn ClaimStore, namespace: &str, node: u64) -> ClaimInfo {
    store
        .list(namespace)
        .unwrap()
        .into_iter()
        .find(|i| i.node == node)
        .unwrap_or_else(|| panic!("node {node} of {namespace} is not listed"))
}

/// Claims from `pool`, retrying for a few seconds while the store still sees the id held
/// (an ephemeral node or a lease can take a moment to go).
pub(crate) fn claim_soon(
    store: &dyn ClaimStore,
    namespace: &str,
    pool: std::ops::Range<u64>,
) -> Claimed {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match store.claim(&request(namespace, pool.clone())) {
            Ok(c) => return c,
            Err(ClaimError::PoolFull { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("claim in {namespace}: {e}"),
        }
    }
}

/// Every check, in `namespace`s made unique by `tag` (a store kept between runs starts
/// clean).
pub fn run_all(backend: &dyn Backend, tag: &str) {
    claims_the_lowest_free_id(backend, &format!("{tag}-lowest"));
    renewals_never_lower_the_reservation(backend, &format!("{tag}-max"));
    overlapping_renewals_keep_the_maximum(backend, &format!("{tag}-overlap"));
    a_holder_that_lost_its_id_writes_nothing(backend, &format!("{tag}-lost"));
    a_lost_claim_never_reaches_a_later_one(backend, &format!("{tag}-again"));
    unreadable_data_fails_closed(backend, &format!("{tag}-corrupt"));
    one_namespace_is_one_layout(backend, &format!("{tag}-layout"));
    repairs_store_a_reservation_past_what_was_stored(backend, &format!("{tag}-repair"));
    a_removed_reservation_is_no_reset(backend, &format!("{tag}-removed"));
    waiting_sets_never_split_a_pool(backend, &format!("{tag}-sets"));
    waiters_are_served_in_the_order_they_began_waiting(backend, &format!("{tag}-line"));
}
