//! One batch of IDs on its way to text: queued, decoded by the core's batch decoder into
//! its own columns ([`ColumnBuffers`], reused from batch to batch), then written by
//! [`RowWriter::rows`](crate::rows::RowWriter::rows) straight from those columns. The tool's
//! `decode` and the service's `/v1/decode` go this way and no other.
//!
//! ```
//! use flakeid::decode::Decoder;
//! use flakeid::Layout;
//! use flakeid_text::batch::Batch;
//! use flakeid_text::rows::{RowFormat, RowWriter};
//!
//! let layout = Layout::snowflake();
//! let mut batch = Batch::new(Decoder::new(&layout));
//! batch.decode_slice(&[2116500430648709162, 2116500430648709163])?;
//! let mut out = Vec::new();
//! let len = RowWriter::new(&layout, RowFormat::Csv).rows(&mut out, &batch);
//! assert_eq!(out.len(), len);
//! assert!(out.starts_with(b"2116500430648709162,2026-10-31T12:00:00.000Z,"));
//! assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 2);
//! # Ok::<(), flakeid::Error>(())
//! ```

use flakeid::Error;
use flakeid::decode::{ColumnBuffers, Decoder, Fields};

/// IDs and their decoded columns. Allocates only when a batch is longer than any before.
#[derive(Debug)]
pub struct Batch {
    decoder: Decoder,
    ids: Vec<u64>,
    cols: ColumnBuffers,
    /// How many of `ids` the last [`Batch::decode`] decoded: all of them, or 0 after a
    /// failure or a change of the queue.
    decoded: usize,
}

impl Batch {
    /// An empty batch decoded by `decoder`, its sequence and node columns as wide as the
    /// layout needs.
    pub fn new(decoder: Decoder) -> Batch {
        let cols = ColumnBuffers::for_layout(decoder.layout(), Fields::ALL);
        Batch {
            decoder,
            ids: Vec::new(),
            cols,
            decoded: 0,
        }
    }

    /// The decoder.
    pub fn decoder(&self) -> &Decoder {
        &self.decoder
    }

    /// Queues one ID for the next [`Batch::decode`].
    #[inline]
    pub fn push(&mut self, id: u64) {
        self.decoded = 0;
        self.ids.push(id);
    }

    /// The IDs queued.
    pub fn ids(&self) -> &[u64] {
        &self.ids
    }

    /// How many IDs are queued.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no ID is queued.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Empties the queue (the buffers stay for the next batch).
    pub fn clear(&mut self) {
        self.decoded = 0;
        self.ids.clear();
    }

    /// Decodes the queued IDs. An ID that does not fit the layout is
    /// [`Error::IdOutOfLayout`] with its index in the queue, and then no row is decoded.
    pub fn decode(&mut self) -> Result<(), Error> {
        self.decoded = 0;
        self.decoder.decode_into(&self.ids, &mut self.cols)?;
        self.decoded = self.ids.len();
        Ok(())
    }

    /// Replaces the queue with `ids` and decodes them, as [`Batch::decode`].
    pub fn decode_slice(&mut self, ids: &[u64]) -> Result<(), Error> {
        self.ids.clear();
        self.ids.extend_from_slice(ids);
        self.decode()
    }

    /// How many rows the last [`Batch::decode`] decoded (0 if it failed or IDs were
    /// queued since).
    pub fn decoded(&self) -> usize {
        self.decoded
    }

    /// Row `i` of the decoded rows, if there is one.
    pub fn row(&self, i: usize) -> Option<Row> {
        if i >= self.decoded {
            return None;
        }
        Some(match self.columns()? {
            Width::Narrow(c) => c.row(i),
            Width::Wide(c) => c.row(i),
        })
    }

