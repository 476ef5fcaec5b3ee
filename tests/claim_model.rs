//! The claim model driven at random (proptest): hosts with their own clocks claim, mint,
//! renew, are partitioned (a pause), come back, see their clocks jump both ways, and drop
//! their generators, against one memory store whose leases expire on its own clock.
//!
//! The plain model it is checked against: every ID is unique, and for each node id the
//! holders follow each other in tick order: every tick of a holder lies before every tick
//! of the next holder of that id (whatever order they minted in, in real time).

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use flakeid::claim::{ClaimError, ClaimedGenerator, Claims, MemoryStore};
use flakeid::clock::ManualClock;
use flakeid::{Generator, Layout, MintError};
use proptest::prelude::*;

const T0_NS: u64 = 1_793_448_000_000_000_000;
const HOSTS: usize = 3;

fn layout() -> Layout {
    // 4 IDs per 1 ms tick: the sequence runs out often, so ticks change often.
    Layout::builder()
        .time_bits(41)
        .sequence_bits(2)
        .node_bits(2)
        .epoch_unix_ms(T0_NS / 1_000_000 - 86_400_000)
        .build()
        .unwrap()
}

#[derive(Debug, Clone)]
enum Op {
    Claim(usize),
    Mint(usize, u8),
    Renew(usize),
    Partition(usize, bool),
    Advance(usize, u16),
    StepBack(usize, u16),
    AdvanceStore(u16),
    Drop(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let host = 0..HOSTS;
    prop_oneof![
        1 => host.clone().prop_map(Op::Claim),
        3 => (host.clone(), 1..20u8).prop_map(|(h, n)| Op::Mint(h, n)),
        2 => host.clone().prop_map(Op::Renew),
        1 => (host.clone(), any::<bool>()).prop_map(|(h, c)| Op::Partition(h, c)),
        2 => (host.clone(), 0..1500u16).prop_map(|(h, ms)| Op::Advance(h, ms)),
        1 => (host.clone(), 0..1500u16).prop_map(|(h, ms)| Op::StepBack(h, ms)),
        1 => (0..2500u16).prop_map(Op::AdvanceStore),
        1 => host.prop_map(Op::Drop),
    ]
}

struct Host {
    clock: ManualClock,
    store: MemoryStore,
    generator: Option<(ClaimedGenerator<ManualClock>, usize)>,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn holders_of_one_node_id_never_overlap(ops in prop::collection::vec(op(), 1..80)) {
        let layout = layout();
        let store_clock = ManualClock::new(T0_NS);
        let store = MemoryStore::with_clock(Duration::from_millis(1500), store_clock.clone());
        let mut hosts: Vec<Host> = (0..HOSTS)
            .map(|_| Host { clock: ManualClock::new(T0_NS), store: store.client(), generator: None })
            .collect();
        // Per node id, the holders in claim order; per holder, the ticks it minted.
        let mut generations: BTreeMap<u64, usize> = BTreeMap::new();
        let mut minted: BTreeMap<(u64, usize), Vec<u64>> = BTreeMap::new();
        let mut ids = HashSet::new();
        for op in ops {
            match op {
                Op::Claim(h) if hosts[h].generator.is_none() => {
                    let host = &mut hosts[h];
                    let built = Generator::builder(layout)
                        .clock(host.clock.clone())
                        .max_wait(Duration::ZERO)
                        .build_claimed(Claims::new(host.store.clone())
                            .nodes(0..2)
                            .window(Duration::from_millis(500))
                            .pool_wait(Duration::ZERO)
                            .manual_renewal());
                    match built {
                        Ok(g) => {
                            let generation = generations.entry(g.node()).or_default();
                            *generation += 1;
                            host.generator = Some((g, *generation));
                        }
                        Err(ClaimError::Build(e)) => panic!("{e}"),
                        // A full pool, a partitioned host, a clock behind the
                        // reservation: no generator, and that is all.
                        Err(_) => {}
                    }
                }
                Op::Claim(_) => {}
                Op::Mint(h, n) => {
                    if let Some((g, generation)) = &hosts[h].generator {
                        for _ in 0..n {
                            match g.next_id() {
                                Ok(id) => {
                                    prop_assert!(ids.insert(id.get()), "duplicate ID {id}");
                                    let parts = layout.decompose(id.get()).unwrap();
                                    minted.entry((parts.node, *generation)).or_default().push(parts.ticks);
                                }
                                Err(MintError::ReservationExpired { .. }
                                    | MintError::ClaimLost { .. }
                                    | MintError::WaitTooLong { .. }) => break,
                                Err(e) => panic!("{e}"),
                            }
                        }
                    }
                }
                Op::Renew(h) => {
                    if let Some((g, _)) = &hosts[h].generator {
                        let _ = g.renew_claim();
                    }
                }
                Op::Partition(h, cut) => hosts[h].store.set_partitioned(cut),
                Op::Advance(h, ms) => hosts[h].clock.advance(Duration::from_millis(u64::from(ms))),
                Op::StepBack(h, ms) => hosts[h].clock.step_back(Duration::from_millis(u64::from(ms))),
                Op::AdvanceStore(ms) => store_clock.advance(Duration::from_millis(u64::from(ms))),
                Op::Drop(h) => hosts[h].generator = None,
            }
        }
        // Every holder of a node id lies wholly before the next one, in ticks.
        let mut last: BTreeMap<u64, (usize, u64)> = BTreeMap::new();
        for (&(node, generation), ticks) in &minted {
            let (lo, hi) = (*ticks.iter().min().unwrap(), *ticks.iter().max().unwrap());
            if let Some(&(before, before_hi)) = last.get(&node) {
                prop_assert!(
                    before_hi < lo,
                    "node {node}: holder {before} minted tick {before_hi}, holder {generation} tick {lo}"
                );
            }
            last.insert(node, (generation, hi));
        }
    }
}
