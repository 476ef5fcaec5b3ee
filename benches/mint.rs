//! Minting, side by side with the peers. Run: `cargo bench --bench mint`; the table and
//! chart in BENCHMARKS.md come from `python3 scripts/bench_report.py` after it.
//!
//! Groups: `clock` (what one clock read costs), `hot_path` (one thread, a layout whose
//! sequence never runs out), `batch_4096` (per ID, batches of 4096), `contention/{1,2,4}`
//! (threads on one shared generator vs sharded; wall time per ID), `fence` (a claimed,
//! fenced generator beside the same generator unfenced), `claim_store` (what a claim, a
//! release and a renewal cost in each store: per operation, not per ID). Every bench checks its
//! output once before it is timed: unique and strictly increasing (per thread).

use std::collections::HashSet;
use std::hint::black_box;
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ferroid::define_snowflake_id;
use ferroid::generator::{
    AtomicSnowflakeGenerator, BasicSnowflakeGenerator, LockSnowflakeGenerator,
};
use ferroid::time::MonotonicClock as FerroidClock;
use flakeid::claim::ClaimedGenerator;
use flakeid::clock::{CoarseClock, MonotonicClock};
use flakeid::generator::{FastPath, TickGate};
use flakeid::{Clock, Generator, Id, Layout, ShardedGenerator};

/// A layout whose sequence never runs out in practice (22 bits per ms), so the benchmark
/// measures the code, not the layout's cap: 1 sign bit, 37 time, 4 node, 22 sequence.
fn wide() -> Layout {
    "seq=22,node=4,epoch=2025-01-01T00:00:00Z".parse().unwrap()
}

define_snowflake_id!(WideFerroidId, u64, reserved: 1, timestamp: 37, machine_id: 4, sequence: 22);

fn ferroid_clock() -> FerroidClock<1> {
    FerroidClock::<1>::with_epoch(Duration::from_millis(wide().epoch_unix_ms()))
}

fn snowflake_me() -> snowflake_me::Snowflake {
    snowflake_me::Snowflake::builder()
        .bit_len_time(37)
        .bit_len_sequence(22)
        .bit_len_data_center_id(0)
        .bit_len_machine_id(4)
        .machine_id(&|| Ok(1))
        .data_center_id(&|| Ok(0))
        .start_time(wide().epoch_unix_ms() as i64)
        .finalize()
        .unwrap()
}

/// The same state machine as flakeid's behind a `Mutex`, as `&mut self` generators
/// (rs-snowflake, sonyflake) are shared.
struct MutexBaseline {
    layout: Layout,
    clock: MonotonicClock,
    state: Mutex<(u64, u64)>,
}

impl MutexBaseline {
    fn new() -> Self {
        MutexBaseline {
            layout: wide(),
            clock: MonotonicClock::new(),
            state: Mutex::new((0, 0)),
        }
    }

    fn next(&self) -> u64 {
        let l = &self.layout;
        let now = self.clock.unix_ns() / l.unit_ns() - flakeid::__private::epoch_tick(l);
        let mut s = self.state.lock().unwrap();
        if now > s.0 {
            *s = (now, 0);
        } else {
            s.1 += 1;
        }
        flakeid::__private::compose_unchecked(l, s.0, s.1, 1)
    }
}

fn coarse_wide(node: u64) -> Generator<CoarseClock> {
    Generator::builder(wide())
        .node(node)
        .clock(CoarseClock::new())
        .build()
        .unwrap()
}

fn sharded_wide(shards: usize) -> ShardedGenerator<CoarseClock> {
    ShardedGenerator::builder(wide())
        .nodes(0..16)
        .shards(shards)
        .clock(CoarseClock::new())
        .build()
        .unwrap()
}

/// Checks 100,000 IDs from `next`: strictly increasing (hence unique).
fn check(name: &str, mut next: impl FnMut() -> u64) {
    let ids: Vec<u64> = (0..100_000).map(|_| next()).collect();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "{name}: IDs must strictly increase"
    );
}

