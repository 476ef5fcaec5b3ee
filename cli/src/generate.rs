//! `flakeid gen`: mint IDs, one per line; with `--claim`, on a node id claimed from a
//! store and fenced by its reserved window.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use flakeid::claim::{ClaimGate, ClaimStatus};
use flakeid::clock::MonotonicClock;
use flakeid::generator::{TickGate, Unfenced};
use flakeid::rfc3339::Timestamp;
use flakeid::{Clock, Encoding, Generator, Id, Layout};

use crate::args::{Format, GenArgs, NodeArgs};
use crate::flags::{parse_layout, resolve_node};
use crate::out::{CliError, CliResult, io_err, warn};
use crate::stores::{claim_error, claims_of, warn_since};

/// The signal that asked `gen` to stop (0: none). Minting stops between batches, every ID
/// minted is written out, and the generator is dropped, which releases its claim: a
/// successor need not wait out the window (Kubernetes stops a pod with SIGTERM).
fn stop_signal() -> Arc<AtomicUsize> {
    let caught = Arc::new(AtomicUsize::new(0));
    for signal in [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ] {
        // Without a handler the signal ends the process as before, claim unreleased.
        let _ = signal_hook::flag::register_usize(signal, Arc::clone(&caught), signal as usize);
    }
    caught
}

pub(crate) fn run(a: GenArgs) -> CliResult<ExitCode> {
    let layout = parse_layout(&a.layout)?;
    let clock = OffsetClock {
        inner: MonotonicClock::new(),
        offset_ns: a.clock_offset.unwrap_or(0),
    };
    crate::flags::warn_if_ending(&layout, a.end_warning, i128::from(clock.unix_ns()));
    let builder = Generator::builder(layout)
        .max_wait(a.max_wait)
        .end_warning(a.end_warning)
        .clock(clock);
    match &a.claim.store.claim {
        Some(url) => {
            refuse_node_flags(&a.node)?;
            let claims = claims_of(url, &a.claim)?;
            let (store, shown) = (Arc::clone(claims.store()), claims.store().warnings().len());
            let built = builder.build_claimed(claims);
            warn_since(&*store, shown);
            let generator = built.map_err(claim_error)?;
            report_claim(&generator.claim_status(), &layout);
            emit(generator, &a)
        }
        None => {
            let node = resolve_node(&layout, &a.node)?;
            let generator = builder
                .node(node)
                .build()
                .map_err(|e| CliError::new(None, e))?;
            emit(generator, &a)
        }
    }
}

/// What `gen` asks of a generator besides minting: its claim's status, if it has one.
trait ClaimView {
    fn status(&self) -> Option<ClaimStatus>;
}

impl ClaimView for Generator<OffsetClock, Unfenced> {
    fn status(&self) -> Option<ClaimStatus> {
        None
    }
}

impl ClaimView for Generator<OffsetClock, ClaimGate> {
    fn status(&self) -> Option<ClaimStatus> {
        Some(self.claim_status())
    }
}

/// Mints and writes out what `a` asks for, then drops the generator (which releases a
/// claim).
fn emit<G: TickGate>(generator: Gen<G>, a: &GenArgs) -> CliResult<ExitCode>
where
    Gen<G>: ClaimView,
{
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    // JSON is the decimal text as a string, so JavaScript keeps every digit.
    let (encoding, quoted) = match a.format {
        Format::Decimal => (Encoding::Decimal, false),
        Format::Hex => (Encoding::Hex, false),
        Format::Base32 => (Encoding::Base32, false),
        Format::Json => (Encoding::Decimal, true),
    };
    let mut line = |out: &mut BufWriter<_>, id: &Id| {
        let mut buf = [0u8; Encoding::MAX_LEN];
        let text = id.encode(encoding, &mut buf);
        if quoted {
            writeln!(out, "\"{text}\"")
        } else {
            writeln!(out, "{text}")
        }
    };
    let signal = stop_signal();
    let result = match a.rate {
        Some(rate) => mint_paced(&generator, a.count, rate, &signal, &mut out, &mut line),
        None => mint_batched(&generator, a.count, &signal, &mut out, &mut line),
    };
    // Every ID minted is written out before any error is reported.
    let flushed = out.flush();
    drop(out);
    // Each way out returns (never `process::exit`), so the generator's drop releases the
    // claim: a closed pipe (`| head -1`) and a signal included.
    let outcome = match (result, flushed) {
        (Err(Stop::Io(e)), _) | (Ok(()) | Err(Stop::Signal(_)), Err(e))
            if e.kind() == io::ErrorKind::BrokenPipe =>
        {
            Ok(ExitCode::SUCCESS)
        }
        (_, Err(e)) | (Err(Stop::Io(e)), _) => Err(io_err(e)),
        (Ok(()), Ok(())) => Ok(ExitCode::SUCCESS),
        // 128 + the signal, as a shell reports a process the signal ended.
        (Err(Stop::Signal(n)), Ok(())) => Ok(ExitCode::from(128u8.saturating_add(n as u8))),
        (Err(Stop::Mint(e)), Ok(())) => Err(mint_error(&generator, e)),
    };
    drop(generator);
    outcome
}

