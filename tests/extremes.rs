//! Every public function of `Layout`, `LayoutBuilder`, `rfc3339`, the encodings and `Id`
//! on extreme and random values, with overflow checks on (the test profile keeps them
//! on): each returns a value or a typed error, and never panics. Where a function has a
//! promise that a value can check, the check is made (round trips, ranges).
//!
//! `cargo test` runs proptest's default number of cases; for a long run,
//! `PROPTEST_CASES=2000000 cargo test --release --test extremes` (the figures are in the
//! closing note of the hardening issue).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use flakeid::layout::{Order, SonyflakeSettings};
use flakeid::rfc3339::{self, Timestamp};
use flakeid::{Encoding, Error, Id, Layout};
use proptest::prelude::*;

/// `u64`s with the edges weighted in: 0, 1, the signed and unsigned maxima, powers of two.
fn u64s() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(i64::MAX as u64),
        Just(i64::MAX as u64 + 1),
        Just(u64::MAX),
        Just(u64::MAX - 1),
        (0u32..64).prop_map(|b| 1u64 << b),
        (0u32..64).prop_map(|b| (1u64 << b) - 1),
        any::<u64>(),
    ]
}

fn u32s() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(0u32),
        Just(1),
        Just(63),
        Just(64),
        Just(u32::MAX),
        0u32..70,
        any::<u32>()
    ]
}

/// `i128` instants: the type's ends, the `u64` and `i64` ends, and random values.
fn i128s() -> impl Strategy<Value = i128> {
    prop_oneof![
        Just(i128::MIN),
        Just(i128::MAX),
        Just(0i128),
        Just(-1),
        Just(i128::from(u64::MAX)),
        Just(i128::from(u64::MAX) + 1),
        Just(i128::from(i64::MIN)),
        any::<u64>().prop_map(i128::from),
        any::<i64>().prop_map(i128::from),
        any::<i128>(),
    ]
}

fn durations() -> impl Strategy<Value = Duration> {
    prop_oneof![
        Just(Duration::ZERO),
        Just(Duration::MAX),
        Just(Duration::from_nanos(u64::MAX)),
        Just(Duration::from_nanos(u64::MAX) + Duration::from_nanos(1)),
        u64s().prop_map(Duration::from_nanos),
        (any::<u64>(), 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
    ]
}

/// A layout from the builder on any values at all: either it builds, or it says why.
fn built(
    (time, seq, node, dc, tsn): (u32, u32, u32, u32, bool),
    unit: Duration,
    epoch_ns: u64,
    cap: u32,
) -> Result<Layout, Error> {
    Layout::builder()
        .time_bits(time)
        .sequence_bits(seq)
        .node_bits(node)
        .datacenter_bits(dc)
        .order(if tsn {
            Order::TimeSequenceNode
        } else {
            Order::TimeNodeSequence
        })
        .unit(unit)
        .epoch_unix_ns(epoch_ns)
        .max_bits(cap)
        .build_at(u64::MAX)
}

/// Layouts that build, with extreme units and epochs among them: random widths that fit
/// 63 bits, any unit, any epoch; where that combination outlives 63 bits of milliseconds,
/// the same widths with a 1 ms unit, then with the Unix epoch too (no rejections).
fn layouts() -> impl Strategy<Value = Layout> {
    let widths = (1u32..=63).prop_flat_map(|time| {
        (0..=63 - time).prop_flat_map(move |seq| {
            (0..=63 - time - seq).prop_flat_map(move |node| {
                (Just(time), Just(seq), Just(node), 0..=node, any::<bool>())
            })
        })
    });
    let units = prop_oneof![
        Just(Duration::from_millis(1)),
        Just(Duration::from_nanos(u64::MAX)),
        Just(Duration::from_secs(1)),
        (1_000_000u64..=u64::MAX).prop_map(Duration::from_nanos),
    ];
    let epochs = prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>()];
    (widths, units, epochs).prop_map(|(w, unit, epoch)| {
        built(w, unit, epoch, 63)
            .or_else(|_| built(w, Duration::from_millis(1), epoch, 63))
            .or_else(|_| built(w, Duration::from_millis(1), 0, 63))
            .unwrap_or(Layout::snowflake())
    })
}

