//! The fuzz targets' checks, as plain functions of a byte slice: `cargo fuzz` calls them
//! from `fuzz_targets/`, and `tests/fuzz_corpus.rs` in the main crate replays every stored
//! input of `fuzz/corpus/` through them on stable, in the normal test run.
//!
//! Each check compares against an answer worked out another way (the scalar oracle,
//! `Layout::decompose` per ID, a round trip, or a plain model of the generator), so a
//! wrong value fails as loudly as a panic.

use std::str::FromStr;
use std::time::Duration;

use flakeid::decode::{Backend, ColumnBuffers, Columns, Decoder, Fields, Stores};
use flakeid::layout::{Grid, Order};
use flakeid::{Encoding, Error, Id, Layout};

use crate::input::Input;

/// A fixed "now" for layouts built from fuzz input (2026-11-29T00:00:00Z), so an input
/// means the same thing on every run.
pub(crate) const NOW_NS: u64 = 1_796_083_200_000_000_000;

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
