//! Batch decoding for `flakeid_rs.Layout`: IDs (numpy arrays, Arrow arrays, chunk after
//! chunk, each read in place) into columns by the core's SIMD decoder with the GIL
//! released; a misfit is a `LayoutError` naming its index in the whole column.

use std::sync::Arc;

use arrow_array::{ArrayRef, UInt32Array, UInt64Array};
use arrow_schema::DataType;
use flakeid::Layout;
use flakeid::decode::{Columns, NarrowColumns};
use numpy::PyArray1;
use pyo3::prelude::*;

use crate::columns;
use crate::errors::{error, layout_error};
use crate::layout::PyLayout;

/// The `LayoutError` of an ID that does not fit `layout`, at `index` of the whole column
/// (the core's decoder names it: nothing is scanned again).
fn misfit(py: Python<'_>, layout: &Layout, id: u64, index: Option<usize>) -> PyErr {
    match index {
        Some(i) => layout_error(
            py,
            format!(
                "the ID at index {i} ({id}) does not fit the layout {layout}: its bits above the layout's {} are set; decode IDs of this layout (a signed column's negative values are IDs of 64-bit layouts only)",
                layout.bits()
            ),
        ),
        None => layout_error(py, "an ID does not fit the layout"),
    }
}

/// The columns of a decode, filled with the GIL released.
pub(crate) struct Decoded {
    pub(crate) ticks: Vec<u64>,
    pub(crate) unix_ms: Vec<u64>,
    pub(crate) sequence: Column,
    pub(crate) node: Column,
    /// The node's two parts, when the layout splits it.
    pub(crate) split: Option<(Column, Column)>,
}

/// A sequence or node column (or a part of the node): `uint32` where the field fits 32
/// bits (every preset).
pub(crate) enum Column {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Column {
    /// The node's parts, `(high, low)`, of each node in this column.
    fn split(&self, layout: &Layout) -> (Column, Column) {
        let n = self.len();
        match self {
            Column::Narrow(d) => {
                let (mut high, mut low) = (columns::zeroed_u32(n), columns::zeroed_u32(n));
                for ((&v, h), l) in d.iter().zip(&mut high).zip(&mut low) {
                    // Both parts fit 32 bits: the node does.
                    let (a, b) = layout.split_node(u64::from(v));
                    (*h, *l) = (a as u32, b as u32);
                }
                (Column::Narrow(high), Column::Narrow(low))
            }
            Column::Wide(d) => {
                let (mut high, mut low) = (columns::zeroed_u64(n), columns::zeroed_u64(n));
                for ((&v, h), l) in d.iter().zip(&mut high).zip(&mut low) {
                    (*h, *l) = layout.split_node(v);
                }
                (Column::Wide(high), Column::Wide(low))
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Column::Narrow(v) => v.len(),
            Column::Wide(v) => v.len(),
        }
    }

    /// The column as a numpy array (its own memory, no copy).
    pub(crate) fn numpy<'py>(self, py: Python<'py>) -> Bound<'py, PyAny> {
        match self {
            Column::Narrow(v) => PyArray1::from_vec(py, v).into_any(),
            Column::Wide(v) => PyArray1::from_vec(py, v).into_any(),
        }
    }

    /// The column as an Arrow array, with its type.
    pub(crate) fn arrow(self) -> (DataType, ArrayRef) {
        match self {
            Column::Narrow(v) => (DataType::UInt32, Arc::new(UInt32Array::from(v))),
            Column::Wide(v) => (DataType::UInt64, Arc::new(UInt64Array::from(v))),
        }
    }
}

/// The four columns' ranges that `chunks` (one column, chunk after chunk) fill, each chunk
/// given to `decode` with its own ranges; the first error ends it, a misfit's index made
/// the index in the whole column.
fn each_chunk<T>(
    chunks: &[&[u64]],
    ticks: &mut [u64],
    unix_ms: &mut [u64],
    sequence: &mut [T],
    node: &mut [T],
    mut decode: impl FnMut(
        &[u64],
        &mut [u64],
        &mut [u64],
        &mut [T],
        &mut [T],
    ) -> Result<(), flakeid::Error>,
) -> Result<(), flakeid::Error> {
    let mut at = 0;
    for ids in chunks {
        let end = at + ids.len();
        decode(
            ids,
            &mut ticks[at..end],
            &mut unix_ms[at..end],
            &mut sequence[at..end],
            &mut node[at..end],
        )
        .map_err(|e| match e {
            flakeid::Error::IdOutOfLayout { id, bits, index } => flakeid::Error::IdOutOfLayout {
                id,
                bits,
                index: index.map(|i| at + i),
            },
            e => e,
        })?;
        at = end;
    }
    Ok(())
}

impl PyLayout {
    /// Decodes `chunks` (one column, chunk after chunk, each read in place) into columns
    /// with the GIL released; the first bad ID is an error naming its index.
    pub(crate) fn decode_columns(&self, py: Python<'_>, chunks: &[&[u64]]) -> PyResult<Decoded> {
        let layout = self.layout;
        let decoder = self.decoder();
        let narrow = layout.sequence_bits() <= 32 && layout.node_bits() <= 32;
        let n = chunks.iter().map(|c| c.len()).sum();
        let result = py.detach(|| {
            let mut ticks = columns::zeroed_u64(n);
            let mut unix_ms = columns::zeroed_u64(n);
            let (sequence, node) = if narrow {
                let (mut s, mut d) = (columns::zeroed_u32(n), columns::zeroed_u32(n));
                each_chunk(
                    chunks,
                    &mut ticks,
                    &mut unix_ms,
                    &mut s,
                    &mut d,
                    |ids, t, u, s, d| {
                        decoder.decode_narrow(
                            ids,
                            NarrowColumns {
                                ticks: Some(t),
                                unix_ms: Some(u),
                                sequence: Some(s),
                                node: Some(d),
                            },
                        )
                    },
                )?;
                (Column::Narrow(s), Column::Narrow(d))
            } else {
                let (mut s, mut d) = (columns::zeroed_u64(n), columns::zeroed_u64(n));
                each_chunk(
                    chunks,
                    &mut ticks,
                    &mut unix_ms,
                    &mut s,
                    &mut d,
                    |ids, t, u, s, d| {
                        decoder.decode(
                            ids,
                            Columns {
                                ticks: Some(t),
                                unix_ms: Some(u),
                                sequence: Some(s),
                                node: Some(d),
                            },
                        )
                    },
                )?;
                (Column::Wide(s), Column::Wide(d))
            };
            let split = (layout.datacenter_bits() > 0).then(|| node.split(&layout));
            Ok(Decoded {
                ticks,
                unix_ms,
                sequence,
                node,
                split,
            })
        });
        match result {
            Ok(d) => Ok(d),
            Err(flakeid::Error::IdOutOfLayout { id, index, .. }) => {
                Err(misfit(py, &layout, id, index))
            }
            Err(e) => Err(error(py, e)),
        }
    }
}
