//! Real-clock stress: threads minting from shared generators, every ID collected and checked
//! for duplicates and per-thread order. Twitter's own suite minted 2 million; this mints
//! 18 million across the presets and a wide custom layout in a few seconds.

use std::sync::Arc;
use std::time::Duration;

use flakeid::{Generator, Id, Layout};

/// `threads` threads mint `per_thread` IDs each from `generators` (thread `t` uses
/// generator `t % generators.len()`), half one at a time and half in batches of 100.
fn hammer(generators: Vec<Generator>, threads: usize, per_thread: usize) {
    let generators = Arc::new(generators);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let gens = Arc::clone(&generators);
            std::thread::spawn(move || {
                let g = &gens[t % gens.len()];
                let mut ids = Vec::with_capacity(per_thread);
                let mut batch = [Id::default(); 100];
                while ids.len() < per_thread {
                    if ids.len() % 2_000 < 1_000 {
                        ids.push(g.next_id().unwrap().get());
                    } else {
                        let want = batch.len().min(per_thread - ids.len());
                        let n = g.next_ids(&mut batch[..want]).unwrap();
                        ids.extend(batch[..n].iter().map(|id| id.get()));
                    }
                }
                ids
            })
        })
        .collect();
    let mut all = Vec::with_capacity(threads * per_thread);
    for h in handles {
        let ids = h.join().unwrap();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "a thread's IDs must strictly increase"
        );
        all.extend(ids);
    }
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "{} duplicate IDs", n - all.len());
}

fn build(layout: Layout, node: u64) -> Generator {
    Generator::builder(layout)
        .node(node)
        .max_wait(Duration::from_secs(5))
        .build()
        .unwrap()
}

#[test]
fn snowflake_four_threads_two_generators_eight_million() {
    let l = Layout::snowflake();
    hammer(vec![build(l, 1), build(l, 2)], 4, 2_000_000);
}

#[test]
fn sonyflake_three_threads_one_generator() {
    // 25,600 IDs/s per node: 60,000 IDs take about 2.3 s, crossing ~230 ticks of 10 ms.
    hammer(vec![build(Layout::sonyflake(), 2565)], 3, 20_000);
}

#[test]
fn wide_layout_two_threads_ten_million() {
    let l: Layout = "seq=22,node=4,epoch=2025-01-01T00:00:00Z".parse().unwrap();
    hammer(vec![build(l, 3)], 2, 5_000_000);
}
