//! Small concurrent runs sized for Miri, which checks them for undefined behaviour and data
//! races and injects spurious `compare_exchange_weak` failures (loom does not).
//!
//! Run: `cargo +nightly miri test --no-default-features --features std --test miri` (CI
//! runs it; see `.ci/run`). They also run, fast, in the normal `cargo test`.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use flakeid::clock::ManualClock;
use flakeid::{Clock, ClockPolicy, Generator, Id, Layout, ShardedGenerator};

/// 2 sequence bits: 4 IDs per tick, so threads keep crossing tick boundaries.
fn tiny() -> Layout {
    Layout::builder()
        .time_bits(30)
        .sequence_bits(2)
        .node_bits(2)
        .epoch_unix_ms(0)
        .build()
        .unwrap()
}

/// `threads` threads mint `per_thread` IDs each with `mint`, while the main thread moves
/// the clock forward; checks uniqueness and per-thread order.
fn run<F>(threads: usize, per_thread: usize, clock: &ManualClock, mint: F) -> usize
where
    F: Fn(usize) -> Option<Id> + Send + Sync + 'static,
{
    let mint = Arc::new(mint);
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let mint = Arc::clone(&mint);
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                for _ in 0..per_thread {
                    if let Some(id) = mint(t) {
                        ids.push(id);
                    }
                }
                ids
            })
        })
        .collect();
    for _ in 0..per_thread {
        clock.advance(Duration::from_millis(1));
        std::thread::yield_now();
    }
    let mut all = HashSet::new();
    for w in workers {
        let ids = w.join().unwrap();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "per-thread order");
        for id in ids {
            assert!(all.insert(id), "duplicate {id}");
        }
    }
    all.len()
}

fn generator(clock: &ManualClock, policy: ClockPolicy, node: u64) -> Generator<ManualClock> {
    Generator::builder(tiny())
        .node(node)
        .policy(policy)
        .max_wait(Duration::ZERO)
        .clock(clock.clone())
        .build()
        .unwrap()
}

#[test]
fn shared_generator_under_each_policy() {
    for policy in [
        ClockPolicy::Reject,
        ClockPolicy::Continue,
        ClockPolicy::Wait,
    ] {
        let clock = ManualClock::from_unix_ms(1_000);
        let g = Arc::new(generator(&clock, policy, 1));
        let minted = run(3, 40, &clock, move |_| g.next_id().ok());
        assert!(minted > 0);
    }
}

#[test]
fn batches_and_singles() {
    let clock = ManualClock::from_unix_ms(1_000);
    let g = Arc::new(generator(&clock, ClockPolicy::Continue, 2));
    let minted = run(2, 40, &clock, move |t| {
        if t == 0 {
            let mut out = [Id::default(); 3];
            let n = g.next_ids(&mut out).unwrap_or(0);
            out[..n].last().copied()
        } else {
            g.next_id().ok()
        }
    });
    assert!(minted > 0);
}

