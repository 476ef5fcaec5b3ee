//! Sharded minting, leases, the batch iterator and the coarse clock.

mod common;
use common::*;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use flakeid::clock::{CoarseClock, ManualClock};
use flakeid::error::Field;
use flakeid::{Clock, Error, Generator, Id, Layout, MintError, ShardedGenerator};

fn wide() -> Layout {
    "seq=22,node=4,epoch=2025-01-01T00:00:00Z".parse().unwrap()
}

#[test]
fn misuse_gets_a_typed_error() {
    let snowflake = || ShardedGenerator::builder(Layout::snowflake());
    assert_eq!(
        snowflake()
            .datacenter(1)
            .workers(0..32)
            .shards(0)
            .build()
            .unwrap_err(),
        Error::NoShards
    );
    assert_eq!(
        snowflake()
            .datacenter(1)
            .workers(0..3)
            .shards(4)
            .build()
            .unwrap_err(),
        Error::NodeBlockTooSmall {
            shards: 4,
            nodes: 3
        }
    );
    assert_eq!(
        snowflake()
            .datacenter(1)
            .workers(std::ops::Range { start: 5, end: 3 })
            .shards(1)
            .build()
            .unwrap_err(),
        Error::NodeBlockTooSmall {
            shards: 1,
            nodes: 0
        }
    );
    // Worker 32 does not fit in 5 bits: the block runs past the layout.
    assert_eq!(
        snowflake()
            .datacenter(1)
            .workers(30..40)
            .shards(3)
            .build()
            .unwrap_err(),
        Error::OutOfRange {
            field: Field::Worker,
            value: 32,
            max: 31
        }
    );
    assert!(matches!(
        snowflake().datacenter(32).workers(0..4).shards(4).build(),
        Err(Error::OutOfRange {
            field: Field::Datacenter,
            ..
        })
    ));
    assert_eq!(
        snowflake().workers(0..4).shards(4).build().unwrap_err(),
        Error::NodeMissing
    );
    assert_eq!(
        snowflake().shards(2).build().unwrap_err(),
        Error::NodeMissing
    );
    assert!(matches!(
        ShardedGenerator::builder(Layout::sonyflake())
            .nodes(65_534..65_540)
            .shards(3)
            .build(),
        Err(Error::OutOfRange { value: 65_536, .. })
    ));
    // No node bits: one node, so one shard at most.
    let nodeless: Layout = "seq=12,node=0".parse().unwrap();
    assert!(
        ShardedGenerator::builder(nodeless)
            .shards(1)
            .build()
            .is_ok()
    );
    assert_eq!(
        ShardedGenerator::builder(nodeless)
            .shards(2)
            .build()
            .unwrap_err(),
        Error::NodeBlockTooSmall {
            shards: 2,
            nodes: 1
        }
    );
}

#[test]
fn shards_take_the_block_in_order_and_default_to_one_per_core() {
    let s = ShardedGenerator::builder(Layout::snowflake())
        .datacenter(2)
        .workers(10..32)
        .shards(5)
        .build()
        .unwrap();
    let nodes: Vec<u64> = s.shards().iter().map(|g| g.node()).collect();
    let expected: Vec<u64> = (10..15)
        .map(|w| Layout::snowflake().node_of(2, w).unwrap())
        .collect();
    assert_eq!(nodes, expected);
    let per_core = ShardedGenerator::builder(Layout::sonyflake())
        .nodes(100..200)
        .build()
        .unwrap();
    assert_eq!(per_core.len(), flakeid::affinity::cores());
    assert!(!per_core.is_empty());
}

