//! Loom models of a claimed generator's fence: a minting thread races a renewal and a
//! revocation (the id given to another holder); no ID lies outside a granted window.
//!
//! Run: `RUSTFLAGS="--cfg flakeid_loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p flakeid-loom-tests --release`
#![cfg(flakeid_loom)]

use std::time::Duration;

use flakeid::claim::store::{ClaimRequest, Claimed, Repaired};
use flakeid::claim::{ClaimError, ClaimInfo, ClaimStore, ClaimedGenerator, Claims, NamespaceInfo};
use flakeid::clock::ManualClock;
use flakeid::{Generator, MintError};
use flakeid_loom_tests::{model, must_fail, tiny};
use loom::sync::{Arc, Mutex};
use loom::thread;

const MS: u64 = 1_000_000;
const T0: u64 = 1_000_000 * MS;
/// Two ticks.
const WINDOW: Duration = Duration::from_millis(2);

/// A coordinator holding one node id: its owner's token and its stored reservation.
#[derive(Debug)]
struct Coordinator {
    state: Mutex<(u64, u64)>,
}

impl Coordinator {
    /// Gives the id to another holder (token 99), as a lease expiry would: the other
    /// holder's first instant is the reservation stored at that moment.
    fn revoke(&self) -> u64 {
        let mut s = self.state.lock().unwrap();
        s.0 = 99;
        s.1
    }

    fn write_if_owner(&self, token: u64, reserved: u64) -> Result<(), ClaimError> {
        let mut s = self.state.lock().unwrap();
        if s.0 != token {
            return Err(ClaimError::NotOwner {
                namespace: "ns".into(),
                node: 0,
            });
        }
        s.1 = s.1.max(reserved);
        Ok(())
    }
}

#[derive(Debug, Clone)]
struct Store(Arc<Coordinator>);

impl ClaimStore for Store {
    fn url(&self) -> String {
        "loom:".into()
    }

    fn claim(&self, r: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        let mut s = self.0.state.lock().unwrap();
        s.0 = 1;
        Ok(Claimed {
            namespace: r.namespace.into(),
            node: 0,
            not_before_unix_ns: s.1,
            fenced: true,
            token: 1,
        })
    }

    fn renew(&self, c: &Claimed, reserved: u64) -> Result<(), ClaimError> {
        self.0.write_if_owner(c.token, reserved)
    }

    fn release(&self, c: &Claimed, reserved: u64) -> Result<(), ClaimError> {
        let mut s = self.0.state.lock().unwrap();
        if s.0 == c.token {
            s.1 = reserved;
            s.0 = 0;
        }
        Ok(())
    }

    fn list(&self, _: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        Ok(Vec::new())
    }
    fn bind_layout(&self, _: &str, _: &str) -> Result<(), ClaimError> {
        Ok(())
    }
    fn namespaces(&self) -> Result<Vec<NamespaceInfo>, ClaimError> {
        Ok(Vec::new())
    }
    fn repair(&self, _: &str, _: u64, reserved: u64) -> Result<Repaired, ClaimError> {
        Ok(Repaired {
            previous_unix_ns: None,
            reserved_until_unix_ns: reserved,
        })
    }
}

/// A claimed generator over a fresh coordinator, renewing only when told.
fn claimed(clock: &ManualClock) -> (Arc<ClaimedGenerator<ManualClock>>, Arc<Coordinator>) {
    let coordinator = Arc::new(Coordinator {
        state: Mutex::new((0, 0)),
    });
    let g = Generator::builder(tiny())
        .clock(clock.clone())
        .max_wait(Duration::ZERO)
        .build_claimed(
            Claims::new(Store(Arc::clone(&coordinator)))
                .namespace("ns")
                .window(WINDOW)
                .instance("a")
                .manual_renewal(),
        )
        .unwrap();
    (Arc::new(g), coordinator)
}

/// Mints three times, one tick apart; the ticks of the IDs it got.
fn mint_across_ticks(g: &ClaimedGenerator<ManualClock>, clock: &ManualClock) -> Vec<u64> {
    let mut ticks = Vec::new();
    for _ in 0..3 {
        match g.next_id() {
            Ok(id) => ticks.push(tiny().decompose(id.get()).unwrap().ticks),
            Err(MintError::ReservationExpired { .. } | MintError::ClaimLost { .. }) => {}
            Err(e) => panic!("{e}"),
        }
        clock.advance(Duration::from_millis(1));
    }
    ticks
}

/// Runs `renew` beside a minting thread and a revocation on the main thread; checks
/// that every minted tick lies before the revoked id's next holder's first tick.
fn race(renew: fn(&ClaimedGenerator<ManualClock>, &Coordinator, &ManualClock)) {
    let clock = ManualClock::new(T0);
    let (g, coordinator) = claimed(&clock);
    let minter = {
        let (g, clock) = (Arc::clone(&g), clock.clone());
        thread::spawn(move || mint_across_ticks(&g, &clock))
    };
    let renewer = {
        let (g, c, clock) = (Arc::clone(&g), Arc::clone(&coordinator), clock.clone());
        thread::spawn(move || renew(&g, &c, &clock))
    };
    let next_holder_from = coordinator.revoke();
    let first_tick_of_next = tiny().ticks_at(i128::from(next_holder_from)).unwrap();
    let ticks = minter.join().unwrap();
    renewer.join().unwrap();
    for t in ticks {
        assert!(
            t < first_tick_of_next,
            "outside the window: tick {t}, the next holder starts at {first_tick_of_next}"
        );
    }
}

