//! The checks of one claim at a time: the lowest free id, reservations that never go
//! down, a lost holder that writes nothing, unreadable data, one layout per namespace,
//! repairs and removed reservations.

use std::sync::Arc;
use std::time::Duration;

use flakeid::Layout;
use flakeid::claim::store::{Repaired, layout_record};
use flakeid::claim::{ClaimError, Claims, NamespaceInfo, NodeState};

use crate::{Backend, SECOND, T, claim_soon, info, request};

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
        Claims::new(Arc::clone(&b))
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
