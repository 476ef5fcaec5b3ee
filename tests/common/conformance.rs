//! The [`ClaimStore`] contract, written once and run against every store: the memory and
//! file stores (`tests/claims.rs`), a real etcd (`tests/etcd.rs`) and a real ZooKeeper
//! (`tests/zookeeper.rs`), each through a [`Backend`] that knows how to take an id away
//! from its holder and how to damage stored data.
//!
//! What every store must do (the loom and property models assume the same):
//! - claim the lowest free id, and hand the next holder the last reservation stored;
//! - never lower a stored reservation on renewal: not when renewals come out of order, not
//!   when they overlap;
//! - refuse a renewal or release by a holder that lost the id ([`ClaimError::NotOwner`]),
//!   and write nothing for it;
//! - fail closed on data it cannot read: skip that id, list it as corrupt, never overwrite.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use flakeid::claim::{ClaimError, ClaimInfo, ClaimRequest, ClaimStore, Claimed, NodeState};

/// A store under test: handles on it, and the faults only its test can cause.
pub trait Backend {
    /// A new handle on the store: another host.
    fn handle(&self) -> Arc<dyn ClaimStore>;
    /// Takes `claimed` away from its holder while the holder's handle lives on: its lease
    /// lapses, its lock file is removed, its ephemeral node goes. Afterwards another
    /// handle can claim the id.
    fn lose(&self, store: &Arc<dyn ClaimStore>, claimed: &Claimed);
    /// Overwrites node `node`'s stored reservation in `namespace` with bytes no version
    /// of flakeid wrote.
    fn corrupt(&self, namespace: &str, node: u64);
    /// The bytes stored as node `node`'s reservation.
    fn raw(&self, namespace: &str, node: u64) -> Option<Vec<u8>>;
}

/// 2027-01-15T08:00:00Z, as the base of the reservations the checks store.
const T: u64 = 1_800_000_000_000_000_000;
const SECOND: u64 = 1_000_000_000;

fn request<'a>(namespace: &'a str, pool: std::ops::Range<u64>) -> ClaimRequest<'a> {
    ClaimRequest {
        namespace,
        pool,
        instance: "conformance",
    }
}

/// The entry of `node` in `namespace`.
fn info(store: &dyn ClaimStore, namespace: &str, node: u64) -> ClaimInfo {
    store
        .list(namespace)
        .unwrap()
        .into_iter()
        .find(|i| i.node == node)
        .unwrap_or_else(|| panic!("node {node} of {namespace} is not listed"))
}

/// Claims from `pool`, retrying for a few seconds while the store still sees the id held
/// (an ephemeral node or a lease can take a moment to go).
fn claim_soon(store: &dyn ClaimStore, namespace: &str, pool: std::ops::Range<u64>) -> Claimed {
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
    unreadable_data_fails_closed(backend, &format!("{tag}-corrupt"));
}

/// The lowest free id, and the next holder starts at what the last released.
pub fn claims_the_lowest_free_id(backend: &dyn Backend, ns: &str) {
    let (a, b) = (backend.handle(), backend.handle());
    let a0 = a.claim(&request(ns, 0..3)).unwrap();
    let b1 = b.claim(&request(ns, 0..3)).unwrap();
    assert_eq!((a0.node, b1.node), (0, 1), "the lowest free ids, in order");
    assert_eq!(a0.not_before_unix_ns, 0, "a new id has no reservation");
    a.renew(&a0, T + 5 * SECOND).unwrap();
    a.release(&a0, T + 2 * SECOND).unwrap();
    assert_eq!(info(&*b, ns, 0).state, NodeState::Released);
    let b0 = b.claim(&request(ns, 0..3)).unwrap();
    assert_eq!(b0.node, 0, "a released id is free again, and the lowest");
    assert_eq!(
        b0.not_before_unix_ns,
        T + 2 * SECOND,
        "the next holder starts at the released reservation"
    );
    assert!(
        matches!(
            a.renew(&a0, T + 9 * SECOND),
            Err(ClaimError::NotOwner { .. })
        ),
        "a released claim is no longer its holder's"
    );
    b.release(&b0, T + 2 * SECOND).unwrap();
    b.release(&b1, 0).unwrap();
}

