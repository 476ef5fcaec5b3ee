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

#[cfg(feature = "std")]
mod buffers;
mod scalar;
#[cfg(target_arch = "x86_64")]
mod x86_64;

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

/// Proof that this CPU has AVX2: only [`Avx2::detect`] makes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Avx2(());

/// Proof that this CPU has AVX-512 F and DQ: only [`Avx512::detect`] makes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Avx512(());

impl Avx2 {
    /// `Some` if the CPU running this has AVX2 (and the build allows SIMD).
    pub fn detect() -> Option<Avx2> {
        #[cfg(all(target_arch = "x86_64", not(flakeid_no_simd), feature = "std"))]
        if std::arch::is_x86_feature_detected!("avx2") {
            return Some(Avx2(()));
        }
        // Without std there is no runtime detection: the build's target features decide.
        #[cfg(all(
            target_arch = "x86_64",
            not(flakeid_no_simd),
            not(feature = "std"),
            target_feature = "avx2"
        ))]
        return Some(Avx2(()));
        #[allow(unreachable_code)]
        None
    }
}

impl Avx512 {
    /// `Some` if the CPU running this has AVX-512 F and DQ (and the build allows SIMD).
    pub fn detect() -> Option<Avx512> {
        #[cfg(all(target_arch = "x86_64", not(flakeid_no_simd), feature = "std"))]
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
        {
            return Some(Avx512(()));
        }
        #[cfg(all(
            target_arch = "x86_64",
            not(flakeid_no_simd),
            not(feature = "std"),
            target_feature = "avx512f",
            target_feature = "avx512dq"
        ))]
        return Some(Avx512(()));
        #[allow(unreachable_code)]
        None
    }
}

/// A decoding backend. The SIMD variants hold a proof of their CPU feature, so a value of
/// them can only exist on a CPU that runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Portable shift-and-mask loop (which the compiler may auto-vectorise).
    Scalar,
    /// 4 IDs per step, 64-bit multiply emulated with three 32-bit multiplies.
    Avx2(Avx2),
    /// 8 IDs per step.
    Avx512(Avx512),
}

impl Backend {
    /// A fixed rule, for builds without `std` (no timer to measure with): AVX2 where
    /// present, else AVX-512, else scalar. [`Backend::fastest`] measures instead, and is
    /// what [`Decoder::new`] uses with `std`.
    ///
    /// AVX2 comes first because it measured faster than AVX-512 at every size on the AMD
    /// EPYC (Zen 4) machines this crate is benchmarked on, with 32-byte-aligned columns
    /// (`cargo bench --bench decode`, BENCHMARKS.md). With columns where `malloc` usually
    /// puts them (16 bytes past a 64-byte boundary) AVX-512 is faster there too, and on
    /// Intel cores with full-width AVX-512 it is faster anyway.
    pub fn best() -> Backend {
        if let Some(t) = Avx2::detect() {
            Backend::Avx2(t)
        } else if let Some(t) = Avx512::detect() {
            Backend::Avx512(t)
        } else {
            Backend::Scalar
        }
    }

    /// The fastest backend on this CPU, measured once per process and kept: each available
    /// backend decodes the same 2,048 IDs into four columns (placed 16 bytes past a 64-byte
    /// boundary, as `malloc` places a `Vec<u64>`), best of several rounds, and
    /// [`Backend::best`]'s pick stands unless another is at least 5% faster. [`Decoder::new`] uses it. The rule of [`Backend::best`] is
    /// right on AMD Zen 4 (AVX2) but not on Intel cores with full-width AVX-512, where
    /// AVX-512 is faster (BENCHMARKS.md); measuring needs no table of CPUs. Every backend gives
    /// the same columns, so the pick changes only the speed.
    #[cfg(feature = "std")]
    pub fn fastest() -> Backend {
        static PICK: std::sync::OnceLock<Backend> = std::sync::OnceLock::new();
        *PICK.get_or_init(calibrate)
    }

