//! The generator's fuzz check: a clock driven by the input, minting checked against a
//! plain model of the generator.

use std::time::Duration;

use flakeid::clock::ManualClock;
use flakeid::generator::FastPath;
use flakeid::layout::Grid;
use flakeid::{ClockPolicy, Generator, Id, Layout, MintError};

use crate::checks::NOW_NS;
use crate::input::Input;

/// generator: arbitrary operations on a manual clock under each policy, checked against
/// [`Model`]: every ID exactly where the model puts it (so unique and increasing), every
/// error exactly where the policy says. Each input runs twice, on the `fetch_add` fast path
/// (what the builder picks for these layouts) and on the compare-and-swap one: on one
/// thread the two mint exactly the same (a missed add is undone).
pub fn generator(data: &[u8]) -> bool {
    let ran = generator_on(data, true);
    generator_on(data, false) && ran
}

fn generator_on(data: &[u8], fetch_add: bool) -> bool {
    let mut input = Input(data);
    let policy = [
        ClockPolicy::Reject,
        ClockPolicy::Continue,
        ClockPolicy::Wait,
    ][usize::from(input.u8() % 3)];
    let seq_bits = u32::from(input.u8() % 4);
    let node_bits = 1 + u32::from(input.u8() % 3);
    let time_bits = 3 + u32::from(input.u8() % 6);
    let unit_byte = input.u8();
    let unit_ms = 1 + u64::from(unit_byte % 3);
    // The top bit picks the epoch's grid (the epoch is off a 2 or 3 ms grid 2 times in 3).
    let on_epoch_grid = unit_byte & 0x80 != 0;
    let epoch_ms = 1_000_000 + u64::from(input.u16());
    let Ok(layout) = Layout::builder()
        .time_bits(time_bits)
        .sequence_bits(seq_bits)
        .node_bits(node_bits)
        .grid(if on_epoch_grid {
            Grid::Epoch
        } else {
            Grid::Unix
        })
        .unit(Duration::from_millis(unit_ms))
        .epoch_unix_ms(epoch_ms)
        .build_at(NOW_NS)
    else {
        return false;
    };
    let node = u64::from(input.u8()) % (1 << node_bits);
    let clock = ManualClock::from_unix_ms(epoch_ms + u64::from(input.u8() % 8));
    let builder = Generator::builder(layout)
        .node(node)
        .policy(policy)
        .max_wait(Duration::ZERO)
        .clock(clock.clone());
    let path = if fetch_add {
        FastPath::FetchAdd
    } else {
        FastPath::CompareAndSwap
    };
    let g = builder.fast_path(path).build().expect("node in range");
    assert_eq!(g.fast_path(), path, "the path under test");
    let unit_ns = unit_ms * 1_000_000;
    let mut model = Model {
        policy,
        max_seq: layout.max_sequence(),
        max_ticks: layout.max_ticks(),
        unit_ns,
        epoch_tick: epoch_ms * 1_000_000 / unit_ns,
        epoch_grid: on_epoch_grid.then_some(epoch_ms * 1_000_000),
        last: None,
    };
    let mut last_id: Option<Id> = None;
    let mut ops = 0;
    while !input.is_empty() && ops < 512 {
        ops += 1;
        let op = input.u8();
        let arg = input.u8();
        // One mint as the model and the generator each see it; `try_` says which call.
        let mut one = |result: Result<Id, MintError>, try_: bool, model: &mut Model| {
            let expect = model.mint(clock.unix_ns_now());
            match (expect, result) {
                (Expect::Mint { tick, seq }, Ok(id)) => {
                    let want = layout
                        .compose(tick, seq, node)
                        .expect("model stays in layout");
                    assert_eq!(id.get(), want, "{policy:?}: model says ({tick}, {seq})");
                    if let Some(prev) = last_id {
                        assert!(id > prev, "not increasing");
                    }
                    last_id = Some(id);
                    model.last = Some((tick, seq));
                    true
                }
                (Expect::BeforeEpoch, Err(MintError::BeforeEpoch { .. }))
                | (Expect::PastLifetime, Err(MintError::PastLifetime { .. }))
                | (Expect::ClockBehind, Err(MintError::ClockBehind { .. })) => false,
                (Expect::Wait, Err(MintError::WaitTooLong { .. })) if !try_ => false,
                (Expect::Wait, Err(MintError::WouldBlock { .. })) if try_ => false,
                (expect, got) => panic!("{policy:?}: model says {expect:?}, generator {got:?}"),
            }
        };
        match op % 9 {
            0 | 1 => {
                one(g.next_id(), false, &mut model);
            }
            2 => {
                one(g.try_next_id(), true, &mut model);
            }
            3 => {
                let mut out = [Id::default(); 8];
                let want = usize::from(arg % 8) + 1;
                let result = g.next_ids(&mut out[..want]);
                // The model: single mints until one fails (the clock stands still).
                let mut minted = 0;
                for &id in &out[..result.as_ref().map_or(0, |&n| n)] {
                    assert!(
                        one(Ok(id), false, &mut model),
                        "batch minted past the model"
                    );
                    minted += 1;
                }
                match result {
                    Ok(n) if n == want => {}
                    Ok(_) => {
                        // Stopped early: the model must say the next one fails.
                        assert!(!matches!(
                            model.mint(clock.unix_ns_now()),
                            Expect::Mint { .. }
                        ));
                    }
                    Err(e) => {
                        assert_eq!(minted, 0);
                        assert!(
                            !one(Err(e), false, &mut model),
                            "batch failed where the model mints"
                        );
                    }
                }
            }
            4 => {
                if let Ok(mut lease) = g.lease() {
                    one(lease.next_id(), false, &mut model);
                }
            }
            5 => clock.advance(Duration::from_micros(u64::from(arg) * 100)),
            6 => clock.advance(Duration::from_millis(u64::from(arg % 4) * unit_ms)),
            7 => clock.step_back(Duration::from_micros(u64::from(arg) * 150)),
            _ => match arg % 4 {
                // Far past the lifetime.
                0 => clock.set(u64::try_from(layout.end_unix_ns()).unwrap_or(u64::MAX) + 1),
                // Back near the epoch (before it, sometimes).
                1 => clock.set((epoch_ms * 1_000_000).saturating_sub(u64::from(arg) * 40_000)),
                // The clock stands still.
                _ => {}
            },
        }
    }
    if let Some(last) = last_id {
        assert_eq!(g.last_id(), last, "last_id is the last ID handed out");
    }
    ops > 0
}