/// A renewal that arrives after a newer one (out of order, late) leaves the larger
/// reservation stored, and the holder after a crash starts there.
pub fn renewals_never_lower_the_reservation(backend: &dyn Backend, ns: &str) {
    let a = backend.handle();
    let c = a.claim(&request(ns, 0..1)).unwrap();
    a.renew(&c, T + 3 * SECOND).unwrap();
    a.renew(&c, T + SECOND).unwrap();
    assert_eq!(
        info(&*a, ns, 0).reserved_until_unix_ns,
        T + 3 * SECOND,
        "a late renewal lowered the stored reservation"
    );
    backend.lose(&a, &c);
    drop(a);
    let b = backend.handle();
    let next = claim_soon(&*b, ns, 0..1);
    assert_eq!(
        next.not_before_unix_ns,
        T + 3 * SECOND,
        "after a crash the next holder starts at the highest reservation stored"
    );
    b.release(&next, T + 3 * SECOND).unwrap();
}

/// Renewals of one claim from several threads at once: the stored reservation ends at
/// the largest any of them was given.
pub fn overlapping_renewals_keep_the_maximum(backend: &dyn Backend, ns: &str) {
    let a = backend.handle();
    let c = Arc::new(a.claim(&request(ns, 0..1)).unwrap());
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let (a, c) = (Arc::clone(&a), Arc::clone(&c));
            std::thread::spawn(move || {
                let mut seed = 0x9E37_79B9_7F4A_7C15 ^ (t + 1);
                let mut top = 0;
                for _ in 0..10 {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let value = T + seed % (100 * SECOND);
                    a.renew(&c, value).unwrap();
                    top = top.max(value);
                }
                top
            })
        })
        .collect();
    let top = threads
        .into_iter()
        .map(|t| t.join().unwrap())
        .max()
        .unwrap();
    assert_eq!(
        info(&*a, ns, 0).reserved_until_unix_ns,
        top,
        "overlapping renewals left less than the largest stored"
    );
    a.release(&c, top).unwrap();
}

/// A holder whose id was taken away and given to another: its renewal and its release
/// fail as not the owner, and neither changes what the new holder stored.
pub fn a_holder_that_lost_its_id_writes_nothing(backend: &dyn Backend, ns: &str) {
    let (a, b) = (backend.handle(), backend.handle());
    let old = a.claim(&request(ns, 0..1)).unwrap();
    a.renew(&old, T + 2 * SECOND).unwrap();
    backend.lose(&a, &old);
    let new = claim_soon(&*b, ns, 0..1);
    assert_eq!(new.not_before_unix_ns, T + 2 * SECOND);
    b.renew(&new, T + 4 * SECOND).unwrap();
    let renewed = a.renew(&old, T + 60 * SECOND);
    assert!(
        matches!(renewed, Err(ClaimError::NotOwner { .. })),
        "a renewal by the old holder: {renewed:?}"
    );
    let released = a.release(&old, T + SECOND);
    assert!(
        matches!(released, Err(ClaimError::NotOwner { .. })),
        "a release by the old holder: {released:?}"
    );
    let now = info(&*b, ns, 0);
    assert_eq!(
        now.reserved_until_unix_ns,
        T + 4 * SECOND,
        "the old holder wrote"
    );
    assert_eq!(now.state, NodeState::Held);
    b.release(&new, T + 4 * SECOND).unwrap();
}

/// Damaged data: the id is skipped (the next free one is taken), listed as corrupt with
/// where it is, and left as it was; a pool of only that id is full, naming it.
pub fn unreadable_data_fails_closed(backend: &dyn Backend, ns: &str) {
    let a = backend.handle();
    // The id exists in the store first, as it would after a holder.
    let c = a.claim(&request(ns, 0..1)).unwrap();
    a.release(&c, T).unwrap();
    backend.corrupt(ns, 0);
    let damaged = backend.raw(ns, 0);
    match a.claim(&request(ns, 0..1)) {
        Err(ClaimError::PoolFull { corrupt, .. }) => assert_eq!(corrupt, [0]),
        other => panic!("a pool of one corrupt id: {other:?}"),
    }
    let next = a.claim(&request(ns, 0..3)).unwrap();
    assert_eq!(
        next.node, 1,
        "the corrupt id is skipped, the next free one taken"
    );
    let listed = info(&*a, ns, 0);
    assert_eq!(listed.state, NodeState::Corrupt);
    let problem = listed.problem.expect("a corrupt entry says why");
    assert!(
        problem.contains(&format!("{ns}/")) || problem.contains(ns),
        "the problem names where: {problem}"
    );
    assert_eq!(
        backend.raw(ns, 0),
        damaged,
        "the damaged data was overwritten"
    );
    a.release(&next, 0).unwrap();
}
