//! Claimed generators built: [`GeneratorBuilder::build_claimed`] and
//! [`ShardedBuilder::build_claimed`], the claim layer's entry points on the generator's
//! builders (the generator knows nothing of claims).

use std::sync::Arc;
use std::vec::Vec;

use super::{ClaimError, ClaimGate, ClaimedGenerator, Claims, Holder};
use crate::clock::Clock;
use crate::error::Error;
use crate::generator::{ShardedBuilder, ShardedGenerator};
use crate::{Generator, GeneratorBuilder};

impl<C: Clock + Clone + Send + Sync + 'static> GeneratorBuilder<C> {
    /// Builds the generator on a node id claimed from a store, instead of one given: the
    /// lowest free id of the pool, fenced by a reserved window the store has accepted and
    /// renewed in the background (see [`crate::claim`]). Any node id set on this builder
    /// is ignored; the clock, policy, wait bound, hook and resume point apply. The
    /// [`ClaimedGenerator`] it makes owns the claim: its
    /// status, renewing it by hand, and the release when it is dropped.
    ///
    /// Fails with [`ClaimError`](ClaimError) when no id can be claimed: the
    /// pool is full after [`Claims::pool_wait`](Claims::pool_wait), the store
    /// cannot be reached, the pool or window do not fit the layout, or the clock reads
    /// behind the previous holder's reservation by more than `max_wait`; and with
    /// [`ClaimError::Build`](ClaimError::Build) for what `build` refuses.
    pub fn build_claimed(self, claims: Claims) -> Result<ClaimedGenerator<C>, ClaimError> {
        let clock = Arc::new(self.clock.clone());
        let holder = Holder::take(&claims, &self.layout, clock, self.common.max_wait)?;
        self.common.warn_if_ending(&self.layout, &self.clock);
        Generator::assemble(
            self.layout,
            holder.node(),
            &self.common,
            self.resume_after,
            ClaimGate::new(holder),
            self.clock,
        )
        .map_err(ClaimError::Build)
    }
}

impl<C: Clock + Clone + Send + Sync + 'static> ShardedBuilder<C> {
    /// Builds on node ids claimed from a store, one per shard (the lowest free ids of the
    /// pool), each shard fenced by its own reserved window and renewed on its own (see
    /// [`GeneratorBuilder::build_claimed`](crate::GeneratorBuilder::build_claimed)). The
    /// block of node ids, if set, is ignored. The ids are taken all together or not at
    /// all: while fewer than one per shard are free, the claim holds none and waits (with
    /// a random back-off), so that two waiting generators never split the ids that come
    /// free between them and wait for each other; if a shard's first reservation fails,
    /// every id is released.
    pub fn build_claimed(
        self,
        claims: Claims,
    ) -> Result<ShardedGenerator<C, ClaimGate>, ClaimError> {
        let shards = self.shards.unwrap_or_else(crate::affinity::cores);
        if shards == 0 {
            return Err(ClaimError::Build(Error::NoShards));
        }
        let layout = self.layout;
        let max_wait = self.common.max_wait;
        let holders = Holder::take_all(
            &claims,
            &layout,
            Arc::new(self.clock.clone()),
            max_wait,
            shards,
        )?;
        let nodes: Vec<u64> = holders.iter().map(|h| h.node()).collect();
        let resume = self.resume_points(&nodes).map_err(ClaimError::Build)?;
        self.common.warn_if_ending(&layout, &self.clock);
        let generators = holders
            .into_iter()
            .zip(nodes.iter().zip(resume))
            .map(|(holder, (&node, last))| {
                Generator::assemble(
                    layout,
                    node,
                    &self.common,
                    last,
                    ClaimGate::new(holder),
                    self.clock.clone(),
                )
            })
            .collect::<Result<Box<[_]>, Error>>()
            .map_err(ClaimError::Build)?;
        Ok(ShardedGenerator::from_shards(generators, None))
    }
}