#[test]
fn leases_and_shards() {
    let clock = ManualClock::from_unix_ms(1_000);
    let sharded = Arc::new(
        ShardedGenerator::builder(tiny())
            .nodes(0..4)
            .shards(2)
            .max_wait(Duration::ZERO)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let minted = run(3, 30, &clock, move |t| {
        let shard = sharded.shard(t % 2).unwrap();
        if t == 2 {
            shard
                .lease()
                .ok()
                .and_then(|mut lease| lease.next_id().ok())
        } else {
            shard.next_id().ok()
        }
    });
    assert!(minted > 0);
}

/// The sharded generator's table of home shards (pointers into what it holds, read with
/// `unsafe`) under Miri's checks: built, moved twice, then shared by threads that mint
/// through it before and after they ask for their home shard.
#[test]
fn sharded_next_id_through_the_table() {
    let clock = ManualClock::from_unix_ms(1_000);
    let built = ShardedGenerator::builder(tiny())
        .nodes(0..4)
        .shards(3)
        .max_wait(Duration::ZERO)
        .clock(clock.clone())
        .build()
        .unwrap();
    let boxed = Box::new(built);
    let sharded = Arc::new(*boxed);
    let minted = run(3, 30, &clock, move |t| {
        if t == 0 {
            let _ = sharded.home();
        }
        sharded.next_id().ok()
    });
    assert!(minted > 0);
}

/// The zero-copy view of a batch (`Id::as_u64s`, an `unsafe` cast) under Miri's checks.
#[test]
fn a_batch_viewed_as_u64s() {
    let g = Generator::builder(tiny())
        .node(1)
        .clock(ManualClock::from_unix_ms(1_000))
        .build()
        .unwrap();
    let mut batch = [Id::default(); 4];
    let n = g.next_ids(&mut batch).unwrap();
    let raw = Id::as_u64s(&batch[..n]);
    assert_eq!(raw.len(), n);
    for (r, id) in raw.iter().zip(&batch) {
        assert_eq!(*r, id.get());
    }
}

/// The scalar decode kernel (raw-pointer writes into the columns) under Miri, at every
/// length from 0 to 9, with a bad ID in the last row.
#[test]
fn the_scalar_decoder_writes_only_its_columns() {
    use flakeid::decode::{Backend, Columns, Decoder};
    let layout = Layout::snowflake();
    let decoder = Decoder::with_backend(&layout, Backend::Scalar);
    for len in 0..10usize {
        let mut ids: Vec<u64> = (0..len as u64).map(|i| (i << 22) | (3 << 12) | i).collect();
        let (mut ticks, mut node) = (vec![0; len], vec![0; len]);
        let ok = decoder.decode(
            &ids,
            Columns {
                ticks: Some(&mut ticks),
                node: Some(&mut node),
                ..Columns::default()
            },
        );
        assert_eq!(ok, Ok(()));
        for i in 0..len {
            assert_eq!((ticks[i], node[i]), (i as u64, 3));
        }
        if let Some(last) = ids.last_mut() {
            *last |= 1 << 63;
            let bad = decoder.decode(
                &ids,
                Columns {
                    node: Some(&mut node),
                    ..Columns::default()
                },
            );
            assert!(bad.is_err());
        }
    }
}

/// The `u32` columns and the decoder's own aligned buffers (raw-pointer writes into
/// offset slices of a `Vec`, reused and regrown) under Miri, on the scalar kernel.
#[test]
fn the_scalar_decoder_fills_narrow_columns_and_its_own_buffers() {
    use flakeid::decode::{Backend, ColumnBuffers, Decoder, Fields, NarrowColumns, Stores};
    let layout = Layout::snowflake();
    let decoder = Decoder::with_backend(&layout, Backend::Scalar);
    let mut out = ColumnBuffers::new(Fields::ALL).stores(Stores::NonTemporal);
    for len in [0usize, 5, 2, 9, 17, 1] {
        let ids: Vec<u64> = (0..len as u64).map(|i| (i << 22) | (3 << 12) | i).collect();
        let (mut seq, mut ms) = (vec![0u32; len], vec![0u64; len]);
        let cols = NarrowColumns {
            sequence: Some(&mut seq),
            unix_ms: Some(&mut ms),
            ..NarrowColumns::default()
        };
        assert_eq!(decoder.decode_narrow(&ids, cols), Ok(()));
        decoder.decode_into(&ids, &mut out).unwrap();
        for i in 0..len {
            assert_eq!(seq[i], i as u32);
            assert_eq!(out.sequence().unwrap()[i], i as u32);
            assert_eq!(out.node().unwrap()[i], 3);
            assert_eq!(out.ticks().unwrap()[i], i as u64);
            assert_eq!(out.unix_ms().unwrap()[i], ms[i]);
        }
        assert_eq!(out.len(), len);
    }
}

/// A clock whose reading is one atomic it hands out ([`Clock::recent_atomic`]), so a lease
/// loads it itself; set by hand.
struct Published(Arc<AtomicU64>);

impl Clock for Published {
    fn unix_ns(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    fn recent_atomic(&self) -> Option<&AtomicU64> {
        Some(&self.0)
    }
}

/// Leases that mint several IDs each on the lease's own copy (the reading loaded through
/// `recent_atomic`, the word written back once per tick and at the drop), against shared
/// minting and a reader of `last_id`, while the clock moves: no duplicate, no data race.
#[test]
fn leases_on_a_published_reading_race_shared_minting() {
    const EACH: usize = 9;
    let ns = Arc::new(AtomicU64::new(1_000_000_000));
    let g = Arc::new(
        Generator::builder(tiny())
            .node(1)
            .policy(ClockPolicy::Continue)
            .max_wait(Duration::ZERO)
            .clock(Published(Arc::clone(&ns)))
            .build()
            .unwrap(),
    );
    let done = Arc::new(AtomicU64::new(0));
    let worker = |leased: bool| {
        let (g, done) = (Arc::clone(&g), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut ids = Vec::new();
            while ids.len() < EACH {
                if leased {
                    if let Ok(mut lease) = g.lease() {
                        ids.extend((0..3).filter_map(|_| lease.next_id().ok()));
                    }
                } else {
                    ids.extend(g.next_id().ok());
                }
                std::thread::yield_now();
            }
            done.fetch_add(1, Ordering::AcqRel);
            ids
        })
    };
    let (leaser, sharer) = (worker(true), worker(false));
    let mut last_ids = Vec::new();
    // Bounded: each tick gives 4 IDs, so both are done within a few dozen ticks.
    for _ in 0..10_000 {
        if done.load(Ordering::Acquire) == 2 {
            break;
        }
        ns.fetch_add(400_000, Ordering::AcqRel);
        last_ids.push(g.last_id());
        std::thread::yield_now();
    }
    assert_eq!(
        done.load(Ordering::Acquire),
        2,
        "both threads minted {EACH}"
    );
    let mut all = HashSet::new();
    for ids in [leaser.join().unwrap(), sharer.join().unwrap()] {
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "per-thread order");
        for id in ids {
            assert!(all.insert(id), "duplicate {id}");
        }
    }
    // Never below what was handed out before (here: everything, after the joins). The
    // racing readings are not monotonic (one that loads a stale word and the next lease's
    // `held` can lie above a later one), but each is an ID of this node, never a word.
    assert!(g.last_id() >= *all.iter().max().unwrap());
    let node = |id: Id| tiny().decompose(id.get()).map(|p| p.node);
    assert!(last_ids.iter().all(|&l| node(l) == Ok(1)), "{last_ids:?}");
}

