//! Columns the decoder allocates: 64-byte aligned, reused from call to call, `u32` for the
//! sequence and node, optionally filled with non-temporal stores.

use std::vec::Vec;

use super::{Decoder, Out};
use crate::error::Error;

/// Which columns a [`ColumnBuffers`] holds; combine with `|`.
///
/// ```
/// use flakeid::decode::Fields;
///
/// let f = Fields::UNIX_MS | Fields::NODE;
/// assert!(f.contains(Fields::NODE) && !f.contains(Fields::TICKS));
/// assert_eq!(Fields::ALL, Fields::TICKS | Fields::UNIX_MS | Fields::SEQUENCE | Fields::NODE);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fields(u8);

impl Fields {
    /// Ticks since the layout's epoch (`u64`).
    pub const TICKS: Fields = Fields(1);
    /// Unix milliseconds (`u64`).
    pub const UNIX_MS: Fields = Fields(2);
    /// Sequence numbers (`u32`).
    pub const SEQUENCE: Fields = Fields(4);
    /// Node ids (`u32`).
    pub const NODE: Fields = Fields(8);
    /// All four.
    pub const ALL: Fields = Fields(15);

    /// Whether every field of `other` is in `self`.
    pub const fn contains(self, other: Fields) -> bool {
        self.0 & other.0 == other.0
    }
}

impl core::ops::BitOr for Fields {
    type Output = Fields;
    fn bitor(self, rhs: Fields) -> Fields {
        Fields(self.0 | rhs.0)
    }
}

/// How [`Decoder::decode_into`] writes the columns.
///
/// Measured (`cargo bench --bench decode`, BENCHMARKS.md) on a 2-vCPU AMD EPYC (Zen 4)
/// VM, non-temporal stores were slower at every size: 2-3x in cache, 1.05-1.2x from memory
/// (16 Mi IDs). So the default is [`Stores::Cached`], and [`Stores::NonTemporal`] is there
/// to measure on other machines (where the store bandwidth, not the read-for-ownership,
/// is the limit it may win). More kinds of store may come (a `match` needs a `_` arm).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Stores {
    /// Ordinary stores: the columns stay in cache, for a reader that comes soon after.
    #[default]
    Cached,
    /// Non-temporal stores (on the AVX2 and AVX-512 backends; scalar stores stay
    /// ordinary): the columns bypass the cache, so writing them does not first read each
    /// line from memory and does not evict the input.
    NonTemporal,
}

/// One column: a `Vec` a little longer than needed, used from its first 64-byte boundary.
#[derive(Debug, Default)]
struct Aligned<T> {
    buf: Vec<T>,
    start: usize,
    len: usize,
}

impl<T: Copy + Default> Aligned<T> {
    /// Room for `n` rows from a 64-byte boundary, if `wanted` (else null); allocates only
    /// when it must grow.
    fn fit(&mut self, wanted: bool, n: usize) -> *mut T {
        if !wanted {
            return core::ptr::null_mut();
        }
        let pad = 64 / size_of::<T>();
        if self.buf.len() < n + pad {
            self.buf = Vec::new(); // free the old one before the new one is made
            self.buf = std::vec![T::default(); n + pad];
            let misaligned = self.buf.as_ptr() as usize % 64;
            // `Vec<T>` is aligned to `T`, so the gap to the boundary is whole elements.
            self.start = (64 - misaligned) % 64 / size_of::<T>();
        }
        self.len = n;
        self.buf[self.start..self.start + n].as_mut_ptr()
    }

    fn get(&self) -> &[T] {
        &self.buf[self.start..self.start + self.len]
    }
}

/// Columns the decoder allocates and [`Decoder::decode_into`] refills: each starts on a
/// 64-byte boundary (no vector store splits a cache line), the sequence and node are
/// `u32` (half the bytes of `u64`), and non-temporal stores are one setting away
/// ([`Stores`]). A buffer allocates only when an input is longer than any before it, so a
/// loop over batches allocates once.
///
/// ```
/// use flakeid::decode::{ColumnBuffers, Decoder, Fields};
/// use flakeid::Layout;
///
/// let decoder = Decoder::new(&Layout::snowflake());
/// let mut out = ColumnBuffers::new(Fields::UNIX_MS | Fields::SEQUENCE);
/// decoder.decode_into(&[2116500430648709162, 2116500430648709163], &mut out)?;
/// assert_eq!(out.unix_ms(), Some(&[1_793_448_000_000; 2][..]));
/// assert_eq!(out.sequence(), Some(&[42u32, 43][..]));
/// assert_eq!(out.node(), None);
/// # Ok::<(), flakeid::Error>(())
/// ```
#[derive(Debug)]
pub struct ColumnBuffers {
    fields: Fields,
    stores: Stores,
    /// The sequence and node as `u64` ([`ColumnBuffers::wide`]), else `u32`.
    wide: bool,
    len: usize,
    ticks: Aligned<u64>,
    unix_ms: Aligned<u64>,
    sequence: Aligned<u32>,
    node: Aligned<u32>,
    sequence_wide: Aligned<u64>,
    node_wide: Aligned<u64>,
}

impl ColumnBuffers {
    /// Empty buffers for `fields` (nothing allocated yet), on [`Stores::Cached`].
    pub fn new(fields: Fields) -> ColumnBuffers {
        ColumnBuffers {
            fields,
            stores: Stores::Cached,
            wide: false,
            len: 0,
            ticks: Aligned::default(),
            unix_ms: Aligned::default(),
            sequence: Aligned::default(),
            node: Aligned::default(),
            sequence_wide: Aligned::default(),
            node_wide: Aligned::default(),
        }
    }

