//! Columns of IDs decoded by the core's batch decoder (SIMD where the CPU has it) straight
//! into typed arrays the package's JavaScript allocates: `unixMs` (`Float64Array`),
//! `ticks` (`Float64Array`, or `BigUint64Array` where the layout's ticks pass 2^53),
//! `sequence` and `node` (`Uint32Array`, or `BigUint64Array` past 32 bits), and the
//! node's two named parts (the same). [`column_plan`] says which.
//!
//! The IDs are decoded a chunk at a time: the sequence and node straight into their
//! columns, the ticks and Unix milliseconds into a chunk of scratch in cache, then
//! converted into their `Float64Array`s. Each column's memory is written once.

use flakeid::Layout;
use flakeid::decode::{Columns, NarrowColumns};
use napi::Either;
use napi::bindgen_prelude::{BigUint64ArraySlice, Float64ArraySlice, Uint32ArraySlice};
use napi_derive::napi;

use crate::errors::{core_error, range_error, type_error};
use crate::layout::NodeLayout;
use crate::numbers::{MAX_SAFE, decimal};

/// A column of whole numbers from JavaScript: 32-bit where the layout's field fits, else
/// 64-bit.
type Column<'a> = Either<Uint32ArraySlice<'a>, BigUint64ArraySlice<'a>>;

/// IDs decoded a chunk at a time: 16 KB of scratch for the ticks and milliseconds, in L1.
const CHUNK: usize = 1024;

/// The shape of a layout's decoded columns: which are 64-bit (`BigUint64Array`), and the
/// names of the node's two parts and of its whole (`machine`), where the layout has them.
#[napi(object)]
pub struct ColumnPlan {
    pub ticks_wide: bool,
    pub sequence_wide: bool,
    pub node_wide: bool,
    pub high: Option<String>,
    pub high_wide: bool,
    pub low: Option<String>,
    pub low_wide: bool,
    pub machine: bool,
}

/// The columns `decodeInto` fills for `layout`.
#[napi(catch_unwind)]
pub fn column_plan(layout: &NodeLayout) -> ColumnPlan {
    let l = layout.layout;
    let fields = l.node_fields();
    let parts = fields.parts();
    ColumnPlan {
        ticks_wide: l.max_ticks() > MAX_SAFE,
        sequence_wide: l.sequence_bits() > 32,
        node_wide: l.node_bits() > 32,
        high: parts.map(|(h, _)| h.name().into()),
        high_wide: l.node_bits() - l.worker_bits() > 32,
        low: parts.map(|(_, z)| z.name().into()),
        low_wide: l.worker_bits() > 32,
        machine: fields.machine(),
    }
}

/// A column to write, 32-bit or 64-bit.
enum Out<'a> {
    Narrow(&'a mut [u32]),
    Wide(&'a mut [u64]),
}

/// The memory of a typed array, as an address range.
type Span = (usize, usize);

fn span<T>(s: &[T]) -> Span {
    let r = s.as_ptr_range();
    (r.start as usize, r.end as usize)
}

fn column_span(c: &Column<'_>) -> Span {
    match c {
        Either::A(a) => span(a),
        Either::B(b) => span(b),
    }
}

/// A typed array as a mutable slice, after [`disjoint`] has checked that no other
/// argument of the call shares its memory.
#[allow(unsafe_code)]
fn column_mut<'a>(c: &'a mut Column<'_>) -> Out<'a> {
    match c {
        // SAFETY: the array's memory is shared with no other argument (checked by
        // `disjoint` before this call), JavaScript is waiting in this call and touches none
        // of it until it returns, and a typed array is aligned to its element.
        Either::A(a) => Out::Narrow(unsafe { a.as_mut() }),
        // SAFETY: as above.
        Either::B(b) => Out::Wide(unsafe { b.as_mut() }),
    }
}

/// Refuses arguments that share memory: each column must be its own typed array's.
fn disjoint(spans: &[Span]) -> napi::Result<()> {
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            if a.0 < a.1 && b.0 < b.1 && a.0 < b.1 && b.0 < a.1 {
                return Err(type_error(
                    "decode's columns must not share memory with each other or with the ids: give each its own typed array",
                ));
            }
        }
    }
    Ok(())
}