/// More threads than shards: IDs unique, each thread's strictly increasing and all from
/// its home shard, and across shards ordered by tick.
#[test]
fn more_threads_than_shards() {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 100_000;
    let s = Arc::new(
        ShardedGenerator::builder(wide())
            .nodes(3..16)
            .shards(3)
            .clock(CoarseClock::new())
            .build()
            .unwrap(),
    );
    let barrier = Arc::new(Barrier::new(THREADS));
    let per_thread: Vec<(u64, Vec<Id>)> = (0..THREADS)
        .map(|t| {
            let (s, barrier) = (s.clone(), barrier.clone());
            std::thread::spawn(move || {
                // Half the threads mint before they ask for their home shard: the first
                // mint finds it for them.
                let first = (t % 2 == 0).then(|| s.next_id().unwrap());
                let home = s.home();
                assert_eq!(home, s.home(), "a thread's home shard is fixed");
                barrier.wait();
                let ids: Vec<Id> = first
                    .into_iter()
                    .chain((0..PER_THREAD).map(|_| s.next_id().unwrap()))
                    .take(PER_THREAD)
                    .collect();
                (s.shards()[home].node(), ids)
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    let layout = wide();
    let mut all = HashSet::new();
    let mut homes = HashSet::new();
    for (node, ids) in &per_thread {
        homes.insert(*node);
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "per-thread order");
        for id in ids {
            assert_eq!(layout.decompose(id.get()).unwrap().node, *node);
            assert!(all.insert(*id), "duplicate {id}");
        }
    }
    assert_eq!(all.len(), THREADS * PER_THREAD);
    assert_eq!(homes.len(), 3, "8 threads spread over all 3 shards");
    // Across shards: an ID from a later tick is larger.
    let mut by_id: Vec<Id> = all.into_iter().collect();
    by_id.sort();
    let ticks: Vec<u64> = by_id
        .iter()
        .map(|id| layout.decompose(id.get()).unwrap().ticks)
        .collect();
    assert!(ticks.windows(2).all(|w| w[0] <= w[1]));
}

/// Threads that come and go give their fast-path slot back: a thread started after 1,000
/// short-lived threads have each minted and ended still holds a slot (and so mints on
/// the fast path, not through the slow way every thread without one takes).
#[test]
fn a_thread_after_a_thousand_short_lived_ones_keeps_the_fast_path() {
    let s = Arc::new(
        ShardedGenerator::builder(wide())
            .nodes(0..2)
            .shards(2)
            .build()
            .unwrap(),
    );
    let mut all = HashSet::new();
    for _ in 0..1_000 {
        let s = s.clone();
        let (id, slot) = std::thread::spawn(move || {
            let id = s.next_id().unwrap();
            (id, flakeid::__private::thread_slot())
        })
        .join()
        .unwrap();
        assert!(slot.is_some(), "a short-lived thread found no slot");
        assert!(all.insert(id), "duplicate {id}");
    }
    let s2 = s.clone();
    let (ids, slot) = std::thread::spawn(move || {
        let ids: Vec<Id> = (0..1_000).map(|_| s2.next_id().unwrap()).collect();
        (ids, flakeid::__private::thread_slot())
    })
    .join()
    .unwrap();
    assert!(
        slot.is_some_and(|slot| slot < 255),
        "the thread after 1,000 others has no fast-path slot: {slot:?}"
    );
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "per-thread order");
    assert!(
        ids.iter().all(|id| all.insert(*id)),
        "a duplicate across threads"
    );
}

#[test]
fn a_lease_excludes_everyone_else_and_continues_the_sequence() {
    let clock = ManualClock::from_unix_ms(T0_MS);
    let g = Generator::builder(tiny())
        .node(1)
        // Long enough that the mover thread below, however late it wakes on a loaded
        // machine, moves the clock before the lease's wait for the next tick gives up.
        .max_wait(Duration::from_millis(500))
        .clock(clock.clone())
        .build()
        .unwrap();
    let a = g.next_id().unwrap();
    let mut lease = g.lease().unwrap();
    assert!(g.is_leased());
    assert_eq!(g.lease().unwrap_err(), MintError::Leased);
    assert_eq!(g.try_next_id().unwrap_err(), MintError::Leased);
    let started = std::time::Instant::now();
    assert_eq!(g.next_id().unwrap_err(), MintError::Leased);
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "waited the bound"
    );
    let b = lease.next_id().unwrap();
    let c = lease.next_id().unwrap();
    assert!(a < b && b < c);
    // Exhausting the tick under a lease waits for the next one, as the shared path does.
    let mover = {
        let clock = clock.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            clock.advance(Duration::from_millis(1));
        })
    };
    let d = lease.next_id().unwrap();
    let e = lease.next_id().unwrap();
    mover.join().unwrap();
    let (pd, pe) = (
        tiny().decompose(d.get()).unwrap(),
        tiny().decompose(e.get()).unwrap(),
    );
    assert_eq!(pd.sequence, 3);
    assert_eq!((pe.ticks, pe.sequence), (pd.ticks + 1, 0));
    let mut batch = [Id::default(); 3];
    assert_eq!(lease.next_ids(&mut batch).unwrap(), 3);
    assert!(e < batch[0] && batch.windows(2).all(|w| w[0] < w[1]));
    let last_leased = lease.next_id();
    drop(lease);
    assert!(!g.is_leased());
    // The 4-slot tick is spent; after the clock moves the shared path carries on.
    clock.advance(Duration::from_millis(1));
    let f = g.next_id().unwrap();
    assert!(f > batch[2]);
    if let Ok(l) = last_leased {
        assert!(f > l);
    }
    assert_eq!(g.last_id(), f);
}

