//! Unit tests of layouts: the presets, the rules, the edges of time.

use super::*;
use crate::rfc3339;
#[cfg(feature = "std")]
use std::time::{SystemTime, UNIX_EPOCH};

const EXAMPLE_MS: u64 = 1_793_448_000_000; // 2026-10-31T12:00:00Z

#[test]
fn snowflake_worked_example() {
    let l = Layout::snowflake();
    let ticks = l.ticks_at(i128::from(EXAMPLE_MS * NS_PER_MS)).unwrap();
    assert_eq!(ticks, 504_613_025_343);
    let node = l.node_of(3, 17).unwrap();
    let id = l.compose(ticks, 42, node).unwrap();
    assert_eq!(id, 2_116_500_430_648_709_162);
    let p = l.decompose(id).unwrap();
    assert_eq!(
        p,
        Parts {
            ticks,
            sequence: 42,
            node
        }
    );
    assert_eq!(l.split_node(p.node), (3, 17));
    assert_eq!(l.unix_ms_of(p.ticks), Ok(EXAMPLE_MS));
}

#[test]
fn sonyflake_worked_example() {
    let l = Layout::sonyflake();
    let ticks = l.ticks_at(i128::from(EXAMPLE_MS * NS_PER_MS)).unwrap();
    let id = l.compose(ticks, 7, 2565).unwrap();
    assert_eq!(id, 96_902_515_261_901_317);
    let p = l.decompose(id).unwrap();
    assert_eq!((p.ticks, p.sequence, p.node), (ticks, 7, 2565));
    assert_eq!(l.unix_ms_of(p.ticks), Ok(EXAMPLE_MS));
}

#[test]
fn preset_facts() {
    let s = Layout::snowflake();
    assert_eq!(format!("{:.2}", s.lifetime_years()), "69.68");
    assert_eq!(s.end_unix_ms(), 3_487_858_230_209);
    assert_eq!(s.ids_per_second_per_node(), 4_096_000.0);
    assert_eq!(s.node_count(), 1024);
    let y = Layout::sonyflake();
    assert_eq!(format!("{:.2}", y.lifetime_years()), "174.21");
    assert_eq!(
        rfc3339::Timestamp(y.end_unix_ns()).to_string(),
        "2199-03-19T03:28:58.880Z"
    );
    assert_eq!(y.ids_per_second_per_node(), 25_600.0);
    assert_eq!(y.node_count(), 65_536);
    assert_eq!(
        Layout::sonyflake_v1().epoch_unix_ms(),
        SONYFLAKE_V1_EPOCH_MS
    );
}

#[test]
fn sonyflake_v2_rules() {
    let s = |seq, mach, unit_ms| SonyflakeSettings {
        bits_sequence: seq,
        bits_machine_id: mach,
        time_unit: Duration::from_millis(unit_ms),
        start_time: None,
    };
    assert_eq!(
        Layout::sonyflake_v2(s(0, 0, 0)).unwrap(),
        Layout::sonyflake()
    );
    assert_eq!(
        Layout::sonyflake_v2(s(31, 0, 0)),
        Err(Error::InvalidSequenceBits { bits: 31 })
    );
    assert_eq!(
        Layout::sonyflake_v2(s(8, 31, 0)),
        Err(Error::InvalidNodeBits { bits: 31 })
    );
    assert_eq!(
        Layout::sonyflake_v2(s(16, 16, 0)),
        Err(Error::TimeBitsTooFew { bits: 31, min: 32 })
    );
    assert!(Layout::sonyflake_v2(s(15, 16, 0)).is_ok());
    let sub_ms = SonyflakeSettings {
        time_unit: Duration::from_micros(999),
        ..s(0, 0, 0)
    };
    assert_eq!(
        Layout::sonyflake_v2(sub_ms),
        Err(Error::InvalidTimeUnit {
            unit: Duration::from_micros(999)
        })
    );
    let future = SonyflakeSettings {
        start_time: Some(SystemTime::now() + Duration::from_secs(3600)),
        ..s(0, 0, 0)
    };
    assert!(matches!(
        Layout::sonyflake_v2(future),
        Err(Error::EpochInFuture { .. })
    ));
    let odd_unit = SonyflakeSettings {
        time_unit: Duration::from_micros(1500),
        ..s(0, 0, 0)
    };
    let l = Layout::sonyflake_v2(odd_unit).unwrap();
    assert_eq!(l.unit_ns(), 1_500_000);
}

