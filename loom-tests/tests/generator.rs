//! Loom models of the generator: every interleaving of a few threads minting.
//!
//! Run: `RUSTFLAGS="--cfg flakeid_loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p flakeid-loom-tests --release`
#![cfg(flakeid_loom)]

use std::time::Duration;

use flakeid::{ClockPolicy, Generator, Layout, ManualClock, MintError, ShardedGenerator};
use loom::sync::Arc;
use loom::thread;

use flakeid_loom_tests::{model, must_fail, tiny};

const T0_MS: u64 = 1_000_000;

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
            Err(MintError::WaitTooLong { .. } | MintError::ClockBehind { .. }) => {}
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
    model("two threads across an exhausted tick", || {
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
        model(&format!("clock steps back, {policy:?}"), move || {
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
    model("three threads across an exhausted tick", || {
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
    model("batch vs single", || {
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

/// Sharded minting with more threads than shards: threads 0 and 2 share shard 0 (and
/// race across its exhausted tick), thread 1 has shard 1.
#[test]
fn sharded_with_more_threads_than_shards() {
    model("sharded, 3 threads on 2 shards", || {
        let clock = ManualClock::from_unix_ms(T0_MS);
        let s = Arc::new(
            ShardedGenerator::builder(tiny())
                .nodes(0..2)
                .shards(2)
                .max_wait(Duration::ZERO)
                .clock(clock.clone())
                .build()
                .unwrap(),
        );
        let threads: Vec<_> = (1..3)
            .map(|k| {
                let s = Arc::clone(&s);
                thread::spawn(move || mint(s.shard(k % 2).unwrap(), 2))
            })
            .collect();
        clock.advance(Duration::from_millis(1));
        let mut all = vec![mint(s.shard(0).unwrap(), 2)];
        all.extend(threads.into_iter().map(|t| t.join().unwrap()));
        check(all);
    });
}

/// Eight IDs per tick, and waits (for a lease) that never give up.
fn leasable() -> Arc<Generator<ManualClock>> {
    let layout = Layout::builder()
        .time_bits(20)
        .sequence_bits(3)
        .node_bits(1)
        .epoch_unix_ms(0)
        .build()
        .unwrap();
    Arc::new(
        Generator::builder(layout)
            .node(0)
            .max_wait(Duration::from_secs(3600))
            .clock(ManualClock::from_unix_ms(T0_MS))
            .build()
            .unwrap(),
    )
}

/// A lease (plain stores) against shared minting (CAS) and a second lease attempt: the
/// lease bit keeps every CAS out while the lease holder stores.
#[test]
fn a_lease_races_shared_minting() {
    model("lease vs shared", || {
        let g = leasable();
        let shared = {
            let g = Arc::clone(&g);
            thread::spawn(move || {
                let mut ids = vec![g.next_id().unwrap().get()];
                match g.lease() {
                    Ok(mut lease) => ids.push(lease.next_id().unwrap().get()),
                    Err(e) => assert_eq!(e, MintError::Leased),
                }
                ids
            })
        };
        let mut mine = Vec::new();
        if let Ok(mut lease) = g.lease() {
            mine.push(lease.next_id().unwrap().get());
            mine.push(lease.next_id().unwrap().get());
        }
        mine.push(g.next_id().unwrap().get());
        check(vec![mine, shared.join().unwrap()]);
    });
}

/// The models bite: the same state machine advanced by a load and a plain store instead of
/// a compare-and-swap loses updates, and loom finds the interleaving that duplicates an ID.
#[test]
fn a_load_then_store_generator_is_caught() {
    use flakeid::__private::{Shape, Step, reserve};
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

    let message = must_fail("the duplicate of a load-then-store generator", || {
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
    assert!(
        message.contains("duplicate ID"),
        "failed for another reason: {message}"
    );
}

/// A thread that meets a lease sleeps on the generator's condition variable until the
/// lease's drop wakes it (loom's timed waits never time out, so a lost wake-up is a
/// deadlock loom reports). In every interleaving the waiter gets through, after the
/// lease's IDs.
#[test]
fn a_lease_drop_wakes_the_waiting_thread() {
    model("lease waiter parks and is woken", || {
        let g = leasable();
        let mut lease = g.lease().unwrap();
        let waiter = {
            let g = Arc::clone(&g);
            thread::spawn(move || g.next_id().unwrap().get())
        };
        let leased = lease.next_id().unwrap().get();
        drop(lease);
        let waited = waiter.join().unwrap();
        assert!(waited > leased, "{waited} after {leased}");
    });
}

/// The models bite: the lease handshake in the wrong order (wake the waiters, then clear
/// the lease bit) loses a wake-up, and loom finds the interleaving where the waiter
/// sleeps forever. Loom reports a deadlock by panicking inside the blocked threads, which
/// aborts the process, so the broken model runs in a child process of this test binary
/// and the test reads its verdict.
#[test]
fn a_wake_before_clear_lease_is_caught() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "wake_before_clear_model", "--nocapture"])
        .env("FLAKEID_LOOM_RUN_BROKEN", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "loom must find the lost wake-up of a wake-then-clear lease drop"
    );
    assert!(
        stderr.contains("deadlock"),
        "failed for another reason: {stderr}"
    );
}

/// The broken handshake itself; runs only in the child process started above.
#[test]
fn wake_before_clear_model() {
    use loom::sync::atomic::{AtomicBool, Ordering};
    use loom::sync::{Condvar, Mutex};

    if std::env::var_os("FLAKEID_LOOM_RUN_BROKEN").is_none() {
        return;
    }
    struct Broken {
        leased: AtomicBool,
        lock: Mutex<()>,
        wake: Condvar,
    }
    impl Broken {
        fn wait_for_lease(&self) {
            let guard = self.lock.lock().unwrap();
            if self.leased.load(Ordering::Acquire) {
                drop(self.wake.wait(guard).unwrap());
            }
        }
        fn drop_lease(&self) {
            {
                let _guard = self.lock.lock().unwrap();
                self.wake.notify_all();
            }
            self.leased.store(false, Ordering::Release); // the bug: cleared after the wake
        }
    }
    loom::model(|| {
        let b = Arc::new(Broken {
            leased: AtomicBool::new(true),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        });
        let waiter = {
            let b = Arc::clone(&b);
            thread::spawn(move || b.wait_for_lease())
        };
        b.drop_lease();
        waiter.join().unwrap();
    });
}