/// Every accessor and conversion of one layout on the given values.
fn exercise(l: &Layout, v: u64, w: u64, x: u64, t: i128) {
    // Accessors: no input, but they must not overflow on extreme layouts either.
    let _ = (
        l.time_bits(),
        l.sequence_bits(),
        l.node_bits(),
        l.datacenter_bits(),
    );
    let _ = (l.worker_bits(), l.bits(), l.order(), l.unit_ns(), l.unit());
    let _ = (
        l.epoch_unix_ns(),
        l.epoch_unix_ms(),
        flakeid::__private::epoch_tick(l),
        flakeid::__private::shifts(l),
    );
    let _ = (l.max_ticks(), l.max_sequence());
    let _ = (l.max_node(), l.max_id(), l.lifetime(), l.lifetime_years());
    let _ = (
        l.end_unix_ms(),
        l.ends_within_clock_range(),
        l.ids_per_second_per_node(),
    );
    let _ = (l.node_count(), l.is_javascript_safe());
    assert!(l.end_unix_ns() > l.epoch_unix_ns());

    // Fields: compose is range-checked, and what it accepts decomposes back.
    match l.compose(v, w, x) {
        Ok(id) => {
            let p = l.decompose(id).unwrap();
            assert_eq!((p.ticks, p.sequence, p.node), (v, w, x));
            assert!(id <= l.max_id());
        }
        Err(Error::OutOfRange { .. }) => {
            assert!(v > l.max_ticks() || w > l.max_sequence() || x > l.max_node())
        }
        Err(e) => panic!("compose: {e}"),
    }
    let _ = flakeid::__private::compose_unchecked(l, v, w, x);
    assert_eq!(l.check_node(x).is_ok(), x <= l.max_node());
    if let Ok(node) = l.node_of(v, w) {
        assert_eq!(l.split_node(node), (v, w));
    }
    let _ = l.split_node(v);
    match l.decompose(v) {
        Ok(p) => assert_eq!(l.compose(p.ticks, p.sequence, p.node), Ok(v)),
        Err(e) => assert_eq!(
            e,
            Error::IdOutOfLayout {
                id: v,
                bits: l.bits(),
                index: None
            }
        ),
    }

    // Time: a tick's start is exact and maps back to the tick; instants map to ticks.
    for ticks in [v, w, x, l.max_ticks()] {
        let fits = ticks <= l.max_ticks();
        let ns = l.unix_ns_of(ticks);
        assert_eq!(ns.is_ok(), fits);
        assert_eq!(l.unix_ms_of(ticks).is_ok(), fits);
        assert_eq!(l.time_of(ticks).is_ok(), fits);
        if let Ok(ns) = ns {
            assert_eq!(l.ticks_at(ns), Ok(ticks));
            assert_eq!(l.unix_ms_of(ticks), Ok(ns.div_euclid(1_000_000) as u64));
        }
    }
    match l.ticks_at(t) {
        Ok(ticks) => {
            let start = l.unix_ns_of(ticks).unwrap();
            assert!(start <= t && t - start < i128::from(l.unit_ns()));
        }
        Err(Error::BeforeEpoch { .. }) => assert!(t < l.epoch_unix_ns()),
        Err(Error::PastLifetime { .. }) => assert!(t >= l.end_unix_ns()),
        Err(e) => panic!("ticks_at({t}): {e}"),
    }
    if let Some(time) = u64::try_from(t)
        .ok()
        .and_then(|ns| UNIX_EPOCH.checked_add(Duration::from_nanos(ns)))
    {
        let _ = l.ticks_at_time(time);
    }
    let _ = l.ticks_at_time(SystemTime::UNIX_EPOCH - Duration::from_secs(1));

    // Text: every layout prints as a string that reads back to it.
    let text = l.to_string();
    assert_eq!(text.parse::<Layout>(), Ok(*l), "{text}");
}

