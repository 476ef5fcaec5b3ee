//! Claims and fences in the library: the memory store with one `ManualClock` per "host",
//! the file store over one directory, pools, and bad input.

use std::collections::HashSet;
use std::time::Duration;

use flakeid::claim::{
    ClaimError, ClaimState, ClaimStore, ClaimedGenerator, Claims, FileStore, MemoryStore, NodeState,
};
use flakeid::clock::ManualClock;
use flakeid::{ClockPolicy, Generator, Layout, MintError, ShardedGenerator};

/// 2026-10-31T12:00:00Z.
const T0_NS: u64 = 1_793_448_000_000_000_000;
const WINDOW: Duration = Duration::from_secs(1);
const TTL: Duration = Duration::from_secs(2);

fn layout() -> Layout {
    Layout::snowflake()
}

fn ticks(id: flakeid::Id) -> u64 {
    layout().decompose(id.get()).unwrap().ticks
}

/// A claimed generator on its own host clock, renewing only when told.
fn host(
    store: &MemoryStore,
    clock: &ManualClock,
    pool: std::ops::Range<u64>,
) -> ClaimedGenerator<ManualClock> {
    try_host(store, clock, pool, Duration::ZERO).unwrap()
}

fn try_host(
    store: &MemoryStore,
    clock: &ManualClock,
    pool: std::ops::Range<u64>,
    max_wait: Duration,
) -> Result<ClaimedGenerator<ManualClock>, ClaimError> {
    Generator::builder(layout())
        .clock(clock.clone())
        .max_wait(max_wait)
        .build_claimed(
            Claims::new(store.clone())
                .namespace("orders")
                .nodes(pool)
                .window(WINDOW)
                .pool_wait(Duration::ZERO)
                .manual_renewal(),
        )
}

/// Mints until the generator refuses; steps the clock 1 ms between IDs.
fn mint_until_refused(
    g: &ClaimedGenerator<ManualClock>,
    clock: &ManualClock,
    max: usize,
) -> (Vec<flakeid::Id>, MintError) {
    let mut ids = Vec::new();
    for _ in 0..max {
        match g.next_id() {
            Ok(id) => ids.push(id),
            Err(e) => return (ids, e),
        }
        clock.advance(Duration::from_millis(1));
    }
    panic!("minted {max} IDs without reaching the fence");
}

/// Holder A renews, then is paused (cut off from the store) past its lease; B claims the
/// same id and mints; A comes back and mints: A gets the fence error, never a tick B has,
/// and B's first tick is at or after A's last reservation.
#[test]
fn a_paused_holder_never_mints_a_tick_of_the_next_holder() {
    let store_clock = ManualClock::new(T0_NS);
    let store = MemoryStore::with_clock(TTL, store_clock.clone());
    let clock_a = ManualClock::new(T0_NS);
    let store_a = store.client();
    let a = host(&store_a, &clock_a, 0..1);
    assert_eq!(a.node(), 0);
    let mut minted_a = vec![a.next_id().unwrap()];
    // A renews twice, 300 ms apart, minting in between.
    for _ in 0..2 {
        clock_a.advance(Duration::from_millis(300));
        store_clock.advance(Duration::from_millis(300));
        a.renew_claim().unwrap();
        minted_a.push(a.next_id().unwrap());
    }
    let reserved_a = a.claim_status().reserved_until_unix_ns.unwrap();
    assert_eq!(reserved_a, T0_NS + 600_000_000 + 1_000_000_000);

    // A is paused: no renewal reaches the store, and its lease lapses there.
    store_a.set_partitioned(true);
    store_clock.advance(TTL + Duration::from_millis(1));
    clock_a.advance(TTL);

    // B, on a clock equal to the store's, claims node 0 and starts at A's reservation.
    let clock_b = ManualClock::new(store_clock.unix_ns_now());
    let b = try_host(&store.client(), &clock_b, 0..1, Duration::from_secs(5)).unwrap();
    assert_eq!(b.node(), 0);
    let status_b = b.claim_status();
    assert_eq!(status_b.not_before_unix_ns, reserved_a);
    let first_b = b.next_id().unwrap();
    assert!(
        ticks(first_b) >= layout().ticks_at(i128::from(reserved_a)).unwrap(),
        "B's first tick {} is before A's reservation",
        ticks(first_b)
    );

    // A resumes: its clock is past its fence, so it mints nothing: it waits for a renewal
    // (none can land: max_wait 0) and reports the reservation expired.
    assert_eq!(a.next_id(), Err(MintError::ReservationExpired { node: 0 }));
    assert_eq!(a.claim_status().state, ClaimState::Active);
    // The partition heals; A's renewal is refused: the claim is lost, and stays lost.
    store_a.set_partitioned(false);
    assert!(matches!(
        a.renew_claim(),
        Err(ClaimError::NotOwner { node: 0, .. })
    ));
    assert_eq!(a.claim_status().state, ClaimState::Lost);
    assert_eq!(a.next_id(), Err(MintError::ClaimLost { node: 0 }));
    assert!(MintError::ClaimLost { node: 0 }.is_final());

    let last_a = minted_a.iter().map(|&id| ticks(id)).max().unwrap();
    assert!(
        last_a < ticks(first_b),
        "A's tick {last_a} >= B's {}",
        ticks(first_b)
    );
    let all: HashSet<_> = minted_a.iter().chain([&first_b]).collect();
    assert_eq!(all.len(), minted_a.len() + 1);
}