#[test]
fn builder_rules() {
    let b = Layout::builder;
    assert_eq!(
        b().time_bits(43).sequence_bits(12).node_bits(10).build(),
        Err(Error::LayoutTooWide { bits: 65 })
    );
    // 64 bits fit; a cap of 63 (signed columns) refuses them.
    let full = b()
        .time_bits(42)
        .sequence_bits(12)
        .node_bits(10)
        .build()
        .unwrap();
    assert_eq!(
        (full.bits(), full.max_id(), full.is_i64_safe()),
        (64, u64::MAX, false)
    );
    assert_eq!(full.decompose(u64::MAX).map(|p| p.ticks), Ok((1 << 42) - 1));
    assert_eq!(
        b().time_bits(42)
            .sequence_bits(12)
            .node_bits(10)
            .max_bits(crate::layout::I64_SAFE_BITS)
            .build(),
        Err(Error::WiderThanCap { bits: 64, max: 63 })
    );
    // Every field may take the rest: 64 - 1 sequence or node bits, and none at all.
    let seq63 = b()
        .time_bits(1)
        .sequence_bits(63)
        .node_bits(0)
        .build()
        .unwrap();
    assert_eq!(seq63.max_sequence(), u64::MAX >> 1);
    let node63 = b()
        .time_bits(1)
        .sequence_bits(0)
        .node_bits(63)
        .build()
        .unwrap();
    assert_eq!(
        (node63.max_node(), node63.node_count()),
        (u64::MAX >> 1, 1 << 63)
    );
    assert_eq!(
        b().time_bits(u32::MAX).build(),
        Err(Error::LayoutTooWide { bits: u32::MAX })
    );
    assert_eq!(
        b().time_bits(0).build(),
        Err(Error::TimeBitsTooFew { bits: 0, min: 1 })
    );
    assert_eq!(
        b().datacenter_bits(11).build(),
        Err(Error::InvalidDatacenterBits {
            datacenter_bits: 11,
            node_bits: 10
        })
    );
    assert_eq!(
        b().unit(Duration::from_nanos(999_999)).build(),
        Err(Error::InvalidTimeUnit {
            unit: Duration::from_nanos(999_999)
        })
    );
    assert_eq!(
        b().epoch_unix_ms(2_000).build_at(1_000 * NS_PER_MS),
        Err(Error::EpochInFuture {
            epoch_unix_ms: 2_000
        })
    );
    assert_eq!(
        b().time_bits(63).sequence_bits(0).node_bits(0).build(),
        Err(Error::LayoutEndsTooLate)
    );
    // A JavaScript-safe 53-bit layout.
    let js = b()
        .time_bits(41)
        .sequence_bits(8)
        .node_bits(4)
        .build()
        .unwrap();
    assert_eq!(js.max_id(), (1 << 53) - 1);
}

#[test]
fn range_checks_never_mask() {
    let l = Layout::snowflake();
    assert_eq!(
        l.compose(1 << 41, 0, 0),
        Err(Error::OutOfRange {
            field: Field::Ticks,
            value: 1 << 41,
            max: (1 << 41) - 1
        })
    );
    assert!(matches!(
        l.compose(0, 4096, 0),
        Err(Error::OutOfRange {
            field: Field::Sequence,
            ..
        })
    ));
    assert!(matches!(
        l.compose(0, 0, 1024),
        Err(Error::OutOfRange {
            field: Field::Node,
            ..
        })
    ));
    assert!(matches!(
        l.node_of(32, 0),
        Err(Error::OutOfRange {
            field: Field::Datacenter,
            ..
        })
    ));
    assert!(matches!(
        l.node_of(0, 32),
        Err(Error::OutOfRange {
            field: Field::Worker,
            ..
        })
    ));
    assert_eq!(
        Layout::sonyflake().node_of(0, 0),
        Err(Error::NoDatacenterField)
    );
    assert_eq!(
        l.decompose(1 << 63),
        Err(Error::IdOutOfLayout {
            id: 1 << 63,
            bits: 63,
            index: None
        })
    );
    // A 64-bit layout takes the top bit as time.
    let d = Layout::discord();
    assert_eq!(d.decompose(1 << 63).map(|p| p.ticks), Ok(1 << 41));
    assert_eq!(d.compose(1 << 41, 0, 0), Ok(1 << 63));
    assert_eq!(d.compose(u64::MAX >> 22, 4095, 1023), Ok(u64::MAX));
}