fn clock(c: &mut Criterion) {
    let mut group = c.benchmark_group("clock");
    let mono = MonotonicClock::new();
    group.bench_function("quanta raw (flakeid MonotonicClock)", |b| {
        b.iter(|| black_box(mono.unix_ns()))
    });
    let coarse = CoarseClock::new();
    group.bench_function("flakeid CoarseClock recent", |b| {
        b.iter(|| black_box(coarse.recent_unix_ns()))
    });
    let q = quanta::Clock::new();
    let _upkeep = quanta::Upkeep::new(Duration::from_millis(1))
        .start()
        .unwrap();
    group.bench_function("quanta recent (upkeep thread)", |b| {
        b.iter(|| black_box(q.recent()))
    });
    group.bench_function("std SystemTime::now", |b| {
        b.iter(|| black_box(std::time::SystemTime::now()))
    });
    group.bench_function("std Instant::now", |b| b.iter(|| black_box(Instant::now())));
    // Not a clock: what one lock-prefixed read-modify-write costs on this machine, the
    // floor of any generator that does one atomic RMW per ID.
    let word = std::sync::atomic::AtomicU64::new(0);
    group.bench_function("reference: one AtomicU64::fetch_add", |b| {
        b.iter(|| black_box(word.fetch_add(1, std::sync::atomic::Ordering::AcqRel)))
    });
    group.finish();
}

fn hot_path(c: &mut Criterion) {
    let mut group = c.benchmark_group("hot_path");

    // What a newcomer writes: the builder's defaults, nothing named.
    let gd = Generator::builder(wide()).node(1).build().unwrap();
    check("flakeid default", || gd.next_id().unwrap().get());
    group.bench_function("flakeid next_id (default: builder(layout).build())", |b| {
        b.iter(|| black_box(gd.next_id().unwrap()))
    });

    let g = Generator::builder(wide())
        .node(4)
        .clock(MonotonicClock::new())
        .build()
        .unwrap();
    check("flakeid", || g.next_id().unwrap().get());
    group.bench_function("flakeid next_id (MonotonicClock)", |b| {
        b.iter(|| black_box(g.next_id().unwrap()))
    });

    let gc = coarse_wide(2);
    check("flakeid coarse", || gc.next_id().unwrap().get());
    group.bench_function("flakeid next_id (CoarseClock)", |b| {
        b.iter(|| black_box(gc.next_id().unwrap()))
    });

    // The same generator with the wait-free fast path: one fetch_add per ID.
    let gadd = Generator::builder(wide())
        .node(5)
        .clock(CoarseClock::new())
        .fast_path(FastPath::FetchAdd)
        .build()
        .unwrap();
    assert_eq!(gadd.fast_path(), FastPath::FetchAdd);
    check("flakeid coarse fetch_add", || gadd.next_id().unwrap().get());
    group.bench_function("flakeid next_id (CoarseClock, FetchAdd fast path)", |b| {
        b.iter(|| black_box(gadd.next_id().unwrap()))
    });

    let sharded = sharded_wide(2);
    check("flakeid sharded", || sharded.next_id().unwrap().get());
    group.bench_function("flakeid sharded next_id", |b| {
        b.iter(|| black_box(sharded.next_id().unwrap()))
    });

    let gl = coarse_wide(3);
    let mut lease = gl.lease().unwrap();
    check("flakeid lease", || lease.next_id().unwrap().get());
    group.bench_function("flakeid leased shard next_id", |b| {
        b.iter(|| black_box(lease.next_id().unwrap()))
    });

    // Not generators: the floors of one atomic read-modify-write per ID.
    let word = std::sync::atomic::AtomicU64::new(0);
    group.bench_function("reference: one AtomicU64::fetch_add", |b| {
        b.iter(|| black_box(word.fetch_add(1, std::sync::atomic::Ordering::AcqRel)))
    });
    group.bench_function("reference: one load + compare_exchange_weak", |b| {
        b.iter(|| {
            use std::sync::atomic::Ordering::{AcqRel, Acquire};
            let mut current = word.load(Acquire);
            while let Err(actual) =
                word.compare_exchange_weak(current, current + 1, AcqRel, Acquire)
            {
                current = actual;
            }
            black_box(current)
        })
    });

    let fa: AtomicSnowflakeGenerator<WideFerroidId, _> =
        AtomicSnowflakeGenerator::new(1, ferroid_clock());
    check("ferroid atomic", || {
        fa.next_id(|_| std::hint::spin_loop()).to_raw()
    });
    group.bench_function("ferroid Atomic", |b| {
        b.iter(|| black_box(fa.next_id(|_| std::hint::spin_loop()).to_raw()))
    });

    let fb: BasicSnowflakeGenerator<WideFerroidId, _> =
        BasicSnowflakeGenerator::new(1, ferroid_clock());
    check("ferroid basic", || {
        fb.next_id(|_| std::hint::spin_loop()).to_raw()
    });
    group.bench_function("ferroid Basic (not Sync)", |b| {
        b.iter(|| black_box(fb.next_id(|_| std::hint::spin_loop()).to_raw()))
    });

    let fl: LockSnowflakeGenerator<WideFerroidId, _> =
        LockSnowflakeGenerator::new(1, ferroid_clock());
    check("ferroid lock", || {
        fl.next_id(|_| std::hint::spin_loop()).to_raw()
    });
    group.bench_function("ferroid Lock", |b| {
        b.iter(|| black_box(fl.next_id(|_| std::hint::spin_loop()).to_raw()))
    });

    let sm = snowflake_me();
    check("snowflake_me", || sm.next_id().unwrap().as_u64());
    group.bench_function("snowflake_me", |b| {
        b.iter(|| black_box(sm.next_id().unwrap()))
    });

    // snowflaked has the fixed Twitter layout (12-bit sequence): its 4,096 IDs per ms cap
    // (244 ns per ID) is what this measures.
    let sd = snowflaked::sync::Generator::new(1);
    check("snowflaked", || sd.generate::<u64>());
    group.bench_function("snowflaked (4096/ms cap)", |b| {
        b.iter(|| black_box(sd.generate::<u64>()))
    });

    // sonyflake (Sony's layout: 8-bit sequence per 10 ms): its cap of 25,600 IDs per
    // second (39 µs per ID) is what this measures.
    let sf = sonyflake::Sonyflake::builder()
        .machine_id(&|| Ok(1))
        .finalize()
        .unwrap();
    check("sonyflake", || sf.next_id().unwrap());
    group.bench_function("sonyflake (256/10 ms cap)", |b| {
        b.iter(|| black_box(sf.next_id().unwrap()))
    });

    let mb = MutexBaseline::new();
    check("mutex baseline", || mb.next());
    group.bench_function("Mutex baseline", |b| b.iter(|| black_box(mb.next())));

    let uuids: HashSet<uuid::Uuid> = (0..10_000).map(|_| uuid::Uuid::now_v7()).collect();
    assert_eq!(uuids.len(), 10_000);
    group.bench_function("uuid now_v7 (fast-rng)", |b| {
        b.iter(|| black_box(uuid::Uuid::now_v7()))
    });
    let ulids: HashSet<u128> = (0..10_000).map(|_| ulid::Ulid::generate().0).collect();
    assert_eq!(ulids.len(), 10_000);
    group.bench_function("ulid generate", |b| {
        b.iter(|| black_box(ulid::Ulid::generate()))
    });
    group.finish();
}