trait Now {
    fn unix_ns_now(&self) -> u64;
}
impl Now for ManualClock {
    fn unix_ns_now(&self) -> u64 {
        flakeid::Clock::unix_ns(self)
    }
}

/// A paused holder whose own clock did *not* jump (a process frozen by the scheduler but
/// resumed before its clock caught up) still stops at its fence: it mints the rest of its
/// window and not one tick more, and every one of those ticks lies before the new
/// holder's first.
#[test]
fn a_returning_holder_mints_only_up_to_its_fence() {
    let store_clock = ManualClock::new(T0_NS);
    let store = MemoryStore::with_clock(TTL, store_clock.clone());
    let clock_a = ManualClock::new(T0_NS);
    let store_a = store.client();
    let a = host(&store_a, &clock_a, 0..1);
    store_a.set_partitioned(true);
    store_clock.advance(TTL * 2);
    let clock_b = ManualClock::new(T0_NS + 2 * 1_000_000_000);
    let b = try_host(&store.client(), &clock_b, 0..1, Duration::ZERO).unwrap();
    let first_b = ticks(b.next_id().unwrap());

    let (ids_a, err) = mint_until_refused(&a, &clock_a, 5_000);
    assert_eq!(err, MintError::ReservationExpired { node: 0 });
    // The window is 1 s of 1 ms ticks: A minted in every one of them, then stopped.
    assert_eq!(ids_a.len(), 1000);
    let fence = layout()
        .ticks_at(i128::from(T0_NS + 1_000_000_000))
        .unwrap();
    assert!(ids_a.iter().all(|&id| ticks(id) < fence));
    assert!(ids_a.iter().all(|&id| ticks(id) < first_b));
}

/// B's clock reads 10 s behind A's reservation: with a wait bound shorter than that, the
/// claim fails naming how far behind; once B's clock gets there, B claims and mints above
/// every ID of A.
#[test]
fn a_new_holder_behind_the_reservation_fails_with_the_distance_then_catches_up() {
    let store_clock = ManualClock::new(T0_NS);
    let store = MemoryStore::with_clock(TTL, store_clock.clone());
    let clock_a = ManualClock::new(T0_NS + 10_000_000_000);
    let store_a = store.client();
    let a = host(&store_a, &clock_a, 0..1);
    let ids_a: Vec<_> = (0..100).map(|_| a.next_id().unwrap()).collect();
    let reserved_a = a.claim_status().reserved_until_unix_ns.unwrap();
    store_a.set_partitioned(true);
    store_clock.advance(TTL * 2);

    let clock_b = ManualClock::new(T0_NS + 1_000_000);
    match try_host(&store.client(), &clock_b, 0..1, Duration::from_secs(1)) {
        Err(ClaimError::ClockBehind {
            node: 0,
            behind,
            bound,
        }) => {
            assert_eq!(
                behind,
                Duration::from_nanos(reserved_a - (T0_NS + 1_000_000))
            );
            assert!(behind > Duration::from_secs(10));
            assert_eq!(bound, Duration::from_secs(1));
            let message = ClaimError::ClockBehind {
                node: 0,
                behind,
                bound,
            }
            .to_string();
            assert!(
                message.contains("behind") && message.contains("max_wait"),
                "{message}"
            );
        }
        other => panic!("expected ClockBehind, got {other:?}"),
    }
    // The refused claim released the id without lowering the reservation.
    let info = store.list("orders").unwrap();
    assert_eq!(info[0].reserved_until_unix_ns, reserved_a);
    assert_eq!(info[0].state, NodeState::Released);

    clock_b.set(reserved_a);
    let b = try_host(&store.client(), &clock_b, 0..1, Duration::from_secs(1)).unwrap();
    let ids_b: Vec<_> = (0..100).map(|_| b.next_id().unwrap()).collect();
    assert!(ids_b[0] > *ids_a.last().unwrap());
}

