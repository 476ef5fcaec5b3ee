//! One minting or decoding path in a loop, for counting instructions per ID with callgrind
//! (`scripts/instructions.sh` runs it twice with different counts and divides the
//! difference of the main thread's totals, so setup and the clock's background thread do
//! not count). Run by hand: `cargo run --release --example instructions -- <path> <count>`;
//! `list` prints the paths.
//!
//! Every path mints (or decodes) the benchmarks' wide layout (1 sign, 37 time, 4 node, 22
//! sequence bits, 1 ms), whose sequence never runs out, so the code is counted, not the
//! layout's cap. Each path's output is checked once (strictly increasing) before the
//! counted loop.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ferroid::define_snowflake_id;
use ferroid::generator::{AtomicSnowflakeGenerator, BasicSnowflakeGenerator};
use ferroid::time::MonotonicClock as FerroidClock;
use flakeid::clock::MonotonicClock;
use flakeid::generator::FastPath;
use flakeid::{Generator, Id, Layout, ShardedGenerator};

define_snowflake_id!(WideFerroidId, u64, reserved: 1, timestamp: 37, machine_id: 4, sequence: 22);

/// Batches of this many IDs for the batch and fill paths.
const BATCH: usize = 4096;

/// The paths, in the order the script prints them, with what each counts.
const PATHS: &[(&str, &str)] = &[
    (
        "fetch_add",
        "one AtomicU64::fetch_add (the floor of one atomic RMW)",
    ),
    (
        "cas",
        "one load + compare_exchange_weak loop on an AtomicU64",
    ),
    (
        "ferroid-atomic",
        "ferroid AtomicSnowflakeGenerator::next_id",
    ),
    (
        "ferroid-basic",
        "ferroid BasicSnowflakeGenerator::next_id (not Sync)",
    ),
    (
        "default",
        "flakeid Generator::builder(layout).build(), next_id",
    ),
    ("monotonic", "flakeid next_id on MonotonicClock"),
    ("fetch-add-path", "flakeid next_id with FastPath::FetchAdd"),
    ("sharded", "flakeid ShardedGenerator::next_id (2 shards)"),
    (
        "sharded-churn",
        "the same on a thread that mints after 1,000 short-lived threads have come and gone",
    ),
    ("leased", "flakeid Lease::next_id"),
    (
        "batch",
        "flakeid next_ids into a 4,096-ID buffer, per ID (26-bit sequence)",
    ),
    (
        "fill",
        "an affine fill of the same buffer (base + k), per ID",
    ),
    ("decompose", "flakeid decompose + unix_ms_of, per ID"),
    (
        "decompose-shared",
        "the same through shared state: the layout beside an atomic, reached by a reference the compiler cannot see through",
    ),
];

/// A layout kept beside other shared state, as a service keeps it: reached through a
/// reference, so the compiler cannot fold its fields into constants.
struct Shared {
    served: std::sync::atomic::AtomicU64,
    layout: Layout,
}

fn wide() -> Layout {
    "seq=22,node=4,epoch=2025-01-01T00:00:00Z".parse().unwrap()
}

fn ferroid_clock() -> FerroidClock<1> {
    FerroidClock::<1>::with_epoch(Duration::from_millis(wide().epoch_unix_ms()))
}

/// Checks 10,000 IDs from `next` (strictly increasing), then calls it `count` times.
fn run(count: u64, mut next: impl FnMut() -> u64) {
    let mut last = 0;
    for _ in 0..10_000 {
        let id = next();
        assert!(id > last, "IDs must strictly increase");
        last = id;
    }
    counted(count, next);
}

/// The loop callgrind counts (`--toggle-collect=*counted*`): only what runs inside it.
#[inline(never)]
fn counted(count: u64, mut next: impl FnMut() -> u64) {
    for _ in 0..count {
        black_box(next());
    }
}

/// Runs `fill` on a 4,096-ID buffer `count / 4096` times (rounded up).
fn run_batches(count: u64, mut fill: impl FnMut(&mut [Id])) {
    let mut buffer = vec![Id::new(0); BATCH];
    fill(&mut buffer);
    assert!(
        buffer.windows(2).all(|w| w[0] < w[1]),
        "batch must increase"
    );
    counted_batches(count.div_ceil(BATCH as u64), &mut buffer, fill);
}

/// The batches callgrind counts.
#[inline(never)]
fn counted_batches(batches: u64, buffer: &mut [Id], mut fill: impl FnMut(&mut [Id])) {
    for _ in 0..batches {
        fill(black_box(&mut *buffer));
    }
    black_box(buffer);
}

/// `count` decompositions (and times in Unix ms) of `ids`, round and round.
#[inline(never)]
fn counted_decode(layout: &Layout, ids: &[u64], count: u64) {
    for k in 0..count as usize {
        let parts = layout.decompose(black_box(ids[k & (BATCH - 1)])).unwrap();
        black_box((
            layout.unix_ms_of(parts.ticks).unwrap(),
            parts.sequence,
            parts.node,
        ));
    }
}