/// Returns once a shared minter of `g` waits for its lease to end (bounded: 10 s).
fn wait_for_a_lease_waiter<C: flakeid::Clock, G: flakeid::generator::TickGate>(
    g: &flakeid::Generator<C, G>,
) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while flakeid::__private::lease_waiters(g) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no thread waited for the lease"
        );
        std::thread::yield_now();
    }
}

/// A thread that meets a lease waits for it to end (it does not fail, and does not mint
/// past it), then mints after the lease's IDs.
#[test]
fn a_lease_ending_lets_waiting_threads_through() {
    let g = Arc::new(patient_wide());
    let mut lease = g.lease().unwrap();
    let leased = lease.next_id().unwrap();
    let dropped = Arc::new(AtomicBool::new(false));
    let started = Arc::new(Barrier::new(2));
    let waiter = {
        let (g, dropped, started) = (g.clone(), dropped.clone(), started.clone());
        std::thread::spawn(move || {
            started.wait();
            assert!(g.is_leased(), "the lease is held when the waiter starts");
            let id = g.next_id();
            (id, dropped.load(Ordering::SeqCst))
        })
    };
    // The waiter is running, and the lease held, before the clock of this wait starts;
    // the lease ends once the waiter waits for it.
    started.wait();
    wait_for_a_lease_waiter(&g);
    dropped.store(true, Ordering::SeqCst);
    drop(lease);
    let (id, after_drop) = waiter.join().unwrap();
    assert!(after_drop, "the waiter returned while the lease was held");
    assert!(id.unwrap() > leased);
}

/// A generator that waits up to 5 s: long enough for any lease test on a loaded machine.
fn patient_wide() -> Generator {
    Generator::builder(wide())
        .node(2)
        .max_wait(Duration::from_secs(5))
        .build()
        .unwrap()
}

/// A thread waiting for a lease sleeps: over a 300 ms lease it uses a small share of a
/// core (a yield-spinning waiter uses most of one). Reads the thread's CPU time from
/// Linux's schedstat; elsewhere it says so and checks only that the wait ends.
#[test]
fn a_thread_waiting_for_a_lease_burns_no_core() {
    fn thread_cpu_ns() -> Option<u64> {
        let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
        text.split_whitespace().next()?.parse().ok()
    }
    let g = Arc::new(patient_wide());
    let lease = g.lease().unwrap();
    let waiter = {
        let g = g.clone();
        std::thread::spawn(move || {
            let before = thread_cpu_ns();
            let started = std::time::Instant::now();
            let id = g.next_id();
            let wall = started.elapsed();
            let cpu = before.zip(thread_cpu_ns()).map(|(b, a)| a - b);
            (id, wall, cpu)
        })
    };
    // The waiter waits for the lease for 300 ms at least.
    wait_for_a_lease_waiter(&g);
    std::thread::sleep(Duration::from_millis(300));
    drop(lease);
    let (id, wall, cpu) = waiter.join().unwrap();
    id.unwrap();
    println!("waited {wall:?}, on the CPU for {cpu:?} ns");
    match cpu {
        Some(cpu) => assert!(
            cpu < wall.as_nanos() as u64 / 4,
            "the waiter used {cpu} ns of CPU over {wall:?}"
        ),
        None => println!("no /proc/thread-self/schedstat here: CPU time not checked"),
    }
}

#[test]
fn leases_and_shared_minting_race_without_duplicates() {
    let g = Arc::new(
        Generator::builder(tiny())
            .node(3)
            .clock(CoarseClock::new())
            .max_wait(Duration::from_secs(5))
            .build()
            .unwrap(),
    );
    let workers: Vec<_> = (0..4)
        .map(|t| {
            let g = g.clone();
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                for round in 0..200 {
                    if (t + round) % 2 == 0
                        && let Ok(mut lease) = g.lease()
                    {
                        for _ in 0..5 {
                            ids.push(lease.next_id().unwrap());
                        }
                        continue;
                    }
                    ids.push(g.next_id().unwrap());
                }
                ids
            })
        })
        .collect();
    let mut all = HashSet::new();
    for w in workers {
        let ids = w.join().unwrap();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        for id in ids {
            assert!(all.insert(id), "duplicate {id}");
        }
    }
    assert!(all.len() >= 800);
}

