//! The generator on a clock the user writes, through `GeneratorBuilder::with_clock`: the API a
//! `no_std` build offers (no default clock there).

use std::sync::atomic::{AtomicU64, Ordering};

use flakeid::{Clock, GeneratorBuilder, Layout, MintError};

/// A clock a firmware might keep: ticks counted by an interrupt, here set by hand.
struct InterruptClock {
    unix_ms: AtomicU64,
}

impl Clock for InterruptClock {
    fn unix_ns(&self) -> u64 {
        self.unix_ms.load(Ordering::Acquire) * 1_000_000
    }
}

#[test]
fn a_user_clock_drives_the_generator() {
    let clock = InterruptClock {
        unix_ms: AtomicU64::new(1_793_448_000_000),
    };
    let layout = Layout::javascript_safe();
    let g = GeneratorBuilder::with_clock(layout, &clock)
        .node(9)
        .max_wait(core::time::Duration::ZERO)
        .build()
        .unwrap();
    let mut ids = Vec::new();
    for _ in 0..128 {
        ids.push(g.next_id().unwrap());
    }
    // 128 per tick: the 129th needs the next millisecond, which this clock has not reached.
    assert!(matches!(g.next_id(), Err(MintError::WaitTooLong { .. })));
    clock.unix_ms.fetch_add(1, Ordering::AcqRel);
    ids.push(g.next_id().unwrap());
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert!(ids.iter().all(|id| id.get() < 1 << 53), "JavaScript-safe");
    let last = layout.decompose(ids[128].get()).unwrap();
    assert_eq!((last.sequence, last.node), (0, 9));
}
