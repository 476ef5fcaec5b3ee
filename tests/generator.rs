//! The generator against a manual clock: the reference behaviours, each policy, the edges.

mod common;
use common::*;

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use flakeid::clock::ManualClock;
use flakeid::error::Field;
use flakeid::generator::FastPath;
use flakeid::layout::TWEPOCH_MS;
use flakeid::{Clock, ClockPolicy, Error, Generator, GeneratorBuilder, Id, Layout, MintError};

/// A generator on node 5 under `policy`, reading `clock`.
fn builder(
    layout: Layout,
    policy: ClockPolicy,
    clock: &ManualClock,
) -> GeneratorBuilder<ManualClock> {
    Generator::builder(layout)
        .node(5)
        .policy(policy)
        .clock(clock.clone())
}

/// A generator whose waits give up after 20 ms: for the cases where the clock stands still
/// and the wait must end in an error.
fn generator(layout: Layout, policy: ClockPolicy, clock: &ManualClock) -> Generator<ManualClock> {
    builder(layout, policy, clock)
        .max_wait(Duration::from_millis(20))
        .build()
        .unwrap()
}

/// A generator that carries on after `last` (0: from scratch) and waits up to 5 s: for the cases where
/// another thread moves the clock, so that a slow, loaded machine cannot turn a late
/// wake-up into a failure.
fn patient(
    layout: Layout,
    policy: ClockPolicy,
    clock: &ManualClock,
    last: u64,
) -> Generator<ManualClock> {
    patient_on(layout, policy, clock.clone(), last)
}

/// [`patient`] on any clock.
fn patient_on<C: Clock>(layout: Layout, policy: ClockPolicy, clock: C, last: u64) -> Generator<C> {
    let b = Generator::builder(layout)
        .node(5)
        .policy(policy)
        .clock(clock)
        .max_wait(Duration::from_secs(5));
    // 0 means a fresh start (ID 0 is node 0's, not this node's).
    let b = if last == 0 {
        b
    } else {
        b.resume_after(flakeid::Id::new(last))
    };
    b.build().unwrap()
}

/// A manual clock that counts its readings, so that a test moves the clock once a minting
/// thread is inside its wait (which reads the clock at every turn) rather than after a
/// sleep that may end before the thread even began to wait.
#[derive(Clone)]
struct Watched {
    clock: ManualClock,
    reads: Arc<AtomicU64>,
}

impl Clock for Watched {
    fn unix_ns(&self) -> u64 {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.clock.unix_ns()
    }
}

