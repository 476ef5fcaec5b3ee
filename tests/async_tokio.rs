//! Minting on tokio (feature `tokio`): awaiting the next tick leaves the runtime free.
#![cfg(feature = "tokio")]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use flakeid::clock::ManualClock;
use flakeid::{ClockPolicy, Generator, Layout, MintError};

/// A task that counts its 1 ms sleeps: it moves only while the runtime's thread is free.
fn ticker() -> (Arc<AtomicU64>, tokio::task::JoinHandle<()>) {
    let ticks = Arc::new(AtomicU64::new(0));
    let counted = ticks.clone();
    let task = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(1)).await;
            counted.fetch_add(1, Ordering::Relaxed);
        }
    });
    (ticks, task)
}

/// On a single-threaded runtime, minting 700 Sonyflake IDs (256 per 10 ms tick) needs two
/// waits for the next tick; a ticker task keeps running meanwhile, which it could not if
/// the waits blocked the thread.
#[tokio::test(flavor = "current_thread")]
async fn exhaustion_awaits_and_the_runtime_keeps_running() {
    let g = Generator::builder(Layout::sonyflake())
        .machine_id(3)
        .build()
        .unwrap();
    let (ticks, ticker) = ticker();
    tokio::task::yield_now().await;
    let mut ids = Vec::new();
    for _ in 0..700 {
        ids.push(g.next_id_async().await.unwrap());
    }
    ticker.abort();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    let layout = Layout::sonyflake();
    let span = layout.decompose(ids[699].get()).unwrap().ticks
        - layout.decompose(ids[0].get()).unwrap().ticks;
    assert!(span >= 2, "700 IDs need three ticks");
    // The ticker only runs when the minting task awaits (one thread), and it was
    // aborted right after: any tick at all happened during a wait for the next tick.
    assert!(
        ticks.load(Ordering::Relaxed) >= 1,
        "the ticker never ran while minting waited"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn waits_stay_bounded() {
    let clock = ManualClock::from_unix_ms(1_800_000_000_000);
    let g = Generator::builder(Layout::sonyflake())
        .machine_id(3)
        .policy(ClockPolicy::Wait)
        .max_wait(Duration::from_secs(5))
        .clock(clock.clone())
        .build()
        .unwrap();
    let first = g.next_id_async().await.unwrap();
    // The clock steps back an hour: Wait policy, far past the bound, fails at once (well
    // inside the bound, which a wait that was tried and abandoned would use up).
    clock.step_back(Duration::from_secs(3600));
    let started = std::time::Instant::now();
    assert!(matches!(
        g.next_id_async().await,
        Err(MintError::WaitTooLong { .. })
    ));
    assert!(started.elapsed() < Duration::from_secs(2));
    // Back within a tick of the last: awaited, then minted.
    clock.set(1_800_000_000_000_000_000 - 5_000_000);
    let mover = {
        let clock = clock.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            clock.advance(Duration::from_millis(20));
        })
    };
    let next = g.next_id_async().await.unwrap();
    assert!(next > first);
    mover.await.unwrap();
}