/// A generator whose node id is claimed from a memory store: fenced by a 5 s window that a
/// background thread renews.
fn fenced<C: Clock + Clone + Send + Sync + 'static>(clock: C) -> ClaimedGenerator<C> {
    Generator::builder(wide())
        .clock(clock)
        .build_claimed(flakeid::claim::Claims::new(flakeid::claim::MemoryStore::new()).nodes(5..6))
        .unwrap()
}

/// The fence costs nothing on the same-tick path: it is read only when the tick changes
/// (once a millisecond here). Each pair runs in one group, so the ratio is from one run.
fn fence(c: &mut Criterion) {
    let mut group = c.benchmark_group("fence");
    let mono = Generator::builder(wide())
        .node(6)
        .clock(MonotonicClock::new())
        .build()
        .unwrap();
    let mono_fenced = fenced(MonotonicClock::new());
    let coarse = coarse_wide(7);
    let coarse_fenced = fenced(CoarseClock::new());
    fence_next_id(&mut group, "MonotonicClock", "unfenced", &mono);
    fence_next_id(&mut group, "MonotonicClock", "fenced", &mono_fenced);
    fence_next_id(&mut group, "CoarseClock", "unfenced", &coarse);
    fence_next_id(&mut group, "CoarseClock", "fenced", &coarse_fenced);
    fence_leased(&mut group, "unfenced", &coarse);
    fence_leased(&mut group, "fenced", &coarse_fenced);
    assert!(mono_fenced.claim_status().fenced);
    group.finish();
}

fn fence_next_id<C: Clock, G: TickGate>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    clock: &str,
    name: &str,
    g: &Generator<C, G>,
) {
    check(name, || g.next_id().unwrap().get());
    group.bench_function(format!("next_id ({clock}) {name}"), |b| {
        b.iter(|| black_box(g.next_id().unwrap()))
    });
}

fn fence_leased<C: Clock, G: TickGate>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    g: &Generator<C, G>,
) {
    let mut lease = g.lease().unwrap();
    check(name, || lease.next_id().unwrap().get());
    group.bench_function(format!("leased next_id (CoarseClock) {name}"), |b| {
        b.iter(|| black_box(lease.next_id().unwrap()))
    });
}

