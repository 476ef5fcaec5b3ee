//! [`Minter`]: the sharded generator the routes mint from, plain or on claimed node ids;
//! how requests share it (single IDs first: a batch or a stream mints in bounded chunks,
//! yields its thread between them and stands aside for a tick while single-ID requests
//! wait on its shard); and the readiness it reports.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use flakeid::claim::{ClaimGate, ClaimState, ClaimStatus};
use flakeid::{Generator, Id, Layout, MintError, ShardedGenerator};

/// Whether `e` only says the ID must be waited for (the tick's sequence ran out, or the
/// claim is being renewed at its fence): [`Minter::next_id`] waits, where `try_next_id`
/// gave up.
pub(crate) fn waits(e: &MintError) -> bool {
    matches!(
        e,
        MintError::WouldBlock { .. } | MintError::Leased | MintError::ReservationExpired { .. }
    )
}

/// The generator behind the routes: one shard per worker thread (a thread mints on its
/// home shard), each its own node id, given or claimed.
#[derive(Debug)]
pub struct Minter {
    shards: Shards,
    /// Per shard: single-ID requests waiting for its next tick.
    /// Each shard's count of single-ID requests waiting, on a cache line of its own.
    waiting: Box<[CachePadded<AtomicU32>]>,
    /// The most IDs a batch takes from a shard in one go: a quarter of a tick's sequence.
    chunk: usize,
}

#[derive(Debug)]
enum Shards {
    Plain(ShardedGenerator),
    Claimed {
        shards: ShardedGenerator<flakeid::DefaultClock, ClaimGate>,
        ready_margin: Duration,
    },
}

/// Counts a single-ID request as waiting on a shard for as long as it lives.
struct WaitingGuard<'a>(&'a AtomicU32);

impl<'a> WaitingGuard<'a> {
    fn new(n: &'a AtomicU32) -> WaitingGuard<'a> {
        n.fetch_add(1, Ordering::SeqCst);
        WaitingGuard(n)
    }
}

impl Drop for WaitingGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A node id the server mints on, and its claim if it was claimed.
#[derive(Debug, Clone)]
pub struct NodeStatus {
    /// The node id.
    pub node: u64,
    /// Its claim's state, for claimed node ids.
    pub claim: Option<ClaimStatus>,
}

/// Whether the server can mint now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// Every node id can mint.
    Ready,
    /// Some cannot, for now (claims being taken, a renewal late, the server draining):
    /// the reason.
    NotReady(String),
    /// A claim is gone for good (its lease or session expired and the store no longer
    /// names this server, or nothing renews it): the node ids must be claimed anew.
    Lost(String),
}

/// Calls `$body` with `$g` bound to the shards, whichever kind they are.
macro_rules! with_shards {
    ($shards:expr, $g:ident => $body:expr) => {
        match $shards {
            Shards::Plain($g) => $body,
            Shards::Claimed { shards: $g, .. } => $body,
        }
    };
}

impl Minter {
    /// A minter on node ids given (`--node`): nothing to renew, always ready.
    pub fn plain(shards: ShardedGenerator) -> Minter {
        Minter::new(Shards::Plain(shards))
    }

    /// A minter on claimed node ids; a shard is not ready with less than `ready_margin`
    /// of fence left (a third of the window: a renewal missed), so that a load balancer
    /// stops sending before the fence.
    pub fn claimed(
        shards: ShardedGenerator<flakeid::DefaultClock, ClaimGate>,
        ready_margin: Duration,
    ) -> Minter {
        Minter::new(Shards::Claimed {
            shards,
            ready_margin,
        })
    }

    fn new(shards: Shards) -> Minter {
        let (len, layout) = with_shards!(&shards, g => (g.len(), *g.home_shard().layout()));
        let per_tick = 1usize
            .checked_shl(layout.sequence_bits())
            .unwrap_or(usize::MAX);
        Minter {
            waiting: (0..len).map(|_| CachePadded::default()).collect(),
            chunk: (per_tick / 4).clamp(1, 8192),
            shards,
        }
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        with_shards!(&self.shards, g => g.home_shard().layout())
    }

    /// The number of shards.
    pub fn shards(&self) -> usize {
        with_shards!(&self.shards, g => g.len())
    }

    /// The calling thread's home shard.
    pub fn home(&self) -> usize {
        with_shards!(&self.shards, g => g.home())
    }

    /// One ID from the home shard without waiting, or the error that says why not (a
    /// wait is [`MintError::WouldBlock`]).
    #[inline]
    pub fn try_next_id(&self) -> Result<Id, MintError> {
        with_shards!(&self.shards, g => g.try_next_id())
    }