/// Threads that end give their fast-path slot back, and threads alive at once never share
/// one: waves of three threads that each mint and end, the slots of every wave held by no
/// two of its threads, and the same few slots found again wave after wave.
#[test]
fn thread_slots_are_given_back_and_never_shared() {
    let clock = ManualClock::from_unix_ms(1_000);
    let sharded = Arc::new(
        ShardedGenerator::builder(tiny())
            .nodes(0..2)
            .shards(2)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let mut seen = HashSet::new();
    for _ in 0..4 {
        let barrier = Arc::new(std::sync::Barrier::new(3));
        let wave: Vec<u8> = (0..3)
            .map(|_| {
                let (sharded, barrier) = (sharded.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let _ = sharded.try_next_id();
                    // All three hold their slots at once here.
                    barrier.wait();
                    flakeid::__private::thread_slot().expect("a slot for a few threads")
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect();
        let distinct: HashSet<u8> = wave.iter().copied().collect();
        assert_eq!(distinct.len(), 3, "two live threads share a slot: {wave:?}");
        seen.extend(wave);
    }
    // Other tests' threads may hold slots meanwhile, but not hundreds of them: the waves
    // reuse a handful of slots instead of taking twelve new ones for good.
    assert!(seen.iter().all(|&s| s < 255), "{seen:?}");
}
