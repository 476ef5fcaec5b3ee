//! Per-core sharding: N generators, each with its own node id, so N cores mint N times the
//! layout's cap without touching each other's cache lines.

use core::fmt;
use core::ops::Range;

use crate::clock::Clock;
use crate::error::{Error, MintError};
use crate::generator::{Common, DefaultClock, Generator, Ids, TickGate, Unfenced, common_setters};
use crate::id::Id;
use crate::layout::Layout;

/// N [`Generator`]s of one layout, one per shard, each with its own node id from a block
/// the caller hands over (for Snowflake, a range of worker ids in one datacenter; for
/// Sonyflake, a range of machine ids).
///
/// Each thread has a home shard, fixed for the thread's life (a dense per-thread index,
/// taken once with one atomic increment, modulo the number of shards), and mints there.
///
/// What holds:
/// - **Unique**, always: shards differ in node id, and each shard is a lock-free
///   [`Generator`] that never hands out a (tick, sequence) twice, even when several
///   threads share it (more threads than shards is fine, just slower).
/// - **Strictly increasing per thread**: a thread always mints on its home shard.
/// - **Time-ordered across shards, not strictly increasing**: two IDs from different
///   shards compare by tick first, so an ID from a later tick is larger, but within one
///   tick the shard with the larger node id sorts after the other whatever the order of
///   minting.
///
/// For the highest rate, pin one thread per core and let each [lease](Generator::lease)
/// its shard (see the `pinned` example).
///
/// ```
/// use flakeid::{Layout, ShardedGenerator};
///
/// let sharded = ShardedGenerator::builder(Layout::snowflake())
///     .datacenter(3)
///     .workers(0..32)
///     .shards(4)
///     .build()?;
/// let id = sharded.next_id()?;
/// let parts = Layout::snowflake().decompose(id.get())?;
/// assert_eq!(parts.node, sharded.home_shard().node());
/// # Ok::<(), flakeid::Error>(())
/// ```
///
/// `G` is the shards' [`TickGate`]: [`Unfenced`] by default, or
/// the claim layer's `ClaimGate` for the shards of its `build_claimed` on this builder, each
/// fenced by its own claim.
pub struct ShardedGenerator<C = DefaultClock, G: TickGate = Unfenced> {
    pub(crate) shards: Box<[Generator<C, G>]>,
    /// `u64::MAX / len + 1`: turns `thread index % len` into two multiplications.
    pub(crate) fastmod: u64,
}

impl<C, G: TickGate> fmt::Debug for ShardedGenerator<C, G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedGenerator")
            .field("shards", &self.shards)
            .finish()
    }
}

/// The calling thread's dense index: 0 for the first thread that asks, 1 for the next...
/// Taken once per thread with one relaxed increment.
fn thread_index() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    std::thread_local! {
        static INDEX: u32 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    INDEX.with(|i| *i)
}

impl ShardedGenerator<DefaultClock> {
    /// Starts building a sharded generator for `layout`, on the default clock
    /// ([`DefaultClock`], one clock, cloned into every shard).
    pub fn builder(layout: Layout) -> ShardedBuilder<DefaultClock> {
        ShardedBuilder {
            layout,
            nodes: None,
            shards: None,
            common: Common::default(),
            resume_after: Vec::new(),
            clock: DefaultClock::new(),
        }
    }
}

impl<C: Clock, G: TickGate> ShardedGenerator<C, G> {
    /// The number of shards.
    pub fn len(&self) -> usize {
        self.shards.len()
    }

    /// Always false: a sharded generator has at least one shard.
    pub fn is_empty(&self) -> bool {
        self.shards.is_empty()
    }

    /// All shards, in node id order.
    pub fn shards(&self) -> &[Generator<C, G>] {
        &self.shards
    }

    /// Shard `index`, if there is one.
    pub fn shard(&self, index: usize) -> Option<&Generator<C, G>> {
        self.shards.get(index)
    }

    /// The calling thread's home shard index.
    #[inline]
    pub fn home(&self) -> usize {
        self.shard_of(thread_index())
    }

    /// The shard of the thread with dense index `index`: `index % len`, by Lemire's
    /// fastmod (two multiplications), exact for a 32-bit index and a 32-bit divisor.
    #[inline(always)]
    fn shard_of(&self, index: u32) -> usize {
        let low = self.fastmod.wrapping_mul(u64::from(index));
        ((u128::from(low) * self.shards.len() as u128) >> 64) as usize
    }

    /// The calling thread's home shard.
    #[inline]
    pub fn home_shard(&self) -> &Generator<C, G> {
        &self.shards[self.home()]
    }

    /// Mints the next ID on the calling thread's home shard (see [`Generator::next_id`]).
    #[inline]
    pub fn next_id(&self) -> Result<Id, MintError> {
        self.home_shard().next_id()
    }

    /// Mints without waiting on the home shard (see [`Generator::try_next_id`]).
    #[inline]
    pub fn try_next_id(&self) -> Result<Id, MintError> {
        self.home_shard().try_next_id()
    }

