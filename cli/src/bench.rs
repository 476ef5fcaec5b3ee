//! `flakeid bench`: sustained minting, as IDs per second and a share of the cap.

use std::io::{self, IsTerminal};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use flakeid::clock::{CoarseClock, MonotonicClock};
use flakeid::{Clock, Error, Id, MintError, ShardedGenerator};

use crate::args::BenchArgs;
use crate::flags::parse_layout;
use crate::out::{CliError, CliResult, print_out};

type BenchWorker = std::thread::JoinHandle<Result<(), MintError>>;

/// Starts the bench threads: all on shard 0 (shared), or thread `t` pinned to core `t`
/// and leasing shard `t`.
fn spawn_bench<C: Clock + Send + Sync + 'static>(
    sharded: Result<ShardedGenerator<C>, Error>,
    threads: u64,
    leased: bool,
    stop: &Arc<AtomicBool>,
    total: &Arc<AtomicU64>,
) -> CliResult<Vec<BenchWorker>> {
    let sharded = Arc::new(sharded.map_err(|e| CliError::new(None, e))?);
    Ok((0..threads as usize)
        .map(|t| {
            let sharded = Arc::clone(&sharded);
            let (stop, total) = (Arc::clone(stop), Arc::clone(total));
            std::thread::spawn(move || -> Result<(), MintError> {
                if leased {
                    flakeid::affinity::pin_current_thread(t);
                    let mut lease = sharded.shards()[t].lease()?;
                    mint_until(&stop, &total, |wait| match wait {
                        true => lease.next_id(),
                        false => lease.try_next_id(),
                    })
                } else {
                    let g = &sharded.shards()[0];
                    mint_until(&stop, &total, |wait| match wait {
                        true => g.next_id(),
                        false => g.try_next_id(),
                    })
                }
            })
        })
        .collect())
}

/// A wait for the next tick longer than this is slept in slices of at most
/// [`BENCH_SLEEP_SLICE`], checking the deadline between them; a shorter one is left to
/// `next_id`, which spins at the boundary (so a 1 ms layout still reaches its cap).
const BENCH_SLEEP_ABOVE_NS: u64 = 1_000_000;
const BENCH_SLEEP_SLICE: Duration = Duration::from_millis(10);

/// Mints until `stop`, adding the count to `total` every 65,536 IDs and at the end.
/// `mint(false)` must not wait (`try_next_id`), `mint(true)` may (`next_id`). The deadline
/// is checked every 1,024 IDs and at every wait for a tick, so a layout that mints a few
/// IDs per second stops on time too.
fn mint_until(
    stop: &AtomicBool,
    total: &AtomicU64,
    mut mint: impl FnMut(bool) -> Result<Id, MintError>,
) -> Result<(), MintError> {
    let mut count = 0u64;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..1024 {
            match mint(false) {
                Ok(id) => {
                    std::hint::black_box(id);
                }
                Err(MintError::WouldBlock { wait_ns }) if wait_ns > BENCH_SLEEP_ABOVE_NS => {
                    let wait = Duration::from_nanos(wait_ns - BENCH_SLEEP_ABOVE_NS / 2);
                    std::thread::sleep(wait.min(BENCH_SLEEP_SLICE));
                    break;
                }
                Err(MintError::WouldBlock { .. }) => {
                    std::hint::black_box(mint(true)?);
                }
                Err(e) => return Err(e),
            }
            count += 1;
        }
        if count >= 1 << 16 {
            total.fetch_add(std::mem::take(&mut count), Ordering::Relaxed);
        }
    }
    total.fetch_add(count, Ordering::Relaxed);
    Ok(())
}

pub(crate) fn run(a: BenchArgs) -> CliResult<ExitCode> {
    let layout = parse_layout(&a.layout)?;
    if a.threads == 0 || a.threads > 1024 {
        return Err(CliError::new(Some("--threads"), "must be 1..=1024"));
    }
    if !(a.seconds > 0.0 && a.seconds <= 3600.0) {
        return Err(CliError::new(Some("--seconds"), "must be in (0, 3600]"));
    }
    let shards = if a.sharded { a.threads } else { 1 };
    if shards > layout.node_count() {
        return Err(CliError::new(
            Some("--threads"),
            format!(
                "{shards} shards need {shards} node ids; the layout has {}",
                layout.node_count()
            ),
        ));
    }
    let builder = ShardedGenerator::builder(layout)
        .nodes(0..shards)
        .shards(shards as usize)
        .max_wait(Duration::from_secs(5));
    let duration = Duration::from_secs_f64(a.seconds);
    let stop = Arc::new(AtomicBool::new(false));
    let total = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let workers = if a.monotonic {
        let sharded = builder.clock(MonotonicClock::new()).build();
        spawn_bench(sharded, a.threads, a.sharded, &stop, &total)?
    } else {
        let sharded = builder.clock(CoarseClock::new()).build();
        spawn_bench(sharded, a.threads, a.sharded, &stop, &total)?
    };
    let bar = io::stderr().is_terminal();
    while started.elapsed() < duration {
        std::thread::sleep(
            Duration::from_millis(100).min(duration.saturating_sub(started.elapsed())),
        );
        if bar {
            let frac = (started.elapsed().as_secs_f64() / a.seconds).min(1.0);
            let filled = (frac * 30.0) as usize;
            eprint!(
                "\r[{}{}] {:5.1}s {:>14} ids",
                "#".repeat(filled),
                " ".repeat(30 - filled),
                started.elapsed().as_secs_f64(),
                total.load(Ordering::Relaxed)
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join()
            .map_err(|_| CliError::new(None, "a bench thread panicked"))?
            .map_err(|e| CliError::new(None, e))?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    if bar {
        eprintln!();
    }
    let ids = total.load(Ordering::Relaxed);
    let rate = ids as f64 / elapsed;
    let cap = layout.ids_per_second_per_node() * shards as f64;
    print_out(&format!(
        "{ids} ids in {elapsed:.2} s: {rate:.0} ids/s, {:.1} ns/id; {:.2}% of the cap of {cap:.0} ids/s ({shards} node{})\n",
        elapsed * 1e9 / ids.max(1) as f64,
        rate / cap * 100.0,
        if shards == 1 { "" } else { "s" }
    ))?;
    Ok(ExitCode::SUCCESS)
}