    /// The decoded columns, for [`RowWriter::rows`](crate::rows::RowWriter::rows): the IDs,
    /// ticks, Unix ms, and the sequence and node in the width held.
    pub(crate) fn columns(&self) -> Option<Width<'_>> {
        let n = self.decoded;
        let (ids, ticks, unix_ms) = (
            &self.ids[..n],
            &self.cols.ticks()?[..n],
            &self.cols.unix_ms()?[..n],
        );
        Some(match (self.cols.sequence(), self.cols.node()) {
            (Some(sequence), Some(node)) => Width::Narrow(Columns {
                ids,
                ticks,
                unix_ms,
                sequence: &sequence[..n],
                node: &node[..n],
            }),
            _ => Width::Wide(Columns {
                ids,
                ticks,
                unix_ms,
                sequence: &self.cols.sequence_wide()?[..n],
                node: &self.cols.node_wide()?[..n],
            }),
        })
    }
}

/// A decoded batch's columns, all of one length, the sequence and node as `S`.
pub(crate) struct Columns<'a, S> {
    ids: &'a [u64],
    ticks: &'a [u64],
    unix_ms: &'a [u64],
    sequence: &'a [S],
    node: &'a [S],
}

impl<S: Copy + Into<u64>> Columns<'_, S> {
    /// Every row, in order: the columns zipped (each cut to the IDs' length), so that no
    /// row pays a bounds check per column, whether it is read by `for` or `for_each`.
    pub(crate) fn rows(&self) -> impl Iterator<Item = Row> + '_ {
        let n = self.ids.len();
        let columns = self
            .ids
            .iter()
            .zip(&self.ticks[..n])
            .zip(&self.unix_ms[..n]);
        let columns = columns.zip(&self.sequence[..n]).zip(&self.node[..n]);
        columns.map(|((((&id, &ticks), &unix_ms), &sequence), &node)| Row {
            id,
            ticks,
            unix_ms,
            sequence: sequence.into(),
            node: node.into(),
        })
    }

    /// Row `i` (below [`Columns::len`]).
    #[inline(always)]
    pub(crate) fn row(&self, i: usize) -> Row {
        Row {
            id: self.ids[i],
            ticks: self.ticks[i],
            unix_ms: self.unix_ms[i],
            sequence: self.sequence[i].into(),
            node: self.node[i].into(),
        }
    }
}

/// A batch's columns in the width it holds the sequence and node in.
pub(crate) enum Width<'a> {
    /// As `u32`.
    Narrow(Columns<'a, u32>),
    /// As `u64`.
    Wide(Columns<'a, u64>),
}

/// One decoded row, from the batch decoder's columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// The ID.
    pub id: u64,
    /// Its ticks since the epoch.
    pub ticks: u64,
    /// Its time in Unix milliseconds.
    pub unix_ms: u64,
    /// Its sequence number.
    pub sequence: u64,
    /// Its node id.
    pub node: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use flakeid::Layout;

    /// Every row of a batch is the layout's own decomposition, in the narrow and the wide
    /// widths; a misfit is named with its index and leaves no rows.
    #[test]
    fn rows_are_the_layouts_decomposition_and_a_misfit_is_named() {
        for spec in [
            "snowflake",
            "seq=34,node=2,time=27,unit=10s",
            "seq=6,node=40,order=tsn,time=17",
        ] {
            let layout: Layout = spec.parse().unwrap();
            let mut batch = Batch::new(Decoder::new(&layout));
            let ids: Vec<u64> = (0..100u64)
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) & layout.max_id())
                .collect();
            batch.decode_slice(&ids).unwrap();
            assert_eq!(batch.decoded(), ids.len());
            for (i, &id) in ids.iter().enumerate() {
                let p = layout.decompose(id).unwrap();
                let r = batch.row(i).unwrap();
                assert_eq!(
                    (r.id, r.ticks, r.sequence, r.node),
                    (id, p.ticks, p.sequence, p.node),
                    "{spec} {i}"
                );
                assert_eq!(r.unix_ms, layout.unix_ms_of(p.ticks).unwrap());
            }
            assert_eq!(batch.row(ids.len()), None);
            let mut bad = ids.clone();
            bad[57] = u64::MAX;
            let e = batch.decode_slice(&bad).unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::IdOutOfLayout {
                        id: u64::MAX,
                        index: Some(57),
                        ..
                    }
                ),
                "{e:?}"
            );
            assert_eq!((batch.decoded(), batch.row(0)), (0, None));
        }
    }
}