#[test]
fn time_edges() {
    let l = Layout::snowflake();
    let ns = |ms: u64| i128::from(ms * NS_PER_MS);
    assert_eq!(l.ticks_at(ns(TWEPOCH_MS)), Ok(0));
    assert_eq!(
        l.ticks_at(ns(TWEPOCH_MS) - 1),
        Err(Error::BeforeEpoch {
            by: Duration::from_nanos(1),
            epoch_unix_ns: TWEPOCH_MS * NS_PER_MS,
        })
    );
    let last = l.end_unix_ms() - 1;
    assert_eq!(l.ticks_at(ns(last)), Ok(l.max_ticks()));
    assert_eq!(
        l.ticks_at(ns(l.end_unix_ms())),
        Err(Error::PastLifetime {
            end_unix_ms: 3_487_858_230_209
        })
    );
    // Sonyflake's rule: unit boundaries are absolute, not relative to the epoch.
    let odd = Layout::builder()
        .unit(Duration::from_millis(10))
        .epoch_unix_ms(1_005)
        .build()
        .unwrap();
    assert_eq!(odd.epoch_tick(), 100);
    assert_eq!(odd.ticks_at(1_010 * 1_000_000), Ok(1));
    assert_eq!(odd.unix_ms_of(1), Ok(1_010));
}

/// A 41-bit layout with a 1 s unit lasts to the year 71654, far past 2554 where `u64`
/// nanoseconds end: its times compose and decode there, and every time before 1970
/// or the epoch names the real distance.
#[test]
fn one_time_domain_past_2554_and_before_1970() {
    let l: Layout = "time=41,seq=12,node=10,unit=1s,epoch=2025-01-01T00:00:00Z"
        .parse()
        .unwrap();
    assert!(!l.ends_within_clock_range());
    assert_eq!(
        rfc3339::Timestamp(l.end_unix_ns()).to_string(),
        "+71709-04-11T01:12:32.000Z"
    );
    let far = rfc3339::parse("+71654-01-01T00:00:00Z").unwrap();
    let ticks = l.ticks_at(far).unwrap();
    assert_eq!(l.unix_ns_of(ticks), Ok(far));
    #[cfg(feature = "std")]
    {
        let time = UNIX_EPOCH + Duration::from_nanos(u64::MAX) + Duration::from_secs(3600);
        let t = l.ticks_at_time(time).unwrap();
        let start = l.time_of(t).unwrap();
        assert!(start <= time && time.duration_since(start).unwrap() < l.unit());
    }
    // Before 1970: the distance is exact, not clamped to u64 nanoseconds.
    let year0 = rfc3339::parse("0000-01-01T00:00:00Z").unwrap();
    match Layout::snowflake().ticks_at(year0) {
        Err(Error::BeforeEpoch { by, epoch_unix_ns }) => {
            assert_eq!(epoch_unix_ns, TWEPOCH_MS * NS_PER_MS);
            assert_eq!(
                i128::from(by.as_secs()) * 1_000_000_000 + i128::from(by.subsec_nanos()),
                i128::from(TWEPOCH_MS * NS_PER_MS) - year0
            );
        }
        other => panic!("{other:?}"),
    }
    // An epoch after 2554 is in the future, not "before 1970"; before 1970 says so.
    assert!(matches!(
        "seq=1,node=1,epoch=+10000-01-01T00:00:00Z".parse::<Layout>(),
        Err(Error::EpochInFuture { .. })
    ));
    // Unix ms past 64 bits: refused as such, not capped to a different instant.
    assert!(matches!(
        "seq=1,node=1,epoch=99999999999999999999999".parse::<Layout>(),
        Err(Error::Parse(crate::ParseError::Layout(what))) if what.contains("64 bits")
    ));
    assert!(matches!(
        "seq=1,node=1,epoch=18446744073709551615".parse::<Layout>(),
        Err(Error::EpochInFuture {
            epoch_unix_ms: 18_446_744_073_709_551_615
        })
    ));
    assert_eq!(
        "seq=1,node=1,epoch=1969-12-31T23:59:59Z".parse::<Layout>(),
        Err(Error::EpochBeforeUnix {
            by: Duration::from_secs(1)
        })
    );
    #[cfg(feature = "std")]
    assert_eq!(
        Layout::builder()
            .epoch(UNIX_EPOCH - Duration::from_secs(60))
            .build(),
        Err(Error::EpochBeforeUnix {
            by: Duration::from_secs(60)
        })
    );
}

