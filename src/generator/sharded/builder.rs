//! [`ShardedBuilder`]: the block of node ids, the number of shards, and building the
//! shards.

use core::fmt;
use core::ops::Range;

use super::ShardedGenerator;
use crate::clock::Clock;
use crate::error::Error;
use crate::generator::{Common, DefaultClock, Generator, Unfenced, common_setters};
use crate::id::Id;
use crate::layout::Layout;

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
        self.common.warn_if_ending(&layout, &self.clock);
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
        let inert = Generator::assemble(
            layout,
            nodes[0],
            &self.common,
            None,
            Unfenced,
            self.clock.clone(),
        )?;
        Ok(ShardedGenerator::from_shards(generators, Some(inert)))
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