/// A minting error as `gen` ends on it: the library's message speaks of a generator that
/// goes on; `gen` stops, so it says what happened.
fn mint_error(generator: &impl ClaimView, e: flakeid::MintError) -> CliError {
    use flakeid::MintError;
    let last = generator
        .status()
        .and_then(|s| s.last_error)
        .map(|e| format!(" (the last renewal failed: {e})"))
        .unwrap_or_default();
    match e {
        MintError::ReservationExpired { node } => CliError::new(
            Some("--max-wait"),
            format!(
                "node {node}'s reserved window ran out and no renewal of its claim landed within the wait bound{last}; nothing past the reservation was minted. gen stops here and releases the claim: check that the claim store runs and can be reached, then start again (a longer --window or --max-wait rides out longer outages)"
            ),
        ),
        e => CliError::new(None, e),
    }
}

/// The monotonic clock, shifted by a fixed offset (the hidden `--clock-offset`, for tests
/// that play a host whose clock is ahead or behind; 0 otherwise).
#[derive(Debug, Clone)]
struct OffsetClock {
    inner: MonotonicClock,
    offset_ns: i64,
}

impl OffsetClock {
    #[inline]
    fn shift(&self, ns: u64) -> u64 {
        ns.saturating_add_signed(self.offset_ns)
    }
}

impl Clock for OffsetClock {
    #[inline]
    fn unix_ns(&self) -> u64 {
        self.shift(self.inner.unix_ns())
    }

    #[inline]
    fn recent_unix_ns(&self) -> u64 {
        self.shift(self.inner.recent_unix_ns())
    }
}

type Gen<G> = Generator<OffsetClock, G>;

enum Stop {
    Io(io::Error),
    Mint(flakeid::MintError),
    /// A signal asked to stop (its number).
    Signal(usize),
}

/// `Err(Stop::Signal)` once a signal asked to stop.
fn check_signal(signal: &AtomicUsize) -> Result<(), Stop> {
    match signal.load(Ordering::Relaxed) {
        0 => Ok(()),
        n => Err(Stop::Signal(n)),
    }
}

type Line<'a, W> = dyn FnMut(&mut BufWriter<W>, &Id) -> io::Result<()> + 'a;

fn mint_batched<W: Write, G: TickGate>(
    generator: &Gen<G>,
    count: u64,
    signal: &AtomicUsize,
    out: &mut BufWriter<W>,
    line: &mut Line<'_, W>,
) -> Result<(), Stop> {
    let mut batch = vec![Id::default(); 4096];
    let mut left = count;
    while left > 0 {
        check_signal(signal)?;
        let want = left.min(batch.len() as u64) as usize;
        let n = generator.next_ids(&mut batch[..want]).map_err(Stop::Mint)?;
        for id in &batch[..n] {
            line(out, id).map_err(Stop::Io)?;
        }
        left -= n as u64;
    }
    Ok(())
}

/// One ID at a time, at most `rate` a second, each line flushed.
fn mint_paced<W: Write, G: TickGate>(
    generator: &Gen<G>,
    count: u64,
    rate: f64,
    signal: &AtomicUsize,
    out: &mut BufWriter<W>,
    line: &mut Line<'_, W>,
) -> Result<(), Stop> {
    let interval = Duration::from_secs_f64(1.0 / rate);
    let started = Instant::now();
    for k in 0..count {
        // The k-th ID is due k intervals after the start, so a slow write does not
        // lower the rate below what was asked.
        let due = started + interval.saturating_mul(u32::try_from(k).unwrap_or(u32::MAX));
        while let Some(wait) = due.checked_duration_since(Instant::now()) {
            check_signal(signal)?;
            std::thread::sleep(wait.min(Duration::from_millis(50)));
        }
        check_signal(signal)?;
        let id = generator.next_id().map_err(Stop::Mint)?;
        line(out, &id).map_err(Stop::Io)?;
        out.flush().map_err(Stop::Io)?;
    }
    Ok(())
}

pub(crate) fn refuse_node_flags(node: &NodeArgs) -> CliResult {
    let flag = if node.node.is_some() {
        Some("--node")
    } else if node.datacenter.is_some() {
        Some("--datacenter")
    } else if node.worker.is_some() {
        Some("--worker")
    } else if node.process.is_some() {
        Some("--process")
    } else if node.machine_id.is_some() {
        Some("--machine")
    } else if node.machine_id_from.is_some() {
        Some("--machine-id-from")
    } else {
        None
    };
    match flag {
        Some(flag) => Err(CliError::new(
            Some(flag),
            "--claim takes the node id from the store: give --claim or a node id, not both (--nodes A..B sets the pool to claim from)",
        )),
        None => Ok(()),
    }
}

/// `flakeid: claimed node 3 of namespace "orders" in file:/var/lib/flakeid (...)`.
pub(crate) fn report_claim(s: &ClaimStatus, layout: &Layout) {
    let shown = match layout.datacenter_bits() {
        0 => format!("node {}", s.node),
        _ => {
            let (d, w) = layout.split_node(s.node);
            format!("node {} (datacenter {d}, worker {w})", s.node)
        }
    };
    let reserved = match s.reserved_until_unix_ns {
        Some(ns) => format!(", reserved until {}", Timestamp(i128::from(ns))),
        None => ", no fence (static)".into(),
    };
    let after = if s.not_before_unix_ns > 0 {
        format!(
            ", after the previous holder's reservation {}",
            Timestamp(i128::from(s.not_before_unix_ns))
        )
    } else {
        String::new()
    };
    warn(format_args!(
        "flakeid: claimed {shown} of namespace {:?} in {} as {}{reserved}{after}",
        s.namespace, s.store, s.instance
    ));
}
