//! Property tests over random layouts.

use std::time::Duration;

use flakeid::clock::ManualClock;
use flakeid::error::Field;
use flakeid::layout::{Grid, NodeParts, Order};
use flakeid::{ClockPolicy, Encoding, Error, Generator, Layout, MintError};
use proptest::prelude::*;

/// Any layout the builder accepts: widths summing to at most 64, either order, either grid,
/// a unit of at least 1 ms (not always whole ms), an epoch in the past.
fn layouts() -> impl Strategy<Value = Layout> {
    (
        1u32..=63,
        0u32..=62,
        0u32..=62,
        0u32..=30,
        (any::<bool>(), any::<bool>(), any::<bool>()),
        1_000_000u64..=3_600_000_000_000,
        0u64..=1_700_000_000_000,
    )
        .prop_filter_map(
            "fits",
            |(time, seq, node, dc, (tsn, epoch_grid, discord_parts), unit_ns, epoch_ms)| {
                Layout::builder()
                    .time_bits(time)
                    .sequence_bits(seq)
                    .node_bits(node)
                    .datacenter_bits(dc.min(node))
                    .node_parts(if discord_parts {
                        NodeParts::WorkerProcess
                    } else {
                        NodeParts::DatacenterWorker
                    })
                    .order(if tsn {
                        Order::TimeSequenceNode
                    } else {
                        Order::TimeNodeSequence
                    })
                    .grid(if epoch_grid { Grid::Epoch } else { Grid::Unix })
                    .unit(Duration::from_nanos(unit_ns))
                    .epoch_unix_ms(epoch_ms)
                    .build()
                    .ok()
            },
        )
}

/// The node fields an ID decodes to, by name, as every front end prints them.
fn decoded_node_fields(l: &Layout, node: u64) -> Vec<(Field, u64)> {
    let (high, low) = l.split_node(node);
    l.node_fields()
        .iter()
        .map(|f| match l.node_fields().parts() {
            Some((h, _)) if f == h => (f, high),
            Some((_, lo)) if f == lo => (f, low),
            _ => (f, node),
        })
        .collect()
}