    /// Mints on the home shard of the thread the task runs on, awaiting the next tick
    /// (see [`Generator::next_id_async`]; feature `tokio`). A task that moves between
    /// threads may mint on different shards: unique always, ordered by tick.
    #[cfg(feature = "tokio")]
    pub async fn next_id_async(&self) -> Result<Id, MintError> {
        self.home_shard().next_id_async().await
    }

    /// Fills `out` from the home shard (see [`Generator::next_ids`]).
    pub fn next_ids(&self, out: &mut [Id]) -> Result<usize, MintError> {
        self.home_shard().next_ids(out)
    }

    /// Fills `out` from the home shard without waiting (see [`Generator::try_next_ids`]).
    pub fn try_next_ids(&self, out: &mut [Id]) -> Result<usize, MintError> {
        self.home_shard().try_next_ids(out)
    }

    /// Fills `out` from the home shard of the thread the task starts on, awaiting the next
    /// tick (see [`Generator::next_ids_async`]; feature `tokio`). For a series that must
    /// increase across calls, mint from one [`shard`](ShardedGenerator::shard).
    #[cfg(feature = "tokio")]
    pub async fn next_ids_async(&self, out: &mut [Id]) -> Result<usize, MintError> {
        self.home_shard().next_ids_async(out).await
    }

    /// `count` IDs from the home shard, reserved in runs (see [`Generator::ids`]).
    pub fn ids(&self, count: usize) -> Ids<'_, C, G> {
        self.home_shard().ids(count)
    }
}

/// Configures a [`ShardedGenerator`]: the block of node ids, the number of shards, and
/// what every shard shares with a single [`GeneratorBuilder`](crate::GeneratorBuilder)
/// (the same setters: clock policy, wait bound, node-id hook; and a resume point per
/// shard).
pub struct ShardedBuilder<C = DefaultClock> {
    pub(crate) layout: Layout,
    nodes: Option<NodeBlock>,
    pub(crate) shards: Option<usize>,
    pub(crate) common: Common,
    resume_after: Vec<Id>,
    pub(crate) clock: C,
}

impl<C> fmt::Debug for ShardedBuilder<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedBuilder")
            .field("layout", &self.layout)
            .field("nodes", &self.nodes)
            .field("shards", &self.shards)
            .field("policy", &self.common.policy)
            .field("max_wait", &self.common.max_wait)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone)]
enum NodeBlock {
    Nodes(Range<u64>),
    Workers {
        datacenter: Option<u64>,
        workers: Range<u64>,
    },
    /// Sonyflake's machine id of this host, and the ids after it.
    PrivateIp,
}

impl<C> ShardedBuilder<C> {
    common_setters!();

    /// The block of whole node ids (Sonyflake's machine ids) to give the shards, in order:
    /// shard `i` gets `nodes.start + i`. Ids past the number of shards are left unused.
    pub fn nodes(mut self, nodes: Range<u64>) -> Self {
        self.nodes = Some(NodeBlock::Nodes(nodes));
        self
    }

    /// Snowflake's datacenter id for every shard; give [`ShardedBuilder::workers`] too.
    pub fn datacenter(mut self, datacenter: u64) -> Self {
        let workers = match self.nodes {
            Some(NodeBlock::Workers { workers, .. }) => workers,
            _ => 0..0,
        };
        self.nodes = Some(NodeBlock::Workers {
            datacenter: Some(datacenter),
            workers,
        });
        self
    }

    /// The block of Snowflake worker ids to give the shards: shard `i` gets worker
    /// `workers.start + i` in the datacenter given by [`ShardedBuilder::datacenter`].
    pub fn workers(mut self, workers: Range<u64>) -> Self {
        let datacenter = match self.nodes {
            Some(NodeBlock::Workers { datacenter, .. }) => datacenter,
            _ => None,
        };
        self.nodes = Some(NodeBlock::Workers {
            datacenter,
            workers,
        });
        self
    }

    /// The block starts at Sonyflake's default machine id of this host (the low 16 bits of
    /// its first private IPv4 address, see
    /// [`node::private_ip_machine_id`](crate::node::private_ip_machine_id)): shard `i`
    /// gets that id plus `i`. Hosts must then be at least as many ids apart as they have
    /// shards.
    pub fn machine_ids_from_private_ip(mut self) -> Self {
        self.nodes = Some(NodeBlock::PrivateIp);
        self
    }

    /// The number of shards (default: [`ShardedBuilder::per_core`]).
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// One shard per core this process may run on (through `core_affinity`, falling back
    /// to `std::thread::available_parallelism`). This is the default.
    pub fn per_core(mut self) -> Self {
        self.shards = Some(crate::affinity::cores());
        self
    }

    /// Starts each shard after the last ID it minted before a restart (as
    /// [`GeneratorBuilder::resume_after`](crate::GeneratorBuilder::resume_after) does for
    /// one generator): give the shards' `last_id()`s, in any order. Each ID goes to the
    /// shard of its node; `build` refuses an ID whose node is no shard's
    /// ([`Error::ResumeOtherNode`]) or that lies further ahead of the clock than the wait
    /// bound ([`Error::ResumeAhead`]); a shard without an ID starts afresh.
    pub fn resume_after(mut self, last_ids: impl IntoIterator<Item = Id>) -> Self {
        self.resume_after = last_ids.into_iter().collect();
        self
    }

