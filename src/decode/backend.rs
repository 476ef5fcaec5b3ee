//! The decoding backends: proof of a CPU feature ([`Avx2`], [`Avx512`]), and [`Backend`]
//! with its fixed rule ([`Backend::best`]); the pick by measuring or by name is `pick`,
//! above the decoder it measures.

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
/// them can only exist on a CPU that runs them. Backends for other CPUs (aarch64's NEON
/// first) will come as new variants: a `match` needs a `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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
    /// what [`Decoder::new`](super::Decoder::new) uses with `std`.
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