/// [`counted_decode`] with the layout reached through `shared` on every call.
#[inline(never)]
fn counted_decode_shared(shared: &Shared, ids: &[u64], count: u64) {
    for k in 0..count as usize {
        let layout = &black_box(shared).layout;
        let parts = layout.decompose(black_box(ids[k & (BATCH - 1)])).unwrap();
        black_box((
            layout.unix_ms_of(parts.ticks).unwrap(),
            parts.sequence,
            parts.node,
        ));
    }
    shared
        .served
        .fetch_add(count, std::sync::atomic::Ordering::Relaxed);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "list".into());
    let count: u64 = match args.next().map(|c| c.parse()) {
        Some(Ok(count)) => count,
        None => 1_000_000,
        Some(Err(e)) => {
            eprintln!("instructions: the count must be a whole number ({e})");
            std::process::exit(2);
        }
    };
    match path.as_str() {
        "fetch_add" => {
            let word = AtomicU64::new(0);
            run(count, || word.fetch_add(1, Ordering::AcqRel) + 1);
        }
        "cas" => {
            let word = AtomicU64::new(0);
            run(count, || {
                let mut current = word.load(Ordering::Acquire);
                loop {
                    match word.compare_exchange_weak(
                        current,
                        current + 1,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => return current + 1,
                        Err(actual) => current = actual,
                    }
                }
            });
        }
        "ferroid-atomic" => {
            let g: AtomicSnowflakeGenerator<WideFerroidId, _> =
                AtomicSnowflakeGenerator::new(1, ferroid_clock());
            run(count, || g.next_id(|_| std::hint::spin_loop()).to_raw());
        }
        "ferroid-basic" => {
            let g: BasicSnowflakeGenerator<WideFerroidId, _> =
                BasicSnowflakeGenerator::new(1, ferroid_clock());
            run(count, || g.next_id(|_| std::hint::spin_loop()).to_raw());
        }
        "default" => {
            let g = Generator::builder(wide()).node(1).build().unwrap();
            run(count, || g.next_id().unwrap().get());
        }
        "monotonic" => {
            let g = Generator::builder(wide())
                .node(1)
                .clock(MonotonicClock::new())
                .build()
                .unwrap();
            run(count, || g.next_id().unwrap().get());
        }
        "fetch-add-path" => {
            let g = Generator::builder(wide())
                .node(1)
                .fast_path(FastPath::FetchAdd)
                .build()
                .unwrap();
            assert_eq!(g.fast_path(), FastPath::FetchAdd);
            run(count, || g.next_id().unwrap().get());
        }
        "sharded" => {
            let g = ShardedGenerator::builder(wide())
                .nodes(0..16)
                .shards(2)
                .build()
                .unwrap();
            run(count, || g.next_id().unwrap().get());
        }
        "sharded-churn" => {
            let g = ShardedGenerator::builder(wide())
                .nodes(0..16)
                .shards(2)
                .build()
                .unwrap();
            // 1,000 short-lived threads mint and end before this one mints at all.
            std::thread::scope(|s| {
                for _ in 0..1_000 {
                    s.spawn(|| g.next_id().unwrap()).join().unwrap();
                }
            });
            run(count, || g.next_id().unwrap().get());
        }
        "leased" => {
            let g = Generator::builder(wide()).node(1).build().unwrap();
            let mut lease = g.lease().unwrap();
            run(count, || lease.next_id().unwrap().get());
        }
        "batch" => {
            // 26 sequence bits: 67 G IDs/s per node, far above what one thread mints, so
            // the batch never waits for the next tick (the wide layout's 4.19 G/s cap it
            // would reach: see the `batch_4096` benchmarks).
            let layout = "seq=26,node=0,epoch=2025-01-01T00:00:00Z".parse().unwrap();
            let g = Generator::builder(layout).build().unwrap();
            run_batches(count, |out| {
                let mut done = 0;
                while done < out.len() {
                    done += g.next_ids(&mut out[done..]).unwrap();
                }
            });
        }
        "fill" => {
            let mut base = 1u64;
            run_batches(count, |out| {
                for (k, id) in out.iter_mut().enumerate() {
                    *id = Id::new(base + k as u64);
                }
                base += out.len() as u64;
            });
        }
        "decompose" => {
            let layout = wide();
            let g = Generator::builder(layout).node(1).build().unwrap();
            let ids: Vec<u64> = (0..BATCH).map(|_| g.next_id().unwrap().get()).collect();
            counted_decode(&layout, &ids, count);
        }
        "decompose-shared" => {
            let layout = wide();
            let g = Generator::builder(layout).node(1).build().unwrap();
            let ids: Vec<u64> = (0..BATCH).map(|_| g.next_id().unwrap().get()).collect();
            let shared = Shared {
                served: std::sync::atomic::AtomicU64::new(0),
                layout,
            };
            counted_decode_shared(&shared, &ids, count);
        }
        "list" => {
            for (name, what) in PATHS {
                println!("{name}\t{what}");
            }
        }
        other => {
            eprintln!("instructions: no path {other:?}; `list` prints them");
            std::process::exit(2);
        }
    }
}
