//! Every decode backend against the scalar oracle (and the oracle against `decompose`).

use std::time::Duration;

use flakeid::decode::{Backend, ColumnBuffers, Columns, Decoder, Fields, NarrowColumns, Stores};
use flakeid::layout::Order;
use flakeid::{Error, Layout};

mod common;
use common::Rng;

fn layouts(rng: &mut Rng) -> Vec<Layout> {
    // The 64-bit presets and a 64-bit Sonyflake-ordered layout on the epoch's grid: IDs
    // at and past 2^63, where a signed shift or compare would go wrong.
    let mut all = vec![
        Layout::snowflake(),
        Layout::sonyflake(),
        Layout::sonyflake_v1(),
        Layout::discord(),
        Layout::instagram(),
        Layout::mastodon(),
        "time=40,seq=8,node=16,order=tsn,unit=10ms,epoch=1735689600003,grid=epoch"
            .parse()
            .unwrap(),
    ];
    assert!(all.iter().filter(|l| l.bits() == 64).count() >= 4);
    while all.len() < 40 {
        let time = 1 + (rng.next() % 63) as u32;
        let seq = (rng.next() % 64) as u32;
        let node = (rng.next() % 64) as u32;
        // Half the units are whole milliseconds (the SIMD multiply), half are not (exact
        // 128-bit path).
        let unit_ns = if rng.next().is_multiple_of(2) {
            1_000_000 * (1 + rng.next() % 5_000)
        } else {
            1_000_000 + rng.next() % 10_000_000
        };
        let built = Layout::builder()
            .time_bits(time)
            .sequence_bits(seq)
            .node_bits(node)
            .datacenter_bits(node / 2)
            .order(if rng.next().is_multiple_of(2) {
                Order::TimeNodeSequence
            } else {
                Order::TimeSequenceNode
            })
            .grid(if rng.next().is_multiple_of(2) {
                flakeid::layout::Grid::Unix
            } else {
                flakeid::layout::Grid::Epoch
            })
            .unit(Duration::from_nanos(unit_ns))
            .epoch_unix_ms(rng.next() % 1_700_000_000_000)
            .build();
        if let Ok(l) = built {
            all.push(l);
        }
    }
    all
}

/// IDs valid for `l`: random, plus every field at 0 and at its maximum.
fn ids_for(l: &Layout, rng: &mut Rng, n: usize) -> Vec<u64> {
    let mut ids: Vec<u64> = (0..n).map(|_| rng.next() & l.max_id()).collect();
    let extremes = [
        0,
        l.max_id(),
        l.compose(l.max_ticks(), 0, 0).unwrap(),
        l.compose(0, l.max_sequence(), 0).unwrap(),
        l.compose(0, 0, l.max_node()).unwrap(),
        l.compose(l.max_ticks(), l.max_sequence(), 0).unwrap(),
    ];
    for (slot, e) in ids.iter_mut().zip(extremes.iter().cycle()).step_by(3) {
        *slot = *e;
    }
    ids
}

type Cols = [Vec<u64>; 4];

fn run(decoder: &Decoder, ids: &[u64]) -> (Result<(), Error>, Cols) {
    let n = ids.len();
    let mut c: Cols = std::array::from_fn(|_| vec![u64::MAX; n]);
    let [t, m, s, nd] = &mut c;
    let r = decoder.decode(
        ids,
        Columns {
            ticks: Some(t),
            unix_ms: Some(m),
            sequence: Some(s),
            node: Some(nd),
        },
    );
    (r, c)
}

fn report_backends() -> Vec<Backend> {
    let available: Vec<Backend> = Backend::available().collect();
    for name in ["avx2", "avx512"] {
        if available.iter().all(|b| b.name() != name) {
            println!(
                "NOTE: the {name} backend cannot run on this CPU (or this build); it is not tested here"
            );
        }
    }
    println!(
        "testing backends: {:?}",
        available.iter().map(|b| b.name()).collect::<Vec<_>>()
    );
    available
}