/// A renewal that lands while a caller waits at the fence lets it through: minting
/// recovers by itself. The claim's status counts the caller while it waits, and not after.
#[test]
fn minting_resumes_when_a_renewal_lands_during_the_wait() {
    let store_clock = ManualClock::new(T0_NS);
    let store = MemoryStore::with_clock(TTL, store_clock);
    let clock = ManualClock::new(T0_NS);
    let g = try_host(&store, &clock, 0..1, Duration::from_secs(5)).unwrap();
    g.next_id().unwrap();
    clock.advance(WINDOW); // exactly at the fence
    std::thread::scope(|s| {
        let waiter = s.spawn(|| g.next_id());
        // Once the minting thread waits at the fence (its status counts it), renew.
        let deadline = std::time::Instant::now() + Duration::from_secs(4);
        while g.claim_status().waiting_at_fence == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the caller never waited at the fence"
            );
            std::thread::yield_now();
        }
        assert_eq!(g.claim_status().waiting_at_fence, 1);
        g.renew_claim().unwrap();
        let id = waiter
            .join()
            .unwrap()
            .expect("the renewal let the waiting call through");
        assert_eq!(
            ticks(id),
            layout()
                .ticks_at(i128::from(T0_NS + WINDOW.as_nanos() as u64))
                .unwrap()
        );
    });
    assert_eq!(g.claim_status().waiting_at_fence, 0);
}

/// Pools: the lowest free id first, a full pool names itself and the count held, a
/// released id comes back with its reservation; namespaces do not see each other.
#[test]
fn pools_take_the_lowest_free_id_and_a_full_pool_says_so() {
    let clock = ManualClock::new(T0_NS);
    let store = MemoryStore::with_clock(TTL, clock.clone());
    let gens: Vec<_> = (0..3).map(|_| host(&store, &clock, 4..7)).collect();
    assert_eq!(gens.iter().map(|g| g.node()).collect::<Vec<_>>(), [4, 5, 6]);
    match try_host(&store, &clock, 4..7, Duration::ZERO) {
        Err(e @ ClaimError::PoolFull { held: 3, .. }) => {
            let m = e.to_string();
            assert!(
                m.contains("4..7") && m.contains("orders") && m.contains("3"),
                "{m}"
            );
        }
        other => panic!("expected PoolFull, got {other:?}"),
    }
    // Another namespace has the whole pool.
    let other = Generator::builder(layout())
        .clock(clock.clone())
        .build_claimed(
            Claims::new(store.clone())
                .namespace("billing")
                .nodes(4..7)
                .manual_renewal(),
        )
        .unwrap();
    assert_eq!(other.node(), 4);
    // Release node 5 after minting: its reservation is cut to the end of its last tick.
    let last = gens[1].next_id().unwrap();
    let mut gens = gens;
    drop(gens.remove(1));
    let info = store.list("orders").unwrap();
    let five = info.iter().find(|i| i.node == 5).unwrap();
    assert_eq!(five.state, NodeState::Released);
    let end_of_last = layout().unix_ns_of(ticks(last) + 1).unwrap() as u64;
    assert_eq!(five.reserved_until_unix_ns, end_of_last);
    // The clock reads inside that last tick: with no wait allowed, the claim is refused
    // until the clock reaches the reservation.
    assert!(matches!(
        try_host(&store, &clock, 4..7, Duration::ZERO),
        Err(ClaimError::ClockBehind { node: 5, .. })
    ));
    clock.set(end_of_last);
    let again = host(&store, &clock, 4..7);
    assert_eq!(again.node(), 5);
    assert_eq!(again.claim_status().not_before_unix_ns, end_of_last);
    assert!(again.next_id().unwrap() > last);
}

