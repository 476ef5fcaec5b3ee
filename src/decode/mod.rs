//! Batch decoding: many IDs into columns (struct of arrays), with AVX-512 and AVX2 kernels
//! and a portable scalar path that is always compiled and the oracle
//! (`Decoder::with_backend(layout, Backend::Scalar)`). The kernels live in `scalar` and
//! `x86_64`.
//!
//! Three ways to give the columns: [`Columns`] (`u64` slices you own), [`NarrowColumns`]
//! (the sequence and node as `u32`: half their bytes) and, with `std`, [`ColumnBuffers`]
//! (the decoder allocates them 64-byte aligned, reuses them across calls, and can write
//! them with non-temporal stores).
//!
//! ```
//! use flakeid::decode::{Columns, Decoder};
//! use flakeid::Layout;
//!
//! let layout = Layout::snowflake();
//! let ids = [2116500430648709162u64, 2116500430648709163];
//! let (mut ms, mut node) = ([0u64; 2], [0u64; 2]);
//! let decoder = Decoder::new(&layout);
//! decoder.decode(&ids, Columns { unix_ms: Some(&mut ms), node: Some(&mut node), ..Columns::default() })?;
//! assert_eq!(ms, [1_793_448_000_000; 2]);
//! assert_eq!(node, [113; 2]);
//! println!("decoded with {:?}", decoder.backend());
//! # Ok::<(), flakeid::Error>(())
//! ```

mod backend;
#[cfg(feature = "std")]
mod buffers;
mod pick;
mod scalar;
#[cfg(target_arch = "x86_64")]
mod x86_64;

pub use backend::{Avx2, Avx512, Backend};
#[cfg(feature = "std")]
pub use buffers::{ColumnBuffers, Fields, Stores};

use crate::error::Error;
use crate::layout::Layout;

/// Where decoded fields go: one slice per wanted column, each as long as the input. A
/// column left `None` is not computed.
#[derive(Debug, Default)]
pub struct Columns<'a> {
    /// Ticks since the layout's epoch.
    pub ticks: Option<&'a mut [u64]>,
    /// Unix milliseconds at the start of the tick (epoch and unit applied, rounded down).
    pub unix_ms: Option<&'a mut [u64]>,
    /// Sequence numbers.
    pub sequence: Option<&'a mut [u64]>,
    /// Node ids.
    pub node: Option<&'a mut [u64]>,
}

/// The layout's constants, worked out once per decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Plan {
    time_shift: u32,
    sequence_shift: u32,
    node_shift: u32,
    sequence_mask: u64,
    node_mask: u64,
    /// Bits no valid ID has set.
    invalid: u64,
    /// `Some(unit_ms)` when the unit is a whole number of milliseconds: then
    /// `unix_ms = ticks * unit_ms + base_ms`, exact in 64 bits for every valid tick count
    /// (the layout's end fits 63 bits of ms). `None`: exact 128-bit scalar arithmetic.
    unit_ms: Option<u64>,
    base_ms: u64,
}

impl Plan {
    fn of(l: &Layout) -> Plan {
        let whole = l.unit_ns().is_multiple_of(1_000_000);
        let unit_ms = l.unit_ns() / 1_000_000;
        Plan {
            time_shift: l.time_shift(),
            sequence_shift: l.sequence_shift(),
            node_shift: l.node_shift(),
            sequence_mask: l.max_sequence(),
            node_mask: l.max_node(),
            invalid: !l.max_id(),
            unit_ms: whole.then_some(unit_ms),
            // (epoch_tick + ticks) x unit is whole ms, so the phase's floor adds exactly.
            base_ms: if whole {
                l.epoch_tick() * unit_ms + l.phase_ns() / 1_000_000
            } else {
                0
            },
        }
    }
}

/// Raw column pointers, null where a column is not wanted. Built only by
/// [`Decoder::decode`], [`Decoder::decode_narrow`] and [`Decoder::decode_into`], which
/// checked every length against the input. The `u64` sequence and node (`sequence`,
/// `node`) or the `u32` ones (`sequence32`, `node32`) are set, never a mix; a `*32` column
/// is used only when its field fits 32 bits.
struct Out {
    ticks: *mut u64,
    unix_ms: *mut u64,
    sequence: *mut u64,
    node: *mut u64,
    sequence32: *mut u32,
    node32: *mut u32,
    /// Non-temporal stores in the vector loops. Set only by [`Decoder::decode_into`],
    /// whose columns start on a 64-byte boundary, so every vector store of rows from 0 in
    /// steps of the vector width is aligned to its own width.
    stream: bool,
}

