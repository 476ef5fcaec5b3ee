//! The fuzz targets' checks, as plain functions of a byte slice: `cargo fuzz` calls them
//! from `fuzz_targets/`, and `tests/fuzz_corpus.rs` in the main crate replays every stored
//! input of `fuzz/corpus/` through them on stable, in the normal test run.
//!
//! Each check compares against an answer worked out another way (the scalar oracle,
//! `Layout::decompose` per ID, a round trip, or a plain model of the generator), so a
//! wrong value fails as loudly as a panic.

use std::str::FromStr;
use std::time::Duration;

use flakeid::clock::ManualClock;
use flakeid::decode::{Backend, ColumnBuffers, Columns, Decoder, Fields, Stores};
use flakeid::generator::FastPath;
use flakeid::layout::{Grid, Order};
use flakeid::{ClockPolicy, Encoding, Error, Generator, Id, Layout, MintError};

/// Reads fuzz input as numbers; past the end it yields zeros.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    fn u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        for x in &mut b {
            *x = self.u8();
        }
        u64::from_le_bytes(b)
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A fixed "now" for layouts built from fuzz input (2026-11-29T00:00:00Z), so an input
/// means the same thing on every run.
const NOW_NS: u64 = 1_796_083_200_000_000_000;

/// Any layout the builder accepts, or `None`: the builder's own refusals are not bugs.
fn layout(input: &mut Input<'_>) -> Option<Layout> {
    let time = u32::from(input.u8() % 64);
    let seq = u32::from(input.u8() % 64);
    let node = u32::from(input.u8() % 64);
    let dc = u32::from(input.u8() % 8);
    let order_byte = input.u8();
    let order = if order_byte & 1 == 0 {
        Order::TimeNodeSequence
    } else {
        Order::TimeSequenceNode
    };
    let grid = if order_byte & 2 == 0 {
        Grid::Unix
    } else {
        Grid::Epoch
    };
    let unit_us = 1_000 * u64::from(1 + input.u8() % 16) + u64::from(input.u8() % 4) * 250;
    let epoch_ms = input.u64() % (NOW_NS / 1_000_000 + 1_000);
    Layout::builder()
        .time_bits(time)
        .sequence_bits(seq)
        .node_bits(node)
        .datacenter_bits(dc)
        .order(order)
        .grid(grid)
        .unit(Duration::from_micros(unit_us))
        .epoch_unix_ms(epoch_ms)
        .build_at(NOW_NS)
        .ok()
}

/// Each check returns whether the input got as far as checking something (a layout the
/// builder accepted, text that is UTF-8...), so the corpus replay can tell it ran.
///
/// decode: every backend equals the scalar oracle (columns and error alike); the scalar
/// oracle equals `Layout::decompose` per ID; compose after decompose gives the ID back.
pub fn decode(data: &[u8]) -> bool {
    let mut input = Input(data);
    let Some(layout) = layout(&mut input) else {
        return false;
    };
    let bits = layout.time_bits() + layout.sequence_bits() + layout.node_bits();
    let mask = if bits >= 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    };
    let mut ids = Vec::new();
    while !input.is_empty() && ids.len() < 4096 {
        let raw = input.u64();
        // Mostly IDs that fit, some that do not.
        ids.push(if raw & 0xF0 == 0xF0 { raw } else { raw & mask });
    }
    let n = ids.len();
    let run = |backend: Backend| {
        let mut cols = vec![vec![u64::MAX; n]; 4];
        let [t, m, s, d] = &mut cols[..] else {
            unreachable!()
        };
        let result = Decoder::with_backend(&layout, backend).decode(
            &ids,
            Columns {
                ticks: Some(t),
                unix_ms: Some(m),
                sequence: Some(s),
                node: Some(d),
            },
        );
        (result, cols)
    };
    let (oracle_result, oracle) = run(Backend::Scalar);
    // The u32 columns, when both fields fit them: the decoder's own buffers, cached and
    // non-temporal, equal the wide oracle narrowed (or refuse as `decode_narrow` would).
    let narrow_fits = layout.sequence_bits() <= 32 && layout.node_bits() <= 32;
    let narrowed = |c: &[u64]| c.iter().map(|&v| v as u32).collect::<Vec<u32>>();
    for backend in Backend::available() {
        let (result, cols) = run(backend);
        assert_eq!(result, oracle_result, "{backend:?} error differs");
        if oracle_result.is_ok() {
            assert_eq!(cols, oracle, "{backend:?} columns differ");
        }
        for stores in [Stores::Cached, Stores::NonTemporal] {
            let mut out = ColumnBuffers::new(Fields::ALL).stores(stores);
            let result = Decoder::with_backend(&layout, backend).decode_into(&ids, &mut out);
            if !narrow_fits {
                assert!(
                    matches!(result, Err(flakeid::Error::ColumnTooNarrow { .. })),
                    "{result:?}"
                );
                continue;
            }
            assert_eq!(
                result, oracle_result,
                "{backend:?} {stores:?} buffers: error differs"
            );
            if oracle_result.is_ok() {
                assert_eq!(out.ticks(), Some(&oracle[0][..]), "{backend:?} {stores:?}");
                assert_eq!(
                    out.unix_ms(),
                    Some(&oracle[1][..]),
                    "{backend:?} {stores:?}"
                );
                assert_eq!(
                    out.sequence(),
                    Some(&narrowed(&oracle[2])[..]),
                    "{backend:?} {stores:?}"
                );
                assert_eq!(
                    out.node(),
                    Some(&narrowed(&oracle[3])[..]),
                    "{backend:?} {stores:?}"
                );
            }
        }
    }
    let mut any_bad = false;
    for (i, &id) in ids.iter().enumerate() {
        match layout.decompose(id) {
            Ok(p) => {
                if oracle_result.is_ok() {
                    assert_eq!(
                        [oracle[0][i], oracle[2][i], oracle[3][i]],
                        [p.ticks, p.sequence, p.node],
                        "row {i}"
                    );
                    assert_eq!(
                        Ok(oracle[1][i]),
                        layout.unix_ms_of(p.ticks),
                        "row {i} unix_ms"
                    );
                }
                assert_eq!(layout.compose(p.ticks, p.sequence, p.node), Ok(id));
            }
            Err(Error::IdOutOfLayout { .. }) => any_bad = true,
            Err(e) => panic!("decompose({id}): unexpected {e}"),
        }
    }
    assert_eq!(
        oracle_result.is_err(),
        any_bad,
        "batch error iff some ID is bad"
    );
    n > 0
}