/// A claim renewed as a task on the runtime (`Claims::renew_on`), not a thread: no
/// `flakeid-renew` thread exists, the reservation moves ahead every period, and minting
/// goes on past the first window because the task keeps renewing.
#[tokio::test(flavor = "current_thread")]
async fn claims_renew_as_a_task_on_the_runtime() {
    use flakeid::claim::{Claims, MemoryStore};
    let g = Generator::builder(Layout::snowflake())
        .build_claimed(
            Claims::new(MemoryStore::new())
                .window(Duration::from_millis(120))
                .renew_every(Duration::from_millis(20))
                .renew_on(tokio::runtime::Handle::current()),
        )
        .unwrap();
    let first = g.claim_status().reserved_until_unix_ns.unwrap();
    let threads = std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
                .filter(|name| name.starts_with("flakeid-renew"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(threads, 0, "a renewal thread runs beside the task");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let status = g.claim_status();
    assert!(status.renewals >= 5, "{status:?}");
    assert!(status.reserved_until_unix_ns.unwrap() > first + 150_000_000);
    // Past the first window's end, minting still passes the fence.
    g.next_id().unwrap();
}

/// At a claimed generator's fence, `next_id_async` awaits the renewal (bounded by
/// `max_wait`) as `next_id` waits for it, instead of failing at once; with no renewal in
/// time it reports the fence.
#[tokio::test(flavor = "current_thread")]
async fn next_id_async_awaits_a_renewal_at_the_fence() {
    use flakeid::claim::{Claims, MemoryStore};
    let clock = ManualClock::from_unix_ms(1_800_000_000_000);
    let store = MemoryStore::with_clock(Duration::from_secs(10), clock.clone());
    let g = Arc::new(
        Generator::builder(Layout::snowflake())
            .clock(clock.clone())
            .max_wait(Duration::from_secs(5))
            .build_claimed(
                Claims::new(store)
                    .window(Duration::from_millis(10))
                    .manual_renewal(),
            )
            .unwrap(),
    );
    g.next_id_async().await.unwrap();
    clock.advance(Duration::from_millis(10)); // at the fence
    let renewer = {
        let g = Arc::clone(&g);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            g.renew_claim().unwrap();
        })
    };
    let id = g
        .next_id_async()
        .await
        .expect("the renewal let the awaiting call through");
    renewer.await.unwrap();
    assert!(id.get() > 0);
    // No renewal within a short bound: the fence is reported.
    let short = Generator::builder(Layout::snowflake())
        .clock(clock.clone())
        .max_wait(Duration::from_millis(20))
        .build_claimed(
            Claims::new(MemoryStore::with_clock(
                Duration::from_secs(10),
                clock.clone(),
            ))
            .window(Duration::from_millis(10))
            .manual_renewal(),
        )
        .unwrap();
    clock.advance(Duration::from_millis(10));
    assert!(matches!(
        short.next_id_async().await,
        Err(MintError::ReservationExpired { .. })
    ));
}

/// A batch without waiting takes what the tick has left and stops there: on a clock that
/// stands still, one tick's 4,096 Snowflake IDs, then `WouldBlock` naming the wait to the
/// next tick, and the next tick's IDs once the clock moves; the IDs increase throughout.
#[test]
fn a_batch_without_waiting_stops_at_the_tick() {
    use flakeid::Id;
    let clock = ManualClock::from_unix_ms(1_800_000_000_000);
    let g = Generator::builder(Layout::snowflake())
        .node(5)
        .clock(clock.clone())
        .build()
        .unwrap();
    let mut out = vec![Id::default(); 10_000];
    assert_eq!(g.try_next_ids(&mut out).unwrap(), 4096);
    let first_tick = out[..4096].to_vec();
    assert!(first_tick.windows(2).all(|w| w[0] < w[1]));
    match g.try_next_ids(&mut out) {
        Err(MintError::WouldBlock { wait_ns }) => assert!((1..=1_000_000).contains(&wait_ns)),
        other => panic!("a spent tick must say how long to wait, not {other:?}"),
    }
    clock.advance(Duration::from_millis(1));
    assert_eq!(g.try_next_ids(&mut out[..100]).unwrap(), 100);
    assert!(out[0] > first_tick[4095]);
    assert!(out[..100].windows(2).all(|w| w[0] < w[1]));
}

