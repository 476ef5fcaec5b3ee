//! Loom models of the generator: every interleaving of a few threads minting.
//!
//! Run: `RUSTFLAGS="--cfg flakeid_loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p flakeid-loom-tests --release`
#![cfg(flakeid_loom)]

use std::time::Duration;

use flakeid::{ClockPolicy, Error, Generator, Layout, ManualClock};
use loom::sync::Arc;
use loom::thread;

const T0_MS: u64 = 1_000_000;

/// One sequence bit: two IDs per tick, so two or three threads race across the boundary.
fn tiny() -> Layout {
    Layout::builder()
        .time_bits(20)
        .sequence_bits(1)
        .node_bits(1)
        .epoch_unix_ms(0)
        .build()
        .unwrap()
}

fn generator(clock: &ManualClock, policy: ClockPolicy) -> Generator<ManualClock> {
    Generator::builder(tiny())
        .node(1)
        .policy(policy)
        .max_wait(Duration::ZERO)
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// Mints `n` times; returns the IDs minted, in order, skipping the bounded-wait refusals.
fn mint(g: &Generator<ManualClock>, n: usize) -> Vec<u64> {
    let mut ids = Vec::new();
    for _ in 0..n {
        match g.next_id() {
            Ok(id) => ids.push(id.get()),
            Err(Error::WaitTooLong { .. } | Error::ClockBehind { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }
    ids
}

fn check(per_thread: Vec<Vec<u64>>) {
    let mut all = Vec::new();
    for ids in per_thread {
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "per-thread order: {ids:?}"
        );
        all.extend(ids);
    }
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "duplicate ID");
}

#[test]
fn two_threads_race_across_an_exhausted_tick() {
    loom::model(|| {
        let clock = ManualClock::from_unix_ms(T0_MS);
        let g = Arc::new(generator(&clock, ClockPolicy::Continue));
        let t = {
            let g = Arc::clone(&g);
            thread::spawn(move || mint(&g, 2))
        };
        let mover = thread::spawn(move || clock.advance(Duration::from_millis(1)));
        let mine = mint(&g, 2);
        mover.join().unwrap();
        check(vec![mine, t.join().unwrap()]);
    });
}

#[test]
fn clock_steps_back_while_threads_mint_under_each_policy() {
    for policy in [
        ClockPolicy::Reject,
        ClockPolicy::Continue,
        ClockPolicy::Wait,
    ] {
        loom::model(move || {
            let clock = ManualClock::from_unix_ms(T0_MS);
            let g = Arc::new(generator(&clock, policy));
            let t = {
                let g = Arc::clone(&g);
                thread::spawn(move || mint(&g, 2))
            };
            let back = thread::spawn(move || clock.step_back(Duration::from_millis(1)));
            let mine = mint(&g, 1);
            back.join().unwrap();
            check(vec![mine, t.join().unwrap()]);
        });
    }
}

#[test]
fn three_threads_race_across_an_exhausted_tick() {
    loom::model(|| {
        let clock = ManualClock::from_unix_ms(T0_MS);
        let g = Arc::new(generator(&clock, ClockPolicy::Reject));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let g = Arc::clone(&g);
                thread::spawn(move || mint(&g, 1))
            })
            .collect();
        clock.advance(Duration::from_millis(1));
        let mut all = vec![mint(&g, 2)];
        all.extend(threads.into_iter().map(|t| t.join().unwrap()));
        check(all);
    });
}

#[test]
fn batch_reservations_race_single_mints() {
    loom::model(|| {
        let clock = ManualClock::from_unix_ms(T0_MS);
        let g = Arc::new(generator(&clock, ClockPolicy::Continue));
        let t = {
            let g = Arc::clone(&g);
            thread::spawn(move || {
                let mut out = [flakeid::Id::default(); 3];
                let n = g.next_ids(&mut out).unwrap_or(0);
                out[..n].iter().map(|id| id.get()).collect::<Vec<_>>()
            })
        };
        let mover = {
            let clock = clock.clone();
            thread::spawn(move || clock.advance(Duration::from_millis(1)))
        };
        let mine = mint(&g, 2);
        mover.join().unwrap();
        check(vec![mine, t.join().unwrap()]);
    });
}

/// The models bite: the same state machine advanced by a load and a plain store instead of
/// a compare-and-swap loses updates, and loom finds the interleaving that duplicates an ID.
#[test]
fn a_load_then_store_generator_is_caught() {
    use flakeid::state::{Shape, Step, reserve};
    use loom::sync::atomic::{AtomicU64, Ordering};

    struct Broken {
        state: AtomicU64,
        shape: Shape,
        layout: Layout,
    }
    impl Broken {
        fn next(&self, now: u64) -> Option<u64> {
            let word = self.state.load(Ordering::Acquire);
            match reserve(self.shape, word, now, ClockPolicy::Continue, 1) {
                Step::Mint { first, .. } => {
                    self.state.store(first, Ordering::Release); // the bug: not a CAS
                    let (t, s) = (self.shape.ticks(first), self.shape.sequence(first));
                    Some(self.layout.compose_unchecked(t, s, 1))
                }
                _ => None,
            }
        }
    }

    let caught = std::panic::catch_unwind(|| {
        loom::model(|| {
            let layout = tiny();
            let shape = Shape::of(&layout);
            let g = Arc::new(Broken {
                state: AtomicU64::new(shape.initial()),
                shape,
                layout,
            });
            let t = {
                let g = Arc::clone(&g);
                thread::spawn(move || g.next(T0_MS).into_iter().collect::<Vec<_>>())
            };
            let mine = g.next(T0_MS).into_iter().collect::<Vec<_>>();
            check(vec![mine, t.join().unwrap()]);
        });
    });
    let message = match caught {
        Ok(()) => panic!("loom must find the duplicate of a load-then-store generator"),
        Err(p) => p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default(),
    };
    assert!(
        message.contains("duplicate ID"),
        "failed for another reason: {message}"
    );
}