/// A sharded generator claims one id per shard, each fenced.
#[test]
fn sharded_generators_claim_one_fenced_id_per_shard() {
    let clock = ManualClock::new(T0_NS);
    let store = MemoryStore::with_clock(TTL, clock.clone());
    let _first = host(&store, &clock, 0..8);
    let sharded = ShardedGenerator::builder(layout())
        .shards(3)
        .clock(clock.clone())
        .max_wait(Duration::ZERO)
        .build_claimed(
            Claims::new(store.clone())
                .namespace("orders")
                .nodes(0..8)
                .window(WINDOW)
                .manual_renewal(),
        )
        .unwrap();
    let nodes: Vec<_> = sharded.shards().iter().map(|g| g.node()).collect();
    assert_eq!(nodes, [1, 2, 3]);
    for shard in sharded.shards() {
        assert!(shard.claim_status().fenced);
        shard.next_id().unwrap();
    }
    clock.advance(WINDOW);
    for shard in sharded.shards() {
        assert_eq!(
            shard.next_id(),
            Err(MintError::ReservationExpired { node: shard.node() })
        );
    }
    drop(sharded);
    let held = store
        .list("orders")
        .unwrap()
        .iter()
        .filter(|i| i.state == NodeState::Held)
        .count();
    assert_eq!(held, 1, "the shards released their ids");
}