/// An awaited batch larger than a tick fills completely on a single-threaded runtime while
/// another task keeps running (the waits are the timer's, not a spin), and a bound too
/// small for the batch returns the shorter count it reached rather than an error.
#[tokio::test(flavor = "current_thread")]
async fn an_awaited_batch_spans_ticks_and_leaves_the_runtime_free() {
    use flakeid::Id;
    let g = Generator::builder(Layout::sonyflake())
        .machine_id(3)
        .build()
        .unwrap();
    let (ticks, ticker) = ticker();
    tokio::task::yield_now().await;
    let mut out = vec![Id::default(); 700];
    assert_eq!(g.next_ids_async(&mut out).await.unwrap(), 700);
    ticker.abort();
    assert!(out.windows(2).all(|w| w[0] < w[1]));
    assert!(
        ticks.load(Ordering::Relaxed) >= 1,
        "the ticker never ran while the batch waited"
    );
    // A clock that stands still and a 5 ms bound: one tick's 256, then the bound.
    let clock = ManualClock::from_unix_ms(1_800_000_000_000);
    let g = Generator::builder(Layout::sonyflake())
        .machine_id(3)
        .max_wait(Duration::from_millis(5))
        .clock(clock)
        .build()
        .unwrap();
    assert_eq!(g.next_ids_async(&mut out).await.unwrap(), 256);
    assert!(matches!(
        g.next_ids_async(&mut out).await,
        Err(MintError::WaitTooLong { .. })
    ));
}

/// A layout whose sequence never runs out in a test (26 bits: 67 M IDs a second), so
/// that a batch never waits for a tick and only its own bound gives the thread back.
fn wide() -> Generator {
    let layout = Layout::builder()
        .time_bits(33)
        .sequence_bits(26)
        .node_bits(4)
        .unit(Duration::from_secs(1))
        .epoch_unix_ms(1_735_689_600_000)
        .build()
        .unwrap();
    Generator::builder(layout).node(1).build().unwrap()
}

/// A batch that never has to wait still gives its thread back: every poll of
/// `next_ids_async` mints at most `ASYNC_POLL_IDS` IDs (counted from the generator's
/// last ID between polls), so a batch of a million takes many polls.
#[test]
fn a_batch_gives_its_thread_back_every_async_poll_ids() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    let g = wide();
    let layout = *g.layout();
    let mut out = vec![flakeid::Id::default(); 1_000_000];
    let mut batch = Box::pin(g.next_ids_async(&mut out));
    let mut cx = Context::from_waker(Waker::noop());
    let position = || {
        let p = layout.decompose(g.last_id().get()).unwrap();
        (p.ticks, p.sequence)
    };
    let (mut polls, mut before) = (0u64, position());
    let n = loop {
        polls += 1;
        let ready = batch.as_mut().poll(&mut cx);
        let after = position();
        if after.0 == before.0 {
            let minted = after.1 - before.1;
            assert!(
                minted <= flakeid::generator::ASYNC_POLL_IDS as u64,
                "one poll minted {minted} IDs"
            );
        }
        before = after;
        if let Poll::Ready(n) = ready {
            break n.unwrap();
        }
        assert!(polls < 10_000_000, "the batch never ended");
    };
    assert_eq!(n, 1_000_000);
    assert!(
        polls >= (1_000_000 / flakeid::generator::ASYNC_POLL_IDS) as u64,
        "a million IDs in {polls} polls"
    );
}

/// On one thread, a single-ID request made while a batch of ten million runs is
/// answered before the batch ends: the batch gives the thread back between its chunks.
#[tokio::test(flavor = "current_thread")]
async fn a_single_id_is_answered_while_a_batch_runs_on_the_same_thread() {
    let g = Arc::new(wide());
    let single = wide();
    let batch = tokio::spawn({
        let g = Arc::clone(&g);
        async move {
            let mut out = vec![flakeid::Id::default(); 10_000_000];
            g.next_ids_async(&mut out).await.unwrap()
        }
    });
    // Wait until the batch has begun (before its first ID the last reads as tick 0).
    let initial = g.last_id();
    while g.last_id() == initial {
        tokio::task::yield_now().await;
    }
    single.next_id_async().await.unwrap();
    assert!(
        !batch.is_finished(),
        "the single ID was answered only after the batch of ten million ended"
    );
    assert_eq!(batch.await.unwrap(), 10_000_000);
}