/// The store operations a claim costs: taking and releasing an id (a lock and two durable
/// writes for `file:`), and one renewal (one durable write), three per window.
fn claim_store(c: &mut Criterion) {
    use flakeid::claim::store::ClaimRequest;
    use flakeid::claim::{ClaimStore, FileStore, MemoryStore};
    let mut group = c.benchmark_group("claim_store");
    group.sample_size(20);
    let dir = std::env::temp_dir().join(format!("flakeid-bench-claims-{}", std::process::id()));
    let file = FileStore::open(&dir).unwrap();
    let memory = MemoryStore::new();
    let request = ClaimRequest {
        namespace: "bench",
        pool: 0..1,
        instance: "bench",
    };
    let stores: [(&str, &dyn ClaimStore); 2] = [("file", &file), ("memory", &memory)];
    for (name, store) in stores {
        group.bench_function(format!("{name}: claim + release"), |b| {
            b.iter(|| {
                let claimed = store.claim(&request).unwrap();
                store.release(&claimed, 1).unwrap();
            })
        });
        let claimed = store.claim(&request).unwrap();
        group.bench_function(format!("{name}: renew"), |b| {
            b.iter(|| store.renew(&claimed, 1).unwrap())
        });
        store.release(&claimed, 1).unwrap();
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

fn batch(c: &mut Criterion) {
    const N: usize = 4096;
    let mut group = c.benchmark_group("batch_4096");
    group.throughput(Throughput::Elements(N as u64));

    let g = coarse_wide(1);
    let mut out = vec![Id::default(); N];
    let check_batch = |ids: &[u64]| {
        assert_eq!(ids.len(), N);
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
    };
    assert_eq!(g.next_ids(&mut out).unwrap(), N);
    check_batch(&out.iter().map(|id| id.get()).collect::<Vec<_>>());
    group.bench_function("flakeid next_ids", |b| {
        b.iter(|| black_box(g.next_ids(&mut out).unwrap()))
    });

    // The wide layout caps a node at 2^22 IDs per ms (4.19 G/s, 0.238 ns per ID), which a
    // batch reaches: the rows above measure that cap. Below it, with 26 sequence bits
    // (67 G/s), the batch is measured against the fill it does.
    let gb = Generator::builder("seq=26,node=0,epoch=2025-01-01T00:00:00Z".parse().unwrap())
        .clock(CoarseClock::new())
        .build()
        .unwrap();
    assert_eq!(gb.next_ids(&mut out).unwrap(), N);
    check_batch(&out.iter().map(|id| id.get()).collect::<Vec<_>>());
    group.bench_function("flakeid next_ids (26-bit sequence, below the cap)", |b| {
        b.iter(|| black_box(gb.next_ids(&mut out).unwrap()))
    });

    // Not a generator: the same buffer written with base + k, the floor a batch of one
    // tick's consecutive IDs can reach (what `next_ids` writes after its one reservation).
    let mut base = 1u64;
    group.bench_function("reference: affine fill of the buffer", |b| {
        b.iter(|| {
            for (k, id) in out.iter_mut().enumerate() {
                *id = Id::new(base + k as u64);
            }
            base += N as u64;
            black_box(&out);
        })
    });

    let gi = coarse_wide(2);
    check_batch(&gi.ids(N).map(|id| id.unwrap().get()).collect::<Vec<_>>());
    group.bench_function("flakeid ids iterator (sum)", |b| {
        b.iter(|| {
            black_box(
                gi.ids(N)
                    .map(|id| id.unwrap().get())
                    .fold(0u64, u64::wrapping_add),
            )
        })
    });

    let gl = coarse_wide(3);
    let mut lease = gl.lease().unwrap();
    assert_eq!(lease.next_ids(&mut out).unwrap(), N);
    check_batch(&out.iter().map(|id| id.get()).collect::<Vec<_>>());
    group.bench_function("flakeid leased next_ids", |b| {
        b.iter(|| black_box(lease.next_ids(&mut out).unwrap()))
    });

    let sm = snowflake_me();
    let mut v = Vec::with_capacity(N);
    sm.next_ids_into(N, &mut v).unwrap();
    check_batch(&v.iter().map(|id| id.as_u64()).collect::<Vec<_>>());
    group.bench_function("snowflake_me next_ids_into", |b| {
        b.iter(|| {
            v.clear();
            sm.next_ids_into(N, &mut v).unwrap();
            black_box(v.len())
        })
    });
    group.finish();
}

/// Runs `threads` threads, each minting `per_thread` IDs with `work(thread, n, None)`,
/// released together; returns the wall time from release to the last thread done.
fn race<F: Fn(usize, u64, Option<&mut Vec<u64>>) + Sync>(
    threads: usize,
    per_thread: u64,
    work: &F,
) -> Duration {
    let barrier = Barrier::new(threads + 1);
    let started = std::thread::scope(|s| {
        for t in 0..threads {
            let barrier = &barrier;
            s.spawn(move || {
                barrier.wait();
                work(t, per_thread, None);
            });
        }
        barrier.wait();
        // The scope joins every thread before returning.
        Instant::now()
    });
    started.elapsed()
}

/// Checks one run: per thread strictly increasing, all unique.
fn check_threads<F: Fn(usize, u64, Option<&mut Vec<u64>>) + Sync>(
    name: &str,
    threads: usize,
    work: &F,
) {
    let per: Vec<Vec<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let mut ids = Vec::new();
                    work(t, 20_000, Some(&mut ids));
                    ids
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all = HashSet::new();
    for ids in per {
        assert_eq!(ids.len(), 20_000, "{name}");
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "{name}: per-thread order"
        );
        for id in ids {
            assert!(all.insert(id), "{name}: duplicate");
        }
    }
}

/// Mints `n` IDs with `next`, into `out` when checking, else into `black_box`.
#[inline(always)]
fn each(n: u64, out: Option<&mut Vec<u64>>, mut next: impl FnMut() -> u64) {
    match out {
        Some(out) => out.extend((0..n).map(|_| next())),
        None => {
            for _ in 0..n {
                black_box(next());
            }
        }
    }
}

fn contention_group<F: Fn(usize, u64, Option<&mut Vec<u64>>) + Sync>(
    c: &mut Criterion,
    threads: usize,
    name: &str,
    work: F,
) {
    check_threads(name, threads, &work);
    let mut group = c.benchmark_group(format!("contention/{threads}"));
    group.throughput(Throughput::Elements(1));
    group.bench_function(BenchmarkId::from_parameter(name), |b| {
        b.iter_custom(|iters| race(threads, iters.div_ceil(threads as u64), &work))
    });
    group.finish();
}

fn contention(c: &mut Criterion) {
    for threads in [1usize, 2, 4] {
        let shared = coarse_wide(1);
        contention_group(c, threads, "flakeid shared next_id", |_, n, out| {
            each(n, out, || shared.next_id().unwrap().get())
        });
        let shared_add = Generator::builder(wide())
            .node(1)
            .clock(CoarseClock::new())
            .fast_path(FastPath::FetchAdd)
            .build()
            .unwrap();
        contention_group(
            c,
            threads,
            "flakeid shared next_id (FetchAdd fast path)",
            |_, n, out| each(n, out, || shared_add.next_id().unwrap().get()),
        );
        let sharded = sharded_wide(2);
        contention_group(
            c,
            threads,
            "flakeid sharded next_id (2 shards)",
            |_, n, out| each(n, out, || sharded.next_id().unwrap().get()),
        );
        // One shard per thread, which each thread leases for its run (as a pinned
        // worker thread would for its life).
        let per_thread = sharded_wide(threads);
        contention_group(
            c,
            threads,
            "flakeid leased shard per thread",
            |t, n, out| {
                let mut lease = per_thread.shards()[t].lease().unwrap();
                each(n, out, || lease.next_id().unwrap().get())
            },
        );
        let fa: AtomicSnowflakeGenerator<WideFerroidId, _> =
            AtomicSnowflakeGenerator::new(1, ferroid_clock());
        contention_group(c, threads, "ferroid Atomic", |_, n, out| {
            each(n, out, || fa.next_id(|_| std::hint::spin_loop()).to_raw())
        });
        let fl: LockSnowflakeGenerator<WideFerroidId, _> =
            LockSnowflakeGenerator::new(1, ferroid_clock());
        contention_group(c, threads, "ferroid Lock", |_, n, out| {
            each(n, out, || fl.next_id(|_| std::hint::spin_loop()).to_raw())
        });
        let sm = snowflake_me();
        contention_group(c, threads, "snowflake_me", |_, n, out| {
            each(n, out, || sm.next_id().unwrap().as_u64())
        });
        let mb = MutexBaseline::new();
        contention_group(c, threads, "Mutex baseline", |_, n, out| {
            each(n, out, || mb.next())
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    targets = clock, hot_path, batch, contention, fence, claim_store
}
criterion_main!(benches);