/// Decodes `ids` into the columns [`column_plan`] describes, each as long as `ids`:
/// every ID must fit the layout, else a `LayoutError` naming the first that does not, with
/// its index (the columns are then meaningless).
#[allow(clippy::too_many_arguments, unsafe_code)]
#[napi(catch_unwind)]
pub fn decode_into(
    layout: &NodeLayout,
    ids: BigUint64ArraySlice,
    mut unix_ms: Float64ArraySlice,
    mut ticks: Either<Float64ArraySlice, BigUint64ArraySlice>,
    mut sequence: Column,
    mut node: Column,
    mut high: Option<Column>,
    mut low: Option<Column>,
) -> napi::Result<()> {
    let n = ids.len();
    let ticks_span = match &ticks {
        Either::A(a) => span(a),
        Either::B(b) => span(b),
    };
    let mut spans = vec![span(&ids), span(&unix_ms), ticks_span];
    spans.extend([&sequence, &node].map(column_span));
    spans.extend(high.iter().chain(low.iter()).map(column_span));
    disjoint(&spans)?;
    let lens = [
        unix_ms.len(),
        ticks_span.1.saturating_sub(ticks_span.0) / 8,
        len(&sequence),
        len(&node),
    ];
    let parts_lens = high.iter().chain(low.iter()).map(len);
    if lens.into_iter().chain(parts_lens).any(|l| l != n) {
        return Err(range_error(format!(
            "decode's columns must be as long as the ids ({n})"
        )));
    }
    // SAFETY: every array's memory is shared with no other argument (`disjoint`),
    // JavaScript waits in this call, and typed arrays are aligned.
    let unix_ms = unsafe { unix_ms.as_mut() };
    let ticks = match &mut ticks {
        // SAFETY: as above.
        Either::A(a) => TicksOut::F64(unsafe { a.as_mut() }),
        // SAFETY: as above.
        Either::B(b) => TicksOut::Wide(unsafe { b.as_mut() }),
    };
    let mut cols = Targets {
        unix_ms,
        ticks,
        sequence: column_mut(&mut sequence),
        node: column_mut(&mut node),
        high: high.as_mut().map(column_mut),
        low: low.as_mut().map(column_mut),
    };
    fill(layout, &ids, &mut cols)
}

/// The ticks column: `Float64Array` where ticks stay under 2^53, else 64-bit.
enum TicksOut<'a> {
    F64(&'a mut [f64]),
    Wide(&'a mut [u64]),
}

/// Every column of a call, as slices.
struct Targets<'a> {
    unix_ms: &'a mut [f64],
    ticks: TicksOut<'a>,
    sequence: Out<'a>,
    node: Out<'a>,
    high: Option<Out<'a>>,
    low: Option<Out<'a>>,
}

fn len(c: &Column<'_>) -> usize {
    match c {
        Either::A(a) => a.len(),
        Either::B(b) => b.len(),
    }
}

/// Decodes `ids` chunk by chunk into `out`.
fn fill(layout: &NodeLayout, ids: &[u64], out: &mut Targets<'_>) -> napi::Result<()> {
    let decoder = layout.decoder();
    let l = &layout.layout;
    let mut ticks_buf = [0u64; CHUNK];
    let mut ms_buf = [0u64; CHUNK];
    let mut seq_buf = [0u64; CHUNK];
    let mut node_buf = [0u64; CHUNK];
    for (c, chunk) in ids.chunks(CHUNK).enumerate() {
        let (s, e) = (c * CHUNK, c * CHUNK + chunk.len());
        let k = chunk.len();
        let ticks = match &mut out.ticks {
            TicksOut::F64(_) => &mut ticks_buf[..k],
            TicksOut::Wide(t) => &mut t[s..e],
        };
        let done = match (&mut out.sequence, &mut out.node) {
            (Out::Narrow(seq), Out::Narrow(node)) => decoder.decode_narrow(
                chunk,
                NarrowColumns {
                    ticks: Some(ticks),
                    unix_ms: Some(&mut ms_buf[..k]),
                    sequence: Some(&mut seq[s..e]),
                    node: Some(&mut node[s..e]),
                },
            ),
            (seq, node) => {
                let seq_target = match seq {
                    Out::Wide(v) => &mut v[s..e],
                    Out::Narrow(_) => &mut seq_buf[..k],
                };
                let node_target = match node {
                    Out::Wide(v) => &mut v[s..e],
                    Out::Narrow(_) => &mut node_buf[..k],
                };
                let r = decoder.decode(
                    chunk,
                    Columns {
                        ticks: Some(ticks),
                        unix_ms: Some(&mut ms_buf[..k]),
                        sequence: Some(seq_target),
                        node: Some(node_target),
                    },
                );
                // A narrow column's field fits 32 bits (`column_plan`).
                narrow_from(seq, s, &seq_buf[..k]);
                narrow_from(node, s, &node_buf[..k]);
                r
            }
        };
        done.map_err(|e| core_error(at_offset(e, s)))?;
        to_f64(&ms_buf[..k], &mut out.unix_ms[s..e]);
        if let TicksOut::F64(t) = &mut out.ticks {
            to_f64(&ticks_buf[..k], &mut t[s..e]);
        }
        if let (Some(high), Some(low)) = (&mut out.high, &mut out.low) {
            split(l, &out.node, s, e, high, low);
        }
    }
    Ok(())
}

