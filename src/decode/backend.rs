//! The decoding backends: proof of a CPU feature ([`Avx2`], [`Avx512`]), and [`Backend`], picked by rule or by measuring.

#[cfg(feature = "std")]
use super::{Columns, Decoder};
#[cfg(feature = "std")]
use crate::layout::Layout;

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
pub(super) fn calibrate() -> Backend {
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
