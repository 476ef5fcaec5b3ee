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
