//! The conformance suite of flakeid's [`ClaimStore`] contract: what a store of node-id
//! claims must do so that two holders never mint the same ID. It runs against every store
//! of the flakeid workspace (memory and file in the core's tests, a real etcd in
//! flakeid-etcd's, a real ZooKeeper in flakeid-zookeeper's), and against yours: add this
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
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use flakeid::claim::store::{ClaimRequest, Claimed, Repaired, Ticket, Waiter, layout_record};
use flakeid::claim::{ClaimError, ClaimInfo, ClaimStore, Claims, NamespaceInfo, NodeState};
use flakeid::{Generator, Layout, ShardedGenerator};

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
    a_lost_claim_never_reaches_a_later_one(backend, &format!("{tag}-again"));
    unreadable_data_fails_closed(backend, &format!("{tag}-corrupt"));
    one_namespace_is_one_layout(backend, &format!("{tag}-layout"));
    repairs_store_a_reservation_past_what_was_stored(backend, &format!("{tag}-repair"));
    a_removed_reservation_is_no_reset(backend, &format!("{tag}-removed"));
    waiting_sets_never_split_a_pool(backend, &format!("{tag}-sets"));
    waiters_are_served_in_the_order_they_began_waiting(backend, &format!("{tag}-line"));
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

/// A holder whose id was taken away claims it again through the same handle (the same
/// process, session and instance name): the renewal and the release of the lost claim then
/// fail as not the owner and change nothing of the later claim, which renews and releases
/// as usual. Both orders: the loss seen by a renewal before the claim again, and not seen
/// until after it.
pub fn a_lost_claim_never_reaches_a_later_one(backend: &dyn Backend, ns: &str) {
    for seen_first in [false, true] {
        let ns = format!("{ns}-{}", if seen_first { "seen" } else { "unseen" });
        let a = backend.handle();
        let old = a.claim(&request(&ns, 0..1)).unwrap();
        a.renew(&old, T + 2 * SECOND).unwrap();
        backend.lose(&a, &old);
        if seen_first {
            let renewed = a.renew(&old, T + 3 * SECOND);
            assert!(
                matches!(renewed, Err(ClaimError::NotOwner { .. })),
                "a renewal of the lost claim: {renewed:?}"
            );
        }
        let new = claim_soon(&*a, &ns, 0..1);
        assert_eq!(new.node, 0);
        assert!(
            new.not_before_unix_ns >= T + 2 * SECOND,
            "the later claim starts after the lost one's reservation: {}",
            new.not_before_unix_ns
        );
        a.renew(&new, T + 4 * SECOND).unwrap();
        let renewed = a.renew(&old, T + 60 * SECOND);
        assert!(
            matches!(renewed, Err(ClaimError::NotOwner { .. })),
            "a renewal of the lost claim after the same holder claimed the id again: {renewed:?}"
        );
        let released = a.release(&old, T + SECOND);
        assert!(
            matches!(released, Err(ClaimError::NotOwner { .. })),
            "a release of the lost claim after the same holder claimed the id again: {released:?}"
        );
        let now = info(&*a, &ns, 0);
        assert_eq!(
            (now.state, now.reserved_until_unix_ns),
            (NodeState::Held, T + 4 * SECOND),
            "the lost claim changed the later one: {now:?}"
        );
        a.renew(&new, T + 5 * SECOND)
            .expect("the later claim is still its holder's");
        let other = backend.handle();
        match other.claim(&request(&ns, 0..1)) {
            Err(ClaimError::PoolFull { .. }) => {}
            other => panic!("the later claim's id was free to take: {other:?}"),
        }
        a.release(&new, T + 5 * SECOND).unwrap();
        assert_eq!(info(&*a, &ns, 0).reserved_until_unix_ns, T + 5 * SECOND);
    }
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

/// The first layout bound to a namespace is its layout: binding it again is fine, another
/// is refused naming both (also through a generator, which then holds nothing), two first
/// binds of different layouts at once leave exactly one, and `namespaces` lists each
/// namespace with its layout.
pub fn one_namespace_is_one_layout(backend: &dyn Backend, ns: &str) {
    let (a, b) = (backend.handle(), backend.handle());
    let snowflake = layout_record(&Layout::snowflake());
    let sonyflake = layout_record(&Layout::sonyflake());
    a.bind_layout(ns, &snowflake).unwrap();
    a.bind_layout(ns, &snowflake).unwrap();
    match b.bind_layout(ns, &sonyflake) {
        Err(ClaimError::LayoutMismatch {
            recorded, asked, ..
        }) => assert_eq!((recorded, asked), (snowflake.clone(), sonyflake.clone())),
        other => panic!("another layout on {ns}: {other:?}"),
    }
    let other = format!("{ns}-other");
    b.bind_layout(&other, &sonyflake).unwrap();
    let refused = flakeid::Generator::builder(Layout::sonyflake()).build_claimed(
        Claims::with_store(Arc::clone(&b))
            .namespace(ns)
            .nodes(0..2)
            .pool_wait(Duration::ZERO)
            .manual_renewal(),
    );
    match refused {
        Err(e @ ClaimError::LayoutMismatch { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("snowflake") && text.contains("sonyflake") && text.contains(ns),
                "{text}"
            );
        }
        other => panic!(
            "a sonyflake generator on a snowflake namespace: {:?}",
            other.map(|g| g.node())
        ),
    }
    assert!(
        b.list(ns)
            .unwrap()
            .iter()
            .all(|i| i.state != NodeState::Held),
        "a refused generator holds an id"
    );
    // Two first binds at once, of different layouts: one records, the other is refused.
    let raced = format!("{ns}-race");
    let threads: Vec<_> = [snowflake.clone(), sonyflake.clone()]
        .into_iter()
        .map(|layout| {
            let (store, ns) = (backend.handle(), raced.clone());
            std::thread::spawn(move || store.bind_layout(&ns, &layout).is_ok())
        })
        .collect();
    let won: Vec<bool> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
    let listed: Vec<NamespaceInfo> = a.namespaces().unwrap();
    let layout_of = |name: &str| {
        listed
            .iter()
            .find(|n| n.namespace == name)
            .unwrap_or_else(|| panic!("{name} not listed: {listed:?}"))
            .layout
            .clone()
    };
    assert_eq!(layout_of(ns), Some(snowflake.clone()));
    assert_eq!(layout_of(&other), Some(sonyflake.clone()));
    let raced_layout = layout_of(&raced).unwrap();
    assert!(raced_layout == snowflake || raced_layout == sonyflake);
}

/// A repair refuses an id a live holder owns; it stores the larger of what was stored and
/// what it was given, as a released reservation the next holder starts after; and it
/// replaces data that cannot be read.
pub fn repairs_store_a_reservation_past_what_was_stored(backend: &dyn Backend, ns: &str) {
    let (a, b) = (backend.handle(), backend.handle());
    let c = a.claim(&request(ns, 0..1)).unwrap();
    a.renew(&c, T + 5 * SECOND).unwrap();
    match b.repair(ns, 0, T) {
        Err(ClaimError::NodeHeld { node: 0, .. }) => {}
        other => panic!("a repair of a held id: {other:?}"),
    }
    a.release(&c, T + 5 * SECOND).unwrap();
    let kept = b.repair(ns, 0, T + 2 * SECOND).unwrap();
    assert_eq!(
        kept,
        Repaired {
            previous_unix_ns: Some(T + 5 * SECOND),
            reserved_until_unix_ns: T + 5 * SECOND,
        },
        "a repair lowered a reservation"
    );
    let raised = b.repair(ns, 0, T + 9 * SECOND).unwrap();
    assert_eq!(raised.reserved_until_unix_ns, T + 9 * SECOND);
    assert_eq!(info(&*b, ns, 0).state, NodeState::Released);
    let next = a.claim(&request(ns, 0..1)).unwrap();
    assert_eq!(next.not_before_unix_ns, T + 9 * SECOND);
    a.release(&next, T + 9 * SECOND).unwrap();
    backend.corrupt(ns, 0);
    assert_eq!(info(&*b, ns, 0).state, NodeState::Corrupt);
    let replaced = b.repair(ns, 0, T + 20 * SECOND).unwrap();
    assert_eq!(
        replaced,
        Repaired {
            previous_unix_ns: None,
            reserved_until_unix_ns: T + 20 * SECOND,
        }
    );
    let listed = info(&*b, ns, 0);
    assert_eq!(listed.state, NodeState::Released, "{listed:?}");
    let next = a.claim(&request(ns, 0..1)).unwrap();
    assert_eq!(next.node, 0, "the repaired id is claimed again");
    assert_eq!(next.not_before_unix_ns, T + 20 * SECOND);
    a.release(&next, T + 20 * SECOND).unwrap();
}

/// A reservation removed by hand is not a reset: the live holder's next renewal stores it
/// again, and a holder that lost its id leaves its final reservation where none is
/// stored, so the next holder starts after it.
pub fn a_removed_reservation_is_no_reset(backend: &dyn Backend, ns: &str) {
    let a = backend.handle();
    let c = a.claim(&request(ns, 0..1)).unwrap();
    a.renew(&c, T + 3 * SECOND).unwrap();
    if !backend.remove_reservation(ns, 0) {
        println!("{ns}: this store's reservations cannot be removed from outside: skipped");
        a.release(&c, T).unwrap();
        return;
    }
    a.renew(&c, T + 4 * SECOND).unwrap();
    assert_eq!(
        info(&*a, ns, 0).reserved_until_unix_ns,
        T + 4 * SECOND,
        "the renewal did not store the removed reservation again"
    );
    backend.lose(&a, &c);
    assert!(backend.remove_reservation(ns, 0));
    let released = a.release(&c, T + 6 * SECOND);
    assert!(
        matches!(released, Err(ClaimError::NotOwner { .. })),
        "{released:?}"
    );
    let b = backend.handle();
    let next = claim_soon(&*b, ns, 0..1);
    assert_eq!(
        next.not_before_unix_ns,
        T + 6 * SECOND,
        "the lost holder left no reservation"
    );
    b.release(&next, T + 6 * SECOND).unwrap();
}

/// A store handle that watches one claimant: how often it asks for an id, which ids it
/// holds, and whether it ever asks again after a full pool while still holding one (it
/// would be keeping an id while it waits for the rest of its set).
#[derive(Debug)]
struct Watched {
    store: Arc<dyn ClaimStore>,
    watch: Arc<Watch>,
}

/// What [`Watched`] saw.
#[derive(Debug, Default)]
struct Watch {
    asked: AtomicU64,
    state: Mutex<WatchState>,
}

#[derive(Debug, Default)]
struct WatchState {
    held: Vec<u64>,
    after_full: bool,
    kept_while_waiting: Vec<Vec<u64>>,
}

impl Watch {
    fn asked(&self) -> u64 {
        self.asked.load(Ordering::SeqCst)
    }
    fn state(&self) -> std::sync::MutexGuard<'_, WatchState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl ClaimStore for Watched {
    fn url(&self) -> String {
        self.store.url()
    }
    fn claim(&self, r: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        {
            let mut state = self.watch.state();
            if state.after_full && !state.held.is_empty() {
                let held = state.held.clone();
                state.kept_while_waiting.push(held);
            }
        }
        self.watch.asked.fetch_add(1, Ordering::SeqCst);
        let claimed = self.store.claim(r);
        let mut state = self.watch.state();
        state.after_full = matches!(claimed, Err(ClaimError::PoolFull { .. }));
        if let Ok(c) = &claimed {
            state.held.push(c.node);
        }
        claimed
    }
    fn renew(&self, c: &Claimed, reserved: u64) -> Result<(), ClaimError> {
        self.store.renew(c, reserved)
    }
    fn release(&self, c: &Claimed, reserved: u64) -> Result<(), ClaimError> {
        self.watch.state().held.retain(|&n| n != c.node);
        self.store.release(c, reserved)
    }
    fn list(&self, namespace: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        self.store.list(namespace)
    }
    fn bind_layout(&self, namespace: &str, layout: &str) -> Result<(), ClaimError> {
        self.store.bind_layout(namespace, layout)
    }
    fn namespaces(&self) -> Result<Vec<NamespaceInfo>, ClaimError> {
        self.store.namespaces()
    }
    fn repair(&self, namespace: &str, node: u64, reserved: u64) -> Result<Repaired, ClaimError> {
        self.store.repair(namespace, node, reserved)
    }
    fn lease_ttl(&self) -> Option<Duration> {
        self.store.lease_ttl()
    }
    fn failover_bound(&self, ttl: Duration) -> Option<Duration> {
        self.store.failover_bound(ttl)
    }
}

/// Two, then three, claimants of 2 shards each wait on a full pool of 4; one holder of 2
/// ids lets go of one, then of the other. While one id is free, no claimant keeps it: each
/// that finds the pool full gives back what it took before it asks again, and the free id
/// is seen free. Once both are free, exactly one claimant takes both; the others hold
/// nothing while they wait (the pool shows only the holders), and end with a full pool
/// that names the 2 ids they needed. (Taken one by one, the first id would be kept by one
/// claimant and the second, as often as not, by another: both would wait for ever.)
pub fn waiting_sets_never_split_a_pool(backend: &dyn Backend, ns: &str) {
    // Long enough that the claimants are still waiting when the second id comes free,
    // however slow the machine; the losers end when it has passed.
    let pool_wait = Duration::from_secs(8);
    for claimants in [2usize, 3] {
        let ns = format!("{ns}-{claimants}");
        let (keep, go) = (backend.handle(), backend.handle());
        let kept: Vec<Claimed> = (0..2)
            .map(|_| keep.claim(&request(&ns, 0..4)).unwrap())
            .collect();
        let freed: Vec<Claimed> = (0..2)
            .map(|_| go.claim(&request(&ns, 0..4)).unwrap())
            .collect();
        let watches: Vec<Arc<Watch>> = (0..claimants).map(|_| Arc::default()).collect();
        let threads: Vec<_> = watches
            .iter()
            .enumerate()
            .map(|(i, watch)| {
                let store: Arc<dyn ClaimStore> = Arc::new(Watched {
                    store: backend.handle(),
                    watch: Arc::clone(watch),
                });
                let ns = ns.clone();
                std::thread::spawn(move || {
                    let claims = Claims::with_store(store)
                        .namespace(ns)
                        .nodes(0..4)
                        .instance(format!("claimant-{i}"))
                        .window(Duration::from_secs(2))
                        .pool_wait(pool_wait)
                        .manual_renewal();
                    ShardedGenerator::builder(Layout::snowflake())
                        .shards(2)
                        .build_claimed(claims)
                })
            })
            .collect();
        let started = Instant::now();
        // Every claimant has found the pool full at least once.
        let deadline = Instant::now() + Duration::from_secs(20);
        while watches.iter().any(|w| w.asked() == 0) {
            assert!(Instant::now() < deadline, "the claimants never asked");
            std::thread::sleep(Duration::from_millis(5));
        }
        let claimants_holding = |listed: &[ClaimInfo]| -> Vec<(u64, String)> {
            listed
                .iter()
                .filter(|i| i.state == NodeState::Held)
                .filter_map(|i| {
                    let h = i.holder.clone()?;
                    h.starts_with("claimant-").then_some((i.node, h))
                })
                .collect()
        };
        // Released with nothing reserved (the claimants' clocks are the real one, before
        // T), one id first: each claimant tries again, takes the free id and finds no
        // second, so gives it back before it asks again.
        let before: Vec<u64> = watches.iter().map(|w| w.asked()).collect();
        go.release(&freed[0], 0).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while watches.iter().zip(&before).any(|(w, b)| w.asked() < b + 4) {
            assert!(Instant::now() < deadline, "the claimants stopped asking");
            std::thread::sleep(Duration::from_millis(5));
        }
        for (i, w) in watches.iter().enumerate() {
            let state = w.state();
            assert!(
                state.kept_while_waiting.is_empty(),
                "claimant-{i} asked again after a full pool while it held {:?}",
                state.kept_while_waiting
            );
        }
        // Seen from outside: between attempts the free id is free.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let held = claimants_holding(&keep.list(&ns).unwrap());
            if held.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "a waiting claimant keeps an id: {held:?}"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        assert!(
            started.elapsed() < pool_wait,
            "the machine was too slow for this check: the claimants' wait ran out"
        );
        go.release(&freed[1], 0).unwrap();
        // Soon one claimant holds both freed ids.
        let deadline = started + pool_wait;
        let winner = loop {
            let held = claimants_holding(&keep.list(&ns).unwrap());
            if held.len() == 2 && held[0].1 == held[1].1 {
                break held[0].1.clone();
            }
            assert!(
                Instant::now() < deadline,
                "no claimant took both ids before their wait ran out: {held:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        // Then, while the others wait, they hold nothing: only the winner's two ids and
        // the two kept are held.
        for _ in 0..10 {
            let listed = keep.list(&ns).unwrap();
            let held: Vec<_> = claimants_holding(&listed);
            assert!(
                held.len() == 2 && held.iter().all(|(_, h)| *h == winner),
                "a waiting claimant holds an id: {listed:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let mut won = 0;
        for (i, built) in results.into_iter().enumerate() {
            match built {
                Ok(generator) => {
                    won += 1;
                    assert_eq!(format!("claimant-{i}"), winner);
                    let mut nodes: Vec<u64> = generator.shards().iter().map(|g| g.node()).collect();
                    nodes.sort_unstable();
                    assert_eq!(nodes, [2, 3]);
                }
                Err(ClaimError::PoolFull { wanted, .. }) => assert_eq!(wanted, 2),
                Err(e) => panic!("claimant {i}: {e}"),
            }
        }
        assert_eq!(won, 1, "{claimants} claimants");
        for (i, w) in watches.iter().enumerate() {
            let state = w.state();
            assert!(
                state.kept_while_waiting.is_empty(),
                "claimant-{i} asked again after a full pool while it held {:?}",
                state.kept_while_waiting
            );
        }
        for c in &kept {
            keep.release(c, T).unwrap();
        }
    }
}

/// A store handle that counts its claimant's looks at the pool: its claims and its looks
/// at the line, whichever it makes while it waits.
#[derive(Debug)]
struct Looks {
    store: Arc<dyn ClaimStore>,
    looks: Arc<AtomicU64>,
}

impl ClaimStore for Looks {
    fn url(&self) -> String {
        self.store.url()
    }
    fn claim(&self, r: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        let claimed = self.store.claim(r);
        self.looks.fetch_add(1, Ordering::SeqCst);
        claimed
    }
    fn renew(&self, c: &Claimed, reserved: u64) -> Result<(), ClaimError> {
        self.store.renew(c, reserved)
    }
    fn release(&self, c: &Claimed, reserved: u64) -> Result<(), ClaimError> {
        self.store.release(c, reserved)
    }
    fn list(&self, namespace: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        self.store.list(namespace)
    }
    fn bind_layout(&self, namespace: &str, layout: &str) -> Result<(), ClaimError> {
        self.store.bind_layout(namespace, layout)
    }
    fn namespaces(&self) -> Result<Vec<NamespaceInfo>, ClaimError> {
        self.store.namespaces()
    }
    fn repair(&self, namespace: &str, node: u64, reserved: u64) -> Result<Repaired, ClaimError> {
        self.store.repair(namespace, node, reserved)
    }
    fn lease_ttl(&self) -> Option<Duration> {
        self.store.lease_ttl()
    }
    fn failover_bound(&self, ttl: Duration) -> Option<Duration> {
        self.store.failover_bound(ttl)
    }
    fn join_line(&self, namespace: &str, instance: &str) -> Result<Option<Ticket>, ClaimError> {
        self.store.join_line(namespace, instance)
    }
    fn line(&self, namespace: &str) -> Result<Vec<Waiter>, ClaimError> {
        let line = self.store.line(namespace);
        self.looks.fetch_add(1, Ordering::SeqCst);
        line
    }
    fn stay_in_line(&self, ticket: &Ticket) -> Result<(), ClaimError> {
        self.store.stay_in_line(ticket)
    }
    fn leave_line(&self, ticket: &Ticket) {
        self.store.leave_line(ticket)
    }
}

/// Where the store keeps a line of waiters ([`ClaimStore::join_line`]; skipped, saying so,
/// where it keeps none): three claimants that begin waiting one after the other on a full
/// pool of one id, each started once the one before is in the line, take the id in that
/// order as each before them lets it go; the line shows them first first, with their
/// instance names, and is empty at the end. Each id is let go just after the claimant
/// whose turn it is looked and found it taken, so the others look before it does: a
/// store without order would give it to one of them.
pub fn waiters_are_served_in_the_order_they_began_waiting(backend: &dyn Backend, ns: &str) {
    let probe = backend.handle();
    match probe.join_line(ns, "probe") {
        Ok(Some(ticket)) => probe.leave_line(&ticket),
        Ok(None) => {
            eprintln!(
                "{ns}: {} keeps no line of waiters: order not checked",
                probe.url()
            );
            return;
        }
        Err(e) => panic!("join_line: {e}"),
    }
    let keep = backend.handle();
    let kept = keep.claim(&request(ns, 0..1)).unwrap();
    let waiting = |store: &dyn ClaimStore| -> Vec<String> {
        store
            .line(ns)
            .unwrap()
            .into_iter()
            .map(|w| w.instance)
            .collect()
    };
    let mut threads = Vec::new();
    let looks: Vec<Arc<AtomicU64>> = (0..3).map(|_| Arc::default()).collect();
    // Lets the id go once waiter `i` looked again.
    let after_a_look_of = |i: usize, let_go: &mut dyn FnMut()| {
        let before = looks[i].load(Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(20);
        while looks[i].load(Ordering::SeqCst) == before {
            assert!(Instant::now() < deadline, "waiter-{i} stopped looking");
            std::thread::yield_now();
        }
        let_go();
    };
    for (i, looked) in looks.iter().enumerate() {
        let store: Arc<dyn ClaimStore> = Arc::new(Looks {
            store: backend.handle(),
            looks: Arc::clone(looked),
        });
        let ns = String::from(ns);
        threads.push(std::thread::spawn(move || {
            let claims = Claims::with_store(store)
                .namespace(ns)
                .nodes(0..1)
                .instance(format!("waiter-{i}"))
                .window(Duration::from_secs(2))
                .pool_wait(Duration::from_secs(20))
                .manual_renewal();
            Generator::builder(Layout::snowflake()).build_claimed(claims)
        }));
        let deadline = Instant::now() + Duration::from_secs(20);
        while waiting(&*keep).len() < i + 1 {
            assert!(
                Instant::now() < deadline,
                "waiter-{i} never joined the line: {:?}",
                waiting(&*keep)
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    assert_eq!(waiting(&*keep), ["waiter-0", "waiter-1", "waiter-2"]);
    // Released with nothing reserved (the waiters' clocks are the real one, before T).
    after_a_look_of(0, &mut || keep.release(&kept, 0).unwrap());
    let mut held: Option<flakeid::claim::ClaimedGenerator> = None;
    for (i, thread) in threads.into_iter().enumerate() {
        let generator = thread
            .join()
            .unwrap()
            .unwrap_or_else(|e| panic!("waiter-{i}: {e}"));
        assert_eq!(generator.node(), 0);
        let holder = info(&*keep, ns, 0).holder;
        assert_eq!(holder.as_deref(), Some(format!("waiter-{i}").as_str()));
        let rest: Vec<String> = (i + 1..3).map(|j| format!("waiter-{j}")).collect();
        assert_eq!(waiting(&*keep), rest, "after waiter-{i} took the id");
        held = Some(generator);
        if i < 2 {
            after_a_look_of(i + 1, &mut || drop(held.take()));
        }
    }
    assert!(waiting(&*keep).is_empty());
    drop(held);
}
