//! Batch decoding: many IDs into columns (struct of arrays), with AVX-512 and AVX2 kernels
//! and a portable scalar path that is always compiled and the oracle
//! (`Decoder::with_backend(layout, Backend::Scalar)`). The kernels live in `scalar` and
//! `x86_64`.
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

mod scalar;
#[cfg(target_arch = "x86_64")]
mod x86_64;

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
/// [`Decoder::decode`], which checked every length against the input.
struct Out {
    ticks: *mut u64,
    unix_ms: *mut u64,
    sequence: *mut u64,
    node: *mut u64,
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
    /// The backend to use on this CPU: AVX2 where present, else AVX-512, else scalar.
    ///
    /// AVX2 comes first because it measured faster than AVX-512 at every size on the AMD
    /// EPYC (Zen 4) machines this crate is benchmarked on (`cargo bench --bench decode`,
    /// BENCHMARKS.md): Zen 4 runs 512-bit operations as two 256-bit halves, and a 64-byte
    /// store to an 8-byte-aligned column splits a cache line every time.
    pub fn best() -> Backend {
        if let Some(t) = Avx2::detect() {
            Backend::Avx2(t)
        } else if let Some(t) = Avx512::detect() {
            Backend::Avx512(t)
        } else {
            Backend::Scalar
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

/// Decodes slices of IDs of one layout, with a backend chosen once.
#[derive(Debug, Clone)]
pub struct Decoder {
    layout: Layout,
    plan: Plan,
    backend: Backend,
}

impl Decoder {
    /// A decoder on the fastest backend this CPU has.
    pub fn new(layout: &Layout) -> Decoder {
        Decoder::with_backend(layout, Backend::best())
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
        let n = ids.len();
        for (name, col) in [
            ("ticks", &cols.ticks),
            ("unix_ms", &cols.unix_ms),
            ("sequence", &cols.sequence),
            ("node", &cols.node),
        ] {
            if let Some(c) = col
                && c.len() != n
            {
                return Err(Error::ColumnLength {
                    column: name,
                    len: c.len(),
                    expected: n,
                });
            }
        }
        let ptr = |c: &mut Option<&mut [u64]>| {
            c.as_deref_mut()
                .map_or(core::ptr::null_mut(), <[u64]>::as_mut_ptr)
        };
        let out = Out {
            ticks: ptr(&mut cols.ticks),
            unix_ms: ptr(&mut cols.unix_ms),
            sequence: ptr(&mut cols.sequence),
            node: ptr(&mut cols.node),
        };
        let plan = &self.plan;
        let bad = match self.backend {
            // SAFETY: every column is null or exactly `ids.len()` long (checked above).
            Backend::Scalar => unsafe { scalar::kernel(plan, &self.layout, ids, &out, 0) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the Avx2 token exists only if the CPU has AVX2; every column is
            // either null or exactly `ids.len()` long (checked above).
            Backend::Avx2(_) => unsafe { x86_64::avx2(plan, &self.layout, ids, &out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the Avx512 token exists only if the CPU has AVX-512 F and DQ; the
            // columns are null or `ids.len()` long.
            Backend::Avx512(_) => unsafe { x86_64::avx512(plan, &self.layout, ids, &out) },
            #[cfg(not(target_arch = "x86_64"))]
            // SAFETY: every column is null or exactly `ids.len()` long (checked above).
            _ => unsafe { scalar::kernel(plan, &self.layout, ids, &out, 0) },
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