    /// Buffers for `fields` of `layout`'s IDs: the sequence and node as `u32` where both
    /// fit 32 bits (every preset), else as `u64` ([`ColumnBuffers::wide`]), so that
    /// [`Decoder::decode_into`] takes every ID of the layout.
    ///
    /// ```
    /// use flakeid::decode::{ColumnBuffers, Decoder, Fields};
    /// use flakeid::Layout;
    ///
    /// let layout: Layout = "seq=34,node=2,time=28,unit=10s".parse()?;
    /// let mut out = ColumnBuffers::for_layout(&layout, Fields::SEQUENCE);
    /// Decoder::new(&layout).decode_into(&[(1 << 36) | 5], &mut out)?;
    /// assert_eq!((out.sequence(), out.sequence_wide()), (None, Some(&[5u64][..])));
    /// # Ok::<(), flakeid::Error>(())
    /// ```
    pub fn for_layout(layout: &crate::Layout, fields: Fields) -> ColumnBuffers {
        let buffers = ColumnBuffers::new(fields);
        match layout.sequence_bits() > 32 || layout.node_bits() > 32 {
            true => buffers.wide(),
            false => buffers,
        }
    }

    /// The same buffers with the sequence and node as `u64` ([`ColumnBuffers::sequence_wide`],
    /// [`ColumnBuffers::node_wide`]): for layouts whose fields are wider than 32 bits.
    pub fn wide(mut self) -> ColumnBuffers {
        self.wide = true;
        self
    }

    /// Whether the sequence and node are held as `u64`.
    pub fn is_wide(&self) -> bool {
        self.wide
    }

    /// The same buffers with another store policy.
    pub fn stores(mut self, stores: Stores) -> ColumnBuffers {
        self.stores = stores;
        self
    }

    /// The fields held.
    pub fn fields(&self) -> Fields {
        self.fields
    }

    /// Rows decoded by the last [`Decoder::decode_into`] (0 before the first, and after
    /// one that refused its input).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no rows are held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The ticks column, if held.
    pub fn ticks(&self) -> Option<&[u64]> {
        self.fields
            .contains(Fields::TICKS)
            .then(|| self.ticks.get())
    }

    /// The Unix-milliseconds column, if held.
    pub fn unix_ms(&self) -> Option<&[u64]> {
        self.fields
            .contains(Fields::UNIX_MS)
            .then(|| self.unix_ms.get())
    }

    /// The sequence column, if held as `u32` (not [`ColumnBuffers::wide`]).
    pub fn sequence(&self) -> Option<&[u32]> {
        (self.fields.contains(Fields::SEQUENCE) && !self.wide).then(|| self.sequence.get())
    }

    /// The node column, if held as `u32` (not [`ColumnBuffers::wide`]).
    pub fn node(&self) -> Option<&[u32]> {
        (self.fields.contains(Fields::NODE) && !self.wide).then(|| self.node.get())
    }

    /// The sequence column, if held as `u64` ([`ColumnBuffers::wide`]).
    pub fn sequence_wide(&self) -> Option<&[u64]> {
        (self.fields.contains(Fields::SEQUENCE) && self.wide).then(|| self.sequence_wide.get())
    }

    /// The node column, if held as `u64` ([`ColumnBuffers::wide`]).
    pub fn node_wide(&self) -> Option<&[u64]> {
        (self.fields.contains(Fields::NODE) && self.wide).then(|| self.node_wide.get())
    }
}

impl Decoder {
    /// Decodes `ids` into `out`'s columns, growing them if `ids` is longer than any input
    /// before.
    ///
    /// The same values, errors and rules for a bad row as [`Decoder::decode`] (then
    /// `out.len()` is `ids.len()` and a bad row's values must not be used), plus
    /// [`Error::ColumnTooNarrow`] (nothing written, `out.len()` 0) if `out` holds the
    /// sequence or node as `u32` and that field is wider than 32 bits
    /// ([`ColumnBuffers::for_layout`] picks the width that fits).
    #[allow(unsafe_code)]
    pub fn decode_into(&self, ids: &[u64], out: &mut ColumnBuffers) -> Result<(), Error> {
        let n = ids.len();
        let f = out.fields;
        out.len = 0;
        let (sequence, node) = (f.contains(Fields::SEQUENCE), f.contains(Fields::NODE));
        // Refuse a too-wide field before allocating anything.
        if !out.wide {
            self.check_narrow(sequence, node)?;
        }
        let narrow = !out.wide;
        let cols = Out {
            ticks: out.ticks.fit(f.contains(Fields::TICKS), n),
            unix_ms: out.unix_ms.fit(f.contains(Fields::UNIX_MS), n),
            sequence: out.sequence_wide.fit(sequence && !narrow, n),
            node: out.node_wide.fit(node && !narrow, n),
            sequence32: out.sequence.fit(sequence && narrow, n),
            node32: out.node.fit(node && narrow, n),
            stream: out.stores == Stores::NonTemporal,
        };
        out.len = n;
        // SAFETY: every non-null column came from `Aligned::fit(n)`: `n` rows from a
        // 64-byte boundary.
        unsafe { self.run(ids, &cols) }
    }
}