    /// The backend named `scalar`, `avx2` or `avx512`, if this CPU (and build) runs it;
    /// `auto` is [`Backend::fastest`] (with `std`; else [`Backend::best`]).
    ///
    /// ```
    /// use flakeid::decode::Backend;
    ///
    /// assert_eq!(Backend::from_name("scalar"), Some(Backend::Scalar));
    /// assert_eq!(Backend::from_name("avx2").map(Backend::name), flakeid::decode::Avx2::detect().map(|_| "avx2"));
    /// assert_eq!(Backend::from_name("sse9"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Backend> {
        match name {
            "auto" => {
                #[cfg(feature = "std")]
                return Some(Backend::fastest());
                #[cfg(not(feature = "std"))]
                return Some(Backend::best());
            }
            "scalar" => Some(Backend::Scalar),
            "avx2" => Avx2::detect().map(Backend::Avx2),
            "avx512" => Avx512::detect().map(Backend::Avx512),
            _ => None,
        }
    }

    /// Every backend this CPU has, scalar first.
    pub fn available() -> impl Iterator<Item = Backend> {
        [
            Some(Backend::Scalar),
            Avx2::detect().map(Backend::Avx2),
            Avx512::detect().map(Backend::Avx512),
        ]
        .into_iter()
        .flatten()
    }

    /// A short name: `scalar`, `avx2` or `avx512`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Scalar => "scalar",
            Backend::Avx2(_) => "avx2",
            Backend::Avx512(_) => "avx512",
        }
    }
}

/// [`Backend::fastest`]'s measurement: each available backend on 2,048 Snowflake IDs into
/// four columns placed as `malloc` places a `Vec<u64>`, best of 5 rounds of 4 decodes each.
#[cfg(feature = "std")]
fn calibrate() -> Backend {
    const N: usize = 2048;
    if Backend::available().nth(1).is_none() {
        return Backend::Scalar; // nothing to measure
    }
    let layout = Layout::snowflake();
    let ids: std::vec::Vec<u64> = (0..N as u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) & layout.max_id())
        .collect();
    // Columns placed as `malloc` places a `Vec<u64>`: 16 bytes past a 64-byte boundary.
    // Where the columns sit decides the order: on Zen 4, 32-byte-aligned columns make AVX2
    // and AVX-512 even, and 16 bytes off make AVX2 1.3x slower (its stores split lines).
    let mut store: [std::vec::Vec<u64>; 4] = core::array::from_fn(|_| std::vec![0; N + 8]);
    let mut cols = store.each_mut().map(|v| {
        let addr = v.as_ptr() as usize;
        let skip = (0..8).find(|k| (addr + 8 * k) % 64 == 16).unwrap_or(0);
        &mut v[skip..skip + N]
    });
    let mut time = |backend: Backend| {
        let decoder = Decoder::with_backend(&layout, backend);
        let mut best = u128::MAX;
        for _ in 0..5 {
            let started = std::time::Instant::now();
            for _ in 0..4 {
                let [t, m, q, n] = &mut cols;
                let columns = Columns {
                    ticks: Some(t),
                    unix_ms: Some(m),
                    sequence: Some(q),
                    node: Some(n),
                };
                let _ = core::hint::black_box(decoder.decode(core::hint::black_box(&ids), columns));
            }
            best = best.min(started.elapsed().as_nanos());
        }
        best
    };
    // The rule's pick stands unless another backend is clearly (5%) faster, so that two
    // backends within noise of each other do not flip from run to run.
    let rule = Backend::best();
    let mut pick = (rule, time(rule));
    for backend in Backend::available().filter(|&b| b != rule) {
        let t = time(backend);
        if t * 100 < pick.1 * 95 {
            pick = (backend, t);
        }
    }
    pick.0
}

/// Decodes slices of IDs of one layout, with a backend chosen once.
#[derive(Debug, Clone)]
pub struct Decoder {
    layout: Layout,
    plan: Plan,
    backend: Backend,
}

impl Decoder {
    /// A decoder on the fastest backend this CPU has: [`Backend::fastest`] (measured once
    /// per process) with `std`, [`Backend::best`]'s rule without.
    pub fn new(layout: &Layout) -> Decoder {
        #[cfg(feature = "std")]
        let backend = Backend::fastest();
        #[cfg(not(feature = "std"))]
        let backend = Backend::best();
        Decoder::with_backend(layout, backend)
    }

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
    /// fit the layout. Then every row of a valid ID is decoded as usual, and a bad row's
    /// values are meaningless and must not be used: its sequence and node are masked to
    /// their fields, but its ticks (and so unix_ms) carry the ID's bits above the layout.
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
            let id = ids
                .iter()
                .copied()
                .find(|id| id & plan.invalid != 0)
                .unwrap_or_default();
            return Err(Error::IdOutOfLayout {
                id,
                bits: self.layout.bits(),
            });
        }
        Ok(())
    }
}

/// The scalar kernel on the columns `out.narrow` names.
///
/// # Safety
/// Every non-null column of `out` is valid for `ids.len()` writes.
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