impl Watched {
    fn new(clock: &ManualClock) -> Watched {
        Watched {
            clock: clock.clone(),
            reads: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Waits until the clock has been read `more` times since this call began (bounded:
    /// panics after 10 s): a thread that reads it that often is turning in its wait.
    fn await_reads(&self, more: u64) {
        let goal = self.reads.load(Ordering::SeqCst) + more;
        let bound = std::time::Instant::now() + Duration::from_secs(10);
        while self.reads.load(Ordering::SeqCst) < goal {
            assert!(
                std::time::Instant::now() < bound,
                "the minting thread never waited"
            );
            std::thread::yield_now();
        }
    }
}

const POLICIES: [ClockPolicy; 3] = [
    ClockPolicy::Reject,
    ClockPolicy::Continue,
    ClockPolicy::Wait,
];

#[test]
fn first_id_carries_the_clock_tick_sequence_zero_and_the_node() {
    let clock = ManualClock::from_unix_ms(T0_MS);
    let g = Generator::builder(Layout::snowflake())
        .datacenter(3)
        .worker(17)
        .clock(clock)
        .build()
        .unwrap();
    let id = g.next_id().unwrap();
    let p = Layout::snowflake().decompose(id.get()).unwrap();
    assert_eq!((p.ticks, p.sequence), (504_613_025_343, 0));
    assert_eq!(id.get(), 2_116_500_430_648_709_162 - 42);
    assert_eq!(g.next_id().unwrap().get(), id.get() + 1);
}

#[test]
fn sonyflake_preset_matches_the_worked_example() {
    let clock = ManualClock::from_unix_ms(T0_MS);
    let g = Generator::builder(Layout::sonyflake())
        .machine_id(2565)
        .clock(clock)
        .build()
        .unwrap();
    let ids: Vec<u64> = (0..8).map(|_| g.next_id().unwrap().get()).collect();
    assert_eq!(ids[7], 96_902_515_261_901_317);
}

#[test]
fn exhaustion_moves_to_the_next_tick_with_sequence_zero() {
    for policy in POLICIES {
        let clock = ManualClock::from_unix_ms(T0_MS);
        let g = generator(tiny(), policy, &clock);
        let l = tiny();
        for seq in 0..4 {
            let p = l.decompose(g.next_id().unwrap().get()).unwrap();
            assert_eq!((p.ticks, p.sequence, p.node), (T0_TICKS, seq, 5));
        }
        // Non-blocking: says how long to wait, changes nothing.
        let before = g.last_id();
        assert_eq!(
            g.try_next_id(),
            Err(MintError::WouldBlock { wait_ns: 1_000_000 })
        );
        assert_eq!(g.last_id(), before);
        // Blocking with a clock that stands still: bounded, then a clear error.
        assert!(matches!(g.next_id(), Err(MintError::WaitTooLong { .. })));
        // Blocking while another thread moves the clock: waits, then tick + 1, sequence 0.
        let watched = Watched::new(&clock);
        let g = patient_on(tiny(), policy, watched.clone(), before.get());
        let t = std::thread::spawn(move || {
            // Moved only once the call is waiting: it must wait, and end by the move.
            watched.await_reads(4);
            watched.clock.advance(Duration::from_micros(1_000));
        });
        let p = l.decompose(g.next_id().unwrap().get()).unwrap();
        t.join().unwrap();
        assert_eq!((p.ticks, p.sequence), (T0_TICKS + 1, 0), "{policy:?}");
    }
}

#[test]
fn reject_policy_errors_on_a_backwards_clock_and_changes_no_state() {
    let clock = ManualClock::from_unix_ms(T0_MS);
    let g = generator(tiny(), ClockPolicy::Reject, &clock);
    let first = g.next_id().unwrap();
    clock.step_back(Duration::from_millis(3));
    assert_eq!(
        g.next_id(),
        Err(MintError::ClockBehind { by_ns: 3_000_000 })
    );
    assert_eq!(g.last_id(), first);
    clock.advance(Duration::from_millis(3));
    let p = tiny().decompose(g.next_id().unwrap().get()).unwrap();
    assert_eq!((p.ticks, p.sequence), (T0_TICKS, 1));
}

#[test]
fn continue_policy_keeps_counting_on_the_last_tick() {
    let clock = ManualClock::from_unix_ms(T0_MS);
    let g = generator(tiny(), ClockPolicy::Continue, &clock);
    g.next_id().unwrap();
    clock.step_back(Duration::from_secs(3600));
    for seq in 1..4 {
        let p = tiny().decompose(g.next_id().unwrap().get()).unwrap();
        assert_eq!((p.ticks, p.sequence), (T0_TICKS, seq));
    }
    // Sequence used up an hour ahead of the clock: fails fast instead of sleeping an hour.
    let started = std::time::Instant::now();
    match g.next_id() {
        Err(e @ MintError::WaitTooLong { .. }) => {
            let needed = e.retry_after().unwrap();
            assert!(needed > Duration::from_secs(3599), "{needed:?}");
            assert!(e.waited().unwrap() <= g.max_wait(), "{e:?}");
        }
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[test]
fn wait_policy_waits_for_the_clock_to_catch_up() {
    let clock = ManualClock::from_unix_ms(T0_MS);
    let watched = Watched::new(&clock);
    let g = patient_on(tiny(), ClockPolicy::Wait, watched.clone(), 0);
    g.next_id().unwrap();
    clock.step_back(Duration::from_millis(5));
    assert_eq!(
        g.try_next_id(),
        Err(MintError::WouldBlock { wait_ns: 5_000_000 })
    );
    let t = std::thread::spawn(move || {
        // Each step once the call is waiting: it waits through all five.
        for _ in 0..5 {
            watched.await_reads(4);
            watched.clock.advance(Duration::from_millis(1));
        }
    });
    let p = tiny().decompose(g.next_id().unwrap().get()).unwrap();
    t.join().unwrap();
    assert_eq!((p.ticks, p.sequence), (T0_TICKS, 1));
}

#[test]
fn strictly_increasing_under_every_policy_whatever_the_clock_does() {
    for policy in POLICIES {
        let clock = ManualClock::from_unix_ms(T0_MS);
        let g = builder(tiny(), policy, &clock)
            .max_wait(Duration::ZERO)
            .build()
            .unwrap();
        let mut last = 0;
        let mut minted = 0;
        let mut rng = common::Rng(0x1234_5678_9ABC_DEF1);
        for _ in 0..20_000 {
            let rng = rng.next();
            match rng % 8 {
                0 => clock.advance(Duration::from_micros(rng % 3_000)),
                1 => clock.step_back(Duration::from_micros(rng % 2_000)),
                _ => {} // stands still
            }
            match g.next_id() {
                Ok(id) => {
                    assert!(id.get() > last, "{policy:?}");
                    last = id.get();
                    minted += 1;
                }
                Err(MintError::WaitTooLong { .. }) => {}
                Err(MintError::ClockBehind { .. }) if policy == ClockPolicy::Reject => {}
                Err(e) => panic!("{policy:?}: {e}"),
            }
        }
        assert!(minted > 2_000, "{policy:?} minted only {minted}");
    }
}

#[test]
fn lifetime_ends_with_an_error_not_a_wrapped_id() {
    let l = Layout::builder()
        .time_bits(8)
        .sequence_bits(1)
        .node_bits(0)
        .unit(Duration::from_millis(1))
        .epoch_unix_ms(T0_MS)
        .build()
        .unwrap();
    // Last tick of the lifetime.
    let clock = ManualClock::from_unix_ms(T0_MS + 255);
    let g = Generator::builder(l).clock(clock.clone()).build().unwrap();
    assert_eq!(g.next_id().unwrap().get(), 255 << 1);
    assert_eq!(g.next_id().unwrap().get(), 255 << 1 | 1);
    let past = Err(MintError::PastLifetime {
        end_unix_ms: T0_MS + 256,
    });
    assert_eq!(g.next_id(), past);
    assert_eq!(g.try_next_id(), past);
    clock.advance(Duration::from_millis(1));
    assert_eq!(g.next_id(), past);
    // A fresh generator past the end fails too.
    let g = Generator::builder(l).clock(clock).build().unwrap();
    assert_eq!(g.next_id(), past);
}

#[test]
fn clock_before_the_epoch_is_an_error() {
    let clock = ManualClock::from_unix_ms(TWEPOCH_MS - 5);
    let g = Generator::builder(Layout::snowflake())
        .node(0)
        .clock(clock)
        .build()
        .unwrap();
    assert_eq!(
        g.next_id(),
        Err(MintError::BeforeEpoch { by_ns: 5_000_000 })
    );
}

#[test]
fn node_ids_are_checked() {
    let b = || Generator::builder(Layout::snowflake());
    assert_eq!(b().build().unwrap_err(), Error::NodeMissing);
    assert_eq!(b().datacenter(1).build().unwrap_err(), Error::NodeMissing);
    assert_eq!(
        b().datacenter(32).worker(0).build().unwrap_err(),
        Error::OutOfRange {
            field: Field::Datacenter,
            value: 32,
            max: 31
        }
    );
    assert_eq!(
        b().node(1024).build().unwrap_err(),
        Error::OutOfRange {
            field: Field::Node,
            value: 1024,
            max: 1023
        }
    );
    assert_eq!(
        Generator::builder(Layout::sonyflake())
            .datacenter(1)
            .worker(1)
            .build()
            .unwrap_err(),
        Error::NoDatacenterField
    );
    assert_eq!(
        Generator::builder(Layout::sonyflake())
            .machine_id(7)
            .check_node(|id| id % 2 == 0)
            .build()
            .unwrap_err(),
        Error::NodeRejected { node: 7 }
    );
    let single = Layout::builder().node_bits(0).build().unwrap();
    assert_eq!(Generator::builder(single).build().unwrap().node(), 0);
}

#[test]
fn resume_after_a_restart_onto_a_rolled_back_clock() {
    let clock = ManualClock::from_unix_ms(T0_MS);
    let g = generator(tiny(), ClockPolicy::Reject, &clock);
    let last = g.next_id().unwrap();
    drop(g);
    let resumed = |clock: &ManualClock| {
        Generator::builder(tiny())
            .node(5)
            .policy(ClockPolicy::Continue)
            .max_wait(Duration::from_secs(1))
            .resume_after(last)
            .clock(clock.clone())
            .build()
    };
    // The host restarts with its clock half a second behind: within the wait bound.
    clock.step_back(Duration::from_millis(500));
    let g = resumed(&clock).unwrap();
    assert!(g.next_id().unwrap() > last);
    // An hour behind: the generator could mint only the rest of the last tick and then
    // fail every call for an hour, so `build` says so at once.
    clock.step_back(Duration::from_secs(3600));
    match resumed(&clock) {
        Err(Error::ResumeAhead { ahead, bound }) => {
            assert!(ahead > Duration::from_secs(3600), "{ahead:?}");
            assert_eq!(bound, Duration::from_secs(1));
        }
        other => panic!("{other:?}"),
    }
}

/// `resume_after` refuses what would break its promise: another node's ID (whose
/// successors on this node could be smaller), an ID of another layout or from a clock far
/// ahead (dated decades from now), and `i64::MAX`.
#[test]
fn resume_after_refuses_ids_that_cannot_be_this_nodes_last() {
    let clock = ManualClock::from_unix_ms(T0_MS);
    let snowflake = Layout::snowflake();
    let ticks = snowflake.ticks_at(i128::from(T0_MS) * 1_000_000).unwrap();
    let other_node = snowflake.compose(ticks, 0, 6).unwrap();
    let build = |layout: Layout, node: u64, last: u64| {
        Generator::builder(layout)
            .node(node)
            .resume_after(flakeid::Id::new(last))
            .clock(clock.clone())
            .build()
    };
    assert_eq!(
        build(snowflake, 5, other_node).unwrap_err(),
        Error::ResumeOtherNode {
            id_node: 6,
            node: 5
        }
    );
    // The same ID, on its own node, is fine, and the next ID is larger.
    let g = build(snowflake, 6, other_node).unwrap();
    assert!(g.next_id().unwrap().get() > other_node);
    // i64::MAX on Snowflake: node 1023, the last tick of 2080.
    assert!(matches!(
        build(snowflake, 1023, i64::MAX as u64),
        Err(Error::ResumeAhead { ahead, .. }) if ahead > Duration::from_secs(50 * 365 * 86_400)
    ));
    // A Snowflake ID handed to a Sonyflake generator reads as a time in the 2060s.
    let sonyflake = Layout::sonyflake();
    let node = sonyflake.decompose(2_116_500_430_648_709_162).unwrap().node;
    assert!(matches!(
        build(sonyflake, node, 2_116_500_430_648_709_162),
        Err(Error::ResumeAhead { ahead, .. }) if ahead > Duration::from_secs(30 * 365 * 86_400)
    ));
    // An ID wider than the layout.
    assert!(matches!(
        build(Layout::javascript_safe(), 0, 1 << 60),
        Err(Error::IdOutOfLayout { .. })
    ));
}

/// `max_wait` bounds a whole batch call and a whole `ids` iterator, not each tick: on a
/// layout of one ID per 100 ms tick, four IDs need at least 200 ms of waiting, more than
/// the 150 ms bound, so the call returns fewer (it used to return all four, waiting up
/// to 150 ms per tick).
#[test]
fn max_wait_bounds_the_whole_batch_call() {
    let slow = Layout::builder()
        .time_bits(40)
        .sequence_bits(0)
        .node_bits(0)
        .unit(Duration::from_millis(100))
        .epoch_unix_ms(TWEPOCH_MS)
        .build()
        .unwrap();
    let g = Generator::builder(slow)
        .max_wait(Duration::from_millis(150))
        .build()
        .unwrap();
    let mut batch = [flakeid::Id::default(); 4];
    let n = g.next_ids(&mut batch).unwrap();
    assert!((1..4).contains(&n), "{n} IDs");
    assert!(batch[..n].windows(2).all(|w| w[0] < w[1]));

    let results: Vec<_> = g.ids(4).collect();
    let minted = results.iter().filter(|r| r.is_ok()).count();
    assert!(minted < 4, "{results:?}");
    match results.last() {
        Some(Err(e @ MintError::WaitTooLong { .. })) => {
            let (needed, waited) = (e.retry_after().unwrap(), e.waited().unwrap());
            let bound = Duration::from_millis(150);
            // `waited` is whole microseconds, rounded down.
            assert!(
                waited <= bound && waited + needed + Duration::from_micros(1) > bound,
                "{results:?}"
            );
            let message = results.last().unwrap().as_ref().unwrap_err().to_string();
            assert!(
                message.contains("waited") && message.contains("retry"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}

/// The ordering rule `ids` documents: a run is reserved at once, so an ID minted between
/// two items of the iterator is larger than the rest of the run.
#[test]
fn an_ids_run_is_reserved_before_later_single_mints() {
    let clock = ManualClock::from_unix_ms(T0_MS);
    let g = generator(Layout::snowflake(), ClockPolicy::Continue, &clock);
    let mut ids = g.ids(10);
    let a = ids.next().unwrap().unwrap();
    let b = g.next_id().unwrap();
    let c = ids.next().unwrap().unwrap();
    assert!(a < c && c < b, "{a} {b} {c}");
    // The iterator's own IDs strictly increase, and the next run comes after b.
    let rest: Vec<_> = ids.map(Result::unwrap).collect();
    assert_eq!(rest.len(), 8);
    assert!(rest.windows(2).all(|w| w[0] < w[1]) && rest[0] > c);
}

/// Two threads, one generator, the real clock and the real Snowflake layout: 2,000,000 IDs
/// (so the sequence runs out about 500 times and the threads race across tick boundaries).
#[test]
fn two_threads_one_million_each_no_duplicate() {
    let g = Arc::new(
        Generator::builder(Layout::snowflake())
            .datacenter(0)
            .worker(1)
            .build()
            .unwrap(),
    );
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let g = Arc::clone(&g);
            std::thread::spawn(move || {
                let mut ids = Vec::with_capacity(1_000_000);
                for _ in 0..1_000_000 {
                    ids.push(g.next_id().unwrap().get());
                }
                ids
            })
        })
        .collect();
    let mut all = HashSet::with_capacity(2_000_000);
    for t in threads {
        let ids = t.join().unwrap();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "per-thread order");
        for id in ids {
            assert!(all.insert(id), "duplicate {id}");
        }
    }
    assert_eq!(all.len(), 2_000_000);
}

#[test]
fn batches_cross_ticks_and_continue_the_single_sequence() {
    let clock = ManualClock::from_unix_ms(T0_MS);
    let g = generator(tiny(), ClockPolicy::Continue, &clock);
    let single = g.next_id().unwrap();
    let mut out = [flakeid::Id::default(); 10];
    // Three left in this tick; the clock stands still, so after them the batch waits,
    // times out, and reports the short count.
    assert_eq!(g.next_ids(&mut out), Ok(3));
    assert!(out[0] > single && out[..3].windows(2).all(|w| w[0] < w[1]));
    assert!(matches!(
        g.next_ids(&mut out),
        Err(MintError::WaitTooLong { .. })
    ));
    // With the clock moving, a batch crosses tick boundaries and fills the slice. The
    // helper steps the clock 1 ms every 2 ms until the batch is done: however late this
    // thread wakes on a loaded machine, there is always a next tick to reach.
    let done = Arc::new(AtomicBool::new(false));
    let t = {
        let (clock, done) = (clock.clone(), done.clone());
        std::thread::spawn(move || {
            let mut steps = 0;
            while !done.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(2));
                clock.advance(Duration::from_millis(1));
                steps += 1;
            }
            steps
        })
    };
    let mut big = [flakeid::Id::default(); 12];
    let g = patient(tiny(), ClockPolicy::Continue, &clock, out[2].get());
    let filled = g.next_ids(&mut big);
    done.store(true, Ordering::Release);
    let steps = t.join().unwrap();
    assert_eq!(filled, Ok(12));
    assert!(big[0] > out[2] && big.windows(2).all(|w| w[0] < w[1]));
    // Every slot of each tick it reaches is used: three whole ticks of four, in increasing
    // order. Which ticks depends on how late this thread wakes after each step (it can
    // miss one), but none is beyond the clock's last step.
    let parts: Vec<_> = big
        .iter()
        .map(|id| tiny().decompose(id.get()).unwrap())
        .collect();
    let mut prev_tick = T0_TICKS;
    for run in parts.chunks(4) {
        assert!(run.iter().all(|p| p.ticks == run[0].ticks), "{parts:?}");
        assert_eq!(
            run.iter().map(|p| p.sequence).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        assert!(run[0].ticks > prev_tick, "{parts:?}");
        prev_tick = run[0].ticks;
    }
    assert!(
        prev_tick <= T0_TICKS + steps,
        "{parts:?} after {steps} steps"
    );
    assert_eq!(g.next_ids(&mut []), Ok(0));
}

/// A lease mints exactly the IDs the shared path would: the same clock steps on two
/// identical generators, one leased, one not, across both field orders, sequence widths
/// from 0 to 12 bits (ticks running out of sequence) and node ids at both ends.
#[test]
fn a_lease_mints_what_the_shared_path_mints() {
    let mut checked = 0;
    for order in ["tns", "tsn"] {
        for seq in [0u32, 1, 3, 12] {
            for node in [0u64, 1, 63] {
                let layout: Layout = format!("time=40,seq={seq},node=6,order={order},unit=1ms")
                    .parse()
                    .unwrap();
                let make = |clock: &ManualClock| {
                    Generator::builder(layout)
                        .node(node)
                        .policy(flakeid::ClockPolicy::Continue)
                        .max_wait(std::time::Duration::ZERO)
                        .clock(clock.clone())
                        .build()
                        .unwrap()
                };
                let (ca, cb) = (
                    ManualClock::from_unix_ms(5_000),
                    ManualClock::from_unix_ms(5_000),
                );
                let (a, b) = (make(&ca), make(&cb));
                let mut lease = a.lease().unwrap();
                for i in 0..3_000u64 {
                    let (x, y) = (lease.next_id(), b.next_id());
                    // The same ID, or the same error (its measured wait aside).
                    assert_eq!(x.ok(), y.ok(), "{layout} node {node} step {i}");
                    assert_eq!(
                        x.err().map(|e| std::mem::discriminant(&e)),
                        y.err().map(|e| std::mem::discriminant(&e)),
                        "{layout} node {node} step {i}"
                    );
                    checked += 1;
                    // Mostly the same tick (runs of the sequence), sometimes a step on.
                    if i % 7 == 0 {
                        ca.advance(std::time::Duration::from_micros(300 * (i % 5)));
                        cb.advance(std::time::Duration::from_micros(300 * (i % 5)));
                    }
                }
                drop(lease);
                assert_eq!(a.last_id(), b.last_id());
                assert_eq!(a.next_id().ok(), b.next_id().ok(), "after the lease");
            }
        }
    }
    assert_eq!(checked, 2 * 4 * 3 * 3_000);
}

/// The `FetchAdd` fast path against the compare-and-swap one as oracle: on one thread, for
/// every policy, both orders and sequence widths from none to 12 bits, and a clock that
/// moves on, stands still and steps back, the two hand out the very same IDs and errors
/// (single mints, `try_next_id`, batches, leases), and report the same `last_id`.
#[test]
fn fetch_add_mints_what_compare_and_swap_mints() {
    let mut checked = 0;
    for policy in POLICIES {
        for order in ["tns", "tsn"] {
            for seq in [0u32, 1, 3, 12] {
                let layout: Layout = format!("time=40,seq={seq},node=6,order={order},unit=1ms")
                    .parse()
                    .unwrap();
                let make = |clock: &ManualClock, path: FastPath| {
                    let g = Generator::builder(layout)
                        .node(9)
                        .policy(policy)
                        .max_wait(Duration::ZERO)
                        .fast_path(path)
                        .clock(clock.clone())
                        .build()
                        .unwrap();
                    assert_eq!(g.fast_path(), path, "{layout}");
                    g
                };
                let (ca, cb) = (
                    ManualClock::from_unix_ms(5_000),
                    ManualClock::from_unix_ms(5_000),
                );
                let (a, b) = (
                    make(&ca, FastPath::FetchAdd),
                    make(&cb, FastPath::CompareAndSwap),
                );
                let mut rng = common::Rng(0x0DDB_1A5E_5BAD_5EED ^ u64::from(seq));
                for i in 0..4_000u64 {
                    let r = rng.next();
                    let (x, y) = match r % 16 {
                        0 => (a.try_next_id(), b.try_next_id()),
                        1 => {
                            let (mut oa, mut ob) = ([Id::default(); 5], [Id::default(); 5]);
                            let (na, nb) = (a.next_ids(&mut oa), b.next_ids(&mut ob));
                            assert_eq!(na.is_ok(), nb.is_ok(), "{layout} step {i}");
                            let n = na.unwrap_or(0);
                            assert_eq!(oa[..n], ob[..nb.unwrap_or(0)], "{layout} step {i}");
                            checked += 1;
                            continue;
                        }
                        2 => match (a.lease(), b.lease()) {
                            (Ok(mut la), Ok(mut lb)) => (la.next_id(), lb.next_id()),
                            _ => panic!("no lease is held"),
                        },
                        _ => (a.next_id(), b.next_id()),
                    };
                    assert_eq!(x.ok(), y.ok(), "{layout} {policy:?} step {i}");
                    assert_eq!(
                        x.err().map(|e| std::mem::discriminant(&e)),
                        y.err().map(|e| std::mem::discriminant(&e)),
                        "{layout} {policy:?} step {i}"
                    );
                    assert_eq!(a.last_id(), b.last_id(), "{layout} step {i}");
                    checked += 1;
                    let step = Duration::from_micros(r >> 40 & 0x7ff);
                    match r >> 8 & 15 {
                        0..=2 => {
                            ca.advance(step);
                            cb.advance(step);
                        }
                        3 => {
                            ca.step_back(step);
                            cb.step_back(step);
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    assert_eq!(checked, 3 * 2 * 4 * 4_000);
}

/// The `FetchAdd` fast path under oversubscription, on the precise clock: eight threads on
/// two cores mint on one generator whose 32-ID ticks run out all the time (so adds run into
/// the guard and are undone or skipped), while a ninth takes and drops leases (so adds
/// land on a leased word). Every ID is unique, each thread's increase, none is ahead of
/// the clock, and the word ends no further than the clock's tick.
#[test]
fn fetch_add_under_oversubscription_and_leases_no_duplicate() {
    let layout: Layout = "time=41,seq=5,node=7,unit=1ms".parse().unwrap();
    let g = Arc::new(
        Generator::builder(layout)
            .node(3)
            .clock(flakeid::clock::MonotonicClock::new())
            .fast_path(FastPath::FetchAdd)
            .build()
            .unwrap(),
    );
    assert_eq!(g.fast_path(), FastPath::FetchAdd);
    let stop = Arc::new(AtomicBool::new(false));
    let leaser = {
        let (g, stop) = (Arc::clone(&g), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut ids = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                if let Ok(mut lease) = g.lease() {
                    for _ in 0..3 {
                        if let Ok(id) = lease.next_id() {
                            ids.push(id.get());
                        }
                    }
                }
                std::thread::yield_now();
            }
            ids
        })
    };
    let minters: Vec<_> = (0..8)
        .map(|_| {
            let g = Arc::clone(&g);
            std::thread::spawn(move || {
                let mut ids = Vec::with_capacity(3_000);
                for _ in 0..3_000 {
                    let id = g.next_id().unwrap();
                    let now_ms = flakeid::Clock::unix_ns(g.clock()) / 1_000_000;
                    let time_ms = layout.unix_ms_of(layout.decompose(id.get()).unwrap().ticks);
                    assert!(time_ms.unwrap() <= now_ms, "ahead of the clock");
                    ids.push(id.get());
                }
                ids
            })
        })
        .collect();
    let mut all = HashSet::new();
    for t in minters {
        let ids = t.join().unwrap();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "per-thread order");
        for id in ids {
            assert!(all.insert(id), "duplicate {id}");
        }
    }
    stop.store(true, Ordering::Relaxed);
    let leased = leaser.join().unwrap();
    assert!(leased.windows(2).all(|w| w[0] < w[1]), "the leases' order");
    for id in &leased {
        assert!(all.insert(*id), "duplicate {id}");
    }
    assert_eq!(all.len(), 8 * 3_000 + leased.len());
    let now = layout
        .ticks_at(i128::from(flakeid::Clock::unix_ns(
            &flakeid::clock::MonotonicClock::new(),
        )))
        .unwrap();
    let last = layout.decompose(g.last_id().get()).unwrap().ticks;
    assert!(
        last <= now,
        "the word ran ahead of the clock: {last} > {now}"
    );
}

/// The default gate is zero-sized, so a plain generator is no larger than the fields it
/// mints with: the claim (a fenced generator's gate) adds to claimed generators only
/// (here both fit in the cache-line padding: 384 B each on x86_64).
#[test]
fn an_unfenced_generator_carries_no_gate() {
    use core::mem::size_of;
    use flakeid::claim::ClaimedGenerator;
    assert_eq!(size_of::<flakeid::generator::Unfenced>(), 0);
    let plain = size_of::<Generator<ManualClock>>();
    let claimed = size_of::<ClaimedGenerator<ManualClock>>();
    assert!(plain <= claimed, "plain {plain} B, claimed {claimed} B");
    println!("Generator<ManualClock>: {plain} B; ClaimedGenerator<ManualClock>: {claimed} B");
}