proptest! {
    #[test]
    fn layouts_on_extreme_values(l in layouts(), v in u64s(), w in u64s(), x in u64s(), t in i128s()) {
        exercise(&l, v, w, x, t);
    }

    #[test]
    fn the_presets_on_extreme_values(v in u64s(), w in u64s(), x in u64s(), t in i128s()) {
        for l in [Layout::snowflake(), Layout::sonyflake(), Layout::sonyflake_v1(), Layout::javascript_safe()] {
            exercise(&l, v, w, x, t);
        }
    }

    #[test]
    fn the_builder_on_any_values(
        widths in (u32s(), u32s(), u32s(), u32s(), any::<bool>()),
        unit in durations(),
        epoch in u64s(),
        epoch_ms in u64s(),
        now in u64s(),
        cap in u32s(),
        back in durations(),
    ) {
        let _ = built(widths, unit, epoch, cap);
        let _ = Layout::builder().epoch_unix_ms(epoch_ms).unit(unit).build_at(now);
        if let Some(time) = UNIX_EPOCH.checked_sub(back) {
            let _ = Layout::builder().epoch(time).build();
        }
        let settings = SonyflakeSettings {
            bits_sequence: widths.0,
            bits_machine_id: widths.1,
            time_unit: unit,
            start_time: UNIX_EPOCH.checked_add(Duration::from_nanos(epoch)),
        };
        let _ = Layout::sonyflake_v2(settings);
    }

    #[test]
    fn rfc3339_on_extreme_values(ns in i128s(), text in "\\PC{0,40}") {
        let shown = Timestamp(ns).to_string();
        let mut written = String::new();
        rfc3339::write(&mut written, ns).unwrap();
        assert_eq!(written, shown);
        assert!(!shown.starts_with('-') || ns < 0, "{ns} {shown}");
        if let Ok(back) = rfc3339::parse(&shown) {
            assert_eq!(back, ns, "{shown}");
        }
        if let Ok(parsed) = rfc3339::parse(&text) {
            assert_eq!(rfc3339::parse(&Timestamp(parsed).to_string()), Ok(parsed));
        }
        let _ = text.parse::<Layout>();
    }

    #[test]
    fn encodings_and_ids_on_extreme_values(v in u64s(), text in "\\PC{0,30}") {
        let mut buf = [0u8; flakeid::Encoding::MAX_LEN];
        for e in [Encoding::Decimal, Encoding::Hex, Encoding::Base32] {
            let shown = e.encode(v, &mut buf).to_owned();
            assert_eq!(e.parse(&shown), Ok(v), "{e:?} {v}");
            let _ = e.parse(&text);
        }
        let _ = Encoding::parse_any(&text);
        let id = Id::new(v);
        assert_eq!(id.get(), v);
        assert_eq!(id.to_string().parse::<Id>(), Ok(id));
        assert_eq!(u64::from(id), v);
        match i64::try_from(id) {
            Ok(signed) => assert_eq!(signed as u64, v),
            Err(e) => {
                assert!(v > i64::MAX as u64);
                assert_eq!(e, Error::WiderThanI64 { id: v });
            }
        }
        let _ = id.encode(Encoding::Base32, &mut buf);
        let _ = id.decompose(&Layout::sonyflake());
        let _ = text.parse::<Id>();
    }
}

/// Every error says its remedy: bad settings, bad input, or a mint to retry; from real calls.
#[test]
fn errors_say_their_remedy() {
    use flakeid::clock::ManualClock;
    use flakeid::error::ErrorKind;
    use flakeid::{Generator, Layout};
    let settings = [
        "seq=40,node=30".parse::<Layout>().unwrap_err(),
        "no-such-preset".parse::<Layout>().unwrap_err(),
        Generator::builder(Layout::snowflake()).build().unwrap_err(),
        Layout::snowflake().node_of(0, 99).map(drop).unwrap_err(),
    ];
    for e in settings {
        assert_eq!(e.kind(), ErrorKind::Settings, "{e}");
    }
    let input = [
        Layout::snowflake()
            .decompose(u64::MAX)
            .map(drop)
            .unwrap_err(),
        Layout::snowflake().compose(0, 1 << 20, 0).unwrap_err(),
        flakeid::Error::from("12x".parse::<flakeid::Id>().unwrap_err()),
        Layout::snowflake().ticks_at(0).unwrap_err(),
    ];
    for e in input {
        assert_eq!(e.kind(), ErrorKind::Input, "{e}");
    }
    let clock = ManualClock::new(0);
    let g = Generator::builder(Layout::snowflake())
        .node(1)
        .clock(clock)
        .build()
        .unwrap();
    let e = flakeid::Error::from(g.next_id().unwrap_err());
    assert_eq!(e.kind(), ErrorKind::Mint, "{e}");
}