/// A generator of [`tiny`] on `clock` that never waits for the clock.
fn impatient(clock: &ManualClock, node: u64) -> Generator<ManualClock> {
    Generator::builder(tiny())
        .node(node)
        .max_wait(Duration::ZERO)
        .clock(clock.clone())
        .build()
        .unwrap()
}

#[test]
fn the_iterator_reserves_runs_and_stops_at_an_error() {
    let clock = ManualClock::from_unix_ms(T0_MS);
    let g = impatient(&clock, 1);
    let mut it = g.ids(10);
    assert_eq!(it.size_hint(), (0, Some(10)));
    let first = it.next().unwrap().unwrap();
    assert_eq!(
        it.size_hint(),
        (3, Some(9)),
        "the rest of the tick is reserved"
    );
    let run: Vec<Id> = it.by_ref().take(3).map(Result::unwrap).collect();
    assert!(first < run[0] && run.windows(2).all(|w| w[0] < w[1]));
    assert!(matches!(
        it.next(),
        Some(Err(MintError::WaitTooLong { .. }))
    ));
    assert!(it.next().is_none(), "fused after the error");

    clock.advance(Duration::from_millis(1));
    let more: Vec<Id> = g.ids(4).map(Result::unwrap).collect();
    assert_eq!(more.len(), 4);
    assert!(more[0] > run[2]);
    assert_eq!(g.ids(0).count(), 0);
}

#[test]
fn the_iterator_crosses_ticks_on_the_real_clock() {
    let g = Generator::builder(Layout::snowflake())
        .datacenter(1)
        .worker(1)
        .build()
        .unwrap();
    let ids: Vec<Id> = g.ids(20_000).map(Result::unwrap).collect();
    assert_eq!(ids.len(), 20_000);
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    let layout = Layout::snowflake();
    let ticks = |id: &Id| layout.decompose(id.get()).unwrap().ticks;
    assert!(ticks(&ids[19_999]) - ticks(&ids[0]) >= 4, "4096 per tick");
    assert!(g.next_id().unwrap() > ids[19_999]);
}