/// Every tick function on every tick value: an answer or a typed error, no panic (the
/// test profile has overflow checks on), including the widest unit a layout takes.
#[test]
fn tick_functions_on_extreme_values() {
    let widest_unit = Layout::builder()
        .time_bits(1)
        .sequence_bits(0)
        .node_bits(0)
        .unit(Duration::from_nanos(u64::MAX))
        .build()
        .unwrap();
    for l in [Layout::snowflake(), Layout::sonyflake(), widest_unit] {
        for ticks in [0, 1, l.max_ticks(), l.max_ticks() + 1, u64::MAX] {
            let fits = ticks <= l.max_ticks();
            assert_eq!(l.unix_ns_of(ticks).is_ok(), fits, "{l} {ticks}");
            assert_eq!(l.unix_ms_of(ticks).is_ok(), fits, "{l} {ticks}");
            #[cfg(feature = "std")]
            assert_eq!(l.time_of(ticks).is_ok(), fits, "{l} {ticks}");
            if let Ok(ns) = l.unix_ns_of(ticks) {
                assert_eq!(l.ticks_at(ns), Ok(ticks));
                assert!(ns < l.end_unix_ns());
            }
            let _ = l.unix_ms_of_unchecked(ticks);
        }
        for ns in [i128::MIN, -1, 0, i128::from(u64::MAX), i128::MAX] {
            let _ = l.ticks_at(ns);
        }
    }
    // The old answers: a wrapped time one ms before the epoch, or a panic.
    assert!(Layout::snowflake().unix_ms_of(u64::MAX).is_err());
}

/// `unix_ms_of`'s one-comparison path gives the exact path's answer: the exact time
/// rounded down to the millisecond, on every layout and on both sides of the time field's
/// end, for whole-millisecond units (the multiply-add) and others (the exact path).
#[test]
fn unix_ms_of_is_the_exact_time_in_whole_milliseconds() {
    let not_whole_ms = Layout::builder()
        .unit(Duration::from_micros(1_250))
        .build()
        .unwrap();
    let odd = Layout::builder()
        .unit(Duration::from_millis(10))
        .epoch_unix_ms(1_005)
        .build()
        .unwrap();
    let mut layouts: Vec<Layout> = Layout::presets().iter().map(|p| p.layout).collect();
    layouts.extend([not_whole_ms, odd]);
    for l in layouts {
        let max = l.max_ticks();
        for ticks in [
            0,
            1,
            2,
            1 << 20,
            max / 2,
            max - 1,
            max,
            max + 1,
            max + 2,
            u64::MAX,
        ] {
            let exact = l
                .unix_ns_of(ticks)
                .map(|ns| ns.div_euclid(1_000_000) as u64);
            assert_eq!(l.unix_ms_of(ticks), exact, "{l} at tick {ticks}");
        }
    }
}

/// One error for a unit too long, from the builder and from the string alike; units
/// print back in the largest whole unit.
#[test]
fn units_too_long_are_refused_and_print_back_whole() {
    let too_long = Duration::from_nanos(u64::MAX) + Duration::from_nanos(1);
    assert_eq!(
        Layout::builder().unit(too_long).build(),
        Err(Error::InvalidTimeUnit { unit: too_long })
    );
    assert_eq!(
        Layout::builder().unit(Duration::MAX).build(),
        Err(Error::InvalidTimeUnit {
            unit: Duration::MAX
        })
    );
    assert_eq!(
        "seq=1,node=1,unit=18446744074s".parse::<Layout>(),
        Err(Error::InvalidTimeUnit {
            unit: Duration::from_secs(18_446_744_074)
        })
    );
    let l: Layout = "time=30,seq=1,node=1,unit=1s".parse().unwrap();
    assert!(l.to_string().contains(",unit=1s,"), "{l}");
    let l: Layout = "time=30,seq=1,node=1,unit=1500ms".parse().unwrap();
    assert!(l.to_string().contains(",unit=1500ms,"), "{l}");
    assert_eq!(l.to_string().parse::<Layout>(), Ok(l));
}

#[test]
fn layout_strings_round_trip() {
    for l in [
        Layout::snowflake(),
        Layout::sonyflake(),
        Layout::sonyflake_v1(),
    ] {
        assert_eq!(l.to_string().parse::<Layout>().unwrap(), l);
    }
    assert_eq!("Snowflake".parse::<Layout>().unwrap(), Layout::snowflake());
    let custom: Layout = "seq=10,node=0,order=tsn,unit=1500us,epoch=1700000000000"
        .parse()
        .unwrap();
    assert_eq!(custom.time_bits(), 53);
    assert_eq!(custom.unit_ns(), 1_500_000);
    assert_eq!(custom.to_string().parse::<Layout>().unwrap(), custom);
    for bad in [
        "",
        "time=41",
        "seq=12,node=10,order=xyz",
        "seq=12,node=10,unit=10",
        "seq=12,node=10,bogus=1",
        "seq=12,seq=12,node=10",
        "seq=a,node=1",
        "sonyflake_v1",
    ] {
        assert!(
            matches!(bad.parse::<Layout>(), Err(Error::Parse(_))),
            "{bad}"
        );
    }
    assert_eq!(
        "time=50,seq=12,node=10".parse::<Layout>(),
        Err(Error::LayoutTooWide { bits: 72 })
    );
}