/// `ManualClock::unix_ns` through the trait, named so the closure above reads well.
trait NowNs {
    fn unix_ns_now(&self) -> u64;
}

impl NowNs for ManualClock {
    fn unix_ns_now(&self) -> u64 {
        flakeid::Clock::unix_ns(self)
    }
}

/// The generator's rules written the plain way, from the layout's documentation: no
/// packed word, no CAS, no shared code with the library.
struct Model {
    policy: ClockPolicy,
    max_seq: u64,
    max_ticks: u64,
    unit_ns: u64,
    epoch_tick: u64,
    /// `Some(epoch_ns)` on the epoch's grid: ticks count from the epoch instant.
    epoch_grid: Option<u64>,
    /// Last (tick, sequence) handed out; `None` before the first.
    last: Option<(u64, u64)>,
}

impl Model {
    fn mint(&self, clock_ns: u64) -> Expect {
        let now = match self.epoch_grid {
            // floor((t - epoch) / unit), as the grid's documentation says.
            Some(epoch_ns) => clock_ns.checked_sub(epoch_ns).map(|d| d / self.unit_ns),
            // floor(t / unit) - floor(epoch / unit).
            None => (clock_ns / self.unit_ns).checked_sub(self.epoch_tick),
        };
        let Some(now) = now else {
            return Expect::BeforeEpoch;
        };
        let (last_tick, last_seq) = self.last.unwrap_or((0, self.max_seq));
        if now > last_tick {
            return if now > self.max_ticks {
                Expect::PastLifetime
            } else {
                Expect::Mint { tick: now, seq: 0 }
            };
        }
        if now < last_tick {
            match self.policy {
                ClockPolicy::Reject => return Expect::ClockBehind,
                ClockPolicy::Wait => return Expect::Wait,
                _ => {}
            }
        }
        if last_seq < self.max_seq {
            Expect::Mint {
                tick: last_tick,
                seq: last_seq + 1,
            }
        } else if last_tick >= self.max_ticks {
            Expect::PastLifetime
        } else {
            Expect::Wait
        }
    }
}

/// What the model says one mint does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Mint {
        tick: u64,
        seq: u64,
    },
    BeforeEpoch,
    PastLifetime,
    ClockBehind,
    /// A wait is needed: `WaitTooLong` (max wait 0) or, for `try_next_id`, `WouldBlock`.
    Wait,
}