#[test]
fn the_coarse_clock_lags_a_little_and_never_leads() {
    let c = CoarseClock::with_interval(Duration::from_micros(200));
    let mut last = 0;
    for _ in 0..200_000 {
        let recent = c.recent_unix_ns();
        let now = c.unix_ns();
        assert!(recent <= now, "{recent} > {now}");
        assert!(recent >= last, "went back");
        last = recent;
    }
    // Without precise reads, the background thread alone moves it on. (How soon depends on
    // the scheduler; the bound is loose so that a loaded machine does not fail the test.)
    let before = c.recent_unix_ns();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while c.recent_unix_ns() - before < 10_000_000 {
        assert!(
            std::time::Instant::now() < deadline,
            "the ticker did not move the reading"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let after = c.recent_unix_ns();
    assert!(after <= c.unix_ns());
}

#[test]
fn ids_on_the_coarse_clock_carry_the_time_within_the_lag() {
    let layout = Layout::snowflake();
    let g = Generator::builder(layout)
        .datacenter(0)
        .worker(9)
        .clock(CoarseClock::new())
        .build()
        .unwrap();
    let wall = || flakeid::clock::SystemClock.unix_ns() / 1_000_000;
    let before = wall();
    let ids: Vec<Id> = (0..200_000).map(|_| g.next_id().unwrap()).collect();
    let after = wall();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    for id in [ids[0], ids[100_000], ids[199_999]] {
        let ms = layout
            .unix_ms_of(layout.decompose(id.get()).unwrap().ticks)
            .unwrap();
        // The coarse reading lags by about one interval (1 ms); the bound allows for a
        // ticker that a loaded machine wakes late. It never leads.
        assert!(
            ms + 1_000 >= before && ms <= after + 1,
            "{ms} not in {before}..={after}"
        );
    }
}

#[test]
fn internal_and_external_iteration_agree() {
    let clock = ManualClock::from_unix_ms(T0_MS);
    let g = impatient(&clock, 2);
    // fold over 6 with 4 per tick: 4 IDs, then the error, then nothing more.
    let mut seen = Vec::new();
    g.ids(6).for_each(|r| seen.push(r));
    assert_eq!(seen.len(), 5);
    assert!(seen[..4].iter().all(Result::is_ok));
    assert!(matches!(seen[4], Err(MintError::WaitTooLong { .. })));
    clock.advance(Duration::from_millis(1));
    // A partly consumed iterator folds the rest of its run, then reserves more.
    let mut it = g.ids(4);
    let first = it.next().unwrap().unwrap();
    let rest: Vec<Id> = it.map(Result::unwrap).collect();
    assert_eq!(rest.len(), 3);
    assert!(first < rest[0] && rest.windows(2).all(|w| w[0] < w[1]));
    clock.advance(Duration::from_millis(1));
    let mut it = g.ids(3);
    let a = it.next().unwrap().unwrap();
    let sum: u64 = it.fold(0, |acc, r| acc + (r.unwrap().get() - a.get()));
    let step = 1; // time|node|sequence: consecutive sequence numbers are 1 apart
    assert_eq!(sum, step + 2 * step);
}

/// A lease's `ids` mints with stores, like `Generator::ids`; every mint after it, by any
/// call of the lease (`try_next_id`, `next_id`, `next_ids`) or by the shared path after
/// the lease, is larger: the iterator cannot leave the lease minting from a stale copy.
#[test]
fn a_lease_iterates_and_carries_on_after_its_iterator() {
    let clock = ManualClock::from_unix_ms(T0_MS);
    let g = Generator::builder(wide())
        .node(2)
        .clock(clock.clone())
        .build()
        .unwrap();
    let mut lease = g.lease().unwrap();
    let first = lease.next_id().unwrap();
    let ids: Vec<Id> = lease.ids(100).collect::<Result<_, _>>().unwrap();
    assert_eq!(ids.len(), 100);
    assert!(ids[0] > first && ids.windows(2).all(|w| w[0] < w[1]));
    let after_try = lease.try_next_id().unwrap();
    assert!(after_try > ids[99], "{after_try} after {}", ids[99]);
    // A partly used iterator, then the other calls.
    let mut it = lease.ids(10);
    let a = it.next().unwrap().unwrap();
    let b = lease.next_id().unwrap();
    assert!(a > after_try && b > a);
    let mut batch = [Id::default(); 5];
    assert_eq!(lease.next_ids(&mut batch).unwrap(), 5);
    assert!(batch[0] > b);
    // An iterator made and never used: still no stale copy.
    let _unused = lease.ids(3);
    let c = lease.try_next_id().unwrap();
    assert!(c > batch[4]);
    drop(lease);
    assert!(g.next_id().unwrap() > c);
}

/// What a single generator's builder has, the sharded one has per shard: the node-id hook
/// and a resume point per shard (each ID to the shard of its node).
#[test]
fn the_sharded_builder_checks_nodes_and_resumes_each_shard() {
    let clock = ManualClock::from_unix_ms(T0_MS);
    let build = || {
        ShardedGenerator::builder(wide())
            .nodes(4..8)
            .shards(3)
            .clock(clock.clone())
    };
    assert_eq!(
        build().check_node(|n| n != 5).build().unwrap_err(),
        Error::NodeRejected { node: 5 }
    );
    let first = build().build().unwrap();
    let last: Vec<Id> = first
        .shards()
        .iter()
        .map(|g| {
            g.next_id().unwrap();
            g.next_id().unwrap()
        })
        .collect();
    drop(first);
    clock.step_back(std::time::Duration::from_millis(100));
    let resumed = build()
        .resume_after(last.iter().rev().copied())
        .build()
        .unwrap();
    for (shard, last) in resumed.shards().iter().zip(&last) {
        assert!(shard.next_id().unwrap() > *last, "shard {}", shard.node());
    }
    // The private-IP block: this host's machine id and the ids after it, or the error
    // that names the missing address (as in this sandbox).
    match ShardedGenerator::builder(Layout::sonyflake())
        .machine_ids_from_private_ip()
        .shards(2)
        .build()
    {
        Ok(s) => assert_eq!(s.shards()[1].node(), s.shards()[0].node() + 1),
        Err(e) => assert_eq!(e, Error::NoPrivateIp),
    }
    let stranger = wide().compose(1, 0, 9).unwrap();
    assert!(matches!(
        build().resume_after([Id::new(stranger)]).build(),
        Err(Error::ResumeOtherNode { id_node: 9, .. })
    ));
}