impl Out {
    const NONE: Out = Out {
        ticks: core::ptr::null_mut(),
        unix_ms: core::ptr::null_mut(),
        sequence: core::ptr::null_mut(),
        node: core::ptr::null_mut(),
        sequence32: core::ptr::null_mut(),
        node32: core::ptr::null_mut(),
        stream: false,
    };

    /// Whether the `u32` sequence and node columns are the ones to fill (else the `u64`
    /// ones): the kernel's width parameter, decided once per call.
    fn narrow(&self) -> bool {
        !self.sequence32.is_null() || !self.node32.is_null()
    }
}

/// A wanted column's length.
fn len<T>(c: &Option<&mut [T]>) -> Option<usize> {
    c.as_ref().map(|c| c.len())
}

impl Columns<'_> {
    /// The wanted columns' lengths, in [`check_lengths`]' order.
    fn lengths(&self) -> [Option<usize>; 4] {
        [
            len(&self.ticks),
            len(&self.unix_ms),
            len(&self.sequence),
            len(&self.node),
        ]
    }
}

impl NarrowColumns<'_> {
    /// The wanted columns' lengths, in [`check_lengths`]' order.
    fn lengths(&self) -> [Option<usize>; 4] {
        [
            len(&self.ticks),
            len(&self.unix_ms),
            len(&self.sequence),
            len(&self.node),
        ]
    }
}

/// [`Error::ColumnLength`] for the first wanted column (ticks, unix_ms, sequence, node)
/// whose length is not `n`.
fn check_lengths(n: usize, lens: [Option<usize>; 4]) -> Result<(), Error> {
    for (column, len) in ["ticks", "unix_ms", "sequence", "node"]
        .into_iter()
        .zip(lens)
    {
        if let Some(len) = len
            && len != n
        {
            return Err(Error::ColumnLength {
                column,
                len,
                expected: n,
            });
        }
    }
    Ok(())
}

/// Like [`Columns`], with the sequence and node in `u32` columns: half the bytes written
/// for those two fields. For layouts whose sequence and node fit 32 bits (every preset);
/// [`Decoder::decode_narrow`] refuses a wider field with [`Error::ColumnTooNarrow`].
#[derive(Debug, Default)]
pub struct NarrowColumns<'a> {
    /// Ticks since the layout's epoch.
    pub ticks: Option<&'a mut [u64]>,
    /// Unix milliseconds at the start of the tick (epoch and unit applied, rounded down).
    pub unix_ms: Option<&'a mut [u64]>,
    /// Sequence numbers.
    pub sequence: Option<&'a mut [u32]>,
    /// Node ids.
    pub node: Option<&'a mut [u32]>,
}

/// Decodes slices of IDs of one layout, with a backend chosen once.
#[derive(Debug, Clone)]
pub struct Decoder {
    layout: Layout,
    plan: Plan,
    backend: Backend,
}

impl Decoder {
    /// A decoder on a given backend.
    pub fn with_backend(layout: &Layout, backend: Backend) -> Decoder {
        Decoder {
            layout: *layout,
            plan: Plan::of(layout),
            backend,
        }
    }

    /// The backend in use.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Decodes `ids` into the wanted columns.
    ///
    /// Fails with [`Error::ColumnLength`] (writing nothing) if a column's length differs
    /// from `ids.len()`, and with [`Error::IdOutOfLayout`] naming the first ID that does not
    /// fit the layout and its index. Then every row of a valid ID is decoded as usual, and a bad row's
    /// values are meaningless and must not be used: its sequence and node are masked to
    /// their fields, but its ticks (and so unix_ms) carry the ID's bits above the layout.
    #[allow(unsafe_code)]
    pub fn decode(&self, ids: &[u64], mut cols: Columns<'_>) -> Result<(), Error> {
        check_lengths(ids.len(), cols.lengths())?;
        let out = Out {
            ticks: ptr(&mut cols.ticks),
            unix_ms: ptr(&mut cols.unix_ms),
            sequence: ptr(&mut cols.sequence),
            node: ptr(&mut cols.node),
            ..Out::NONE
        };
        // SAFETY: every column is null or exactly `ids.len()` long (checked above).
        unsafe { self.run(ids, &out) }
    }