/// A claim waiting for its ids (a pool too full for three shards) is called off at once by
/// its `Cancel`, long before its wait would end, and holds nothing after: the two free ids
/// it could have taken are free.
#[test]
fn a_cancelled_claim_stops_waiting_and_holds_nothing() {
    use flakeid::claim::{Cancel, ClaimErrorKind};
    let store = MemoryStore::new();
    let _holder = Generator::builder(layout())
        .build_claimed(Claims::new(store.clone()).namespace("orders").nodes(0..3))
        .unwrap();
    let cancel = Cancel::new();
    let claims = Claims::new(store.clone())
        .namespace("orders")
        .nodes(0..3)
        .pool_wait(Duration::from_secs(120))
        .cancel_on(cancel.clone());
    let started = std::time::Instant::now();
    let waiter = std::thread::spawn(move || {
        ShardedGenerator::builder(layout())
            .shards(3)
            .build_claimed(claims)
            .map(drop)
    });
    cancel.cancel();
    let e = waiter.join().unwrap().unwrap_err();
    assert!(matches!(e, ClaimError::Cancelled { .. }), "{e}");
    assert_eq!(e.kind(), ClaimErrorKind::Cancelled);
    assert!(e.to_string().contains("nothing is held"), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    let held: Vec<u64> = store
        .list("orders")
        .unwrap()
        .iter()
        .filter(|i| i.state == NodeState::Held)
        .map(|i| i.node)
        .collect();
    assert_eq!(held, [0], "only the first holder's id is held");
}

/// The fence is checked on every path that changes the tick: batches, iterators, leases
/// and `try_next_id` stop at it too.
#[test]
fn every_minting_path_stops_at_the_fence() {
    let clock = ManualClock::new(T0_NS);
    let store = MemoryStore::with_clock(TTL, clock.clone());
    let g = Generator::builder(layout())
        .clock(clock.clone())
        .max_wait(Duration::ZERO)
        .policy(ClockPolicy::Continue)
        .build_claimed(
            Claims::new(store)
                .window(Duration::from_millis(3))
                .manual_renewal(),
        )
        .unwrap();
    let fence = layout().ticks_at(i128::from(T0_NS + 3_000_000)).unwrap();
    let mut buf = vec![flakeid::Id::default(); 10_000];
    // A batch fills the ticks up to the fence and returns the short count.
    let mut total = 0;
    loop {
        match g.next_ids(&mut buf) {
            Ok(n) => {
                assert!(buf[..n].iter().all(|&id| ticks(id) < fence));
                total += n;
                clock.advance(Duration::from_millis(1));
            }
            Err(e) => {
                assert_eq!(e, MintError::ReservationExpired { node: 0 });
                break;
            }
        }
    }
    assert_eq!(total, 3 * 4096);
    assert_eq!(
        g.try_next_id(),
        Err(MintError::ReservationExpired { node: 0 })
    );
    let mut it = g.ids(5);
    assert_eq!(
        it.next(),
        Some(Err(MintError::ReservationExpired { node: 0 }))
    );

    let mut lease = g.lease().unwrap();
    assert_eq!(
        lease.next_id(),
        Err(MintError::ReservationExpired { node: 0 })
    );
    // A renewal moves the fence; every path mints again.
    g.renew_claim().unwrap();
    assert!(lease.next_id().is_ok());
    drop(lease);
    assert!(g.next_id().is_ok());
}

/// Bad settings are refused before the store is touched: nothing is written.
#[test]
fn bad_settings_are_refused_and_nothing_is_written() {
    let dir = std::env::temp_dir().join(format!("flakeid-claims-bad-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let build = |claims: Claims| {
        Generator::builder(layout())
            .build_claimed(claims)
            .map(drop)
            .unwrap_err()
    };
    let store = || Claims::new(FileStore::open(&dir).unwrap());
    for (claims, want) in [
        (store().namespace("a/b"), "'/'"),
        (store().namespace("a\0b"), "NUL"),
        (store().namespace(""), "empty"),
        (store().namespace(".."), "path component"),
        (store().namespace("ä"), "letters"),
        (store().nodes(0..1025), "does not fit"),
        (store().nodes(3..3), "is empty"),
        (
            store().window(Duration::from_micros(999)),
            "shorter than the layout's tick",
        ),
    ] {
        let e = build(claims);
        assert!(e.to_string().contains(want), "{e} lacks {want:?}");
    }
    assert!(!dir.exists(), "a refused claim wrote {}", dir.display());
    // Renewal periods that cannot work are refused at build, each with what to change;
    // the default period (a third of the shorter of window and TTL) works with a TTL
    // shorter than the window.
    let leased = MemoryStore::with_clock(Duration::from_secs(2), ManualClock::new(T0_NS));
    let refused = |claims: Claims| {
        Generator::builder(layout())
            .clock(ManualClock::new(T0_NS))
            .build_claimed(claims)
            .map(drop)
            .unwrap_err()
    };
    let six = || Claims::new(leased.clone()).window(Duration::from_secs(6));
    let cases = [
        (
            refused(six().renew_every(Duration::from_secs(2))),
            ClaimError::RenewalTooRare {
                every: Duration::from_secs(2),
                ttl: Duration::from_secs(2),
            },
            "longer TTL",
        ),
        (
            refused(
                Claims::new(leased.clone())
                    .window(Duration::from_secs(1))
                    .renew_every(Duration::from_millis(1500)),
            ),
            ClaimError::RenewalSlowerThanWindow {
                every: Duration::from_millis(1500),
                window: Duration::from_secs(1),
            },
            "longer window",
        ),
        (
            refused(six().renew_every(Duration::ZERO)),
            ClaimError::RenewalTooOften {
                every: Duration::ZERO,
            },
            "minimum period",
        ),
        (
            refused(six().window(Duration::from_secs(999_999_999_999))),
            ClaimError::WindowTooLong {
                window: Duration::from_secs(999_999_999_999),
                max: flakeid::claim::MAX_WINDOW,
            },
            "limit of",
        ),
    ];
    for (e, want, says) in cases {
        assert_eq!(e, want);
        assert!(e.to_string().contains(says), "{e} lacks {says:?}");
        assert!(
            !e.to_string().contains("--"),
            "a library message names a flag: {e}"
        );
    }
    assert!(
        leased.list("default").unwrap().is_empty(),
        "nothing was claimed"
    );
    let g = Generator::builder(layout())
        .clock(ManualClock::new(T0_NS))
        .build_claimed(six())
        .expect("the default period renews three times per 2s lease");
    drop(g);
    for url in [
        "bogus:x",
        "nocolon",
        "file:",
        "memory:x",
        "static:-1",
        "etcd:127.0.0.1:2379",
        "zookeeper:127.0.0.1:2181",
    ] {
        assert!(
            matches!(flakeid::claim::open(url), Err(ClaimError::BadUrl { .. })),
            "{url}"
        );
    }
    // The core refuses every coordinator's URL, and any scheme it does not know, by
    // naming the one entry that opens them all.
    for url in [
        "etcd://127.0.0.1:2379",
        "etcds://127.0.0.1:2379",
        "zookeeper://127.0.0.1:2181",
        "postgres://u@127.0.0.1/db",
        "postgresql://u@127.0.0.1/db",
        "bogus:x",
    ] {
        let e = flakeid::claim::open(url).unwrap_err().to_string();
        assert!(e.contains("flakeid_stores::open"), "{url}: {e}");
    }
}

/// The file store: a second claim in the same directory takes the next id (the OS lock);
/// after a release the reservation is on disk; a restart whose clock reads an hour behind
/// that reservation is refused with the distance, and once the clock is there the IDs
/// continue above.
#[test]
fn file_store_restart_on_a_clock_set_back_an_hour() {
    let dir = std::env::temp_dir().join(format!("flakeid-claims-file-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let claimed_in = |clock: &ManualClock, pool: std::ops::Range<u64>| {
        Generator::builder(layout())
            .clock(clock.clone())
            .max_wait(Duration::from_secs(1))
            .build_claimed(
                Claims::new(FileStore::open(&dir).unwrap())
                    .nodes(pool)
                    .window(Duration::from_secs(5))
                    .pool_wait(Duration::ZERO)
                    .manual_renewal(),
            )
    };
    let claimed = |clock: &ManualClock| claimed_in(clock, 0..2);
    let clock = ManualClock::new(T0_NS);
    let first = claimed(&clock).unwrap();
    let second = claimed(&clock).unwrap();
    assert_eq!((first.node(), second.node()), (0, 1));
    assert!(matches!(
        claimed(&clock),
        Err(ClaimError::PoolFull { held: 2, .. })
    ));
    drop(second);
    let mut before = Vec::new();
    for _ in 0..50 {
        before.push(first.next_id().unwrap());
        clock.advance(Duration::from_millis(7));
    }
    first.renew_claim().unwrap();
    // Forget the generator without its release, as a crash would (the lock file stays
    // open and locked by this process, so take the other id and check the state file).
    let reserved = first.claim_status().reserved_until_unix_ns.unwrap();
    let state = std::fs::read_to_string(dir.join("default/node-0.state")).unwrap();
    assert!(
        state.contains(&format!("reserved_until_unix_ns {reserved}")),
        "{state}"
    );
    drop(first);

    // Restart: the clock reads an hour behind. Id 1 (released with nothing minted) is
    // usable, so a claim on the pool takes it; on a pool of id 0 alone, the claim fails.
    let back = ManualClock::new(T0_NS - 3_600_000_000_000);
    assert_eq!(claimed(&back).unwrap().node(), 1);
    match claimed_in(&back, 0..1) {
        Err(ClaimError::ClockBehind {
            node: 0, behind, ..
        }) => {
            assert!(behind > Duration::from_secs(3600), "{behind:?}");
        }
        other => panic!("expected ClockBehind, got {other:?}"),
    }
    // The clock catches up: IDs continue above.
    back.set(T0_NS + 400_000_000);
    let restarted = claimed_in(&back, 0..1).unwrap();
    assert_eq!(restarted.node(), 0);
    let after = restarted.next_id().unwrap();
    assert!(after > *before.last().unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The file store keeps its files to their owner (directories 0700, files 0600); a symbolic
/// link planted as a state or lock file is never followed (its id is skipped and listed as
/// corrupt, the link's target untouched); a namespace directory others may write to is
/// refused; with `share=group`, the group may write and nobody else.
#[cfg(unix)]
#[test]
fn the_file_store_is_owner_only_and_follows_no_planted_link() {
    use std::os::unix::fs::PermissionsExt;
    let root = std::env::temp_dir().join(format!("flakeid-perms-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let dir = root.join("store");
    let store = FileStore::open(&dir).unwrap();
    let request = flakeid::claim::store::ClaimRequest {
        namespace: "orders",
        pool: 0..1,
        instance: "a",
    };
    let claimed = store.claim(&request).unwrap();
    store.renew(&claimed, 1).unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir.join("orders")), 0o700);
    for entry in std::fs::read_dir(dir.join("orders")).unwrap() {
        let path = entry.unwrap().path();
        assert_eq!(mode(&path), 0o600, "{}", path.display());
    }
    assert!(store.warnings().is_empty(), "{:?}", store.warnings());
    store.release(&claimed, 1).unwrap();

    // A link planted as node 1's state file, and as node 2's lock file, each pointing at a
    // file of the victim's: each id is skipped, listed as corrupt with what is wrong.
    let victim = root.join("victim");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("orders/node-1.state")).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("orders/node-2.lock")).unwrap();
    for node in [1, 2] {
        let request = flakeid::claim::store::ClaimRequest {
            pool: node..node + 1,
            ..request.clone()
        };
        match store.claim(&request) {
            Err(ClaimError::PoolFull { corrupt, .. }) => assert_eq!(corrupt, [node]),
            other => panic!("node {node}: {other:?}"),
        }
    }
    let listed = store.list("orders").unwrap();
    for node in [1, 2] {
        let info = listed.iter().find(|i| i.node == node).unwrap();
        assert_eq!(info.state, flakeid::claim::NodeState::Corrupt, "{info:?}");
        let problem = info.problem.as_deref().unwrap();
        assert!(problem.contains("symbolic link"), "{problem}");
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");

    // A namespace directory others may write to: refused, naming it and the fix.
    std::fs::set_permissions(dir.join("orders"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = store.claim(&request).unwrap_err();
    assert_eq!(e.kind(), flakeid::claim::ClaimErrorKind::Access, "{e}");
    let text = e.to_string();
    assert!(
        text.contains("orders") && text.contains("writable by every user") && text.contains("777"),
        "{text}"
    );
    std::fs::set_permissions(dir.join("orders"), std::fs::Permissions::from_mode(0o770)).unwrap();
    let e = store.claim(&request).unwrap_err().to_string();
    assert!(
        e.contains("writable by its group") && e.contains("share=group"),
        "{e}"
    );

    // Told otherwise: shared with the group (less the umask), and only a directory
    // others outside the group may write to is refused.
    let shared_dir = root.join("shared");
    let shared =
        flakeid::claim::open(&format!("file:{}?share=group", shared_dir.display())).unwrap();
    let claimed = shared.claim(&request).unwrap();
    shared.renew(&claimed, 1).unwrap();
    let ns = shared_dir.join("orders");
    assert_eq!(mode(&ns) & 0o707, 0o700, "{:o}", mode(&ns));
    assert_ne!(
        mode(&ns) & 0o050,
        0,
        "the group cannot enter: {:o}",
        mode(&ns)
    );
    for entry in std::fs::read_dir(&ns).unwrap() {
        let path = entry.unwrap().path();
        let m = mode(&path);
        assert!(
            m & 0o607 == 0o600 && m & 0o040 != 0,
            "{}: {m:o}",
            path.display()
        );
    }
    std::fs::set_permissions(&ns, std::fs::Permissions::from_mode(0o770)).unwrap();
    shared.renew(&claimed, 2).unwrap();
    shared.release(&claimed, 2).unwrap();
    let again = shared.claim(&request).unwrap();
    std::fs::set_permissions(&ns, std::fs::Permissions::from_mode(0o772)).unwrap();
    let e = shared.claim(&request).unwrap_err().to_string();
    assert!(e.contains("writable by every user"), "{e}");
    std::fs::set_permissions(&ns, std::fs::Permissions::from_mode(0o770)).unwrap();
    shared.release(&again, 2).unwrap();
    let e =
        flakeid::claim::open(&format!("file:{}?share=world", shared_dir.display())).unwrap_err();
    assert!(e.to_string().contains("share= takes owner"), "{e}");
    std::fs::remove_dir_all(&root).ok();
}

/// A file store that meets an OS error keeps it as the claim error's source: a
/// directory name longer than the file system takes is `ENAMETOOLONG`.
#[test]
fn a_file_store_error_keeps_the_os_error_as_its_source() {
    use std::error::Error as _;
    let root = std::env::temp_dir().join(format!("flakeid-source-{}", std::process::id()));
    let store = FileStore::open(root.join("d".repeat(300))).unwrap();
    let request = flakeid::claim::store::ClaimRequest {
        namespace: "orders",
        pool: 0..1,
        instance: "a",
    };
    let e = store.claim(&request).unwrap_err();
    assert!(
        matches!(&e, ClaimError::Io { reason, .. } if reason.contains("File name too long")),
        "{e}"
    );
    let os = e.source().and_then(|s| s.downcast_ref::<std::io::Error>());
    assert_eq!(os.and_then(std::io::Error::raw_os_error), Some(36), "{e:?}");
    let _ = std::fs::remove_dir_all(&root);
}