    /// Uses another clock; every shard gets a clone (so the clock must be `Clone`: every
    /// clock of this crate is, and shares its state among clones; for
    /// [`crate::clock::CoarseClock`], one background thread).
    pub fn clock<D: Clock + Clone>(self, clock: D) -> ShardedBuilder<D> {
        ShardedBuilder {
            layout: self.layout,
            nodes: self.nodes,
            shards: self.shards,
            common: self.common,
            resume_after: self.resume_after,
            clock,
        }
    }
}

impl<C: Clock + Clone> ShardedBuilder<C> {
    /// Checks the block against the layout and the number of shards, and builds.
    ///
    /// Errors: [`Error::NoShards`] for zero shards; [`Error::NodeMissing`] without a
    /// block (or, for [`ShardedBuilder::workers`], without a datacenter);
    /// [`Error::NodeBlockTooSmall`] when the block has fewer ids than shards;
    /// [`Error::OutOfRange`] when an id the shards need lies outside the layout;
    /// [`Error::NodeRejected`] when the hook refuses one; the resume errors of
    /// [`ShardedBuilder::resume_after`].
    pub fn build(self) -> Result<ShardedGenerator<C>, Error> {
        let shards = self.shards.unwrap_or_else(crate::affinity::cores);
        if shards == 0 {
            return Err(Error::NoShards);
        }
        let layout = self.layout;
        // The block as a range of ids, and the datacenter the ids are workers of (if so).
        let (range, datacenter) = match self.nodes.clone() {
            None if layout.node_bits() == 0 => (0..1, None),
            None => return Err(Error::NodeMissing),
            Some(NodeBlock::Nodes(r)) => (r, None),
            Some(NodeBlock::PrivateIp) => {
                let base = u64::from(crate::node::private_ip_machine_id()?);
                (base..base.saturating_add(shards as u64), None)
            }
            Some(NodeBlock::Workers {
                datacenter: Some(d),
                workers,
            }) => (workers, Some(d)),
            Some(NodeBlock::Workers {
                datacenter: None, ..
            }) => return Err(Error::NodeMissing),
        };
        let node_of = |id| match datacenter {
            Some(d) => layout.node_of(d, id),
            None => Ok(id),
        };
        let available = range.end.saturating_sub(range.start);
        if available < shards as u64 || u32::try_from(shards).is_err() {
            return Err(Error::NodeBlockTooSmall {
                shards,
                nodes: available,
            });
        }
        let nodes = (range.start..range.start + shards as u64)
            .map(|id| node_of(id).and_then(|n| layout.check_node(n)))
            .collect::<Result<Vec<u64>, Error>>()?;
        let resume = self.resume_points(&nodes)?;
        let generators = nodes
            .iter()
            .zip(resume)
            .map(|(&node, last)| {
                Generator::assemble(
                    layout,
                    node,
                    &self.common,
                    last,
                    Unfenced,
                    self.clock.clone(),
                )
            })
            .collect::<Result<Box<[_]>, Error>>()?;
        Ok(ShardedGenerator {
            fastmod: (u64::MAX / shards as u64).wrapping_add(1),
            shards: generators,
        })
    }
}

impl<C> ShardedBuilder<C> {
    /// Each resume point goes to the shard of its node; the latest wins.
    pub(crate) fn resume_points(&self, nodes: &[u64]) -> Result<Vec<Option<u64>>, Error> {
        let mut resume: Vec<Option<u64>> = vec![None; nodes.len()];
        for id in &self.resume_after {
            let id_node = self.layout.decompose(id.get())?.node;
            let Some(shard) = nodes.iter().position(|&n| n == id_node) else {
                return Err(Error::ResumeOtherNode {
                    id_node,
                    node: nodes[0],
                });
            };
            resume[shard] = resume[shard].max(Some(id.get()));
        }
        Ok(resume)
    }
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use crate::clock::ManualClock;
    use crate::{Layout, ShardedGenerator};

    /// The generator's own `shard_of` (what `home` calls), built as `build` builds it, for
    /// every shard count up to 67 and indexes at both ends of `u32`.
    #[test]
    fn home_shard_is_the_thread_index_modulo_the_shards() {
        let layout = Layout::builder()
            .time_bits(40)
            .sequence_bits(8)
            .node_bits(7)
            .build()
            .unwrap();
        for len in 1..=67usize {
            let sharded = ShardedGenerator::builder(layout)
                .nodes(0..len as u64)
                .shards(len)
                .clock(ManualClock::from_unix_ms(1_000))
                .build()
                .unwrap();
            for index in (0..2000u32).chain([u32::MAX - 5, u32::MAX]) {
                assert_eq!(
                    sharded.shard_of(index),
                    index as usize % len,
                    "{index} % {len}"
                );
            }
        }
    }
}
