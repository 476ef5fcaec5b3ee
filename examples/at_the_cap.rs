//! Minting at the layout's cap, on a quiet host and beside busy threads, side by side in
//! one run: the share of Snowflake's cap (4,096 IDs a millisecond) that one thread reaches
//! with `next_ids`, `next_id` and `next_ids_async`, the ticks it lost, and its CPU.
//!
//! Beside them, in the same run:
//! - a reference thread that does nothing but sleep to each tick's boundary: the share
//!   of ticks it wakes in is what the host allows any waiting thread;
//! - the same reference that also spins, after each wake, for as long as `next_id` spent
//!   on the CPU per tick in the phase before (4,096 calls): on a busy host the scheduler
//!   wakes a thread late more often the more CPU it used, so this is what a thread doing
//!   `next_id`'s work can reach;
//! - `next_id` through a [`Lease`](flakeid::generator::Lease), which mints without an
//!   atomic read-modify-write per ID (a few µs a tick);
//! - the wait of flakeid 0.1.0 before this change (sleep to 150 µs before the boundary
//!   when further than 300 µs, then `yield_now`, spin the last 50 µs), driven through
//!   `try_next_ids`;
//! - the async wait before it, `tokio::time::sleep` (whole milliseconds).
//!
//! The busy phases start four spinning threads per core (the script starts and stops
//! them), in this process, so they compete with the minting thread as equals.
//!
//! `cargo run --release --features tokio --example at_the_cap -- [SECONDS] [ROUNDS]`
//! (defaults 2 and 3: each phase runs SECONDS, the whole set ROUNDS times, interleaved).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use flakeid::{Generator, Id, Layout, MintError};

/// What one phase measured.
#[derive(Clone, Copy, Default)]
struct Figures {
    /// IDs minted (for the reference: ticks woken in, times a tick's sequence).
    ids: u64,
    /// Ticks from the first to the last, and those in which something was minted.
    ticks: u64,
    ticks_with_ids: u64,
    wall: Duration,
    /// CPU time of the measured thread.
    cpu: Duration,
}

impl Figures {
    fn share(&self) -> f64 {
        let cap = Layout::snowflake().ids_per_second_per_node();
        self.ids as f64 / (self.wall.as_secs_f64() * cap) * 100.0
    }
}

/// The thread's CPU time so far (Linux: /proc/thread-self/schedstat; elsewhere zero).
fn thread_cpu() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}

/// Counts the ticks the IDs of a phase fell in.
#[derive(Default)]
struct Ticks {
    first: Option<u64>,
    last: u64,
    with_ids: u64,
}

impl Ticks {
    fn saw(&mut self, tick: u64) {
        if self.first.is_none() || tick != self.last {
            self.with_ids += 1;
            self.first.get_or_insert(tick);
            self.last = tick;
        }
    }
    fn saw_ids(&mut self, ids: &[Id]) {
        // A batch spans at most a few ticks: its first and last ID and each change.
        let shift = 22; // Snowflake: 12 sequence bits and 10 node bits below the time.
        let mut previous = None;
        for id in ids {
            let tick = id.get() >> shift;
            if previous != Some(tick) {
                self.saw(tick);
                previous = Some(tick);
            }
        }
    }
    fn into_figures(self, ids: u64, wall: Duration, cpu: Duration) -> Figures {
        Figures {
            ids,
            ticks: self.first.map_or(0, |f| self.last - f + 1),
            ticks_with_ids: self.with_ids,
            wall,
            cpu,
        }
    }
}

fn generator() -> Generator {
    builder().build().expect("the Snowflake layout with node 1")
}

fn builder() -> flakeid::GeneratorBuilder {
    Generator::builder(Layout::snowflake())
        .node(1)
        .max_wait(Duration::from_secs(5))
}

/// Runs `body` on a thread of its own until `secs` passed; its figures.
fn phase(secs: f64, body: impl FnOnce(Instant) -> (u64, Ticks) + Send + 'static) -> Figures {
    std::thread::spawn(move || {
        let until = Instant::now() + Duration::from_secs_f64(secs);
        let (started, cpu) = (Instant::now(), thread_cpu());
        let (ids, ticks) = body(until);
        ticks.into_figures(ids, started.elapsed(), thread_cpu() - cpu)
    })
    .join()
    .expect("a phase panicked")
}