#[test]
fn scalar_oracle_agrees_with_decompose() {
    let mut rng = Rng(0xDEC0_DE00_1234_5678);
    for l in layouts(&mut rng) {
        let ids = ids_for(&l, &mut rng, 300);
        let (r, [t, m, s, n]) = run(&Decoder::with_backend(&l, Backend::Scalar), &ids);
        r.unwrap();
        for (i, &id) in ids.iter().enumerate() {
            let p = l.decompose(id).unwrap();
            assert_eq!((t[i], s[i], n[i]), (p.ticks, p.sequence, p.node), "{l}");
            assert_eq!(Ok(m[i]), l.unix_ms_of(p.ticks), "{l} ticks {}", p.ticks);
        }
    }
}

#[test]
fn every_backend_equals_the_oracle_at_every_length_and_offset() {
    let backends = report_backends();
    let mut rng = Rng(0x5EED_0000_0000_0001);
    let mut checked = 0;
    let mut past_2_63 = 0;
    for l in layouts(&mut rng) {
        let pool = ids_for(&l, &mut rng, 64 + 8);
        past_2_63 += pool.iter().filter(|&&id| id >= 1 << 63).count();
        let oracle = Decoder::with_backend(&l, Backend::Scalar);
        for &backend in &backends {
            let d = Decoder::with_backend(&l, backend);
            // Every length from 0 to several AVX-512 widths, at every start offset.
            for len in 0..=64 {
                for offset in 0..8 {
                    let ids = &pool[offset..offset + len];
                    let want = run(&oracle, ids);
                    let got = run(&d, ids);
                    assert_eq!(
                        got,
                        want,
                        "{} {l} len {len} offset {offset}",
                        backend.name()
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 40 * 65 * 8);
    assert!(past_2_63 >= 100, "only {past_2_63} IDs at or past 2^63");
}

#[test]
fn partial_columns_and_a_large_input() {
    let mut rng = Rng(42);
    let l = Layout::snowflake();
    let ids = ids_for(&l, &mut rng, 100_003);
    let (_, full) = run(&Decoder::with_backend(&l, Backend::Scalar), &ids);
    for backend in Backend::available() {
        let mut ms = vec![0; ids.len()];
        let mut node = vec![0; ids.len()];
        Decoder::with_backend(&l, backend)
            .decode(
                &ids,
                Columns {
                    unix_ms: Some(&mut ms),
                    node: Some(&mut node),
                    ..Columns::default()
                },
            )
            .unwrap();
        assert_eq!(ms, full[1], "{}", backend.name());
        assert_eq!(node, full[3], "{}", backend.name());
    }
}

#[test]
fn bad_input_is_an_error() {
    let l: Layout = "time=40,seq=10,node=10".parse().unwrap();
    for backend in Backend::available() {
        let d = Decoder::with_backend(&l, backend);
        let mut ids = vec![5u64; 37];
        ids[29] = 1 << 60;
        ids[33] = 1 << 61;
        assert_eq!(
            run(&d, &ids).0,
            Err(Error::IdOutOfLayout {
                id: 1 << 60,
                bits: 60,
                index: Some(29)
            }),
            "{}",
            backend.name()
        );
        let mut short = vec![0u64; 36];
        assert_eq!(
            d.decode(
                &ids,
                Columns {
                    sequence: Some(&mut short),
                    ..Columns::default()
                }
            ),
            Err(Error::ColumnLength {
                column: "sequence",
                len: 36,
                expected: 37
            })
        );
    }
    let scalar = Decoder::with_backend(&l, Backend::Scalar);
    assert_eq!(scalar.decode(&[], Columns::default()), Ok(()));
}

/// The measured pick is one of the backends this CPU has, it is kept (every call and every
/// `Decoder::new` give the same one), and each name resolves to its backend or to nothing
/// on a CPU without it.
#[test]
fn the_fastest_backend_is_measured_once_and_named_backends_resolve() {
    let pick = Backend::fastest();
    let available: Vec<Backend> = Backend::available().collect();
    assert!(available.contains(&pick), "{pick:?} not in {available:?}");
    println!("measured fastest: {}", pick.name());
    for _ in 0..3 {
        assert_eq!(Backend::fastest(), pick);
        assert_eq!(Decoder::new(&Layout::snowflake()).backend(), pick);
    }
    assert_eq!(Backend::from_name("auto"), Some(pick));
    for name in ["scalar", "avx2", "avx512"] {
        let found = Backend::from_name(name);
        assert_eq!(
            found,
            available.iter().copied().find(|b| b.name() == name),
            "{name}"
        );
    }
    assert_eq!(Backend::from_name("AVX2"), None, "names are lowercase");
}

/// What the `u32` columns must hold: the wide oracle's, narrowed (the fields fit 32 bits).
fn narrowed(c: &[u64]) -> Vec<u32> {
    c.iter()
        .map(|&v| u32::try_from(v).expect("a field of at most 32 bits"))
        .collect()
}

/// Layouts whose sequence and node fit `u32` columns.
fn narrow_layouts(rng: &mut Rng) -> Vec<Layout> {
    let all: Vec<Layout> = layouts(rng)
        .into_iter()
        .filter(|l| l.sequence_bits() <= 32 && l.node_bits() <= 32)
        .collect();
    assert!(all.len() >= 30, "only {} narrow layouts", all.len());
    all
}

#[test]
fn narrow_columns_equal_the_wide_ones_on_every_backend() {
    let backends = report_backends();
    let mut rng = Rng(0x0032_0032_0032_0032);
    let mut checked = 0;
    for l in narrow_layouts(&mut rng) {
        let pool = ids_for(&l, &mut rng, 64 + 8);
        let oracle = Decoder::with_backend(&l, Backend::Scalar);
        for &backend in &backends {
            let d = Decoder::with_backend(&l, backend);
            for len in 0..=64 {
                for offset in 0..8 {
                    let ids = &pool[offset..offset + len];
                    let (r, [t, m, s, n]) = run(&oracle, ids);
                    let (mut gt, mut gm) = (vec![u64::MAX; len], vec![u64::MAX; len]);
                    let (mut gs, mut gn) = (vec![u32::MAX; len], vec![u32::MAX; len]);
                    let got = d.decode_narrow(
                        ids,
                        NarrowColumns {
                            ticks: Some(&mut gt),
                            unix_ms: Some(&mut gm),
                            sequence: Some(&mut gs),
                            node: Some(&mut gn),
                        },
                    );
                    let at = format!("{} {l} len {len} offset {offset}", backend.name());
                    assert_eq!(got, r, "{at}");
                    assert_eq!((gt, gm), (t, m), "{at}");
                    assert_eq!((gs, gn), (narrowed(&s), narrowed(&n)), "{at}");
                    // One narrow column alone (the loop's other branch).
                    let mut only = vec![u32::MAX; len];
                    let cols = NarrowColumns {
                        node: Some(&mut only),
                        ..NarrowColumns::default()
                    };
                    assert_eq!(d.decode_narrow(ids, cols), r, "{at}");
                    assert_eq!(only, narrowed(&n), "{at}");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 30 * 65 * 8);
}

/// The decoder's own buffers, on every backend, cached and non-temporal, against the wide
/// oracle: one `ColumnBuffers` reused across lengths that grow and shrink (so a refill of
/// a longer buffer and a fresh allocation are both covered), each column 64-byte aligned.
#[test]
fn column_buffers_equal_the_oracle_cached_and_streaming() {
    let backends = report_backends();
    let mut rng = Rng(0xB0FF_E125_0000_0001);
    let mut lengths: Vec<usize> = (0..=64).chain([1000, 3, 100_003, 7, 64]).collect();
    lengths.extend([0, 65, 1]);
    for l in narrow_layouts(&mut rng).into_iter().take(12) {
        let pool = ids_for(&l, &mut rng, 100_003);
        let oracle = Decoder::with_backend(&l, Backend::Scalar);
        for &backend in &backends {
            let d = Decoder::with_backend(&l, backend);
            for stores in [Stores::Cached, Stores::NonTemporal, Stores::default()] {
                let mut out = ColumnBuffers::new(Fields::ALL).stores(stores);
                for &len in &lengths {
                    let ids = &pool[..len];
                    let (r, [t, m, s, n]) = run(&oracle, ids);
                    let at = format!("{} {stores:?} {l} len {len}", backend.name());
                    assert_eq!(d.decode_into(ids, &mut out), r, "{at}");
                    assert_eq!(out.len(), len, "{at}");
                    assert_eq!(out.ticks(), Some(&t[..]), "{at}");
                    assert_eq!(out.unix_ms(), Some(&m[..]), "{at}");
                    assert_eq!(out.sequence(), Some(&narrowed(&s)[..]), "{at}");
                    assert_eq!(out.node(), Some(&narrowed(&n)[..]), "{at}");
                    for p in [
                        out.ticks().unwrap().as_ptr() as usize,
                        out.unix_ms().unwrap().as_ptr() as usize,
                        out.sequence().unwrap().as_ptr() as usize,
                        out.node().unwrap().as_ptr() as usize,
                    ] {
                        assert_eq!(p % 64, 0, "{at}: a column off a 64-byte boundary");
                    }
                }
            }
        }
    }
}

/// A large input (8 MiB per column, past the L2) streamed with non-temporal stores; the
/// columns are the oracle's, with only some fields held.
#[test]
fn column_buffers_stream_a_large_input_and_hold_only_their_fields() {
    let l = Layout::snowflake();
    let ids = ids_for(&l, &mut Rng(7), (1 << 20) + 13);
    let (r, [_, m, _, n]) = run(&Decoder::with_backend(&l, Backend::Scalar), &ids);
    r.unwrap();
    for backend in Backend::available() {
        let mut out =
            ColumnBuffers::new(Fields::UNIX_MS | Fields::NODE).stores(Stores::NonTemporal);
        Decoder::with_backend(&l, backend)
            .decode_into(&ids, &mut out)
            .unwrap();
        assert_eq!(out.unix_ms(), Some(&m[..]), "{}", backend.name());
        assert_eq!(out.node(), Some(&narrowed(&n)[..]), "{}", backend.name());
        assert_eq!((out.ticks(), out.sequence()), (None, None));
        assert_eq!(out.fields(), Fields::UNIX_MS | Fields::NODE);
    }
}

#[test]
fn a_field_wider_than_32_bits_is_refused_for_u32_columns() {
    let l: Layout = "time=20,seq=40,node=3".parse().unwrap();
    let ids = [l.compose(1, (1 << 40) - 1, 5).unwrap(); 9];
    let too_narrow = Error::ColumnTooNarrow {
        column: "sequence",
        bits: 40,
    };
    let want = Err(too_narrow.clone());
    for backend in Backend::available() {
        let d = Decoder::with_backend(&l, backend);
        let mut seq = vec![7u32; 9];
        let cols = NarrowColumns {
            sequence: Some(&mut seq),
            ..NarrowColumns::default()
        };
        assert_eq!(d.decode_narrow(&ids, cols), want);
        assert_eq!(seq, vec![7; 9], "nothing written");
        // The node (3 bits) fits, so a node-only narrow decode works.
        let mut node = vec![0u32; 9];
        let cols = NarrowColumns {
            node: Some(&mut node),
            ..NarrowColumns::default()
        };
        d.decode_narrow(&ids, cols).unwrap();
        assert_eq!(node, vec![5; 9]);

        let mut out = ColumnBuffers::new(Fields::ALL);
        d.decode_into(&ids[..2], &mut ColumnBuffers::new(Fields::TICKS))
            .unwrap();
        assert_eq!(d.decode_into(&ids, &mut out), want);
        assert!(out.is_empty());
        let mut node_only = ColumnBuffers::new(Fields::NODE);
        d.decode_into(&ids, &mut node_only).unwrap();
        assert_eq!(node_only.node(), Some(&[5u32; 9][..]));
    }
    let msg = too_narrow.to_string();
    assert!(
        msg.contains("40 bits") && msg.contains("u64 column"),
        "{msg}"
    );
    // The other errors as in `decode`.
    let l = Layout::snowflake();
    let d = Decoder::new(&l);
    let mut short = vec![0u32; 2];
    let cols = NarrowColumns {
        node: Some(&mut short),
        ..NarrowColumns::default()
    };
    assert_eq!(
        d.decode_narrow(&[1, 2, 3], cols),
        Err(Error::ColumnLength {
            column: "node",
            len: 2,
            expected: 3
        })
    );
    let mut out = ColumnBuffers::new(Fields::ALL);
    assert_eq!(
        d.decode_into(&[1, 1 << 63, 5 << 12], &mut out),
        Err(Error::IdOutOfLayout {
            id: 1 << 63,
            bits: 63,
            index: Some(1)
        })
    );
    assert_eq!(
        out.node().map(|c| c[2]),
        Some(5),
        "the good rows are decoded"
    );
}
