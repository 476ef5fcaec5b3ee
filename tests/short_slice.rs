//! A thread that sleeps to the next tick asks Linux for the shortest time slice, so that
//! beside busy threads it runs as it wakes (`GeneratorBuilder::short_slice`); the
//! generator built with `short_slice(false)` leaves its callers' scheduling alone, and
//! flakeid's timer thread always asks.
#![cfg(target_os = "linux")]

use std::future::Future;
use std::task::{Context, Waker};
use std::time::{Duration, Instant};

use flakeid::__private::fair_slice_of;
use flakeid::{Generator, Id, Layout};

/// The slice asked for, in ns.
const SHORT: u64 = 100_000;

/// The calling thread's slice, or `None` (with the reason printed) where the kernel
/// reports none: custom slices came with Linux 6.12.
fn own_slice() -> Option<u64> {
    match fair_slice_of(0) {
        Some(0) | None => {
            eprintln!("skipped: this kernel reports no time slice (custom slices need Linux 6.12)");
            None
        }
        some => some,
    }
}

/// Mints Snowflake batches larger than a tick's 4,096 on this thread (each waits for
/// the next tick at least once) until `done` says so or 200 batches ran; the ticks the
/// IDs fell in, so a test can tell the waits happened.
fn mint_past_ticks(g: &Generator, done: impl Fn() -> bool) -> u64 {
    let mut buf = vec![Id::default(); 3 * 4096];
    let mut ticks = std::collections::BTreeSet::new();
    for _ in 0..200 {
        let n = g.next_ids(&mut buf).expect("next_ids");
        ticks.extend(buf[..n].iter().map(|id| id.get() >> 22));
        if done() {
            break;
        }
    }
    ticks.len() as u64
}

fn snowflake(short_slice: bool) -> Generator {
    Generator::builder(Layout::snowflake())
        .node(1)
        .short_slice(short_slice)
        .build()
        .expect("the Snowflake layout with node 1")
}

#[test]
fn a_thread_that_waits_for_a_tick_keeps_the_short_slice() {
    std::thread::spawn(|| {
        let Some(before) = own_slice() else { return };
        assert!(
            before > SHORT,
            "a new thread has the default slice: {before} ns"
        );
        let g = snowflake(true);
        assert!(g.short_slice());
        let ticks = mint_past_ticks(&g, || fair_slice_of(0) == Some(SHORT));
        assert!(ticks > 1, "the batches waited for a tick");
        assert_eq!(fair_slice_of(0), Some(SHORT), "after {ticks} ticks");
        // Kept: a quiet spell does not give it back.
        g.next_id().expect("next_id");
        assert_eq!(fair_slice_of(0), Some(SHORT));
    })
    .join()
    .expect("the minting thread");
}

#[test]
fn short_slice_false_leaves_the_callers_scheduling_alone() {
    std::thread::spawn(|| {
        let Some(before) = own_slice() else { return };
        let g = snowflake(false);
        assert!(!g.short_slice());
        // 200 batches of three ticks' worth: hundreds of waits.
        let ticks = mint_past_ticks(&g, || false);
        assert!(ticks >= 400, "the batches waited for a tick: {ticks} ticks");
        assert_eq!(fair_slice_of(0), Some(before));
    })
    .join()
    .expect("the minting thread");
}

/// The Linux thread id of the thread of this process named `name`.
fn thread_named(name: &str) -> Option<i32> {
    std::fs::read_dir("/proc/self/task").ok()?.find_map(|task| {
        let task = task.ok()?;
        let comm = std::fs::read_to_string(task.path().join("comm")).ok()?;
        (comm.trim_end() == name)
            .then(|| task.file_name().to_str()?.parse().ok())
            .flatten()
    })
}

#[test]
fn the_timer_thread_asks_for_the_short_slice() {
    if own_slice().is_none() {
        return;
    }
    // One sleep starts the timer thread; polled by hand, no runtime needed.
    let mut sleep = std::pin::pin!(flakeid::wait::sleep(Duration::from_micros(300)));
    let mut cx = Context::from_waker(Waker::noop());
    let bound = Instant::now() + Duration::from_secs(10);
    while sleep.as_mut().poll(&mut cx).is_pending() {
        assert!(Instant::now() < bound, "a 300 µs sleep ended within 10 s");
        std::thread::yield_now();
    }
    let tid = thread_named("flakeid-timer").expect("the timer thread runs");
    // Its timer slack is 1 µs (the kernel's default, 50 µs, would make each wake as late).
    let bound = Instant::now() + Duration::from_secs(10);
    let slack = || {
        std::fs::read_to_string(format!("/proc/{tid}/timerslack_ns"))
            .map(|t| t.trim().to_string())
            .ok()
    };
    while slack().as_deref() != Some("1000") {
        assert!(
            Instant::now() < bound,
            "the timer thread's slack: {:?}",
            slack()
        );
        std::thread::yield_now();
    }
    // It asks as it starts, before its first wait: by now it has.
    let bound = Instant::now() + Duration::from_secs(10);
    while fair_slice_of(tid) != Some(SHORT) {
        assert!(
            Instant::now() < bound,
            "the timer thread's slice: {:?}",
            fair_slice_of(tid)
        );
        std::thread::yield_now();
    }
}

/// The async calls ask on the thread that awaits the tick (the runtime's), as the blocking
/// ones do: beside busy threads it resumes minting as the timer wakes it.
#[cfg(feature = "tokio")]
#[test]
fn an_async_batch_asks_on_the_thread_that_awaits_the_tick() {
    std::thread::spawn(|| {
        let Some(before) = own_slice() else { return };
        assert!(
            before > SHORT,
            "a new thread has the default slice: {before} ns"
        );
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime");
        let g = snowflake(true);
        let mut buf = vec![Id::default(); 3 * 4096];
        runtime.block_on(async {
            for _ in 0..200 {
                g.next_ids_async(&mut buf).await.expect("next_ids_async");
                if fair_slice_of(0) == Some(SHORT) {
                    break;
                }
            }
        });
        assert_eq!(fair_slice_of(0), Some(SHORT));
    })
    .join()
    .expect("the runtime's thread");
}
