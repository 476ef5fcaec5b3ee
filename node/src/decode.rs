//! Columns of IDs decoded by the core's batch decoder (SIMD where the CPU has it) into
//! typed arrays: `unixMs` (`Float64Array`), `ticks` (`Float64Array`, or `BigUint64Array`
//! where the layout's ticks pass 2^53), `sequence` and `node` (`Uint32Array`, or
//! `BigUint64Array` past 32 bits), and the node's named parts (the same).

use flakeid::decode::{ColumnBuffers, Fields};
use napi::Either;
use napi::bindgen_prelude::{BigUint64Array, Float64Array, Uint32Array};
use napi_derive::napi;

use crate::errors::core_error;
use crate::layout::NodeLayout;
use crate::numbers::{MAX_SAFE, decimal};

/// A column of whole numbers: 32-bit where the layout's field fits, else 64-bit.
type Column = Either<Uint32Array, BigUint64Array>;

/// The decoded columns.
#[napi(object)]
pub struct Columns {
    pub unix_ms: Float64Array,
    pub ticks: Either<Float64Array, BigUint64Array>,
    pub sequence: Column,
    pub node: Column,
    pub datacenter: Option<Column>,
    pub worker: Option<Column>,
    pub process: Option<Column>,
    pub machine: Option<Column>,
}

/// A narrow or wide column of the buffers, as a typed array.
fn column(narrow: Option<&[u32]>, wide: Option<&[u64]>) -> Column {
    match (narrow, wide) {
        (Some(v), _) => Either::A(Uint32Array::new(v.to_vec())),
        (None, Some(v)) => Either::B(BigUint64Array::new(v.to_vec())),
        (None, None) => Either::A(Uint32Array::new(Vec::new())),
    }
}

/// Decodes `ids` with `layout`: every ID must fit it, else a `LayoutError` naming the
/// first that does not, with its index.
pub(crate) fn decode_ids(layout: &NodeLayout, ids: &[u64]) -> napi::Result<Columns> {
    let l = layout.layout;
    let mut kept = layout.buffers.lock().unwrap_or_else(|p| p.into_inner());
    let b = kept.get_or_insert_with(|| ColumnBuffers::for_layout(&l, Fields::ALL));
    layout.decoder().decode_into(ids, b).map_err(core_error)?;
    let none: &[u64] = &[];
    let unix_ms = b
        .unix_ms()
        .unwrap_or(none)
        .iter()
        .map(|&m| m as f64)
        .collect();
    let ticks = b.ticks().unwrap_or(none);
    let ticks = if l.max_ticks() <= MAX_SAFE {
        Either::A(Float64Array::new(ticks.iter().map(|&t| t as f64).collect()))
    } else {
        Either::B(BigUint64Array::new(ticks.to_vec()))
    };
    let mut c = Columns {
        unix_ms: Float64Array::new(unix_ms),
        ticks,
        sequence: column(b.sequence(), b.sequence_wide()),
        node: column(b.node(), b.node_wide()),
        datacenter: None,
        worker: None,
        process: None,
        machine: None,
    };
    let fields = l.node_fields();
    if let Some((a, z)) = fields.parts() {
        // The node's high bits, then its low bits (`Layout::split_node`), a pass each.
        let low_bits = l.worker_bits();
        let (high, low) = match (b.node(), b.node_wide()) {
            (Some(v), _) if low_bits < 32 => {
                let mask = (1u32 << low_bits) - 1;
                (
                    Either::A(Uint32Array::new(v.iter().map(|&n| n >> low_bits).collect())),
                    Either::A(Uint32Array::new(v.iter().map(|&n| n & mask).collect())),
                )
            }
            (narrow, wide) => {
                let nodes: Vec<u64> = match (narrow, wide) {
                    (Some(v), _) => v.iter().map(|&x| u64::from(x)).collect(),
                    (None, Some(v)) => v.to_vec(),
                    (None, None) => Vec::new(),
                };
                let (xs, ys): (Vec<u64>, Vec<u64>) =
                    nodes.into_iter().map(|n| l.split_node(n)).unzip();
                let part = |v: Vec<u64>, bits: u32| match bits <= 32 {
                    true => Either::A(Uint32Array::new(v.into_iter().map(|x| x as u32).collect())),
                    false => Either::B(BigUint64Array::new(v)),
                };
                (part(xs, l.node_bits() - low_bits), part(ys, low_bits))
            }
        };
        for (field, column) in [(a, high), (z, low)] {
            let slot = match field {
                flakeid::error::Field::Datacenter => &mut c.datacenter,
                flakeid::error::Field::Worker => &mut c.worker,
                _ => &mut c.process,
            };
            *slot = Some(column);
        }
    }
    if fields.machine() {
        c.machine = Some(column(b.node(), b.node_wide()));
    }
    Ok(c)
}

/// Decodes a `BigUint64Array` of IDs.
#[napi(catch_unwind)]
pub fn decode(layout: &NodeLayout, ids: BigUint64Array) -> napi::Result<Columns> {
    decode_ids(layout, &ids)
}

/// Decodes IDs given as decimal strings (each checked, its index named when bad).
#[napi(catch_unwind)]
pub fn decode_strings(layout: &NodeLayout, ids: Vec<String>) -> napi::Result<Columns> {
    let parsed = ids
        .iter()
        .enumerate()
        .map(|(i, s)| decimal(s, Some(i)))
        .collect::<napi::Result<Vec<u64>>>()?;
    decode_ids(layout, &parsed)
}