    /// Decodes `ids` into the wanted columns, the sequence and node as `u32`.
    ///
    /// The same as [`Decoder::decode`] (the same values, errors and rules for a bad row),
    /// plus [`Error::ColumnTooNarrow`] (writing nothing) if a wanted `u32` column's field
    /// is wider than 32 bits.
    ///
    /// ```
    /// use flakeid::decode::{Decoder, NarrowColumns};
    /// use flakeid::Layout;
    ///
    /// let ids = [2116500430648709162u64, 2116500430648709163];
    /// let (mut seq, mut node) = ([0u32; 2], [0u32; 2]);
    /// let cols = NarrowColumns { sequence: Some(&mut seq), node: Some(&mut node), ..NarrowColumns::default() };
    /// Decoder::new(&Layout::snowflake()).decode_narrow(&ids, cols)?;
    /// assert_eq!((seq, node), ([42, 43], [113; 2]));
    /// # Ok::<(), flakeid::Error>(())
    /// ```
    #[allow(unsafe_code)]
    pub fn decode_narrow(&self, ids: &[u64], mut cols: NarrowColumns<'_>) -> Result<(), Error> {
        check_lengths(ids.len(), cols.lengths())?;
        self.check_narrow(cols.sequence.is_some(), cols.node.is_some())?;
        let out = Out {
            ticks: ptr(&mut cols.ticks),
            unix_ms: ptr(&mut cols.unix_ms),
            sequence32: ptr(&mut cols.sequence),
            node32: ptr(&mut cols.node),
            ..Out::NONE
        };
        // SAFETY: every column is null or exactly `ids.len()` long (checked above).
        unsafe { self.run(ids, &out) }
    }

    /// [`Error::ColumnTooNarrow`] for a wanted `u32` sequence or node column whose field
    /// is wider than 32 bits.
    fn check_narrow(&self, sequence: bool, node: bool) -> Result<(), Error> {
        for (wanted, column, bits) in [
            (sequence, "sequence", self.layout.sequence_bits()),
            (node, "node", self.layout.node_bits()),
        ] {
            if wanted && bits > 32 {
                return Err(Error::ColumnTooNarrow { column, bits });
            }
        }
        Ok(())
    }

    /// Runs the backend's kernel, then names the first bad ID if there was one.
    ///
    /// # Safety
    /// Every non-null column of `out` is valid for `ids.len()` writes; if `out.stream`,
    /// every non-null column starts on a 64-byte boundary.
    #[allow(unsafe_code)]
    unsafe fn run(&self, ids: &[u64], out: &Out) -> Result<(), Error> {
        let plan = &self.plan;
        // One copy of each kernel per column width and store kind, so that neither is
        // tested inside the loop.
        let bad = match self.backend {
            // SAFETY: the caller's contract.
            Backend::Scalar => unsafe { scalar_kernel(plan, &self.layout, ids, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the Avx2 token exists only if the CPU has AVX2; the columns are as
            // the caller promised.
            Backend::Avx2(_) => unsafe {
                match (out.narrow(), out.stream) {
                    (false, false) => x86_64::avx2::<false, false>(plan, &self.layout, ids, out),
                    (false, true) => x86_64::avx2::<false, true>(plan, &self.layout, ids, out),
                    (true, false) => x86_64::avx2::<true, false>(plan, &self.layout, ids, out),
                    (true, true) => x86_64::avx2::<true, true>(plan, &self.layout, ids, out),
                }
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the Avx512 token exists only if the CPU has AVX-512 F and DQ; the
            // columns are as the caller promised.
            Backend::Avx512(_) => unsafe {
                match (out.narrow(), out.stream) {
                    (false, false) => x86_64::avx512::<false, false>(plan, &self.layout, ids, out),
                    (false, true) => x86_64::avx512::<false, true>(plan, &self.layout, ids, out),
                    (true, false) => x86_64::avx512::<true, false>(plan, &self.layout, ids, out),
                    (true, true) => x86_64::avx512::<true, true>(plan, &self.layout, ids, out),
                }
            },
            #[cfg(not(target_arch = "x86_64"))]
            // SAFETY: the caller's contract.
            _ => unsafe { scalar_kernel(plan, &self.layout, ids, out) },
        };
        if bad != 0 {
            let index = ids.iter().position(|id| id & plan.invalid != 0);
            return Err(Error::IdOutOfLayout {
                id: index.map_or(0, |i| ids[i]),
                bits: self.layout.bits(),
                index,
            });
        }
        Ok(())
    }
}

/// The scalar kernel on the columns `out.narrow` names.
///
/// # Safety
/// Every non-null column of `out` is valid for `ids.len()` writes.
#[allow(unsafe_code)]
unsafe fn scalar_kernel(plan: &Plan, layout: &Layout, ids: &[u64], out: &Out) -> u64 {
    // SAFETY: the caller's contract.
    unsafe {
        if out.narrow() {
            scalar::kernel::<true>(plan, layout, ids, out, 0)
        } else {
            scalar::kernel::<false>(plan, layout, ids, out, 0)
        }
    }
}

/// A column's pointer, null if not wanted.
fn ptr<T>(c: &mut Option<&mut [T]>) -> *mut T {
    c.as_deref_mut()
        .map_or(core::ptr::null_mut(), <[T]>::as_mut_ptr)
}