/// The CPU `next_id` spent per tick in its last phase, in ns.
static NEXT_ID_CPU_PER_TICK_NS: AtomicU64 = AtomicU64::new(0);

/// Sleeps to each tick's boundary and counts the ticks it woke in.
fn reference(until: Instant) -> (u64, Ticks) {
    sleeping_reference(until, Duration::ZERO)
}

/// Sleeps to each tick's boundary, spins as long as `next_id` spent a tick, and counts
/// the ticks it woke in.
fn working_reference(until: Instant) -> (u64, Ticks) {
    let work = Duration::from_nanos(NEXT_ID_CPU_PER_TICK_NS.load(Ordering::Relaxed));
    sleeping_reference(until, work)
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn sleeping_reference(until: Instant, work: Duration) -> (u64, Ticks) {
    let mut ticks = Ticks::default();
    let unit = 1_000_000u64;
    while Instant::now() < until {
        ticks.saw(unix_ns() / unit);
        let spin = Instant::now();
        while spin.elapsed() < work {
            std::hint::spin_loop();
        }
        let now = unix_ns();
        let next = (now / unit + 1) * unit;
        std::thread::sleep(Duration::from_nanos(next - now));
    }
    let woken = ticks.with_ids;
    (woken * 4096, ticks)
}

fn next_ids(until: Instant) -> (u64, Ticks) {
    let g = generator();
    let (mut buf, mut ticks, mut ids) = (vec![Id::default(); 4096], Ticks::default(), 0);
    while Instant::now() < until {
        let n = g.next_ids(&mut buf).expect("next_ids");
        ticks.saw_ids(&buf[..n]);
        ids += n as u64;
    }
    (ids, ticks)
}

fn next_id(until: Instant) -> (u64, Ticks) {
    next_id_of(generator(), until)
}

/// `next_id` on a thread that keeps the scheduler's default slice.
fn next_id_long_slice(until: Instant) -> (u64, Ticks) {
    let g = builder()
        .short_slice(false)
        .build()
        .expect("the Snowflake layout with node 1");
    next_id_of(g, until)
}

fn next_id_of(g: Generator, until: Instant) -> (u64, Ticks) {
    let (mut ticks, mut ids) = (Ticks::default(), 0);
    let cpu = thread_cpu();
    while Instant::now() < until {
        for _ in 0..1024 {
            let id = g.next_id().expect("next_id");
            ticks.saw(id.get() >> 22);
        }
        ids += 1024;
    }
    let per_tick = (thread_cpu() - cpu).as_nanos() as u64 / ticks.with_ids.max(1);
    if g.short_slice() {
        NEXT_ID_CPU_PER_TICK_NS.store(per_tick, Ordering::Relaxed);
    }
    (ids, ticks)
}

fn next_id_leased(until: Instant) -> (u64, Ticks) {
    let g = generator();
    let mut lease = g.lease().expect("a lease");
    let (mut ticks, mut ids) = (Ticks::default(), 0);
    while Instant::now() < until {
        for _ in 0..1024 {
            let id = lease.next_id().expect("next_id");
            ticks.saw(id.get() >> 22);
        }
        ids += 1024;
    }
    (ids, ticks)
}

/// One `try_next_ids` into `buf`, its IDs counted: the wait it asks for, if any.
fn try_fill(g: &Generator, buf: &mut [Id], ticks: &mut Ticks, ids: &mut u64) -> Option<Duration> {
    match g.try_next_ids(buf) {
        Ok(n) => {
            ticks.saw_ids(&buf[..n]);
            *ids += n as u64;
            None
        }
        Err(MintError::WouldBlock { wait_ns }) => Some(Duration::from_nanos(wait_ns)),
        Err(e) => panic!("try_next_ids: {e}"),
    }
}

/// `next_ids` with the wait of 0.1.0 before this change, through `try_next_ids`.
fn next_ids_yielding(until: Instant) -> (u64, Ticks) {
    let g = generator();
    let (mut buf, mut ticks, mut ids) = (vec![Id::default(); 4096], Ticks::default(), 0);
    while Instant::now() < until {
        if let Some(wait) = try_fill(&g, &mut buf, &mut ticks, &mut ids) {
            let target = Instant::now() + wait;
            loop {
                let left = target.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                if left > Duration::from_micros(300) {
                    std::thread::sleep(left - Duration::from_micros(150));
                } else if left > Duration::from_micros(50) {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
        }
    }
    (ids, ticks)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime")
}

fn next_ids_async(until: Instant) -> (u64, Ticks) {
    runtime().block_on(async move {
        let g = generator();
        let (mut buf, mut ticks, mut ids) = (vec![Id::default(); 4096], Ticks::default(), 0);
        while Instant::now() < until {
            let n = g.next_ids_async(&mut buf).await.expect("next_ids_async");
            ticks.saw_ids(&buf[..n]);
            ids += n as u64;
        }
        (ids, ticks)
    })
}

/// The async batch as it waited before: `tokio::time::sleep` for the wait.
fn next_ids_tokio_sleep(until: Instant) -> (u64, Ticks) {
    runtime().block_on(async move {
        let g = generator();
        let (mut buf, mut ticks, mut ids) = (vec![Id::default(); 4096], Ticks::default(), 0);
        while Instant::now() < until {
            if let Some(wait) = try_fill(&g, &mut buf, &mut ticks, &mut ids) {
                tokio::time::sleep(wait).await;
            }
        }
        (ids, ticks)
    })
}

/// Spinning threads, four per core, until dropped.
struct Busy {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Busy {
    fn start() -> Busy {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..cores * 4)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                })
            })
            .collect();
        Busy { stop, threads }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

type Body = fn(Instant) -> (u64, Ticks);

fn main() {
    let mut args = std::env::args().skip(1);
    let secs: f64 = args.next().map_or(2.0, |s| s.parse().expect("SECONDS"));
    let rounds: usize = args.next().map_or(3, |s| s.parse().expect("ROUNDS"));
    let phases: [(&str, Body); 9] = [
        ("reference: sleep to each boundary", reference),
        ("next_ids (4,096 a call)", next_ids),
        ("next_id", next_id),
        ("next_id, short_slice(false)", next_id_long_slice),
        (
            "reference: sleep, then spin next_id's CPU a tick",
            working_reference,
        ),
        ("next_id through a Lease", next_id_leased),
        (
            "next_ids, 0.1.0's wait (yield near the boundary)",
            next_ids_yielding,
        ),
        ("next_ids_async (4,096 a call)", next_ids_async),
        ("next_ids_async, tokio::time::sleep", next_ids_tokio_sleep),
    ];
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    println!(
        "Snowflake layout, one node (cap 4,096,000 IDs/s); {cores} cores; {secs} s a phase, {rounds} rounds; busy = {} spinning threads",
        cores * 4
    );
    let mut results: Vec<Vec<(bool, Figures)>> = vec![Vec::new(); phases.len()];
    for _ in 0..rounds {
        for busy in [false, true] {
            let load = busy.then(Busy::start);
            for (i, (_, body)) in phases.iter().enumerate() {
                results[i].push((busy, phase(secs, *body)));
            }
            drop(load);
        }
    }
    println!("\n| what | host | share of the cap (each round) | ticks lost | CPU of the thread |");
    println!("|---|---|---|---|---|");
    for busy in [false, true] {
        for (i, (name, _)) in phases.iter().enumerate() {
            let runs: Vec<Figures> = results[i]
                .iter()
                .filter(|(b, _)| *b == busy)
                .map(|(_, f)| *f)
                .collect();
            let shares: Vec<String> = runs.iter().map(|f| format!("{:.1}%", f.share())).collect();
            let (ticks, with): (u64, u64) = runs
                .iter()
                .fold((0, 0), |(t, w), f| (t + f.ticks, w + f.ticks_with_ids));
            let (cpu, wall) = runs
                .iter()
                .fold((Duration::ZERO, Duration::ZERO), |(c, w), f| {
                    (c + f.cpu, w + f.wall)
                });
            println!(
                "| {name} | {} | {} | {} of {ticks} ({:.1}%) | {:.1}% |",
                if busy { "busy" } else { "quiet" },
                shares.join(", "),
                ticks - with,
                (ticks - with) as f64 / ticks.max(1) as f64 * 100.0,
                cpu.as_secs_f64() / wall.as_secs_f64() * 100.0,
            );
        }
    }
}