#[test]
fn a_fence_never_lets_a_tick_of_the_next_holder_through() {
    model("fence vs renewal vs revocation", || {
        // The crate's own renewal: write, then raise the fence.
        race(|g, _, _| {
            let _ = g.renew_claim();
        });
    });
}

/// The models bite: a renewal that raises the fence *before* the store accepted the
/// reservation lets the generator mint in a window the store then refuses (the id having
/// moved on), and loom finds the interleaving.
#[test]
fn a_fence_published_before_the_write_is_caught() {
    let message = must_fail("the ID minted past a refused reservation", || {
        loom::model(|| {
            race(|g, coordinator, clock| {
                let fence = flakeid::__private::fence(g);
                let reserved = flakeid::Clock::unix_ns(clock) + WINDOW.as_nanos() as u64;
                let tick = tiny().ticks_at(i128::from(reserved)).unwrap();
                fence.grant(tick, reserved); // the bug: published before the write
                let _ = coordinator.write_if_owner(1, reserved);
            });
        });
    });
    assert!(
        message.contains("outside the window"),
        "failed for another reason: {message}"
    );
}

/// A store that writes whatever it is given (no maximum of its own), (the known-wrong
/// store of this model): only the holder's ordering of renewals keeps it from
/// going down.
#[derive(Debug, Clone)]
struct PlainStore(Arc<Mutex<u64>>);

impl ClaimStore for PlainStore {
    fn url(&self) -> String {
        "loom-plain:".into()
    }
    fn claim(&self, r: &ClaimRequest<'_>) -> Result<Claimed, ClaimError> {
        Ok(Claimed {
            namespace: r.namespace.into(),
            node: 0,
            not_before_unix_ns: *self.0.lock().unwrap(),
            fenced: true,
            token: 1,
        })
    }
    fn renew(&self, _: &Claimed, reserved: u64) -> Result<(), ClaimError> {
        *self.0.lock().unwrap() = reserved;
        Ok(())
    }
    fn release(&self, _: &Claimed, _: u64) -> Result<(), ClaimError> {
        Ok(())
    }
    fn list(&self, _: &str) -> Result<Vec<ClaimInfo>, ClaimError> {
        Ok(Vec::new())
    }
    fn bind_layout(&self, _: &str, _: &str) -> Result<(), ClaimError> {
        Ok(())
    }
    fn namespaces(&self) -> Result<Vec<NamespaceInfo>, ClaimError> {
        Ok(Vec::new())
    }
    fn repair(&self, _: &str, _: u64, reserved: u64) -> Result<Repaired, ClaimError> {
        Ok(Repaired {
            previous_unix_ns: None,
            reserved_until_unix_ns: reserved,
        })
    }
}

/// Two renewals of one claim overlap, the clock moving between them: `first` on one
/// thread, the crate's `renew_claim` on another after the clock moved. The store must end
/// at the fence: never below a reservation the fence let through.
fn overlapping_renewals(first: fn(&ClaimedGenerator<ManualClock>, &PlainStore, &ManualClock)) {
    let clock = ManualClock::new(T0);
    let store = PlainStore(Arc::new(Mutex::new(0)));
    let g = Arc::new(
        Generator::builder(tiny())
            .clock(clock.clone())
            .max_wait(Duration::ZERO)
            .build_claimed(
                Claims::new(store.clone())
                    .namespace("ns")
                    .window(WINDOW)
                    .instance("a")
                    .manual_renewal(),
            )
            .unwrap(),
    );
    let one = {
        let (g, store, clock) = (Arc::clone(&g), store.clone(), clock.clone());
        thread::spawn(move || first(&g, &store, &clock))
    };
    clock.advance(Duration::from_millis(1));
    let _ = g.renew_claim();
    one.join().unwrap();
    let fence = flakeid::__private::fence(&g).reserved_ns();
    let stored = *store.0.lock().unwrap();
    assert!(
        stored >= fence,
        "the store went below the fence: stored {stored}, fence {fence}"
    );
}

#[test]
fn overlapping_renewals_never_leave_the_store_below_the_fence() {
    model("two renewals of one claim, the clock moving", || {
        overlapping_renewals(|g, _, _| {
            let _ = g.renew_claim();
        });
    });
}

/// The models bite: a renewal that computes its reservation and writes it outside the
/// claim's one-at-a-time lock (as the crate did before) lands after a newer one.
#[test]
fn a_renewal_outside_the_lock_is_caught() {
    let message = must_fail("a renewal that lowered the store", || {
        loom::model(|| {
            overlapping_renewals(|g, store, clock| {
                let reserved = flakeid::Clock::unix_ns(clock) + WINDOW.as_nanos() as u64;
                let claimed = Claimed {
                    namespace: "ns".into(),
                    node: 0,
                    not_before_unix_ns: 0,
                    fenced: true,
                    token: 1,
                };
                store.renew(&claimed, reserved).unwrap();
                let tick = tiny().ticks_at(i128::from(reserved)).unwrap();
                flakeid::__private::fence(g).grant(tick, reserved);
            });
        });
    });
    assert!(
        message.contains("below the fence"),
        "failed for another reason: {message}"
    );
}