    /// One ID, awaiting tokio's timer for the next tick (or a renewal at a fence) within
    /// the generator's wait bound. While it waits, batches and streams on its shard stand
    /// aside, so that they cannot take every tick's sequence before it.
    pub async fn next_id(&self) -> Result<Id, MintError> {
        match self.try_next_id() {
            Err(e) if waits(&e) => {
                let shard = self.home();
                let _waiting = WaitingGuard::new(&self.waiting[shard]);
                with_shards!(&self.shards, g => g.shards()[shard].next_id_async().await)
            }
            done => done,
        }
    }

    /// Fills `out` from shard `shard` (modulo the shard count), every ID larger than the
    /// one before, whichever thread the task runs on: in chunks of at most a quarter of a
    /// tick, yielding the thread after each, awaiting the timer when a tick runs out
    /// (never blocking or spinning), and leaving a tick to single-ID requests whenever
    /// one waits on the shard. Each wait is bounded by the generator's wait bound; fails
    /// with the error that stopped it. Waits are [`flakeid::wait::sleep`]s.
    pub async fn fill(&self, shard: usize, out: &mut [Id]) -> Result<(), MintError> {
        let shard = shard % self.shards();
        with_shards!(&self.shards, g => self.fill_from(&g.shards()[shard], shard, out).await)
    }

    async fn fill_from<G: flakeid::generator::TickGate>(
        &self,
        g: &Generator<flakeid::DefaultClock, G>,
        shard: usize,
        out: &mut [Id],
    ) -> Result<(), MintError> {
        let unit = g.layout().unit();
        let mut done = 0;
        // When the current wait began: reset by every chunk minted.
        let mut waiting_since: Option<Instant> = None;
        while done < out.len() {
            let end = out.len().min(done + self.chunk);
            // How long to wait, and the error to answer if that is past the bound (a lease
            // or a fence; else the wait was too long).
            let (wait, refusal) = if self.waiting[shard].load(Ordering::SeqCst) > 0 {
                // A single-ID request waits for this shard's next tick: let it have it.
                (unit, None)
            } else {
                match g.try_next_ids(&mut out[done..end]) {
                    Ok(n) => {
                        done += n;
                        waiting_since = None;
                        tokio::task::yield_now().await;
                        continue;
                    }
                    Err(MintError::WouldBlock { wait_ns }) => (Duration::from_nanos(wait_ns), None),
                    Err(e @ (MintError::Leased | MintError::ReservationExpired { .. })) => {
                        (Duration::from_millis(1), Some(e))
                    }
                    Err(e) => return Err(e),
                }
            };
            let since = *waiting_since.get_or_insert_with(Instant::now);
            let spent = since.elapsed();
            if spent + wait > g.max_wait() {
                return Err(refusal.unwrap_or(MintError::wait_too_long(wait, spent)));
            }
            // Run as it wakes beside busy threads, as the generator's own waits do.
            if g.short_slice() {
                flakeid::wait::short_slice();
            }
            // To the microsecond, holding no thread: tokio's timer would round the wait up
            // to whole milliseconds and lose one or two ticks at each.
            flakeid::wait::sleep(wait).await;
        }
        Ok(())
    }

    /// Every node id, with its claim.
    pub fn nodes(&self) -> Vec<NodeStatus> {
        match &self.shards {
            Shards::Plain(g) => g
                .shards()
                .iter()
                .map(|s| NodeStatus {
                    node: s.node(),
                    claim: None,
                })
                .collect(),
            Shards::Claimed { shards, .. } => shards
                .shards()
                .iter()
                .map(|s| NodeStatus {
                    node: s.node(),
                    claim: Some(s.claim_status()),
                })
                .collect(),
        }
    }

    /// Ready while every claim is held and its fence is more than the margin ahead.
    pub fn readiness(&self) -> Readiness {
        let Shards::Claimed {
            shards,
            ready_margin,
        } = &self.shards
        else {
            return Readiness::Ready;
        };
        for shard in shards.shards() {
            let s = shard.claim_status();
            let node = s.node;
            match s.state {
                ClaimState::Lost | ClaimState::Released => {
                    let why = match s.last_error {
                        Some(e) => format!("{e}"),
                        None => "the store no longer names this server its holder".into(),
                    };
                    return Readiness::Lost(format!("node {node}'s claim is lost: {why}"));
                }
                ClaimState::Stopped => {
                    return Readiness::Lost(format!("nothing renews node {node}'s claim any more"));
                }
                _ => {}
            }
            if let Some(left) = s.fence_left
                && left <= *ready_margin
            {
                let why = s
                    .last_error
                    .map(|e| format!(" (the last renewal failed: {e})"))
                    .unwrap_or_default();
                return Readiness::NotReady(format!(
                    "node {node}'s fence is {} ms ahead, renewals are late{why}",
                    left.as_millis()
                ));
            }
        }
        Readiness::Ready
    }
}
