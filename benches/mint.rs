//! Minting cost. Run: `cargo bench --bench mint`.

use std::hint::black_box;
use std::sync::Mutex;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use flakeid::{Generator, Layout};

/// A layout whose sequence never runs out in practice (22 bits per ms), so the benchmark
/// measures the code, not the layout's cap.
fn wide() -> Layout {
    "seq=22,node=4,epoch=2025-01-01T00:00:00Z".parse().unwrap()
}

fn check_unique_increasing(mut next: impl FnMut() -> u64) {
    let ids: Vec<u64> = (0..100_000).map(|_| next()).collect();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "IDs must strictly increase"
    );
}

fn hot_path(c: &mut Criterion) {
    let mut group = c.benchmark_group("hot_path");
    let g = Generator::builder(wide()).node(1).build().unwrap();
    check_unique_increasing(|| g.next_id().unwrap().get());
    group.bench_function("flakeid/next_id", |b| {
        b.iter(|| black_box(g.next_id().unwrap()))
    });

    // The same state machine on a clock that costs one atomic load, with a sequence so wide
    // that a clock standing still never runs out: what the CAS path costs without the clock.
    let now_ms = flakeid::Clock::unix_ns(&flakeid::SystemClock) / 1_000_000;
    let still = Layout::builder()
        .time_bits(20)
        .sequence_bits(40)
        .node_bits(3)
        .epoch_unix_ms(now_ms - 60_000)
        .build()
        .unwrap();
    let manual = flakeid::ManualClock::from_unix_ms(now_ms);
    let gm = Generator::builder(still)
        .node(1)
        .clock(manual)
        .build()
        .unwrap();
    check_unique_increasing(|| gm.next_id().unwrap().get());
    group.bench_function("flakeid/next_id_manual_clock", |b| {
        b.iter(|| black_box(gm.next_id().unwrap()))
    });
    let mc = flakeid::MonotonicClock::new();
    group.bench_function("clock/monotonic", |b| {
        b.iter(|| black_box(flakeid::Clock::unix_ns(&mc)))
    });

    // Baseline: the same state machine behind a Mutex, as `&mut self` generators are shared.
    let layout = wide();
    let clock = flakeid::MonotonicClock::new();
    let locked = Mutex::new((0u64, 0u64));
    let mutex_next = || {
        let now = flakeid::Clock::unix_ns(&clock) / layout.unit_ns() - layout.epoch_tick();
        let mut s = locked.lock().unwrap();
        if now > s.0 {
            *s = (now, 0);
        } else {
            s.1 += 1;
        }
        layout.compose_unchecked(s.0, s.1, 1)
    };
    check_unique_increasing(mutex_next);
    group.bench_function("baseline/mutex", |b| b.iter(|| black_box(mutex_next())));
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = hot_path
}
criterion_main!(benches);
