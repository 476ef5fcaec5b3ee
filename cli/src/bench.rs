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

type BenchWorker = std::thread::JoinHandle<Result<Ticks, MintError>>;

/// The ticks one thread minted in: from the first to the last, those it minted in, and
/// the ones it skipped, by why: it woke a tick or more late from a wait for the next tick,
/// or the tick moved on while it was minting (it was not running: preempted, or slower
/// than the cap).
#[derive(Debug, Default, Clone, Copy)]
struct Ticks {
    first: Option<u64>,
    last: u64,
    minted_in: u64,
    late: u64,
    preempted: u64,
}

impl Ticks {
    /// An ID of tick `tick`, minted after a wait for the next tick or not.
    #[inline(always)]
    fn saw(&mut self, tick: u64, after_wait: bool) {
        if self.first.is_some() && tick == self.last {
            return;
        }
        if self.first.is_some() && tick > self.last + 1 {
            let skipped = tick - self.last - 1;
            if after_wait {
                self.late += skipped;
            } else {
                self.preempted += skipped;
            }
        }
        self.first.get_or_insert(tick);
        self.last = tick;
        self.minted_in += 1;
    }

    /// The ticks from the first to the last.
    fn spanned(&self) -> u64 {
        self.first.map_or(0, |f| self.last - f + 1)
    }
}

/// The ticks of all threads together: spanned, minted in, skipped late and preempted.
#[derive(Debug, Default)]
struct TickSums {
    spanned: u64,
    minted_in: u64,
    late: u64,
    preempted: u64,
}

impl TickSums {
    fn add(&mut self, t: &Ticks) {
        self.spanned += t.spanned();
        self.minted_in += t.minted_in;
        self.late += t.late;
        self.preempted += t.preempted;
    }
}

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
            std::thread::spawn(move || -> Result<Ticks, MintError> {
                let layout = sharded.shards()[0].layout();
                // The time is the top field of every layout.
                let shift = layout.sequence_bits() + layout.node_bits();
                if leased {
                    flakeid::affinity::pin_current_thread(t);
                    let mut lease = sharded.shards()[t].lease()?;
                    mint_until(&stop, &total, shift, |wait| match wait {
                        true => lease.next_id(),
                        false => lease.try_next_id(),
                    })
                } else {
                    let g = &sharded.shards()[0];
                    mint_until(&stop, &total, shift, |wait| match wait {
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

/// Mints until `stop`, adding the count to `total` every 65,536 IDs and at the end, and
/// counting the ticks it minted in (an ID's tick is its bits above `shift`). `mint(false)`
/// must not wait (`try_next_id`), `mint(true)` may (`next_id`). The deadline is checked
/// every 1,024 IDs and at every wait for a tick, so a layout that mints a few IDs per
/// second stops on time too.
fn mint_until(
    stop: &AtomicBool,
    total: &AtomicU64,
    shift: u32,
    mut mint: impl FnMut(bool) -> Result<Id, MintError>,
) -> Result<Ticks, MintError> {
    let mut count = 0u64;
    let mut ticks = Ticks::default();
    let mut after_wait = false;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..1024 {
            let id = match mint(false) {
                Ok(id) => id,
                Err(MintError::WouldBlock { wait_ns }) if wait_ns > BENCH_SLEEP_ABOVE_NS => {
                    let wait = Duration::from_nanos(wait_ns - BENCH_SLEEP_ABOVE_NS / 2);
                    std::thread::sleep(wait.min(BENCH_SLEEP_SLICE));
                    after_wait = true;
                    break;
                }
                Err(MintError::WouldBlock { .. }) => {
                    after_wait = true;
                    mint(true)?
                }
                Err(e) => return Err(e),
            };
            ticks.saw(std::hint::black_box(id).get() >> shift, after_wait);
            after_wait = false;
            count += 1;
        }
        if count >= 1 << 16 {
            total.fetch_add(std::mem::take(&mut count), Ordering::Relaxed);
        }
    }
    total.fetch_add(count, Ordering::Relaxed);
    Ok(ticks)
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
    let mut ticks = TickSums::default();
    for w in workers {
        let seen = w
            .join()
            .map_err(|_| CliError::new(None, "a bench thread panicked"))?
            .map_err(|e| CliError::new(None, e))?;
        ticks.add(&seen);
    }
    let elapsed = started.elapsed().as_secs_f64();
    if bar {
        eprintln!();
    }
    let ids = total.load(Ordering::Relaxed);
    let rate = ids as f64 / elapsed;
    let cap = layout.ids_per_second_per_node() * shards as f64;
    // Ticks mean something per thread only where each shard has one.
    let ticks_line = if a.threads == 1 || a.sharded {
        let spanned = ticks.spanned;
        let lost = spanned.saturating_sub(ticks.minted_in);
        format!(
            "\nticks: minted in {} of {spanned}; {lost} lost ({:.2}%): {} woke a tick or more late from a wait for the next tick, {} passed while the thread minted (it was not running: preempted, or slower than the cap)\n",
            ticks.minted_in,
            lost as f64 / spanned.max(1) as f64 * 100.0,
            ticks.late,
            ticks.preempted,
        )
    } else {
        "\n".to_string()
    };
    print_out(&format!(
        "{ids} ids in {elapsed:.2} s: {rate:.0} ids/s, {:.1} ns/id; {:.2}% of the cap of {cap:.0} ids/s ({shards} node{}){ticks_line}",
        elapsed * 1e9 / ids.max(1) as f64,
        rate / cap * 100.0,
        if shards == 1 { "" } else { "s" }
    ))?;
    Ok(ExitCode::SUCCESS)
}