/// Copies a chunk decoded into 64-bit scratch into a 32-bit column.
fn narrow_from(column: &mut Out<'_>, s: usize, from: &[u64]) {
    if let Out::Narrow(v) = column {
        for (d, &x) in v[s..s + from.len()].iter_mut().zip(from) {
            *d = x as u32;
        }
    }
}

/// The node column's rows `s..e` split into its high and low parts (`Layout::split_node`).
fn split(l: &Layout, node: &Out<'_>, s: usize, e: usize, high: &mut Out<'_>, low: &mut Out<'_>) {
    let low_bits = l.worker_bits();
    match (node, high, low) {
        (Out::Narrow(n), Out::Narrow(h), Out::Narrow(z)) => {
            // Both parts of a 32-bit node, in 32 bits (vectorised): a split node's low
            // part is narrower than the node, so `low_bits` < 32.
            let mask = (1u32 << low_bits) - 1;
            for ((&x, h), z) in n[s..e].iter().zip(&mut h[s..e]).zip(&mut z[s..e]) {
                *h = x >> low_bits;
                *z = x & mask;
            }
        }
        (n, h, z) => {
            for i in s..e {
                let x = match n {
                    Out::Narrow(v) => u64::from(v[i]),
                    Out::Wide(v) => v[i],
                };
                let (a, b) = l.split_node(x);
                put(h, i, a);
                put(z, i, b);
            }
        }
    }
}

/// Writes `v` at row `i` of a column (a narrow column's field fits 32 bits).
fn put(c: &mut Out<'_>, i: usize, v: u64) {
    match c {
        Out::Narrow(d) => d[i] = v as u32,
        Out::Wide(d) => d[i] = v,
    }
}

/// Whole numbers as doubles (exact: the plan gives a `Float64Array` only under 2^53).
/// Converting by the bits (2^52 with `x` in its mantissa, less 2^52), which vectorises,
/// measured no faster: the columns' fresh pages cost more.
fn to_f64(from: &[u64], to: &mut [f64]) {
    for (d, &x) in to.iter_mut().zip(from) {
        *d = x as f64;
    }
}

/// A batch error's index moved from its chunk to the whole batch.
fn at_offset(e: flakeid::Error, offset: usize) -> flakeid::Error {
    match e {
        flakeid::Error::IdOutOfLayout { id, bits, index } => flakeid::Error::IdOutOfLayout {
            id,
            bits,
            index: index.map(|i| i + offset),
        },
        e => e,
    }
}

/// Parses IDs given as decimal strings (each checked, its index named when bad) into
/// `out`, a `BigUint64Array` as long, for `decodeInto`.
#[allow(unsafe_code)]
#[napi(catch_unwind)]
pub fn parse_ids(ids: Vec<String>, mut out: BigUint64ArraySlice) -> napi::Result<()> {
    if out.len() != ids.len() {
        return Err(range_error(format!(
            "parseIds' output must be as long as the ids ({})",
            ids.len()
        )));
    }
    // SAFETY: `out` is the only typed array of the call (the strings were copied out of
    // JavaScript), JavaScript waits in this call, and a typed array is aligned.
    let out = unsafe { out.as_mut() };
    for (i, (s, d)) in ids.iter().zip(out).enumerate() {
        *d = decimal(s, Some(i))?;
    }
    Ok(())
}