/// Any layout, a preset or one of [`layouts`].
fn any_layout() -> impl Strategy<Value = Layout> {
    prop_oneof![
        prop::sample::select(
            Layout::presets()
                .iter()
                .map(|p| p.layout)
                .collect::<Vec<_>>()
        ),
        layouts(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// The names decode prints are the names compose takes: an ID's node fields, all at
    /// once and each way alone (the whole node, the two parts, the machine id), give its
    /// node back; a field the layout lacks, a part alone and fields that disagree are
    /// refused by name. Its layout string reads back to the same layout, names included.
    #[test]
    fn decoded_node_fields_compose_back(l in any_layout(), raw in any::<u64>(), other in any::<u64>()) {
        let id = raw & l.max_id();
        let p = l.decompose(id).unwrap();
        let fields = decoded_node_fields(&l, p.node);
        prop_assert_eq!(l.node_from(&fields).unwrap(), Some(p.node));
        for (f, v) in &fields {
            if l.node_fields().parts().is_some_and(|(h, lo)| *f == h || *f == lo) {
                continue;
            }
            prop_assert_eq!(l.node_from(&[(*f, *v)]).unwrap(), Some(p.node));
        }
        if let Some((h, lo)) = l.node_fields().parts() {
            let parts: Vec<_> = fields.iter().copied().filter(|(f, _)| *f == h || *f == lo).collect();
            prop_assert_eq!(parts.len(), 2);
            prop_assert_eq!(l.node_from(&parts).unwrap(), Some(p.node));
            prop_assert!(matches!(l.node_from(&parts[..1]), Err(Error::NodePartMissing { .. })), "a part alone");
        }
        let node = l.node_from(&fields).unwrap().unwrap();
        prop_assert_eq!(l.compose(p.ticks, p.sequence, node).unwrap(), id);
        for f in [Field::Node, Field::Datacenter, Field::Worker, Field::Process, Field::Machine] {
            if !l.node_fields().contains(f) {
                let refused = matches!(l.node_from(&[(f, 0)]), Err(Error::NotANodeField { field, .. }) if field == f);
                prop_assert!(refused, "{} on {}", f, l);
            }
        }
        let another = other & l.max_node();
        if another != p.node && l.node_fields().machine() {
            let disagree = l.node_from(&[(Field::Node, p.node), (Field::Machine, another)]);
            prop_assert!(matches!(disagree, Err(Error::NodeFieldsDisagree { .. })), "{:?}", disagree);
        }
        prop_assert_eq!(l.to_string().parse::<Layout>().unwrap(), l);
    }

    #[test]
    fn compose_decompose_round_trip(l in layouts(), a in any::<u64>(), b in any::<u64>(), c in any::<u64>()) {
        let (ticks, seq, node) = (a & l.max_ticks(), b & l.max_sequence(), c & l.max_node());
        let id = l.compose(ticks, seq, node).unwrap();
        prop_assert!(id <= l.max_id());
        let p = l.decompose(id).unwrap();
        prop_assert_eq!((p.ticks, p.sequence, p.node), (ticks, seq, node));
        // Time order: more ticks is a larger ID whatever the other fields.
        if ticks < l.max_ticks() {
            prop_assert!(l.compose(ticks + 1, 0, 0).unwrap() > id);
        }
        // Any value within the layout's width decomposes and composes back.
        let raw = a & l.max_id();
        let p = l.decompose(raw).unwrap();
        prop_assert_eq!(l.compose(p.ticks, p.sequence, p.node).unwrap(), raw);
        // A value past the width is refused, never masked.
        if l.bits() < 63 {
            let too_big = l.max_id() + 1 + (b >> (l.bits() + 1));
            let refused = matches!(l.decompose(too_big), Err(Error::IdOutOfLayout { .. }));
            prop_assert!(refused);
        }
    }

    #[test]
    fn time_round_trips_through_ticks(l in layouts(), t in any::<u64>()) {
        let ticks = t & l.max_ticks();
        let ns = l.unix_ns_of(ticks).unwrap();
        prop_assert_eq!(l.ticks_at(ns), Ok(ticks));
        prop_assert_eq!(l.ticks_at(ns + i128::from(l.unit_ns()) - 1), Ok(ticks));
        if ticks > 0 {
            prop_assert_eq!(l.ticks_at(ns - 1), Ok(ticks - 1));
        }
    }

    #[test]
    fn layout_strings_round_trip(l in layouts()) {
        let text = l.to_string();
        prop_assert_eq!(text.parse::<Layout>(), Ok(l));
    }

    #[test]
    fn encodings_round_trip(v in any::<u64>()) {
        let mut buf = [0u8; flakeid::Encoding::MAX_LEN];
        for e in [Encoding::Decimal, Encoding::Hex, Encoding::Base32] {
            let text = e.encode(v, &mut buf).to_owned();
            prop_assert_eq!(e.parse(&text), Ok(v));
        }
    }

    #[test]
    fn generator_ids_decode_to_the_clock_and_node(l in layouts(), node in any::<u64>(), step_ms in 0u64..50) {
        let node = node & l.max_node();
        let start = l.unix_ns_of(l.max_ticks() / 2).unwrap();
        prop_assume!(start < i128::from(u64::MAX) / 2);
        let clock = ManualClock::new(start as u64);
        let built = Generator::builder(l)
            .node(node)
            .policy(ClockPolicy::Continue)
            .max_wait(Duration::ZERO)
            .clock(clock.clone())
            .build();
        // Only a 64-bit layout with no node field can need more of the state word than
        // its 63 bits, and only with more sequence bits than a clock's reach leaves.
        if let Err(Error::CannotMint { bits, max }) = built {
            prop_assert!(l.node_bits() == 0 && l.bits() == 64 && bits > max, "{}", l);
            return Ok(());
        }
        let g = built.unwrap();
        let mut last = None;
        for _ in 0..20 {
            clock.advance(Duration::from_millis(step_ms));
            let now = i128::from(flakeid::Clock::unix_ns(&clock));
            match g.next_id() {
                Ok(id) => {
                    prop_assert!(now < l.end_unix_ns());
                    let p = l.decompose(id.get()).unwrap();
                    prop_assert_eq!(p.node, node);
                    prop_assert!(l.unix_ns_of(p.ticks).unwrap() <= now);
                    prop_assert!(last.is_none_or(|prev| id > prev));
                    last = Some(id);
                }
                Err(MintError::WaitTooLong { .. }) => {}
                // A short layout's lifetime can end while the clock steps on, or its last
                // tick's sequence can run out; from then on every mint is refused.
                Err(MintError::PastLifetime { .. }) => {
                    let in_last_tick = last.is_some_and(|id: flakeid::Id| {
                        l.decompose(id.get()).unwrap().ticks == l.max_ticks()
                    });
                    prop_assert!(now >= l.end_unix_ns() || in_last_tick);
                }
                Err(e) => prop_assert!(false, "{}", e),
            }
        }
    }
}

/// `ticks_at` of an instant inside `layout`'s lifetime, else `None`.
fn tick_of(layout: &Layout, unix_ns: i128) -> Option<u64> {
    layout.ticks_at(unix_ns).ok()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// `id_range` holds every ID of every instant of the span, whatever its sequence and
    /// node, and nothing of a tick outside it: its first ID opens the span's first tick
    /// (or the layout's first, for a span that starts before the epoch), its last closes
    /// the span's last tick (or the layout's last). A span outside the lifetime, or empty,
    /// is an error.
    #[test]
    fn an_id_range_holds_the_span_and_no_tick_beside_it(
        l in layouts(),
        a in any::<u64>(),
        b in any::<u64>(),
        inside in any::<u64>(),
        seq in any::<u64>(),
        node in any::<u64>(),
    ) {
        // Instants from a lifetime before the epoch to one past the end.
        let (epoch, end) = (l.unix_ns_of(0).unwrap(), l.end_unix_ns());
        let width = end - epoch;
        // One instant in eight at the lifetime's edges; the others anywhere in three
        // lifetimes around it.
        let pick = |x: u64| match x % 8 {
            0 => epoch,
            1 => end,
            2 => end - 1,
            _ => epoch - width + ((3 * width) as f64 * (x as f64 / u64::MAX as f64)) as i128,
        };
        let (from, to) = (pick(a), pick(b));
        let range = l.id_range_ns(from, to);
        if to <= from {
            prop_assert!(matches!(range, Err(Error::EmptySpan { .. })), "{:?}", range);
            return Ok(());
        }
        if to <= epoch {
            prop_assert!(matches!(range, Err(Error::BeforeEpoch { .. })), "{:?}", range);
            return Ok(());
        }
        if from >= end {
            prop_assert!(matches!(range, Err(Error::PastLifetime { .. })), "{:?}", range);
            return Ok(());
        }
        let range = range.unwrap();
        let (first, last) = (l.decompose(range.first.get()).unwrap(), l.decompose(range.last.get()).unwrap());
        prop_assert_eq!((first.sequence, first.node), (0, 0));
        prop_assert_eq!((last.sequence, last.node), (l.max_sequence(), l.max_node()));
        prop_assert_eq!(first.ticks, tick_of(&l, from).unwrap_or(0));
        prop_assert_eq!(last.ticks, tick_of(&l, to - 1).unwrap_or(l.max_ticks()));
        // Every instant of the span that the layout holds: its IDs are in the range.
        let span = (to - from) as f64;
        let mid = (from + (span * (inside as f64 / u64::MAX as f64)) as i128).min(to - 1);
        for t in [from, to - 1, mid] {
            if let Some(ticks) = tick_of(&l, t) {
                let id = l.compose(ticks, seq & l.max_sequence(), node & l.max_node()).unwrap();
                prop_assert!(range.contains(flakeid::Id::new(id)), "{} at {}", id, t);
            }
        }
    }
}

/// IDs minted at a span's edges fall in its range, and those minted just outside do not:
/// exactly, where the layout's ticks are whole milliseconds and so is the span (Snowflake);
/// to the tick, where a tick is longer (Sonyflake's 10 ms: an ID minted in the span's first
/// tick but before the span is in the range, one of the tick before is not).
#[test]
fn ids_minted_at_a_spans_edges_fall_in_its_range() {
    let from_ms = 1_796_601_600_000; // 2026-12-07T00:00:00Z
    let mint_at = |layout: Layout, unix_ns: u64| {
        let clock = ManualClock::new(unix_ns);
        let g = Generator::builder(layout)
            .node(3)
            .clock(clock)
            .build()
            .expect("a generator");
        g.next_id().expect("an ID")
    };
    let ms = 1_000_000;
    let snowflake = Layout::snowflake();
    let range = snowflake.id_range(from_ms, from_ms + 5).unwrap();
    for (at_ns, inside) in [
        (from_ms * ms - 1, false),
        (from_ms * ms, true),
        ((from_ms + 5) * ms - 1, true),
        ((from_ms + 5) * ms, false),
    ] {
        let id = mint_at(snowflake, at_ns);
        assert_eq!(
            range.contains(id),
            inside,
            "Snowflake, minted at {at_ns} ns"
        );
    }
    // Sonyflake: 10 ms ticks; the span starts 5 ms into one.
    let sonyflake = Layout::sonyflake();
    let range = sonyflake.id_range(from_ms + 5, from_ms + 25).unwrap();
    for (at_ms, inside) in [
        (from_ms - 1, false),
        (from_ms, true), // the span's first tick, 5 ms before the span
        (from_ms + 24, true),
        (from_ms + 29, true), // the span's last tick, after the span
        (from_ms + 30, false),
    ] {
        let id = mint_at(sonyflake, at_ms * ms);
        assert_eq!(
            range.contains(id),
            inside,
            "Sonyflake, minted at {at_ms} ms"
        );
    }
}
