//! Real-clock stress: threads minting from shared generators, every ID collected and checked
//! for duplicates and per-thread order. Twitter's own suite minted 2 million; this mints
//! 24 million across the presets, a wide custom layout and a sharded generator (singles,
//! batches, the iterator and leases) in a few seconds.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use flakeid::{Generator, Id, Layout};

/// `threads` threads mint `per_thread` IDs each from `generators` (thread `t` uses
/// generator `t % generators.len()`), half one at a time and half in batches of 100.
fn hammer(generators: Vec<Generator>, threads: usize, per_thread: usize) {
    let generators = Arc::new(generators);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let gens = Arc::clone(&generators);
            std::thread::spawn(move || {
                let g = &gens[t % gens.len()];
                let mut ids = Vec::with_capacity(per_thread);
                let mut batch = [Id::default(); 100];
                while ids.len() < per_thread {
                    if ids.len() % 2_000 < 1_000 {
                        ids.push(g.next_id().unwrap().get());
                    } else {
                        let want = batch.len().min(per_thread - ids.len());
                        let n = g.next_ids(&mut batch[..want]).unwrap();
                        ids.extend(batch[..n].iter().map(|id| id.get()));
                    }
                }
                ids
            })
        })
        .collect();
    let mut all = Vec::with_capacity(threads * per_thread);
    for h in handles {
        let ids = h.join().unwrap();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "a thread's IDs must strictly increase"
        );
        all.extend(ids);
    }
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "{} duplicate IDs", n - all.len());
}

fn build(layout: Layout, node: u64) -> Generator {
    Generator::builder(layout)
        .node(node)
        .max_wait(Duration::from_secs(5))
        .build()
        .unwrap()
}

#[test]
fn snowflake_four_threads_two_generators_eight_million() {
    let l = Layout::snowflake();
    hammer(vec![build(l, 1), build(l, 2)], 4, 2_000_000);
}

#[test]
fn sonyflake_three_threads_one_generator() {
    // 25,600 IDs/s per node: 60,000 IDs take about 2.3 s, crossing ~230 ticks of 10 ms.
    hammer(vec![build(Layout::sonyflake(), 2565)], 3, 20_000);
}

#[test]
fn wide_layout_two_threads_ten_million() {
    let l: Layout = "seq=22,node=4,epoch=2025-01-01T00:00:00Z".parse().unwrap();
    hammer(vec![build(l, 3)], 2, 5_000_000);
}

/// Sharded on the coarse clock: 6 threads on 3 shards of the Snowflake layout, minting
/// singles, batches and through the iterator; checked across shards too.
#[test]
fn sharded_coarse_clock_six_threads_six_million() {
    use flakeid::ShardedGenerator;
    use flakeid::clock::CoarseClock;
    let sharded = Arc::new(
        ShardedGenerator::builder(Layout::snowflake())
            .datacenter(7)
            .workers(0..3)
            .shards(3)
            .max_wait(Duration::from_secs(5))
            .clock(CoarseClock::new())
            .build()
            .unwrap(),
    );
    let handles: Vec<_> = (0..6)
        .map(|t| {
            let s = Arc::clone(&sharded);
            std::thread::spawn(move || {
                let mut ids = Vec::with_capacity(1_000_000);
                while ids.len() < 1_000_000 {
                    match ids.len() / 1_000 % 3 {
                        0 => ids.push(s.next_id().unwrap().get()),
                        1 => ids.extend(s.ids(500).map(|id| id.unwrap().get())),
                        _ if t % 2 == 0 => {
                            // Lease the home shard for a while (the other thread on it
                            // waits), as a pinned worker would.
                            let mut lease = loop {
                                match s.home_shard().lease() {
                                    Ok(lease) => break lease,
                                    Err(_) => std::thread::yield_now(),
                                }
                            };
                            ids.extend((0..500).map(|_| lease.next_id().unwrap().get()));
                        }
                        _ => {
                            let mut batch = [Id::default(); 500];
                            let n = s.next_ids(&mut batch).unwrap();
                            ids.extend(batch[..n].iter().map(|id| id.get()));
                        }
                    }
                }
                ids
            })
        })
        .collect();
    let mut all = Vec::new();
    for h in handles {
        let ids = h.join().unwrap();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "per-thread order");
        all.extend(ids);
    }
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "{} duplicate IDs", n - all.len());
    assert!(n >= 6_000_000);
}

/// Leases taken in a loop do not starve shared `next_id`: a shared minter that waits for a
/// lease to end gets the word before any new lease, so a lease taken right as the old one
/// ends mints after the waiter, never before.
#[test]
fn a_waiting_shared_minter_goes_before_the_next_lease() {
    let g = Generator::builder(Layout::snowflake())
        .node(1)
        .max_wait(Duration::from_secs(5))
        .build()
        .unwrap();
    for round in 0..20 {
        let mut held = g.lease().unwrap();
        held.next_id().unwrap();
        let (waiter_id, next_lease_id) = std::thread::scope(|s| {
            let waiter = s.spawn(|| g.next_id().unwrap());
            // Wait (bounded) until the waiter is waiting on the lease.
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while flakeid::__private::lease_waiters(&g) == 0 {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the waiter never waited"
                );
                std::thread::yield_now();
            }
            drop(held);
            // A lease taken at once, as a leasing loop would.
            let next = g.lease().ok().map(|mut l| l.next_id().unwrap());
            (waiter.join().unwrap(), next)
        });
        if let Some(leased) = next_lease_id {
            assert!(
                waiter_id < leased,
                "round {round}: the next lease minted {leased} before the waiter's {waiter_id}"
            );
        }
    }
}

/// Eight threads leasing in a loop beside eight threads of shared `next_id`: every shared
/// call succeeds, and no ID is handed out twice.
#[test]
fn leases_in_a_loop_beside_shared_minting() {
    let g = Generator::builder(Layout::snowflake())
        .node(1)
        .max_wait(Duration::from_secs(5))
        .build()
        .unwrap();
    let stop = AtomicBool::new(false);
    let (shared, leased) = std::thread::scope(|s| {
        let leasers: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    let mut ids = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        if let Ok(mut lease) = g.lease() {
                            for _ in 0..10 {
                                ids.push(lease.next_id().unwrap());
                            }
                        }
                    }
                    ids
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        let minters: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    (0..2000)
                        .map(|_| g.next_id().expect("a shared next_id starved by leases"))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let shared: Vec<_> = minters
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        stop.store(true, Ordering::Relaxed);
        let leased: Vec<_> = leasers
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        (shared, leased)
    });
    assert_eq!(shared.len(), 16_000);
    let all: HashSet<_> = shared.iter().chain(&leased).collect();
    assert_eq!(all.len(), shared.len() + leased.len(), "a duplicate");
}
