//! Sustained minting on the real layouts, as a fraction of the layout's cap: how many of
//! the sequence slots of each tick a generator actually fills when it mints flat out.
//!
//! Run: `cargo bench --bench sustained` (about 8 s). Prints a Markdown table and writes it
//! to `$CARGO_TARGET_DIR/sustained.md` (`target/` by default) for `scripts/bench_report.py`.
//!
//! Two figures per row:
//! - *slots used*: IDs minted in the ticks the run covered completely, over the slots
//!   those ticks have (tick count x sequence numbers per tick); 100% = every slot used;
//! - *IDs/s*, and that over the cap (slots per second) for the whole wall-clock run,
//!   which also counts the partial first and last tick.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use flakeid::{Generator, Id, Layout, ShardedGenerator};

struct Run {
    ids: Vec<Id>,
    elapsed: Duration,
}

/// Mints with `lease.next_id()` until `seconds` have passed.
fn mint_for(g: &Generator, seconds: f64) -> Run {
    let mut lease = g.lease().expect("one thread per generator");
    let mut ids = Vec::with_capacity(8 << 20);
    let started = Instant::now();
    let until = Duration::from_secs_f64(seconds);
    loop {
        // Check the time every 256 IDs so the clock read does not slow the loop.
        for _ in 0..256 {
            ids.push(lease.next_id().expect("mint"));
        }
        if started.elapsed() >= until {
            break;
        }
    }
    Run {
        ids,
        elapsed: started.elapsed(),
    }
}

struct Figures {
    ids: usize,
    per_second: f64,
    of_cap: f64,
    slots_used: f64,
}

fn figures(layout: &Layout, run: &Run) -> Figures {
    let ids = &run.ids;
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "IDs must strictly increase"
    );
    let tick = |id: &Id| layout.decompose(id.get()).unwrap().ticks;
    let (first, last) = (tick(&ids[0]), tick(&ids[ids.len() - 1]));
    let full = ids
        .iter()
        .filter(|id| {
            let t = tick(id);
            t > first && t < last
        })
        .count();
    let slots = (last - first).saturating_sub(1) * (layout.max_sequence() + 1);
    let cap = layout.ids_per_second_per_node();
    let per_second = ids.len() as f64 / run.elapsed.as_secs_f64();
    Figures {
        ids: ids.len(),
        per_second,
        of_cap: per_second / cap,
        slots_used: full as f64 / slots as f64,
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument, if any, is ignored.
    let mut table = String::from(
        "| layout | generators | seconds | IDs | IDs/s | of the cap | slots used per tick |\n\
         |---|---|---|---|---|---|---|\n",
    );
    let layouts = [
        ("Snowflake (4,096 per ms)", Layout::snowflake(), 1.5),
        ("Sonyflake v2 (256 per 10 ms)", Layout::sonyflake(), 2.0),
    ];
    for (name, layout, seconds) in layouts {
        // One generator, one thread.
        let g = Generator::builder(layout).node(1).build().unwrap();
        let f = figures(&layout, &mint_for(&g, seconds));
        table += &format!(
            "| {name} | 1 | {seconds} | {} | {:.0} | {:.2}% | {:.2}% |\n",
            f.ids,
            f.per_second,
            100.0 * f.of_cap,
            100.0 * f.slots_used
        );

        // Sharded: one shard per core, each leased by a thread pinned to its core.
        let sharded = ShardedGenerator::builder(layout)
            .nodes(2..64)
            .per_core()
            .build()
            .unwrap();
        let runs: Vec<Run> = std::thread::scope(|s| {
            let handles: Vec<_> = sharded
                .shards()
                .iter()
                .enumerate()
                .map(|(core, shard)| {
                    s.spawn(move || {
                        flakeid::affinity::pin_current_thread(core);
                        mint_for(shard, seconds)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut all = HashSet::new();
        let per_shard: Vec<Figures> = runs.iter().map(|r| figures(&layout, r)).collect();
        for r in &runs {
            for id in &r.ids {
                assert!(all.insert(*id), "duplicate across shards");
            }
        }
        let total: f64 = per_shard.iter().map(|f| f.per_second).sum();
        let worst_cap = per_shard.iter().map(|f| f.of_cap).fold(f64::MAX, f64::min);
        let worst_slots = per_shard
            .iter()
            .map(|f| f.slots_used)
            .fold(f64::MAX, f64::min);
        table += &format!(
            "| {name} | {} sharded (pinned, leased) | {seconds} | {} | {:.0} | {:.2}% per shard (worst) | {:.2}% (worst shard) |\n",
            sharded.len(),
            all.len(),
            total,
            100.0 * worst_cap,
            100.0 * worst_slots
        );
    }
    print!("{table}");
    // Beside criterion's results: $CARGO_TARGET_DIR, or target/ (benches run from the
    // package root).
    let dir = std::path::PathBuf::from(
        std::env::var_os("CARGO_TARGET_DIR").unwrap_or_else(|| "target".into()),
    );
    let path = dir.join("sustained.md");
    let _ = std::fs::create_dir_all(&dir);
    if let Err(e) = std::fs::write(&path, &table) {
        eprintln!("could not write {}: {e}", path.display());
    }
}