/// parse: arbitrary text as an ID (each encoding and any), a layout string and an
/// RFC 3339 time: a clear error, or a value that formats back to an equal parse.
pub fn parse(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        // Not UTF-8 never reaches the parsers through `&str`; try the lossy form.
        return parse(String::from_utf8_lossy(data).as_bytes());
    };
    let mut buf = [0u8; flakeid::Encoding::MAX_LEN];
    // Decimal against std's parser, which reads every u64 (IDs use all 64 bits).
    let digits = text.trim();
    if !digits.is_empty() && digits.len() <= 20 && digits.bytes().all(|b| b.is_ascii_digit()) {
        assert_eq!(
            Encoding::Decimal.parse(text).ok(),
            digits.parse::<u64>().ok(),
            "decimal {text:?}"
        );
    }
    for enc in [Encoding::Decimal, Encoding::Hex, Encoding::Base32] {
        if let Ok(v) = enc.parse(text) {
            let back = enc.encode(v, &mut buf).to_owned();
            assert_eq!(enc.parse(&back), Ok(v), "{enc:?} round trip of {text:?}");
            // `parse_any`'s documented precedence: `0x`/`0X` first is hex, digits only is
            // decimal, and base32 text that looks like either (found by this target:
            // "0X7FFFFFFFFFF") is read that way; `Encoding::Base32.parse` is exact.
            let any = if back.starts_with("0x") || back.starts_with("0X") {
                Encoding::Hex.parse(&back)
            } else if back.bytes().all(|b| b.is_ascii_digit()) {
                Encoding::Decimal.parse(&back)
            } else {
                Ok(v)
            };
            assert_eq!(Encoding::parse_any(&back), any, "parse_any({back:?})");
        }
    }
    match Encoding::parse_any(text) {
        Ok(v) => {
            let id = Id::from_str(text).expect("Id parses what parse_any does");
            assert_eq!(id.get(), v);
            assert_eq!(id.to_string().parse::<Id>(), Ok(id));
        }
        Err(e) => assert!(!e.to_string().is_empty(), "{e:?}"),
    }
    if let Ok(layout) = Layout::from_str(text) {
        let shown = layout.to_string();
        assert_eq!(
            shown.parse::<Layout>(),
            Ok(layout),
            "layout {text:?} -> {shown:?}"
        );
    }
    if let Ok(ns) = flakeid::rfc3339::parse(text) {
        let mut shown = String::new();
        flakeid::rfc3339::write(&mut shown, ns).expect("write to a String");
        assert_eq!(
            flakeid::rfc3339::parse(&shown),
            Ok(ns),
            "{text:?} -> {shown:?}"
        );
    }
    true
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
